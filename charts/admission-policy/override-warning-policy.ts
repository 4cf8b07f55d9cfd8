// Bad override values on the policy backend, said as the webhook says them (webhook/engine/
// container-overrides.ts, pod-override-preview.ts). A MutatingAdmissionPolicy cannot warn, but a
// ValidatingAdmissionPolicy runs after every mutation and can (validationActions [Warn]): each offered
// field is a few validations that fail exactly where the webhook ignores a value, with the webhook's
// words built in CEL. One policy per template shape. It judges a pod an injection was applied to now, a
// workload whose template one was applied to now, and a workload whose pods an injection of pods will
// reach: its template judged as those pods, so `kubectl apply` of the workload prints the warning to
// whoever typed the value, not only the ReplicaSet controller.

import {
  type ContainerOverride,
  type ContainerSpec,
  type ResolvedInjection,
  type ResolvedInjectorConfig,
  type TargetKind,
  annotationKeys,
  configuredOverrideValue,
  configuredResource,
  overrideFieldName,
} from '../../webhook/config';
import type { MatchCondition, ValidatingAdmissionPolicySpec, Variable } from './admission-policy-types';
import { celString, celStringList } from './cel-text';
import { MAX_VALUE_LENGTH, QUANTITY_RE2, acceptsCel } from './override-cel';
import { PolicyWriter } from './policy-writer';
import { TEMPLATE_SHAPES, type TemplateShape, policyResourceRules } from './template-shapes';

/** The override-warning policy of one template shape. */
export interface OverrideWarningShapePolicy {
  readonly shape: TemplateShape;
  /** The injections it speaks for, in config order. */
  readonly injections: readonly string[];
  readonly spec: ValidatingAdmissionPolicySpec;
}

type Validation = ValidatingAdmissionPolicySpec['validations'][number];

const ANNOTATIONS = 'variables.ovAnnotations';
const NAMESPACE_ANNOTATIONS = 'variables.ovNamespace';
const NO_OWNER = '!(has(object.metadata.ownerReferences) && size(object.metadata.ownerReferences) > 0)';

/** The injections of `config` named in `injections` that enforce and offer overrides: one policy per shape they reach. */
export function overrideWarningPolicies(config: ResolvedInjectorConfig, injections: readonly string[]): OverrideWarningShapePolicy[] {
  const offering = config.injections.filter((injection) => injections.includes(injection.name) && injection.mode !== 'audit' && (injection.overrides?.length ?? 0) > 0);
  return (Object.keys(TEMPLATE_SHAPES) as TemplateShape[]).flatMap((shape) => {
    const members = offering.filter((injection) => kindsReading(injection, shape).length > 0);
    if (members.length === 0) return [];
    const kinds = TEMPLATE_SHAPES[shape].kinds.filter((kind) => members.some((injection) => kindsReading(injection, shape).includes(kind)));
    return [{ shape, injections: members.map((injection) => injection.name), spec: shapeSpec(config, shape, members, kinds) }];
  });
}

/** The kinds of `shape` whose admission reads `injection`'s overrides: those it targets, and, when it targets pods, every workload kind. */
export function kindsReading(injection: ResolvedInjection, shape: TemplateShape): TargetKind[] {
  const podTargeted = injection.targetKinds.includes('Pod');
  if (shape === 'pods') return podTargeted ? ['Pod'] : [];
  return TEMPLATE_SHAPES[shape].kinds.filter((kind) => podTargeted || injection.targetKinds.includes(kind));
}

function shapeSpec(config: ResolvedInjectorConfig, shape: TemplateShape, members: readonly ResolvedInjection[], kinds: readonly TargetKind[]): ValidatingAdmissionPolicySpec {
  const template = TEMPLATE_SHAPES[shape].template;
  const variables: Variable[] = [{ name: 'ovAnnotations', expression: `${present(`${template}.metadata.annotations`)} ? ${template}.metadata.annotations : {}` }];
  const fromNamespace = members.flatMap((injection) => injection.overrides!).filter((override) => override.fromNamespace === true);
  if (fromNamespace.length > 0) {
    variables.push({ name: 'ovNamespace', expression: 'namespaceObject != null && has(namespaceObject.metadata) && has(namespaceObject.metadata.annotations) ? namespaceObject.metadata.annotations : {}' });
  }
  const validations: Validation[] = [];
  members.forEach((injection, index) => {
    const applies = `ovApplies${index}`;
    variables.push({ name: applies, expression: appliesExpression(config, injection, shape, kinds) });
    const fields = new InjectionFields(injection, index, `variables.${applies}`);
    variables.push(...fields.variables);
    validations.push(...fields.validations);
  });
  validations.push(notOffered(config, members.map((_, index) => `variables.ovApplies${index}`)));
  const prefixes = offeredPrefixes(config);
  const carries = `(${present(`${template}.metadata.annotations`)} && ${template}.metadata.annotations.exists(k, ${prefixed('k', prefixes)}))`;
  const namespaceKeys = [...new Set(fromNamespace.map((override) => override.annotation))];
  const namespaceCarries = namespaceKeys.length === 0 ? '' : ` || (namespaceObject != null && has(namespaceObject.metadata) && has(namespaceObject.metadata.annotations) && ${celStringList(namespaceKeys)}.exists(k, k in namespaceObject.metadata.annotations))`;
  const conditions: MatchCondition[] = [{ name: 'pod-spec-present', expression: TEMPLATE_SHAPES[shape].present }];
  // A Deployment's ReplicaSets and a CronJob's Jobs carry the same template: said once, to whoever wrote it.
  if (shape !== 'pods') conditions.push({ name: 'written-by-a-person', expression: NO_OWNER });
  conditions.push({ name: 'an-override-value-present', expression: `${carries}${namespaceCarries}` });
  return {
    matchConstraints: { resourceRules: policyResourceRules(kinds), matchPolicy: 'Equivalent' },
    matchConditions: conditions,
    variables,
    validations,
    failurePolicy: 'Ignore',
  };
}

/**
 * CEL: the webhook reads `injection`'s overrides for this object. A pod: the injection was applied to
 * it now (the policy sees the object after every mutation). A workload whose kind it targets: applied to
 * its template now, not before. A workload whose pods it targets: the pods would get it (not opted out,
 * the trigger holding on the template's own labels and annotations, not injected already).
 */
function appliesExpression(config: ResolvedInjectorConfig, injection: ResolvedInjection, shape: TemplateShape, kinds: readonly TargetKind[]): string {
  const status = annotationKeys(config.annotationPrefix).status;
  const template = TEMPLATE_SHAPES[shape].template;
  const injectedIn = (base: string) => `${present(`${base}.metadata.annotations`)} && ${celString(status)} in ${base}.metadata.annotations && ${base}.metadata.annotations[${celString(status)}].split(",").exists(s, s.trim() == ${celString(injection.name)})`;
  if (shape === 'pods') return injectedIn(template);
  const oldTemplate = template.replace(/^object/, 'oldObject');
  const appliedNow = `(${injectedIn(template)}) && !(oldObject != null && ${injectedIn(oldTemplate)})`;
  const targeted = TEMPLATE_SHAPES[shape].kinds.filter((kind) => injection.targetKinds.includes(kind));
  if (!injection.targetKinds.includes('Pod')) return targeted.length === kinds.length ? appliedNow : `request.kind.kind in ${celStringList(targeted)} && ${appliedNow}`;
  const writer = new PolicyWriter(injection, config, shape, kinds, true);
  const notOptedOut = writer.sharedConditions().find((condition) => condition.name === 'not-opted-out')!.expression;
  const trigger = writer.triggerCondition();
  const podsWouldGetIt = [notOptedOut, `!(${injectedIn(template)})`, ...(trigger === undefined ? [] : [`(${trigger})`])].join(' && ');
  if (targeted.length === 0) return podsWouldGetIt;
  return `request.kind.kind in ${celStringList(targeted)} ? (${appliedNow}) : (${podsWouldGetIt})`;
}

/** CEL: every step of `path` (`object.a.b`) is present. */
function present(path: string): string {
  const steps = path.split('.');
  return steps.slice(1).map((_, index) => `has(${steps.slice(0, index + 2).join('.')})`).join(' && ');
}

function prefixed(key: string, prefixes: readonly string[]): string {
  return `(${prefixes.map((prefix) => `${key}.startsWith(${celString(prefix)})`).join(' || ')})`;
}

/** The `prefix/` of every annotation an override of `config` offers (the engine's overridePrefixes). */
function offeredPrefixes(config: ResolvedInjectorConfig): string[] {
  return [...new Set(offeredKeys(config).map((key) => key.slice(0, key.indexOf('/') + 1)))];
}

function offeredKeys(config: ResolvedInjectorConfig): string[] {
  return [...new Set(config.injections.flatMap((injection) => (injection.overrides ?? []).map((override) => override.annotation)))];
}

/** A value as the webhook shows it: quoted, cut at 64 characters (JSON escapes are not reproduced). */
function shown(value: string): string {
  return `"\\"" + (size(${value}) > ${MAX_VALUE_LENGTH} ? ${value}.substring(0, ${MAX_VALUE_LENGTH}) + "..." : ${value}) + "\\""`;
}

/** CEL text: why `value` (a string expression) is not accepted, as checkOverrideValue words it. */
function rejectionCel(override: ContainerOverride, value: string): string {
  if ('env' in override) return `${shown(value)} + ${celString(` is not one of the allowed values (${override.allowedValues.map((allowed) => JSON.stringify(allowed)).join(', ')})`)}`;
  const aboveMax = `${shown(value)} + ${celString(` is above the maximum ${override.max}`)}`;
  const belowMin = override.min === undefined ? aboveMax : `(quantity(${value}).isGreaterThan(quantity(${celString(override.max)})) ? ${aboveMax} : ${shown(value)} + ${celString(` is below the minimum ${override.min}`)})`;
  return (
    `(size(${value}) > ${MAX_VALUE_LENGTH} || !${value}.matches(${celString(QUANTITY_RE2)}) ? ${shown(value)} + ${celString(' is not a quantity (like "250m", "1", "512Mi")')} : ` +
    `!quantity(${value}).isGreaterThan(quantity("0")) ? ${shown(value)} + " must be above zero" : ${belowMin})`
  );
}

/**
 * One injection's offered fields: the values each binds (the pod's value if good, else the namespace's,
 * else the configured one; a request kept at most its limit, as consistentRequests() keeps it) and the
 * validations that warn where the webhook ignores a value.
 */
class InjectionFields {
  readonly variables: Variable[] = [];
  readonly validations: Validation[] = [];

  constructor(private readonly injection: ResolvedInjection, private readonly index: number, private readonly applies: string) {
    const containers = [...(injection.containers ?? []), ...(injection.initContainers ?? [])];
    containers.forEach((container, containerIndex) => {
      const offered = injection.overrides!.map((override, overrideIndex) => ({ override, overrideIndex })).filter(({ override }) => override.container === container.name);
      for (const { override, overrideIndex } of offered) this.choose(container, override, overrideIndex);
      for (const name of ['cpu', 'memory']) this.keepRequestAtMostLimit(container, containerIndex, offered, name);
      for (const { override, overrideIndex } of offered) this.warn(container, override, overrideIndex);
    });
  }

  private name(overrideIndex: number, part: string): string {
    return `ov${this.index}o${overrideIndex}${part}`;
  }

  private ref(overrideIndex: number, part: string): string {
    return `variables.${this.name(overrideIndex, part)}`;
  }

  private choose(container: ContainerSpec, override: ContainerOverride, overrideIndex: number): void {
    const key = celString(override.annotation);
    const configured = celString(configuredOverrideValue(container, override) ?? '');
    const pod = `${key} in ${ANNOTATIONS} && ${acceptsCel(override, `${ANNOTATIONS}[${key}]`)}`;
    const namespace = override.fromNamespace ? `${key} in ${NAMESPACE_ANNOTATIONS} && ${acceptsCel(override, `${NAMESPACE_ANNOTATIONS}[${key}]`)}` : 'false';
    const good = (part: string) => this.ref(overrideIndex, part);
    this.variables.push(
      { name: this.name(overrideIndex, 'Pod'), expression: pod },
      { name: this.name(overrideIndex, 'Namespace'), expression: namespace },
      { name: this.name(overrideIndex, 'Source'), expression: `${good('Pod')} ? "pod" : ${good('Namespace')} ? "namespace" : "config"` },
      // The namespace's annotations are bound only when some override reads them (the apiserver refuses a reference to an unbound variable).
      { name: this.name(overrideIndex, 'Chosen'), expression: `${good('Pod')} ? ${ANNOTATIONS}[${key}] : ${override.fromNamespace ? `${good('Namespace')} ? ${NAMESPACE_ANNOTATIONS}[${key}] : ` : ''}${configured}` },
    );
  }

  /**
   * A request above its limit (or a limit below its request): the overridden side(s) back to the
   * configured value, each bound as `Final` (and where it came from, `FinalSource`).
   */
  private keepRequestAtMostLimit(container: ContainerSpec, containerIndex: number, offered: readonly { override: ContainerOverride; overrideIndex: number }[], name: string): void {
    const side = (kind: 'requests' | 'limits') => offered.find(({ override }) => 'resource' in override && override.resource === `${kind}.${name}`);
    const request = side('requests');
    const limit = side('limits');
    if (!request && !limit) return;
    const configuredOf = (kind: 'requests' | 'limits') => {
      const value = configuredResource(container, kind, name);
      return celString(value === undefined ? '' : String(value));
    };
    const requestValue = request ? this.ref(request.overrideIndex, 'Chosen') : configuredOf('requests');
    const limitValue = limit ? this.ref(limit.overrideIndex, 'Chosen') : configuredOf('limits');
    const clash = `ov${this.index}c${containerIndex}${name}Clash`;
    this.variables.push({ name: clash, expression: `${requestValue} != "" && ${limitValue} != "" && quantity(${requestValue}).isGreaterThan(quantity(${limitValue}))` });
    for (const [entry, kind] of [[request, 'requests'], [limit, 'limits']] as const) {
      if (!entry) continue;
      const i = entry.overrideIndex;
      this.variables.push(
        { name: this.name(i, 'Reverted'), expression: `variables.${clash} && ${this.ref(i, 'Source')} != "config"` },
        { name: this.name(i, 'Final'), expression: `${this.ref(i, 'Reverted')} ? ${configuredOf(kind)} : ${this.ref(i, 'Chosen')}` },
        { name: this.name(i, 'FinalSource'), expression: `${this.ref(i, 'Reverted')} ? "config" : ${this.ref(i, 'Source')}` },
      );
      // Each names the other side as chosen, before either went back.
      const other = kind === 'requests' ? `" is above the ${name} limit " + ${limitValue}` : `" is below the ${name} request " + ${requestValue}`;
      this.clashMessages.set(i, { expression: this.ref(i, 'Reverted'), other });
    }
  }

  private readonly clashMessages = new Map<number, { expression: string; other: string }>();

  private warn(container: ContainerSpec, override: ContainerOverride, overrideIndex: number): void {
    const key = celString(override.annotation);
    const resource = !('env' in override);
    const final = resource ? this.ref(overrideIndex, 'Final') : this.ref(overrideIndex, 'Chosen');
    const finalSource = resource ? this.ref(overrideIndex, 'FinalSource') : this.ref(overrideIndex, 'Source');
    const ignored = celString(` ignored (injection ${JSON.stringify(this.injection.name)}): `);
    const kept = `"; " + ${celString(`${container.name} keeps ${overrideFieldName(override)} `)} + (${final} == "" ? "(unset)" : ${final}) + (${finalSource} == "config" ? " as configured" : " from the " + ${finalSource})`;
    const onNamespace = `"namespace " + request.namespace + " annotation "`;
    this.validations.push({
      expression: `!(${this.applies} && ${key} in ${ANNOTATIONS} && !${this.ref(overrideIndex, 'Pod')})`,
      messageExpression: `"annotation " + ${key} + ${ignored} + ${rejectionCel(override, `${ANNOTATIONS}[${key}]`)} + ${kept}`,
    });
    if (override.fromNamespace) {
      this.validations.push({
        expression: `!(${this.applies} && !${this.ref(overrideIndex, 'Pod')} && ${key} in ${NAMESPACE_ANNOTATIONS} && !${this.ref(overrideIndex, 'Namespace')})`,
        messageExpression: `${onNamespace} + ${key} + ${ignored} + ${rejectionCel(override, `${NAMESPACE_ANNOTATIONS}[${key}]`)} + ${kept}`,
      });
    }
    const clash = this.clashMessages.get(overrideIndex);
    if (clash) {
      const chosen = this.ref(overrideIndex, 'Chosen');
      this.validations.push({
        expression: `!(${this.applies} && ${clash.expression})`,
        messageExpression: `(${this.ref(overrideIndex, 'Source')} == "pod" ? "annotation " : ${onNamespace}) + ${key} + ${ignored} + ${shown(chosen)} + ${clash.other} + ${kept}`,
      });
    }
  }
}

/** The webhook's warning for a key under an offered prefix that no override reads (a typo, or a field not offered). */
function notOffered(config: ResolvedInjectorConfig, applies: readonly string[]): Validation {
  const keys = annotationKeys(config.annotationPrefix);
  const known = new Set<string>([...offeredKeys(config), ...Object.values(keys)]);
  for (const injection of config.injections) {
    if (injection.trigger.type === 'annotation') known.add(injection.trigger.key);
    for (const key of Object.keys(injection.annotations ?? {})) known.add(key);
  }
  const unread = `${ANNOTATIONS}.filter(k, ${prefixed('k', offeredPrefixes(config))} && !(k in ${celStringList([...known])}))`;
  const key = `${unread}[0]`;
  const prefix = `${key}.substring(0, ${key}.indexOf("/") + 1)`;
  return {
    expression: `!((${applies.join(' || ')}) && size(${unread}) > 0)`,
    messageExpression: `"annotation " + (size(${key}) > 253 ? ${key}.substring(0, 253) : ${key}) + " ignored: no injection offers it as an override (offered: " + ${celStringList(offeredKeys(config))}.filter(o, o.startsWith(${prefix})).join(", ") + ")"`,
  };
}
