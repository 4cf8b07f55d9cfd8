// Renders one injection of the shared InjectorConfig as MutatingAdmissionPolicy specs that do, inside
// the kube-apiserver, what the webhook's engine (webhook/engine/mutate.ts) does for that injection:
// the same trigger, opt-out, status annotation, name clashes (the user's container wins), placeholders
// and merges. Every mutation is one CEL JSONPatch built from the admitted object, so nothing is
// replaced that the webhook would keep: ApplyConfiguration cannot be used, because the apiserver rejects
// any apply configuration that touches an atomic list or struct (a container's `args`, an env var's
// `secretKeyRef`), and injected containers have those.
//
// There is one policy per place the pod template sits (Pod, `spec.template`, CronJob's
// `spec.jobTemplate.spec.template`), so each CEL expression reads one fixed path, with its injections
// in the order of the config, as few mutations as can share one (mutation-groups.ts): the apiserver
// runs separate policies in no fixed order (seen on 1.32: not by name either), but a policy's
// mutations in order, which keeps the webhook's order of containers and of the status annotation.

import { RE2JS } from 're2js';
import {
  ContainerMerge,
  ContainerSpec,
  JsonObject,
  JsonValue,
  ResolvedInjection,
  ResolvedInjectorConfig,
  TargetKind,
  annotationKeys,
  injectionHashEntry,
  placeholdersIn,
  initialReadinessCondition,
  readinessConditionMissingCel,
  readinessConditionType,
} from '../../webhook/config';
import type { AdmissionPolicyApiVersion, MatchCondition, MutatingAdmissionPolicySpec, NamedRuleWithOperations, Variable } from './admission-policy-types';
import { PlaceholderExpressions, celFieldPresent, celFieldSelect, celString, celStringList, celTemplateString, celValue, jsonPointerToken } from './cel-text';
import { withLimitsAtRequests } from '../../webhook/engine/qos';
import { podGuaranteedExpression, podLevelResourcesExpression } from './qos-cel';
import { mutationGroups, nonGuaranteedContainers, readsWhatALaterOneAdds } from './mutation-groups';
import { overrideMarks } from './override-cel';

/** Where the pod template sits in the admitted object. */
export type TemplateShape = 'pods' | 'workloads' | 'cronjobs';

interface ShapeDefinition {
  readonly kinds: readonly TargetKind[];
  /** CEL expression of the pod (template). */
  readonly template: string;
  /** JSON pointer of the pod (template). */
  readonly pointer: string;
  /** CEL condition: the object has a pod (template) spec with containers. */
  readonly present: string;
}

export const TEMPLATE_SHAPES: Readonly<Record<TemplateShape, ShapeDefinition>> = {
  pods: {
    kinds: ['Pod'],
    template: 'object',
    pointer: '',
    present: 'has(object.spec) && has(object.spec.containers)',
  },
  workloads: {
    kinds: ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'],
    template: 'object.spec.template',
    pointer: '/spec/template',
    present: 'has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && has(object.spec.template.spec.containers)',
  },
  cronjobs: {
    kinds: ['CronJob'],
    template: 'object.spec.jobTemplate.spec.template',
    pointer: '/spec/jobTemplate/spec/template',
    present:
      'has(object.spec) && has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec) && has(object.spec.jobTemplate.spec.template) && ' +
      'has(object.spec.jobTemplate.spec.template.spec) && has(object.spec.jobTemplate.spec.template.spec.containers)',
  },
};

/** The names a mutation binds the pod (template)'s own labels and annotations to (empty maps when it has none). */
const POD_MAPS = { labels: 'podLabels', annotations: 'podAnnotations' } as const;

const RESOURCE_OF_KIND: Record<TargetKind, { group: string; resource: string }> = {
  Pod: { group: '', resource: 'pods' },
  Deployment: { group: 'apps', resource: 'deployments' },
  StatefulSet: { group: 'apps', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', resource: 'replicasets' },
  Job: { group: 'batch', resource: 'jobs' },
  CronJob: { group: 'batch', resource: 'cronjobs' },
};

/** The policy of one template shape: its injections in config order, in as few mutations as can share one. */
export interface ShapePolicy {
  readonly shape: TemplateShape;
  /** The injections it applies, in the order of its mutations. */
  readonly injections: readonly string[];
  readonly spec: MutatingAdmissionPolicySpec;
  /**
   * The values each mutation binds, by name, before the injections' parts (`variables.<name>` in an
   * expression refers to an earlier one): a guard of a shared mutation's injection reads them.
   */
  readonly bindings: readonly Variable[];
}

/** Why an injection cannot be rendered as a policy; it then stays on the webhook. */
export interface PolicyLimitation {
  /** The injection's name. */
  readonly injection: string;
  /** What CEL cannot express, and why. */
  readonly reason: string;
}

export interface InjectionPolicySettings {
  /** What the apiserver does when a CEL expression fails. */
  readonly failurePolicy: 'Ignore' | 'Fail';
  /**
   * The `admissionregistration.k8s.io` version emitted, which tells the Kubernetes releases that will
   * run the policies. @default 'v1'
   */
  readonly apiVersion?: AdmissionPolicyApiVersion;
}

/**
 * The reasons an injection cannot be expressed faithfully in CEL, empty when it can. Checked: the
 * annotation trigger's valuePattern must be RE2 (CEL's `matches`); config validation already refuses
 * any other pattern, so for a valid config this is always empty: everything the webhook applies,
 * QoS preservation, the first position of native sidecars and merge keys like `nvidia.com/gpu`
 * included, the policies apply too.
 */
export function policyLimitations(injection: ResolvedInjection): string[] {
  const reasons: string[] = [];
  const trigger = injection.trigger;
  if (trigger.type === 'annotation' && trigger.valuePattern !== undefined) {
    try {
      RE2JS.compile(anchored(trigger.valuePattern));
    } catch (error) {
      reasons.push(`trigger.valuePattern ${JSON.stringify(trigger.valuePattern)} is not RE2 syntax, which CEL's matches() needs (${(error as Error).message})`);
    }
  }
  return reasons;
}

/** The injections of `config` that cannot be policies, each with its reasons. */
export function configPolicyLimitations(config: ResolvedInjectorConfig): PolicyLimitation[] {
  return config.injections.flatMap((injection) => policyLimitations(injection).map((reason) => ({ injection: injection.name, reason })));
}

/** The template shapes an injection's target kinds use. */
export function shapesOf(injection: ResolvedInjection): TemplateShape[] {
  return (Object.keys(TEMPLATE_SHAPES) as TemplateShape[]).filter((shape) => TEMPLATE_SHAPES[shape].kinds.some((kind) => injection.targetKinds.includes(kind)));
}

/**
 * The policies of `injections` (names of injections of `config`, which CEL can express): one per
 * template shape any of them targets, with its injections in config order, in as few mutations as can
 * share one (mutation-groups.ts).
 */
export function shapePolicies(config: ResolvedInjectorConfig, injections: readonly string[], settings: InjectionPolicySettings): ShapePolicy[] {
  const chosen = config.injections.filter((injection) => injections.includes(injection.name));
  for (const injection of chosen) {
    const limitations = policyLimitations(injection);
    if (limitations.length > 0) throw new Error(`injection "${injection.name}" cannot be an admission policy: ${limitations.join('; ')}`);
  }
  const policies: ShapePolicy[] = [];
  for (const shape of Object.keys(TEMPLATE_SHAPES) as TemplateShape[]) {
    const members = chosen.filter((injection) => shapesOf(injection).includes(shape));
    if (members.length === 0) continue;
    const kinds = TEMPLATE_SHAPES[shape].kinds.filter((kind) => members.some((injection) => injection.targetKinds.includes(kind)));
    const writers = members.map((injection) => new PolicyWriter(injection, config, shape, kinds));
    const groups = mutationGroups(members).map((group) => group.map((injection) => writers[members.indexOf(injection)]));
    const data = groups.map((group) => (group.length === 1 ? group[0].patchData() : groupPatchData(group)));
    // Pods: the policy's conditions lead its mutation instead of being match conditions, and it is not
    // reinvoked. The apiserver converts the object for CEL once per match-condition evaluation and
    // per mutation, and reinvokes a policy whose mutation ran in the same admission, even when it
    // changed nothing, evaluating its match conditions again first (policy/mutating/dispatcher.go):
    // so match conditions cost two conversions per injected pod, and reinvocation without them a
    // second run of the mutation. Folded and not reinvoked, an injected pod costs one mutation. Not
    // when an injection reads a label or annotation a later one adds: the second run applies it, as
    // the webhook's does. Nor on v1alpha1 (Kubernetes 1.32, 1.33), whose cel-go plans the whole
    // expression again at every evaluation: a pod nothing applies to would pay for planning the
    // mutation rather than its match conditions, six times the text.
    const folded = shape === 'pods' && (settings.apiVersion ?? 'v1') !== 'v1alpha1' && !readsWhatALaterOneAdds(members);
    const conditions = writers[0].sharedConditions();
    policies.push({
      shape,
      injections: members.map((injection) => injection.name),
      bindings: writers[0].sharedVariables(),
      spec: {
        matchConstraints: { resourceRules: resourceRules(kinds), matchPolicy: 'Equivalent' },
        ...(folded
          ? {}
          : {
              matchConditions: [
                ...conditions,
                // Necessary for any mutation to change the object (each mutation's guard, or-ed), so the
                // apiserver does not call a policy that would change nothing: it re-decodes an object a
                // mutation ran on, even with an empty patch, and that changes what it stores. A Job whose
                // labels were defaulted from its template's then no longer gets the selector labels the
                // apiserver adds to the template, where an unpatched Job (the webhook's answer) does.
                { name: 'an-injection-applies', expression: writers.map((writer) => `(${writer.guardExpression()})`).join(' || ') },
              ],
            }),
        // One mutation per run of injections that can share one (mutation-groups.ts): the apiserver's
        // cost is per mutation.
        mutations: data.map((adds) => ({ patchType: 'JSONPatch', jsonPatch: { expression: folded ? foldedPatch(conditions, adds) : `${adds}${TO_JSON_PATCH}` } })),
        failurePolicy: settings.failurePolicy,
        // Another policy or webhook may add a label or annotation an injection triggers on, or an
        // injection one that an earlier one reads: reinvoked, the policy applies it.
        reinvocationPolicy: folded ? 'Never' : 'IfNeeded',
      },
    });
  }
  return policies;
}

/**
 * The policy that sets the readiness gate's condition True on a pod's first status write (the
 * kubelet's), what the webhook's second entry does: matched only while the pod has the gate and no
 * condition for it, and Fail, so a write it did not see is refused and written again (a pod without
 * the condition is never Ready).
 */
export function readinessConditionPolicySpec(prefix: string): MutatingAdmissionPolicySpec {
  const condition = celValue(initialReadinessCondition(prefix) as unknown as JsonValue, { name: '""', namespace: '""', annotation: '""' });
  const expression =
    `(has(object.status) && has(object.status.conditions) ? [${op('"/status/conditions/-"', condition)}] : ` +
    `has(object.status) ? [${op('"/status/conditions"', `[${condition}]`)}] : ` +
    `[${op('"/status"', `{"conditions": [${condition}]}`)}])${TO_JSON_PATCH}`;
  return {
    matchConstraints: {
      resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods/status'], operations: ['UPDATE'], scope: 'Namespaced' }],
      matchPolicy: 'Equivalent',
    },
    matchConditions: [{ name: 'readiness-condition-missing', expression: readinessConditionMissingCel(prefix) }],
    mutations: [{ patchType: 'JSONPatch', jsonPatch: { expression } }],
    failurePolicy: 'Fail',
    reinvocationPolicy: 'Never',
  };
}

function resourceRules(kinds: readonly TargetKind[]): NamedRuleWithOperations[] {
  const rules: NamedRuleWithOperations[] = [];
  if (kinds.includes('Pod')) {
    // Pods cannot change their containers after creation: CREATE only, as the webhook.
    rules.push({ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' });
  }
  for (const group of ['apps', 'batch']) {
    const resources = kinds.filter((kind) => kind !== 'Pod' && RESOURCE_OF_KIND[kind].group === group).map((kind) => RESOURCE_OF_KIND[kind].resource);
    if (resources.length > 0) rules.push({ apiGroups: [group], apiVersions: ['v1'], resources, operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' });
  }
  return rules;
}

function anchored(pattern: string): string {
  return `^(?:${pattern})$`;
}

/** Every path from the root of `fields` to a value (objects are walked, everything else is a leaf). */
function fieldPaths(fields: JsonObject, prefix: string[] = []): string[][] {
  const paths: string[][] = [];
  for (const [key, value] of Object.entries(fields)) {
    const path = [...prefix, key];
    paths.push(path);
    if (isObject(value)) paths.push(...fieldPaths(value, path));
  }
  return paths;
}

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** `{"path": ..., "value": ...}`: one JSONPatch add, as plain data until the mutation turns it into JSONPatch. */
function op(path: string, value: string): string {
  return `{"path": dyn(${path}), "value": dyn(${value})}`;
}

/** `cond ? [item] : []` */
function when(condition: string, item: string): string {
  return `(${condition} ? [${item}] : [])`;
}

function concat(lists: string[]): string {
  return lists.length === 0 ? '[]' : lists.join(' + ');
}

class PolicyWriter {
  private readonly shapeDefinition: ShapeDefinition;
  private readonly template: string;
  private readonly pointer: string;
  private readonly keys: { inject: string; status: string; hashes: string };

  constructor(
    private readonly injection: ResolvedInjection,
    private readonly config: ResolvedInjectorConfig,
    private readonly shape: TemplateShape,
    /** The kinds the shape's policy matches (a mutation checks the kind when its injection targets fewer). */
    private readonly policyKinds: readonly TargetKind[],
  ) {
    this.shapeDefinition = TEMPLATE_SHAPES[shape];
    this.template = this.shapeDefinition.template;
    this.pointer = this.shapeDefinition.pointer;
    this.keys = annotationKeys(config.annotationPrefix);
  }

  /** This injection's own conditions as one CEL condition, on one line, read from the object alone. */
  guardExpression(): string {
    return this.ownConditions().map((condition) => `(${condition.expression})`).join(' && ');
  }

  /**
   * This injection's mutation, as a list of adds in parentheses: its own conditions (kind, status,
   * trigger, placeholders) guard the adds, which are none when they do not hold. A mutation has no
   * match conditions of its own, so each condition is one line of the guard after a `// <name>`
   * comment line: reading the policy (or `mutationGuard()`) still tells which condition kept an
   * injection out.
   */
  patchData(): string {
    return `(${guardedPatch(this.ownConditions(), bindInOrder(this.variables(), 'patch', 'own'))})`;
  }

  /**
   * Whether this injection shares its mutation: it then leaves lists, metadata maps and the status
   * annotation to the mutation, and gives its part, `[content, labels, annotations, applied]`: three
   * lists of adds, and `[[name, name=hash]]` when it adds anything (else `[]`), for the status and the
   * hashes annotation.
   */
  grouped = false;

  /** This injection's part of a shared mutation, all empty when its guard fails. */
  sectionsExpression(): string {
    return guardedPatch(this.ownConditions(true), bindInOrder(this.variables(), 'sections', 'own'), '[[], [], [], []]');
  }

  /** Injections before this one in its shared mutation: their sections' variable and injection. */
  earlier: { variable: string; injection: ResolvedInjection }[] = [];

  /** CEL (with a leading operator, or empty): the sidecars earlier injections of the shared mutation insert first. */
  private earlierFirstInserts(operator: string): string {
    const pattern = celString(`^${this.pointer}/spec/initContainers/[0-9]+$`);
    const counts = this.earlier
      .filter(({ injection }) => (injection.nativeSidecars ?? 'never') !== 'never' && injection.nativeSidecarPosition === 'first')
      .map(({ variable }) => `size(variables.${variable}[0].filter(p, string(p.path).matches(${pattern})))`);
    return counts.length === 0 ? '' : `${operator}${counts.join(' + ')}`;
  }

  /** CEL (` && ...`, or empty): no earlier injection of the shared mutation added a container that is
   * not itself Guaranteed, so the pod's class is still the one computed from the object. */
  private earlierKeptGuaranteed(): string {
    const added = celString(`^${this.pointer}/spec/(containers/-|initContainers/(-|[0-9]+))$`);
    const terms = this.earlier.flatMap(({ variable, injection }) => {
      const names = nonGuaranteedContainers(injection);
      if (names.length === 0) return [];
      return [`!variables.${variable}[0].exists(p, string(p.path).matches(${added}) && string(p.value.name) in ${celStringList(names)})`];
    });
    // Containers do not change the class of a pod with pod-level resources.
    return terms.length === 0 ? '' : ` && ((${podLevelResourcesExpression(this.template)}) || (${terms.join(' && ')}))`;
  }

  /** The injection's name. */
  get name(): string {
    return this.injection.name;
  }

  get injectionOf(): ResolvedInjection {
    return this.injection;
  }

  /**
   * The values every injection of a policy computes alike from the object: its name and namespace, the
   * names in the status annotation, the containers those injections added and every container name,
   * the user's containers, and whether the pod is Guaranteed.
   */
  sharedVariables(): Variable[] {
    const t = this.template;
    const inline = this.inlinePlaceholders();
    // `namespace` is a reserved word in CEL, so no variable is called after its placeholder.
    const metadataMap = (map: 'labels' | 'annotations') => `has(${t}.metadata) && has(${t}.metadata.${map}) ? ${t}.metadata.${map} : {}`;
    const vars: Variable[] = [
      { name: 'objectName', expression: inline.name },
      { name: 'objectNamespace', expression: inline.namespace },
      { name: POD_MAPS.labels, expression: metadataMap('labels') },
      { name: POD_MAPS.annotations, expression: metadataMap('annotations') },
      { name: 'statusNames', expression: this.statusNamesExpression() },
    ];
    // Containers that injections listed in the status annotation added: the injector's, not the user's.
    const injectedBy = this.config.injections
      .map((other) => ({ name: other.name, containers: [...(other.containers ?? []), ...(other.initContainers ?? [])].map((c) => c.name) }))
      .filter((other) => other.containers.length > 0)
      .map((other) => `(${celString(other.name)} in variables.statusNames ? ${celStringList(other.containers)} : [])`);
    // Most pods carry no status yet: then none.
    vars.push({ name: 'injectedContainers', expression: injectedBy.length === 0 ? '[]' : `size(variables.statusNames) == 0 ? [] : ${injectedBy.join(' + ')}` });
    vars.push({ name: 'takenContainerNames', expression: `${t}.spec.containers.map(c, c.name) + (has(${t}.spec.initContainers) ? ${t}.spec.initContainers.map(c, c.name) : [])` });
    vars.push({ name: 'userContainers', expression: `size(variables.injectedContainers) == 0 ? ${t}.spec.containers : ${t}.spec.containers.filter(c, !(c.name in variables.injectedContainers))` });
    vars.push({ name: 'podGuaranteed', expression: podGuaranteedExpression(t) });
    return vars;
  }

  /** CEL: the names the status annotation lists now. */
  statusNamesExpression(): string {
    return `${this.templateHas('annotations', this.keys.status, true)} ? ${this.templateValue('annotations', this.keys.status, true)}.split(",").map(s, s.trim()).filter(s, s != "" && s != "true" && s != "false") : []`;
  }

  /** The template's CEL expression and JSON pointer, and the status annotation key. */
  get place(): { template: string; pointer: string; statusKey: string } {
    return { template: this.template, pointer: this.pointer, statusKey: this.keys.status };
  }

  /**
   * The hashes annotation's key and CEL for the entries already there (a list of at most one
   * string), which this injection's `name=hash` entries follow, as the webhook appends them.
   */
  get hashesPlace(): { key: string; existing: string } {
    const value = this.templateValue('annotations', this.keys.hashes, true);
    return { key: this.keys.hashes, existing: `(${this.templateHas('annotations', this.keys.hashes, true)} && ${value} != "" ? [${value}] : [])` };
  }

  // --- metadata reads ----------------------------------------------------------------------------

  /**
   * CEL: the pod template's own map (`labels` or `annotations`) has `key`. `bound`: read from the map
   * the mutation binds (`podLabels`, `podAnnotations`), where the expression is inside its bindings.
   */
  private templateHas(map: 'labels' | 'annotations', key: string, bound = false): string {
    if (bound) return `(${celString(key)} in variables.${POD_MAPS[map]})`;
    return `(has(${this.template}.metadata) && has(${this.template}.metadata.${map}) && ${celString(key)} in ${this.template}.metadata.${map})`;
  }

  private templateValue(map: 'labels' | 'annotations', key: string, bound = false): string {
    return bound ? `variables.${POD_MAPS[map]}[${celString(key)}]` : `${this.template}.metadata.${map}[${celString(key)}]`;
  }

  /**
   * CEL: the pod (template)'s `map` has `key`. A workload's own metadata and its pod template's both
   * count; the template's wins on a clash. `inShared`: inside the shared mutation's bindings, where a
   * key an earlier injection of it adds to the template counts as the template's (`readThrough`), as
   * the webhook's next trigger sees it.
   */
  private mergedHas(map: 'labels' | 'annotations', key: string, inShared = false, readThrough = inShared): string {
    const added = readThrough ? this.earlierAdd(map, key) : undefined;
    const template = added ? `(${this.templateHas(map, key, inShared)} || ${added.has})` : this.templateHas(map, key, inShared);
    if (this.shape === 'pods') return template;
    return `(${template} || (has(object.metadata.${map}) && ${celString(key)} in object.metadata.${map}))`;
  }

  private mergedValue(map: 'labels' | 'annotations', key: string, inShared = false, readThrough = inShared): string {
    const added = readThrough ? this.earlierAdd(map, key) : undefined;
    const has = this.templateHas(map, key, inShared);
    const value = this.templateValue(map, key, inShared);
    const own = this.shape === 'pods' ? undefined : `object.metadata.${map}[${celString(key)}]`;
    if (!added) return own === undefined ? value : `(${has} ? ${value} : ${own})`;
    const otherwise = own === undefined ? added.value : `(${added.has} ? ${added.value} : ${own})`;
    return `(${has} ? ${value} : ${otherwise})`;
  }

  /**
   * CEL reading the part of the earlier injection of the shared mutation that adds `key` to the
   * template's `map` (at most one does: mutation-groups.ts): whether it adds it (it does when its guard
   * held and the template lacks the key), and the value it adds.
   */
  private earlierAdd(map: 'labels' | 'annotations', key: string): { has: string; value: string } | undefined {
    const adder = this.earlier.find(({ injection }) => key in (injection[map] ?? {}));
    if (!adder) return undefined;
    const adds = `variables.${adder.variable}[${map === 'labels' ? 1 : 2}]`;
    const pointer = celString(`${this.pointer}/metadata/${map}/${jsonPointerToken(key)}`);
    return { has: `${adds}.exists(p, string(p.path) == ${pointer})`, value: `string(${adds}.filter(p, string(p.path) == ${pointer})[0].value)` };
  }

  // --- conditions --------------------------------------------------------------------------------

  /**
   * Placeholder values as expressions that need no variables (matchConditions cannot read them);
   * `inShared`: inside the mutation's bindings, reading the object's name and namespace it binds, and
   * the trigger annotation as the shared mutation's earlier injections leave it.
   */
  private inlinePlaceholders(inShared = false): PlaceholderExpressions {
    return {
      name: inShared
        ? 'string(variables.objectName)'
        : 'string(has(object.metadata.name) && object.metadata.name != "" ? object.metadata.name : (has(object.metadata.generateName) ? object.metadata.generateName : ""))',
      namespace: inShared ? 'string(variables.objectNamespace)' : 'string(request.namespace != "" ? request.namespace : (has(object.metadata.namespace) ? object.metadata.namespace : ""))',
      annotation: this.injection.trigger.type === 'annotation' ? `string(${this.mergedValue('annotations', this.injection.trigger.key, inShared)})` : '""',
    };
  }

  /** The policy's match conditions: the same for every injection of the shape. */
  sharedConditions(): MatchCondition[] {
    const inject = this.keys.inject;
    return [
      { name: 'pod-spec-present', expression: this.shapeDefinition.present },
      {
        name: 'not-opted-out',
        expression: `!(${this.mergedHas('annotations', inject)} && ${this.mergedValue('annotations', inject)}.trim().lowerAscii() == "false")`,
      },
    ];
  }

  /**
   * What must hold for this injection in particular, each with a name. `inShared`: inside its shared
   * mutation, reading the values it binds (the status names, the pod's labels and annotations), and
   * where the trigger also sees the labels and annotations earlier injections of it add.
   */
  ownConditions(inShared = false): MatchCondition[] {
    const conditions: MatchCondition[] = [];
    const kinds = this.shapeDefinition.kinds.filter((kind) => this.injection.targetKinds.includes(kind));
    if (kinds.length < this.policyKinds.length) {
      conditions.push({ name: 'target-kind', expression: `request.kind.kind in ${celStringList(kinds)}` });
    }
    conditions.push({
      name: 'not-already-injected',
      // The names as the webhook reads them ("true" and "false" are none).
      expression: inShared
        ? `!(${celString(this.injection.name)} in variables.statusNames)`
        : `!(${this.templateHas('annotations', this.keys.status)} && ${this.templateValue('annotations', this.keys.status)}.split(",").exists(s, s.trim() == ${celString(this.injection.name)}))`,
    });
    const trigger = this.triggerCondition(inShared);
    if (trigger !== undefined) conditions.push({ name: 'trigger', expression: trigger });
    const placeholders = this.placeholderCondition(inShared);
    if (placeholders !== undefined) conditions.push({ name: 'placeholders-have-values', expression: placeholders });
    return conditions;
  }

  /** The trigger as a CEL condition; undefined for `always`. */
  triggerCondition(inShared = false): string | undefined {
    const trigger = this.injection.trigger;
    switch (trigger.type) {
      case 'always':
        return undefined;
      case 'requested': {
        // "true" asks for nothing in particular and "false" is the opt-out, so neither names an injection.
        if (this.injection.name === 'true' || this.injection.name === 'false') return 'false';
        // Read from the object as admitted, never through: the webhook reads <prefix>/inject once.
        const inject = this.keys.inject;
        return `${this.mergedHas('annotations', inject, inShared, false)} && ${this.mergedValue('annotations', inject, inShared, false)}.split(",").exists(s, s.trim() == ${celString(this.injection.name)})`;
      }
      case 'annotation': {
        const present = this.mergedHas('annotations', trigger.key, inShared);
        if (trigger.valuePattern === undefined) return present;
        return `${present} && ${this.mergedValue('annotations', trigger.key, inShared)}.matches(${celString(anchored(trigger.valuePattern))})`;
      }
      case 'labelSelector': {
        const terms: string[] = [];
        for (const [key, value] of Object.entries(trigger.matchLabels ?? {})) {
          terms.push(`(${this.mergedHas('labels', key, inShared)} && ${this.mergedValue('labels', key, inShared)} == ${celString(value)})`);
        }
        for (const requirement of trigger.matchExpressions ?? []) {
          const has = this.mergedHas('labels', requirement.key, inShared);
          const valueIn = `${this.mergedValue('labels', requirement.key, inShared)} in ${celStringList(requirement.values ?? [])}`;
          switch (requirement.operator) {
            case 'In':
              terms.push(`(${has} && ${valueIn})`);
              break;
            case 'NotIn':
              terms.push(`!(${has} && ${valueIn})`);
              break;
            case 'Exists':
              terms.push(has);
              break;
            case 'DoesNotExist':
              terms.push(`!${has}`);
              break;
          }
        }
        return terms.length === 0 ? 'true' : terms.join(' && ');
      }
    }
  }

  /** A placeholder with an empty value skips the injection, as does a label it would make invalid. */
  private placeholderCondition(inShared: boolean): string | undefined {
    const used = new Set<string>();
    const visit = (value: unknown): void => {
      if (typeof value === 'string') placeholdersIn(value).forEach((name) => used.add(name));
      else if (Array.isArray(value)) value.forEach(visit);
      else if (isObject(value)) Object.values(value).forEach(visit);
    };
    const injection = this.injection;
    for (const field of ['containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges'] as const) {
      visit(injection[field]);
    }
    if (used.size === 0) return undefined;
    const inline = this.inlinePlaceholders(inShared);
    const terms = [...used].sort().map((name) => `${inline[name as keyof PlaceholderExpressions]} != ""`);
    for (const value of Object.values(injection.labels ?? {})) {
      if (!value.includes('{{')) continue;
      const rendered = celTemplateString(value, inline);
      terms.push(`size(${rendered}) <= 63 && (${rendered}).matches("^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")`);
    }
    return terms.join(' && ');
  }

  // --- variables: what to add, as plain data --------------------------------------------------------

  private variables(): Variable[] {
    const t = this.template;
    const injection = this.injection;
    const vars: Variable[] = [];
    const add = (name: string, expression: string) => vars.push({ name, expression });
    // `namespace` is a reserved word in CEL, so no variable is called after its placeholder.
    // What every injection of a shared mutation reads alike is bound once, by the mutation.
    if (!this.grouped) vars.push(...this.sharedVariables());
    if (injection.trigger.type === 'annotation') add('triggerValue', this.inlinePlaceholders(true).annotation);
    const placeholders: PlaceholderExpressions = { name: 'string(variables.objectName)', namespace: 'string(variables.objectNamespace)', annotation: 'string(variables.triggerValue)' };
    const value = (json: unknown) => celValue(json as JsonValue, placeholders);


    const contentOps: string[] = [];
    // Containers, init containers, volumes and pull secrets: appended, never replacing the user's own.
    const listAdditions: { field: 'containers' | 'initContainers' | 'volumes' | 'imagePullSecrets'; variable: string; taken: (name: string) => string }[] = [
      { field: 'containers', variable: 'addContainers', taken: (name) => `${celString(name)} in variables.takenContainerNames` },
      { field: 'initContainers', variable: 'addInitContainers', taken: (name) => `${celString(name)} in variables.takenContainerNames` },
      { field: 'volumes', variable: 'addVolumes', taken: (name) => `(has(${t}.spec.volumes) && ${t}.spec.volumes.exists(v, v.name == ${celString(name)}))` },
      { field: 'imagePullSecrets', variable: 'addImagePullSecrets', taken: (name) => `(has(${t}.spec.imagePullSecrets) && ${t}.spec.imagePullSecrets.exists(s, s.name == ${celString(name)}))` },
    ];
    // Native sidecars: the injection's containers, as init containers with restartPolicy Always,
    // in the pods that `nativeSidecars` names; appended before the injection's own init containers.
    const native = this.nativeSidecarCondition();
    if (native !== 'false') add('nativeSidecars', native);
    const first = native !== 'false' && injection.nativeSidecarPosition === 'first';
    // qos 'preserve-guaranteed': in a Guaranteed pod, the injected containers' limits are their requests.
    const preserve = injection.qos === 'preserve-guaranteed';
    if (preserve) add('guaranteed', `variables.podGuaranteed${this.earlierKeptGuaranteed()}`);
    const asNative = (item: object) => ({ ...item, restartPolicy: 'Always' });
    // Overrides: each offered field's value chosen from the pod's and the namespace's annotations
    // (override-cel.ts), read from the object as admitted, not from what earlier injections add.
    const podReads = { has: (key: string) => this.mergedHas('annotations', key, true, false), value: (key: string) => this.mergedValue('annotations', key, true, false) };
    const bound = new Set<string>();
    const bind = (name: string, expression: string) => {
      if (!bound.has(name)) add(name, expression);
      bound.add(name);
      return `variables.${name}`;
    };
    const containerValue = (item: object, transform: (item: object) => object) => {
      const marks = overrideMarks(injection, item as ContainerSpec, podReads, bind);
      const render = (json: object) => (marks ? marks.replace(value(json)) : value(json));
      const source = marks ? marks.item : item;
      const plain = render(transform(source));
      if (!preserve) return `dyn(${plain})`;
      const limited = render(transform(withLimitsAtRequests(source as JsonObject)));
      return limited === plain ? `dyn(${plain})` : `(variables.guaranteed ? dyn(${limited}) : dyn(${plain}))`;
    };
    for (const { field, variable, taken } of listAdditions) {
      const items = (injection[field] ?? []) as readonly { name: string }[];
      const isContainer = field === 'containers' || field === 'initContainers';
      /** Each item's add condition and value. */
      const itemAdds = (list: readonly { name: string }[], condition: string, transform: (item: object) => object = (item) => item) =>
        list.map((item) => ({ condition: `${condition}!(${taken(item.name)})`, value: isContainer ? containerValue(item, transform) : `dyn(${value(item)})` }));
      const itemList = (adds: readonly { condition: string; value: string }[]) => adds.map(({ condition, value: item }) => when(condition, item));
      // In a shared mutation the list exists when the items are appended (the mutation makes it): each
      // item is its own add.
      const itemOps = (adds: readonly { condition: string; value: string }[], pointer: string) => adds.map(({ condition, value: item }) => when(condition, op(pointer, item)));
      const adds: { condition: string; value: string }[] = [];
      const listPointer = celString(`${this.pointer}/spec/${field}`);
      const appendPointer = celString(`${this.pointer}/spec/${field}/-`);
      // Always native sidecars: no regular container at all.
      if (field === 'containers') adds.push(...(native === 'true' ? [] : itemAdds(items, native === 'false' ? '' : '!variables.nativeSidecars && ')));
      else if (field === 'initContainers') {
        if (first) {
          // Before the pod's own init containers, after those of earlier injections placed first (as
          // the webhook places every such sidecar of one admission): inserted one by one at the same
          // index, so in reverse order.
          const sidecars = itemAdds([...(injection.containers ?? [])].reverse(), 'variables.nativeSidecars && ', asNative);
          const inserts = this.earlierFirstInserts(' + ');
          add('firstIndex', inserts === '' ? this.firstIndexExpression() : `(${this.firstIndexExpression()})${inserts}`);
          const firstPointer = `${celString(`${this.pointer}/spec/${field}/`)} + string(variables.firstIndex)`;
          if (this.grouped) {
            contentOps.push(...itemOps(itemAdds(items, ''), appendPointer), ...itemOps(sidecars, firstPointer));
            continue;
          }
          add('addFirstInitContainers', concat(itemList(sidecars)));
          add(variable, concat(itemList(itemAdds(items, ''))));
          contentOps.push(
            `(size(variables.addFirstInitContainers) + size(variables.${variable}) == 0 ? [] : ` +
              `(has(${t}.spec.${field}) ? variables.${variable}.map(item, ${op(appendPointer, 'item')}) : [${op(listPointer, `variables.${variable}`)}]) + ` +
              `variables.addFirstInitContainers.map(item, ${op(firstPointer, 'item')}))`,
          );
          continue;
        }
        if (native !== 'false') adds.push(...itemAdds(injection.containers ?? [], 'variables.nativeSidecars && ', asNative));
        adds.push(...itemAdds(items, ''));
      } else adds.push(...itemAdds(items, ''));
      if (adds.length === 0) continue;
      if (this.grouped) {
        contentOps.push(...itemOps(adds, appendPointer));
        continue;
      }
      add(variable, concat(itemList(adds)));
      contentOps.push(`(size(variables.${variable}) == 0 ? [] : (has(${t}.spec.${field}) ? variables.${variable}.map(item, ${op(appendPointer, 'item')}) : [${op(listPointer, `variables.${variable}`)}]))`);
    }

    // Env vars and mounts: into each of the user's containers, skipping names (mount paths) it has.
    // Init containers shift by the sidecars that injections earlier in a shared mutation insert first.
    // A container's index: its name's first place among the container names (taken names start with them).
    const containerPointer = (list: 'containers' | 'initContainers', c: string) =>
      list === 'containers'
        ? `${celString(`${this.pointer}/spec/containers/`)} + string(variables.takenContainerNames.indexOf(${c}.name))`
        : `${celString(`${this.pointer}/spec/initContainers/`)} + string(${t}.spec.initContainers.map(x, x.name).indexOf(${c}.name)${this.earlierFirstInserts(' + ')})`;
    for (const [field, key] of [['env', 'name'], ['volumeMounts', 'mountPath']] as const) {
      const items = (injection[field] ?? []) as readonly Record<string, unknown>[];
      if (items.length === 0) continue;
      contentOps.push(`variables.userContainers.filter(c, !has(c.${field})).map(c, ${op(`${containerPointer('containers', 'c')} + "/${field}"`, value(items))})`);
      for (const item of items) {
        const id = celString(item[key] as string);
        contentOps.push(
          `variables.userContainers.filter(c, has(c.${field}) && !c.${field}.exists(x, x.${key} == ${id})).map(c, ${op(`${containerPointer('containers', 'c')} + "/${field}/-"`, value(item))})`,
        );
      }
    }

    // Merges: fields set inside the user's containers (and init containers) of the given names.
    (injection.merges ?? []).forEach((merge) => {
      for (const list of ['containers', 'initContainers'] as const) {
        contentOps.push(...this.mergeOps(merge, list, containerPointer, value));
      }
    });
    add('contentPatch', concat(contentOps));

    // Labels and annotations on the pod (template); a key already there keeps its value.
    for (const [map, variable] of [['labels', 'labelPatch'], ['annotations', 'annotationPatch']] as const) {
      const entries = Object.entries(injection[map] ?? {});
      add(
        variable,
        concat(entries.map(([key, text]) => when(`!${this.templateHas(map, key, true)}`, op(celString(`${this.pointer}/metadata/${map}/${jsonPointerToken(key)}`), value(text))))),
      );
    }
    // The readiness gate, once, when the injection changes anything (as the webhook adds it for an
    // injection applied now). An injection with the gate never shares a mutation with another one that
    // has it (mutation-groups.ts), so each sees the gates earlier mutations added and reads the pod's
    // own from the object; it makes the list when the pod has none (in a shared mutation too, where no
    // other injection appends to it).
    const gate = injection.readinessGate === true ? this.readinessGateAdd() : undefined;
    const changed = 'size(variables.contentPatch) + size(variables.labelPatch) + size(variables.annotationPatch) > 0';
    if (this.grouped) {
      if (gate) add('changed', changed);
      const applied = `${gate ? 'variables.changed' : changed} ? [${celStringList([injection.name, injectionHashEntry(injection)])}] : []`;
      const content = gate ? `variables.contentPatch + (!variables.changed || ${gate.present} ? [] : [${gate.add}])` : 'variables.contentPatch';
      // Lists of maps and of lists of strings: each dyn, as literals must be homogeneous.
      add('sections', `[dyn(${content}), dyn(variables.labelPatch), dyn(variables.annotationPatch), dyn(${applied})]`);
      return vars;
    }
    add('changed', changed);
    const content = gate ? `variables.contentPatch + (${gate.present} ? [] : [${gate.add}])` : 'variables.contentPatch';
    const metadata = `${this.pointer}/metadata`;
    const ensureMetadata = [
      when(`!has(${t}.metadata)`, op(celString(metadata), '{}')),
      when(`size(variables.labelPatch) > 0 && !(has(${t}.metadata) && has(${t}.metadata.labels))`, op(celString(`${metadata}/labels`), '{}')),
      when(`!(has(${t}.metadata) && has(${t}.metadata.annotations))`, op(celString(`${metadata}/annotations`), '{}')),
    ];
    const status = op(celString(`${metadata}/annotations/${jsonPointerToken(this.keys.status)}`), `(variables.statusNames + [${celString(injection.name)}]).join(",")`);
    // The injection's hash as configured, computed at synth: appended as the webhook appends it.
    const hashes = this.templateValue('annotations', this.keys.hashes, true);
    const hashesValue = `(${this.templateHas('annotations', this.keys.hashes, true)} && ${hashes} != "" ? ${hashes} + "," : "") + ${celString(injectionHashEntry(injection))}`;
    const hashesOp = op(celString(`${metadata}/annotations/${jsonPointerToken(this.keys.hashes)}`), hashesValue);
    add(
      'patch',
      `!variables.changed ? [] : ${content} + ${ensureMetadata.join(' + ')} + variables.labelPatch + variables.annotationPatch + [${status}, ${hashesOp}]`,
    );
    return vars;
  }

  /**
   * CEL: where this injection's first-placed native sidecars go among the init containers: after
   * those that earlier injections (in config order, listed in the status annotation) placed first.
   */
  private firstIndexExpression(): string {
    const t = this.template;
    const own = this.config.injections.indexOf(this.injection);
    const earlier = this.config.injections
      .slice(0, own < 0 ? 0 : own)
      .filter((other) => (other.nativeSidecars ?? 'never') !== 'never' && other.nativeSidecarPosition === 'first' && (other.containers ?? []).length > 0)
      .map((other) => `(${celString(other.name)} in variables.statusNames ? ${celStringList((other.containers ?? []).map((c) => c.name))} : [])`);
    if (earlier.length === 0) return '0';
    return `has(${t}.spec.initContainers) ? size(${t}.spec.initContainers.filter(c, c.name in ${concat(earlier)})) : 0`;
  }

  /** CEL: whether the pod (template) has the readiness gate, and the add that gives it the gate. */
  private readinessGateAdd(): { present: string; add: string } {
    const t = this.template;
    const type = celString(readinessConditionType(this.config.annotationPrefix));
    const gate = `{"conditionType": ${type}}`;
    const append = op(celString(`${this.pointer}/spec/readinessGates/-`), gate);
    const create = op(celString(`${this.pointer}/spec/readinessGates`), `[${gate}]`);
    return {
      present: `(has(${t}.spec.readinessGates) && ${t}.spec.readinessGates.exists(g, g.conditionType == ${type}))`,
      add: `has(${t}.spec.readinessGates) ? ${append} : ${create}`,
    };
  }

  /** CEL: this object's pod gets the injection's containers as native sidecars ('false' when never). */
  private nativeSidecarCondition(): string {
    const mode = this.injection.nativeSidecars ?? 'never';
    if (mode === 'never' || (this.injection.containers ?? []).length === 0) return 'false';
    if (mode === 'always') return 'true';
    // 'jobs': the pod template of a Job or CronJob, or a Pod a batch Job owns.
    switch (this.shape) {
      case 'cronjobs':
        return 'true';
      case 'workloads':
        return 'request.kind.kind == "Job"';
      case 'pods':
        return 'has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(o, o.kind == "Job" && o.apiVersion.startsWith("batch/"))';
    }
  }

  /**
   * One merge into one container list. `skip`: every nested object of `fields` must exist in the
   * container, or the merge leaves that container alone. `create`: a missing nested object is added
   * whole. A leaf that already has the value is not patched (so reinvocation finds nothing to do).
   */
  private mergeOps(
    merge: ContainerMerge,
    list: 'containers' | 'initContainers',
    containerPointer: (list: 'containers' | 'initContainers', c: string) => string,
    value: (json: unknown) => string,
  ): string[] {
    const t = this.template;
    const selected = `(has(${t}.spec.${list}) ? ${t}.spec.${list} : []).filter(c, !(c.name in variables.injectedContainers) && c.name in ${celStringList(merge.containerNames)})`;
    const ops: string[] = [];
    // A key that is no CEL identifier (`nvidia.com/gpu`) is a map key: indexed, and tested with `in`.
    const access = (path: string[]) => path.reduce(celFieldSelect, 'c');
    const present = (path: string[]) => celFieldPresent(access(path.slice(0, -1)), path[path.length - 1]);
    const pointerOf = (path: string[]) => `${containerPointer(list, 'c')} + ${celString('/' + path.map(jsonPointerToken).join('/'))}`;
    const hasAll = (paths: string[][]) => paths.map(present);
    const leafUnchanged = (path: string[], leaf: JsonValue) => `(${present(path)} && ${access(path)} == ${value(leaf)})`;
    const emit = (conditions: string[], path: string[], patchValue: JsonValue) => {
      ops.push(`${selected}.filter(c, ${conditions.join(' && ')}).map(c, ${op(pointerOf(path), value(patchValue))})`);
    };

    const objectPaths = fieldPaths(merge.fields).filter((path) => isObject(valueAt(merge.fields, path)));
    if ((merge.whenMissing ?? 'skip') === 'skip') {
      const guard = hasAll(objectPaths);
      for (const path of fieldPaths(merge.fields)) {
        const leaf = valueAt(merge.fields, path);
        if (isObject(leaf)) continue;
        emit([...guard, `!${leafUnchanged(path, leaf)}`], path, leaf);
      }
    } else {
      for (const path of fieldPaths(merge.fields)) {
        const node = valueAt(merge.fields, path);
        const parents = hasAll(objectPaths.filter((candidate) => candidate.length < path.length && candidate.every((key, index) => path[index] === key)));
        if (isObject(node)) emit([...parents, `!${present(path)}`], path, node);
        else emit([...parents, `!${leafUnchanged(path, node)}`], path, node);
      }
    }
    return ops;
  }
}

/**
 * `(\n  // name\n  (condition) &&\n  // name\n  (condition)\n) ? data : []`: the named conditions, one per
 * line, each after a CEL comment with its name, guarding `data`.
 */
function guardedPatch(conditions: readonly MatchCondition[], data: string, otherwise = '[]'): string {
  if (conditions.length === 0) return data;
  const lines = conditions.map((condition, index) => `  // ${condition.name}\n  (${condition.expression})${index < conditions.length - 1 ? ' &&' : ''}`);
  return `(\n${lines.join('\n')}\n) ? ${data} : ${otherwise}`;
}

/** The line a shared mutation starts with, naming its injections in order (read back by `mutationInjections`). */
const GROUP_LINE = /^\(\/\/ injections (\[.*\])\n/;

/**
 * One mutation for injections that can share it (mutation-groups.ts): each one's adds, computed from
 * the object as admitted, then once for all of them the lists they append to, the metadata maps and
 * the status annotation, which lists those that changed something, in order.
 */
function groupPatchData(writers: readonly PolicyWriter[]): string {
  writers.forEach((writer, index) => {
    writer.grouped = true;
    writer.earlier = writers.slice(0, index).map((earlier, member) => ({ variable: `m${member}`, injection: earlier.injectionOf }));
  });
  const { template: t, pointer, statusKey } = writers[0].place;
  const vars: Variable[] = [...writers[0].sharedVariables(), ...writers.map((writer, index) => ({ name: `m${index}`, expression: writer.sectionsExpression() }))];
  const add = (name: string, expression: string) => vars.push({ name, expression });
  // Only the parts that can hold adds of a kind are read: labels and annotations of the injections that set some.
  const holds = (writer: PolicyWriter, index: number) =>
    index === 0 || Object.keys(writer.injectionOf[index === 1 ? 'labels' : 'annotations'] ?? {}).length > 0;
  const section = (index: number) => {
    const parts = writers.flatMap((writer, member) => (holds(writer, index) ? [`variables.m${member}[${index}]`] : []));
    return parts.length === 0 ? '[]' : parts.join(' + ');
  };
  add('contentPatch', section(0));
  add('labelPatch', section(1));
  add('annotationPatch', section(2));
  // The injections that added anything, in order, each as [name, name=hash], for the status and the hashes.
  add('applied', writers.map((_, member) => `variables.m${member}[3]`).join(' + '));
  // A list the pod lacks is made before the first item is appended, when an injection that appends to it did.
  const appendsTo: Record<string, (injection: ResolvedInjection) => boolean> = {
    containers: (injection) => (injection.containers ?? []).length > 0 && (injection.nativeSidecars ?? 'never') !== 'always',
    initContainers: (injection) => (injection.initContainers ?? []).length > 0 || ((injection.nativeSidecars ?? 'never') !== 'never' && (injection.containers ?? []).length > 0),
    volumes: (injection) => (injection.volumes ?? []).length > 0,
    imagePullSecrets: (injection) => (injection.imagePullSecrets ?? []).length > 0,
  };
  const lists = Object.entries(appendsTo).flatMap(([field, appends]) => {
    const parts = writers.flatMap((writer, member) => (appends(writer.injectionOf) ? [`variables.m${member}[0]`] : []));
    if (parts.length === 0) return [];
    const adds = parts.length === 1 ? parts[0] : `(${parts.join(' + ')})`;
    return [when(`!has(${t}.spec.${field}) && ${adds}.exists(p, string(p.path).startsWith(${celString(`${pointer}/spec/${field}/`)}))`, op(celString(`${pointer}/spec/${field}`), '[]'))];
  });
  const metadata = `${pointer}/metadata`;
  const ensureMetadata = [
    when(`!has(${t}.metadata)`, op(celString(metadata), '{}')),
    when(`size(variables.labelPatch) > 0 && !(has(${t}.metadata) && has(${t}.metadata.labels))`, op(celString(`${metadata}/labels`), '{}')),
    when(`!(has(${t}.metadata) && has(${t}.metadata.annotations))`, op(celString(`${metadata}/annotations`), '{}')),
  ];
  const status = op(celString(`${metadata}/annotations/${jsonPointerToken(statusKey)}`), `(variables.statusNames + variables.applied.map(a, a[0])).join(",")`);
  // Each injection's hash as configured, computed at synth, for those that changed something, in order.
  const hashes = writers[0].hashesPlace;
  const hashesOp = op(celString(`${metadata}/annotations/${jsonPointerToken(hashes.key)}`), `(${hashes.existing} + variables.applied.map(a, a[1])).join(",")`);
  add(
    'patch',
    `size(variables.applied) == 0 ? [] : ` +
      `${[...lists, 'variables.contentPatch', ...ensureMetadata].join(' + ')} + variables.labelPatch + variables.annotationPatch + [${status}, ${hashesOp}]`,
  );
  return `(// injections ${JSON.stringify(writers.map((writer) => writer.name))}\n${bindInOrder(vars, 'patch', SHARED_SCOPE)})`;
}

/** What a shared mutation's values bound by depth are read through: `shared<depth>.<name>` (bindInOrder). */
export const SHARED_SCOPE = 'shared';

/** The injections a shared mutation applies, in order (undefined for a mutation of one injection). */
export function mutationInjections(expression: string): string[] | undefined {
  const match = GROUP_LINE.exec(patchData(expression));
  return match ? (JSON.parse(match[1]) as string[]) : undefined;
}

const GUARD_LINE = /^ {2}\/\/ ([a-z][a-z0-9-]*)\n {2}\((.*)\)( &&)?$/;

/**
 * The named conditions guarding the patch of a mutation of one injection, read back from its CEL
 * text (as `patchData` writes them: `((\n  // name\n  (condition) && ...\n) ? data : [])`), in
 * order; empty when it has none. A folded mutation's own conditions are `foldedConditions`.
 */
export function mutationGuard(expression: string): MatchCondition[] {
  return leadingGuard(patchData(expression));
}

/** The named conditions of the guard `text` starts with (after at most one character), or none. */
function leadingGuard(text: string): MatchCondition[] {
  const start = text.indexOf('(\n');
  const end = text.indexOf('\n) ? ');
  if (start < 0 || start > 1 || end < 0) return [];
  return guardConditions(text.slice(start + 2, end).split('\n'));
}

/** The named conditions of guard lines: pairs of a `// <name>` line and its `(<CEL>) &&` line. */
function guardConditions(lines: readonly string[]): MatchCondition[] {
  const conditions: MatchCondition[] = [];
  for (let index = 0; index + 1 < lines.length; index += 2) {
    const match = GUARD_LINE.exec(`${lines[index]}\n${lines[index + 1]}`);
    if (!match) throw new Error(`not a guard line: ${lines[index]} / ${lines[index + 1]}`);
    conditions.push({ name: match[1], expression: match[2] });
  }
  return conditions;
}

/**
 * The guards of each injection a mutation applies, in order: one for a mutation of one injection, one
 * per injection of a shared mutation (each injection's part starts with its guard lines).
 */
export function mutationGuards(expression: string): MatchCondition[][] {
  const blocks = [...patchData(expression).matchAll(/\(\n((?: {2}\/\/ [a-z][a-z0-9-]*\n {2}\(.*\)(?: &&)?\n)+)\) \? /g)];
  return blocks.map((block) => guardConditions(block[1].trimEnd().split('\n')));
}

/** Turns the list of `{path, value}` maps into the JSONPatch operations the apiserver applies. */
export const TO_JSON_PATCH = '.map(p, JSONPatch{op: "add", path: string(p.path), value: p.value})';

/**
 * The end of a folded mutation: its adds as JSONPatch, or when it has none a test that fails, which
 * leaves the object as it was (json_patch.go returns it without encoding the patched JSON and
 * decoding it again, as it does for an empty patch).
 */
export const FOLDED_TAIL = `].map(patch, size(patch) == 0 ? [JSONPatch{op: "test", path: "/kind", value: "no injection applies"}] : patch${TO_JSON_PATCH})[0]`;

/**
 * A mutation that carries its policy's conditions (a policy without match conditions):
 * `[(\n  // pod-spec-present\n  (...) && ...\n) ? (adds) : []]` then `FOLDED_TAIL`.
 */
function foldedPatch(conditions: readonly MatchCondition[], adds: string): string {
  return `[${guardedPatch(conditions, adds)}${FOLDED_TAIL}`;
}

/** Whether a mutation carries its policy's conditions (`foldedPatch`). */
export function isFolded(expression: string): boolean {
  return expression.startsWith('[(\n') && expression.endsWith(FOLDED_TAIL);
}

/** The policy's conditions a folded mutation starts with; undefined for another mutation. */
export function foldedConditions(expression: string): MatchCondition[] | undefined {
  return isFolded(expression) ? leadingGuard(expression.slice(1)) : undefined;
}

/**
 * The CEL of a mutation's adds, as a list of `{path, value}` maps, without the JSONPatch constructor
 * (the same constant text in every mutation): for a folded mutation the adds inside its policy's
 * conditions, else the whole expression before `TO_JSON_PATCH`.
 */
export function patchData(expression: string): string {
  if (isFolded(expression)) {
    const inner = expression.slice(1, -FOLDED_TAIL.length);
    const start = inner.indexOf('\n) ? ') + '\n) ? '.length;
    if (!inner.endsWith(' : []')) throw new Error(`not a folded mutation: ${expression.slice(0, 80)}...`);
    return inner.slice(start, -' : []'.length);
  }
  if (!expression.endsWith(TO_JSON_PATCH)) throw new Error(`not a mutation this backend writes: ${expression.slice(0, 80)}...`);
  return expression.slice(0, -TO_JSON_PATCH.length);
}

/**
 * The named expressions as one CEL expression computing `result`, each name bound once, in order.
 * Kubernetes 1.32 cannot read `spec.variables` from a mutation (its patch environment does not resolve
 * the `variables` type) and has no `cel.bind`, so the policy carries no variables: every value is
 * computed once, where the expression needs it, in a comprehension over one item:
 * `[value].map(name, rest)[0]`.
 *
 * What that costs at admission shapes the text. A name nothing reads is left out; one that is a
 * literal or another name, or that is read once outside any comprehension's loop, is written where it
 * is read (evaluated once there too, or not at all when a condition skips it). The others are bound
 * by depth: each value with the others that read none of the same depth's (in order), as a map
 * (`[{"a": dyn(..), "b": dyn(..)}].map(<scope><depth>, rest)[0]`, read as `<scope><depth>.a`), or
 * alone under its own name. The apiserver's cost tracker walks every enclosing comprehension for each
 * step it evaluates (cel-go's asCostTracker), so a dozen values nested one in another cost each later
 * step a dozen lookups; bound by depth, the deepest step is a few levels down.
 */
export function bindInOrder(named: readonly Variable[], result: string, scope = 'bound'): string {
  const local = (expression: string) => expression.replace(/\bvariables\.([A-Za-z_][A-Za-z0-9_]*)/g, '$1');
  const names = named.map((variable) => variable.name);
  if (new Set(names).size !== names.length) throw new Error(`a name is bound twice: ${names.join(', ')}`);
  // Which values are written where they are read, from the last: `texts[0]` is the result, the rest
  // the values kept so far, in order.
  const texts = [result];
  const kept: string[] = [];
  for (let index = named.length - 1; index >= 0; index--) {
    const { name } = named[index];
    const value = local(named[index].expression);
    const uses = texts.map((text) => identifierUses(text, name));
    const count = uses.reduce((sum, at) => sum + at.length, 0);
    if (count === 0) continue;
    const simple = /^(?:[A-Za-z_][A-Za-z0-9_]*|true|false|-?[0-9]+|\[\]|"")$/.test(value);
    const once = count === 1 && uses.every((at, text) => at.length === 0 || !inLoop(texts[text], at[0]));
    if (simple || once) {
      const replacement = simple ? value : `(${value})`;
      texts.forEach((text, at) => (texts[at] = replaceUses(text, uses[at], name.length, () => replacement)));
      continue;
    }
    texts.splice(1, 0, value);
    kept.unshift(name);
  }
  const values = texts.slice(1);
  // Depth: one more than the deepest value it reads, and never less than the value before it's, so the
  // values keep their order in the text (an injection's part before a later injection's).
  const depth: number[] = [];
  kept.forEach((_, index) => {
    const reads = Math.max(-1, ...kept.slice(0, index).map((other, at) => (identifierUses(values[index], other).length > 0 ? depth[at] : -1))) + 1;
    depth.push(Math.max(reads, depth[index - 1] ?? 0));
  });
  let body = texts[0];
  for (let level = Math.max(-1, ...depth); level >= 0; level--) {
    const members = kept.flatMap((name, index) => (depth[index] === level ? [{ name, value: values[index] }] : []));
    if (members.length === 1) {
      body = `[${members[0].value}].map(${members[0].name}, ${body})[0]`;
      continue;
    }
    const map = `${scope}${level}`;
    for (const { name } of members) body = replaceUses(body, identifierUses(body, name), name.length, () => `${map}.${name}`);
    body = `[{${members.map(({ name, value }) => `${celString(name)}: dyn(${value})`).join(', ')}}].map(${map}, ${body})[0]`;
  }
  return body;
}

/** `text` with the `length` characters at each of `uses` (ascending) replaced. */
function replaceUses(text: string, uses: readonly number[], length: number, replacement: () => string): string {
  let out = text;
  for (const at of [...uses].reverse()) out = out.slice(0, at) + replacement() + out.slice(at + length);
  return out;
}

/** Where CEL `text` reads the name `name`: not in a string literal or comment, nor as a field (`x.name`). */
function identifierUses(text: string, name: string): number[] {
  const uses: number[] = [];
  forEachCode(text, (index) => {
    if (!text.startsWith(name, index) || /[A-Za-z0-9_.]/.test(text[index - 1] ?? '') || /[A-Za-z0-9_]/.test(text[index + name.length] ?? '')) return;
    uses.push(index);
  });
  return uses;
}

/** Calls `visit` with every index of `text` that is CEL code: outside string literals and `//` comments. */
function forEachCode(text: string, visit: (index: number) => void): void {
  for (let index = 0; index < text.length; index++) {
    if (text[index] === '"') {
      for (index++; index < text.length && text[index] !== '"'; index++) if (text[index] === '\\') index++;
      continue;
    }
    if (text.startsWith('//', index)) {
      index = text.indexOf('\n', index);
      if (index < 0) return;
      continue;
    }
    visit(index);
  }
}

const MACRO = /\.(?:map|filter|exists|exists_one|all)\($/;

/**
 * Whether `at` in CEL `text` is inside the loop body of a comprehension (`list.map(x, <here>)` and the
 * like), which runs once per element. A binding (`[value].map(name, <here>)[0]`) runs it once: not a loop.
 */
function inLoop(text: string, at: number): boolean {
  const closing: Record<number, number> = {};
  const opened: number[] = [];
  forEachCode(text, (index) => {
    const char = text[index];
    if (char === '(' || char === '[' || char === '{') opened.push(index);
    else if (char === ')' || char === ']' || char === '}') closing[opened.pop()!] = index;
  });
  const openingOf = Object.fromEntries(Object.entries(closing).map(([open, close]) => [close, Number(open)]));
  let loop = false;
  forEachCode(text, (index) => {
    if (loop || text[index] !== '(' || index > at || !MACRO.test(text.slice(Math.max(0, index - 12), index + 1))) return;
    const close = closing[index];
    if (close === undefined || close < at) return;
    // The body starts after the comma that follows the iteration variable.
    const comma = text.indexOf(',', index);
    if (comma < 0 || comma > at) return;
    const dot = text.lastIndexOf('.', index);
    const receiverEnd = dot - 1;
    const receiverStart = openingOf[receiverEnd];
    const literalList = text[receiverEnd] === ']' && receiverStart !== undefined && !/[A-Za-z0-9_)\]]/.test(text.slice(0, receiverStart).trimEnd().slice(-1));
    const binding = literalList && text.startsWith('[0]', close + 1);
    if (!binding) loop = true;
  });
  return loop;
}

function valueAt(fields: JsonObject, path: string[]): JsonValue {
  let current: JsonValue = fields;
  for (const key of path) current = (current as JsonObject)[key];
  return current;
}
