// What the engine answers, besides the AdmissionResponse: a decision with a named reason for every
// injection, the warnings to count, the override values chosen; and what it is told beside the request.

import type { AdmissionResponse } from './admission-review';
import type { PatchOperation } from './pod-patch-builder';
import type { QosClass } from './qos';
import type { IgnoredOverride, OverrideOutcome } from './container-overrides';
import type { RevisionChooser } from '../config';

/** Why an injection did or did not change an object: logged at debug level and counted by label. */
export type DecisionReason =
  | 'disabled'
  | 'out-of-scope'
  | 'opted-out'
  | 'already-injected'
  | 'trigger-not-met'
  | 'render-failed'
  | 'no-change'
  | 'injected'
  /** An injection in audit mode whose trigger holds: nothing added, a warning says what would be. */
  | 'audit';

/** What became of one injection for one admission request. */
export interface InjectionDecision {
  /** The injection's `name`. */
  readonly injection: string;
  /** Why it did or did not change the object. */
  readonly reason: DecisionReason;
}

/**
 * A way an injection makes the pod worse, named so the server can count it (a metric label) next to
 * the warning the response carries.
 */
export type PodWarningReason = 'qos-class-changed' | 'job-never-completes' | 'override-ignored' | 'audit' | 'pod-resources';

/** A warning about what one injection did to the pod, with a reason to count it by. */
export interface PodWarning {
  /** The `name` of the injection that caused it. */
  readonly injection: string;
  /** The kind of harm: `qos-class-changed`, `job-never-completes`, or `pod-resources` (the pod's `spec.resources` or the injected containers' resources changed to keep a pod with pod-level resources valid). */
  readonly reason: PodWarningReason;
  /** The warning's text; in the response's `warnings` when `shown`. */
  readonly message: string;
  /**
   * Whether the client sees it (the response's `warnings`): only what a user can act on, a class
   * lowered (Guaranteed to Burstable), a Job kept from finishing, or a pod's pod-level resources
   * changed (`pod-resources`). A class raised (a plain BestEffort
   * pod that a sidecar's requests make Burstable) is counted, not shown.
   */
  readonly shown: boolean;
  /** For `override-ignored`: the offered annotation (`(not offered)` for a key no override offers) and why. */
  readonly override?: {
    /** The annotation key as the config offers it; `(not offered)` for one it does not (never a key from the request). */
    readonly annotation: string;
    /** Why the value was not used; `namespace-unknown` when the namespace's defaults could not be read,
     * `template-injected-before` when a workload's template kept the values of its first injection. */
    readonly reason: IgnoredOverride['reason'] | 'namespace-unknown' | 'template-injected-before';
  };
  /** For `qos-class-changed`: the class before and after this injection. */
  readonly qosClass?: {
    /** The pod's QoS class before the injection. */
    readonly before: QosClass;
    /** The pod's QoS class after the injection. */
    readonly after: QosClass;
  };
}

/** Who chose a revision nobody serves: the namespace's label, the object's, or a webhook entry whose
 * revision the loaded config lacks (`missing-revision`). Fixed words: a metric's label values. */
export type UnservedRevisionChooser = RevisionChooser | 'missing-revision';

/** Everything {@link evaluate} works out for one admission request. */
export interface MutationResult {
  /** The AdmissionResponse to send: allowed, with the base64 JSON patch and any warnings (refused only for an unserved revision label under `refuse`). */
  readonly response: AdmissionResponse;
  /** One decision per configured injection, in config order (none for a pod's status write, which no injection decides). */
  readonly decisions: readonly InjectionDecision[];
  /** The JSON patch as operations (the decoded form of `response.patch`); empty when nothing changes. */
  readonly patch: readonly PatchOperation[];
  /** Every class change and Job warning, to count; those `shown` are also in `response.warnings`. */
  readonly podWarnings: readonly PodWarning[];
  /** Each offered override field of the injections applied now: its value and where it came from. */
  readonly overrides: readonly OverrideOutcome[];
  /** Set on the answer for a revision label naming nothing served (unservedRevisionAnswer): who chose. */
  readonly unserved?: UnservedRevisionChooser;
}

/** What the engine is told beside the request: what the AdmissionReview does not carry. */
export interface EvaluationContext {
  /**
   * The annotations of the request's namespace that overrides with `fromNamespace` read (the webhook
   * keeps only those keys); undefined when not known.
   */
  readonly namespaceAnnotations?: Readonly<Record<string, string>>;
  /** Why the namespace's annotations are not known (no list yet, a full table): its defaults are then
   * not applied, and the answer says so. */
  readonly namespaceUnknown?: string;
}

