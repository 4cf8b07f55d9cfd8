// Pod-level resources (`spec.resources`) in CEL, for `podResources`: what webhook/engine/pod-resources.ts
// does, with the Kubernetes quantity library (add, isGreaterThan, isInteger, asInteger,
// asApproximateFloat). CEL has no fold, so no sum over the pod's own containers; none is needed: `add`
// raises each figure the pod sets by the injected containers' own, whose number is known at synth
// (a list of at most that many, summed term by term), and `share` rewrites the injected containers
// against the pod's own figures. The library turns no Quantity into a string, so a sum is written as
// the engine writes it, from its integer value: `228Mi`, `1100m`, `2`.

import type { JsonValue, ResolvedInjection } from '../../webhook/config';
import { parseQuantity } from '../../webhook/config';
import { celString } from './cel-text';

/** The resources a pod may set at pod level (component-helpers: IsSupportedPodLevelResource). */
export function isPodLevelResource(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

const ZERO = 'quantity("0")';

/** The pod-level resources the injection's containers name: the only figures it may change. */
export function podLevelNames(injection: ResolvedInjection): string[] {
  const names = new Set<string>();
  for (const container of [...(injection.containers ?? []), ...(injection.initContainers ?? [])]) {
    const resources = (container as { resources?: Record<string, unknown> }).resources;
    for (const field of ['requests', 'limits'] as const) {
      const map = resources?.[field];
      if (map && typeof map === 'object') for (const name of Object.keys(map)) if (isPodLevelResource(name)) names.add(name);
    }
  }
  for (const override of injection.overrides ?? []) {
    if ('resource' in override) {
      const name = override.resource.split('.')[1];
      if (isPodLevelResource(name)) names.add(name);
    }
  }
  return [...names].sort();
}

/** CEL (bool): the pod (template) at `template` sets `name` in `spec.resources.<field>`. */
export function podSets(template: string, field: 'requests' | 'limits', name: string): string {
  const resources = `${template}.spec.resources`;
  return `(has(${resources}) && has(${resources}.${field}) && ${celString(name)} in ${resources}.${field})`;
}

/** CEL (bool): the pod budgets `name` at pod level (a request or a limit). */
export function podBudgets(template: string, name: string): string {
  return `(${podSets(template, 'requests', name)} || ${podSets(template, 'limits', name)})`;
}

/** CEL (Quantity): container `c`'s request of `name` (its limit when it has none), or its limit (its request when it has none); 0 when neither. */
function figure(c: string, name: string, field: 'requests' | 'limits'): string {
  const key = celString(name);
  const other = field === 'requests' ? 'limits' : 'requests';
  const read = (f: string) => `(has(${c}.resources) && has(${c}.resources.${f}) && ${key} in ${c}.resources.${f})`;
  return `(${read(field)} ? quantity(string(${c}.resources.${field}[${key}])) : ${read(other)} ? quantity(string(${c}.resources.${other}[${key}])) : ${ZERO})`;
}

const BINARY: readonly [string, bigint][] = [['Ei', 1n << 60n], ['Pi', 1n << 50n], ['Ti', 1n << 40n], ['Gi', 1n << 30n], ['Mi', 1n << 20n], ['Ki', 1n << 10n]];

/**
 * CEL (string): the Quantity `q` written as webhook/engine/pod-resources.ts formatQuantity writes it:
 * whole units with the largest binary suffix that divides them (none for cpu), else millicores
 * rounded up (from the approximate float: the library has no exact fraction).
 */
export function formatQuantityCel(q: string, name: string): string {
  const milli = `string(int(plq.asApproximateFloat() * 1000.0 + 0.999)) + "m"`;
  const whole =
    name === 'cpu'
      ? 'string(plq.asInteger())'
      : `[plq.asInteger()].map(plb, plb == 0 ? "0" : ${BINARY.map(([suffix, scale]) => `plb % ${scale} == 0 ? string(plb / ${scale}) + ${celString(suffix)} : `).join('')}string(plb))[0]`;
  return `[${q}].map(plq, plq.isInteger() ? ${whole} : ${milli})[0]`;
}

/**
 * CEL (list of adds): `add` for the containers in `added` (a CEL list of the containers this injection
 * adds now, as added): each figure the pod sets of `names` raised by their requests (limits), from
 * `base(field, name)` (the figure as it stands: the object's, or a part of the same mutation's before).
 */
export function podLevelAdds(
  template: string,
  pointer: string,
  added: string,
  names: readonly string[],
  base: (field: 'requests' | 'limits', name: string, path: string) => string,
  maxContainers: number,
): string {
  const ops: string[] = [];
  for (const name of names) {
    for (const field of ['requests', 'limits'] as const) {
      const path = celString(`${pointer}/spec/resources/${field}/${name}`);
      const terms = Array.from({ length: maxContainers }, (_, i) => `.add(size(pll) > ${i} ? pll[${i}] : ${ZERO})`).join('');
      const sum = `[${added}.map(plc, ${figure('plc', name, field)})].map(pll, ${ZERO}${terms})[0]`;
      const value = formatQuantityCel(`${base(field, name, path)}.add(pls)`, name);
      ops.push(`(${podSets(template, field, name)} ? [${sum}].map(pls, pls.isGreaterThan(${ZERO}) ? [{"path": dyn(${path}), "value": dyn(${value})}] : [])[0] : [])`);
    }
  }
  return ops.length === 0 ? '[]' : ops.join(' + ');
}

/**
 * The container as `share` injects it into a pod that budgets exactly `budgeted` of cpu and memory:
 * each budgeted request 0 (where it has a request or a limit of it above 0), each budgeted limit
 * marked for `sharedLimits` to bound by the pod's. The marks are strings `\u0002share limit <name>\u0002`.
 */
export function sharedContainerJson<T extends Record<string, unknown>>(container: T, budgeted: readonly ('cpu' | 'memory')[]): T {
  const resources = container.resources as Record<string, Record<string, JsonValue>> | undefined;
  if (!resources || budgeted.length === 0) return container;
  const requests = resources.requests ? { ...resources.requests } : undefined;
  const limits = resources.limits ? { ...resources.limits } : undefined;
  let out: Record<string, unknown> = { ...resources };
  for (const name of budgeted) {
    const effective = requests?.[name] ?? limits?.[name];
    const parsed = effective === undefined ? undefined : parseQuantity(effective);
    // A value set by an override (a mark) counts as above 0.
    if (effective !== undefined && (parsed === undefined || parsed > 0n)) out = { ...out, requests: { ...(out.requests as object), [name]: '0' } };
    if (limits?.[name] !== undefined) out = { ...out, limits: { ...(out.limits as object), [name]: shareMark(name, limits[name]) } };
  }
  return { ...container, resources: out };
}

const SHARE_MARK = /"\\u0002share limit ([a-z]+) (.*?)\\u0002"/g;

function shareMark(name: string, configured: JsonValue): string {
  return `\u0002share limit ${name} ${JSON.stringify(configured)}\u0002`;
}

/**
 * CEL text with each share mark replaced by the configured limit bounded by the pod's (the pod's own
 * text when lower). `literal` renders the configured value as the container's text would (an
 * override's mark stays a mark, for the override's own replace to fill in).
 */
export function sharedLimits(cel: string, template: string): string {
  return cel.replace(SHARE_MARK, (_, name: string, configured: string) => {
    const value = JSON.parse(JSON.parse(`"${configured}"`)) as JsonValue;
    const own = typeof value === 'string' ? celString(value) : String(value);
    const podLimit = `${template}.spec.resources.limits[${celString(name)}]`;
    return `string(${podSets(template, 'limits', name)} && quantity(string(${own})).isGreaterThan(quantity(string(${podLimit}))) ? dyn(${podLimit}) : dyn(${own}))`;
  });
}
