// Overrides as CEL: the value of each offered field of an injected container, chosen inside the
// kube-apiserver the way webhook/engine/container-overrides.ts chooses it: the pod's annotation if
// its value is good, else the namespace's (`fromNamespace`, read from `namespaceObject`), else the
// configured value; a request never above its limit. The container is rendered with a marker string
// in each offered field, and the marker's CEL literal is then replaced by the field's expression.

import { type ContainerOverride, type ContainerSpec, type ResolvedInjection, configuredResource } from '../../webhook/config';
import { celString } from './cel-text';

/** How the policy reads the pod (template)'s annotations: whether it has `key`, and its value. */
export interface AnnotationReads {
  has(key: string): string;
  value(key: string): string;
}

/** The quantity syntax an override accepts (container-overrides.ts's OVERRIDE_QUANTITY), for CEL's RE2 `matches`. */
export const QUANTITY_RE2 = '^(?:[0-9]+(?:\\.[0-9]+)?|\\.[0-9]+)(?:m|k|M|G|T|P|Ki|Mi|Gi|Ti|Pi)?$';
export const MAX_VALUE_LENGTH = 64;

const NAMESPACE_ANNOTATIONS = 'namespaceObject.metadata.annotations';
const namespaceReads: AnnotationReads = {
  has: (key) => `(namespaceObject != null && has(namespaceObject.metadata) && has(${NAMESPACE_ANNOTATIONS}) && ${celString(key)} in ${NAMESPACE_ANNOTATIONS})`,
  value: (key) => `${NAMESPACE_ANNOTATIONS}[${celString(key)}]`,
};

/** CEL: `v` (a string expression) is a value `override` accepts, as checkOverrideValue judges it. */
export function acceptsCel(override: ContainerOverride, v: string): string {
  if ('env' in override) return `${v} in [${override.allowedValues.map(celString).join(', ')}]`;
  const bounds = [`quantity(${v}).isGreaterThan(quantity("0"))`, `!quantity(${v}).isGreaterThan(quantity(${celString(override.max)}))`];
  if (override.min !== undefined) bounds.push(`!quantity(${v}).isLessThan(quantity(${celString(override.min)}))`);
  // `&&` stops at the first false: quantity() only sees what the pattern accepted.
  return `(size(${v}) <= ${MAX_VALUE_LENGTH} && ${v}.matches(${celString(QUANTITY_RE2)}) && ${bounds.join(' && ')})`;
}

/** CEL: the field's value before the request/limit check: the pod's if good, else the namespace's, else `configured`. */
function chosenCel(override: ContainerOverride, pod: AnnotationReads, configured: string): string {
  const key = override.annotation;
  const fromNamespace = override.fromNamespace ? `(${namespaceReads.has(key)} && ${acceptsCel(override, namespaceReads.value(key))} ? ${namespaceReads.value(key)} : ${configured})` : configured;
  return `(${pod.has(key)} && ${acceptsCel(override, pod.value(key))} ? ${pod.value(key)} : ${fromNamespace})`;
}

/**
 * The container with a marker in each field `injection` offers, and how to put each field's CEL in
 * place of its marker in the rendered expression. Each value is bound once, through `bind` (a policy
 * variable: evaluated once, and counted once in the apiserver's cost estimate), and read by reference.
 * Undefined when the container offers no field.
 */
export function overrideMarks(
  injection: ResolvedInjection,
  container: ContainerSpec,
  pod: AnnotationReads,
  bind: (name: string, expression: string) => string,
): { item: ContainerSpec; replace(cel: string): string } | undefined {
  const offered = (injection.overrides ?? []).filter((override) => override.container === container.name);
  if (offered.length === 0) return undefined;
  const expressions = new Map<string, string>();
  const marker = (index: number) => `\u0001override ${index}\u0001`;
  const item: Record<string, any> = structuredClone(container);
  // Container names are DNS labels: with '-' as '_' they are CEL identifiers, and never collide.
  const variable = (part: string) => `override_${container.name.replace(/-/g, '_')}_${part}`;
  /** A configured value as a CEL string (quantities may be written as JSON numbers). */
  const literal = (value: unknown) => celString(String(value));
  // Resources: each chosen value, then kept at most its limit, as the engine's consistentRequests().
  const chosen = new Map<string, string>();
  for (const override of offered) {
    if ('env' in override) continue;
    const [kind, name] = override.resource.split('.') as ['requests' | 'limits', string];
    chosen.set(override.resource, bind(variable(`chosen_${kind}_${name}`), chosenCel(override, pod, literal(configuredResource(container, kind, name)))));
  }
  offered.forEach((override, index) => {
    if ('env' in override) {
      const entry = (item.env as Record<string, unknown>[]).find((envVar) => envVar.name === override.env)!;
      expressions.set(marker(index), bind(variable(`env_${index}`), chosenCel(override, pod, celString(String(entry.value)))));
      entry.value = marker(index);
      return;
    }
    const [kind, name] = override.resource.split('.') as ['requests' | 'limits', string];
    const configured = (field: 'requests' | 'limits') => configuredResource(container, field, name);
    const request = chosen.get(`requests.${name}`) ?? (configured('requests') !== undefined ? literal(configured('requests')) : undefined);
    const limit = chosen.get(`limits.${name}`) ?? (configured('limits') !== undefined ? literal(configured('limits')) : undefined);
    const own = chosen.get(override.resource)!;
    const expression = request !== undefined && limit !== undefined ? `quantity(${request}).isGreaterThan(quantity(${limit})) ? ${literal(configured(kind))} : ${own}` : own;
    expressions.set(marker(index), bind(variable(`${kind}_${name}`), expression));
    item.resources[kind][name] = marker(index);
  });
  return {
    item: item as ContainerSpec,
    replace(cel: string): string {
      let out = cel;
      // A string-typed value where the map's other values are string literals (CEL maps are homogeneous).
      for (const [text, reference] of expressions) out = out.split(celString(text)).join(`string(${reference})`);
      return out;
    },
  };
}
