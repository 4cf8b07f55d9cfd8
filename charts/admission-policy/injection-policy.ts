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
import { JsonValue, ResolvedInjection, ResolvedInjectorConfig, type TargetKind, initialReadinessCondition, readinessConditionMissingCel } from '../../webhook/config';
import type { AdmissionPolicyApiVersion, MutatingAdmissionPolicySpec, Variable } from './admission-policy-types';
import { celValue } from './cel-text';
import { mutationGroups, readsWhatALaterOneAdds } from './mutation-groups';
import { TO_JSON_PATCH, foldedPatch, op } from './mutation-text';
import { groupPatchData } from './group-patch';
import { PolicyWriter, anchored } from './policy-writer';
import { TEMPLATE_SHAPES, type TemplateShape, policyResourceRules, shapesOf } from './template-shapes';


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

/** The injections of one template shape, the kinds its policy matches, and a writer per injection. */
export interface ShapeMembers {
  readonly shape: TemplateShape;
  readonly members: readonly ResolvedInjection[];
  readonly kinds: readonly TargetKind[];
  readonly writers: readonly PolicyWriter[];
}

/** `chosen` (injections of `config`) grouped by the template shapes they target, in shape order. */
export function membersByShape(config: ResolvedInjectorConfig, chosen: readonly ResolvedInjection[]): ShapeMembers[] {
  return (Object.keys(TEMPLATE_SHAPES) as TemplateShape[]).flatMap((shape) => {
    const members = chosen.filter((injection) => shapesOf(injection).includes(shape));
    if (members.length === 0) return [];
    const kinds = TEMPLATE_SHAPES[shape].kinds.filter((kind) => members.some((injection) => injection.targetKinds.includes(kind)));
    return [{ shape, members, kinds, writers: members.map((injection) => new PolicyWriter(injection, config, shape, kinds)) }];
  });
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
  for (const { shape, members, kinds, writers } of membersByShape(config, chosen)) {
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
        matchConstraints: { resourceRules: policyResourceRules(kinds), matchPolicy: 'Equivalent' },
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

