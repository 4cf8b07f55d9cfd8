// The one injection config that both sides share: the construct writes it into the ConfigMap, the
// webhook loads it from there. This file and its siblings depend on nothing but the language (and
// re2js, the linear-time pattern engine), so the construct library does not pull in express and the
// webhook bundle does not pull in cdk8s.

import type { ContainerOverride } from './container-overrides';
import type { PodSecurityLevel } from './pod-security';

/** Any JSON value. Injected Kubernetes objects are kept as raw JSON so fields this library does not
 * know yet (the next Kubernetes release's) pass through untouched. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
/** A JSON object: string keys to JSON values (a Kubernetes object or part of one, as raw JSON). */
export interface JsonObject {
  [key: string]: JsonValue;
}

/** The kinds whose pods an injection can change: Pods themselves, or the pod templates of workloads. */
export const TARGET_KINDS = ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'] as const;
/** One of {@link TARGET_KINDS}: `Pod`, or a workload kind whose pod template (`spec.template`,
 * a CronJob's `spec.jobTemplate.spec.template`) is injected. */
export type TargetKind = (typeof TARGET_KINDS)[number];

/** The API group and REST resource (plural) of each target kind: what webhook rules, policy rules and previews match. */
export const TARGET_KIND_RESOURCES: Readonly<Record<TargetKind, { readonly group: string; readonly resource: string }>> = {
  Pod: { group: '', resource: 'pods' },
  Deployment: { group: 'apps', resource: 'deployments' },
  StatefulSet: { group: 'apps', resource: 'statefulsets' },
  DaemonSet: { group: 'apps', resource: 'daemonsets' },
  ReplicaSet: { group: 'apps', resource: 'replicasets' },
  Job: { group: 'batch', resource: 'jobs' },
  CronJob: { group: 'batch', resource: 'cronjobs' },
};

/** One admission rule (a webhook's, or a policy's resource rule). */
export interface TargetKindRule {
  /** The API groups (`''` for the core group). */
  readonly apiGroups: string[];
  /** Always `v1`. */
  readonly apiVersions: string[];
  /** The REST resources. */
  readonly resources: string[];
  /** `CREATE` for pods; `CREATE` and `UPDATE` for workloads. */
  readonly operations: ('CREATE' | 'UPDATE')[];
  /** Always `Namespaced`. */
  readonly scope: 'Namespaced';
}

/**
 * The admission rules that match `kinds`, the same for the webhook and the policies: pods on CREATE (a
 * pod's containers cannot change after creation), workloads on CREATE and UPDATE.
 */
export function targetKindRules(kinds: Iterable<TargetKind>): TargetKindRule[] {
  const wanted = new Set(kinds);
  const rules: TargetKindRule[] = [];
  if (wanted.has('Pod')) rules.push({ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' });
  for (const group of ['apps', 'batch']) {
    const resources = [...wanted].filter((kind) => kind !== 'Pod' && TARGET_KIND_RESOURCES[kind].group === group).map((kind) => TARGET_KIND_RESOURCES[kind].resource);
    if (resources.length > 0) rules.push({ apiGroups: [group], apiVersions: ['v1'], resources, operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' });
  }
  return rules;
}

/** The annotation prefix when none is set: annotations `sidecar-injector.io/inject` and `sidecar-injector.io/status`. */
export const DEFAULT_ANNOTATION_PREFIX = 'sidecar-injector.io';

/** A container as Kubernetes spells it (`name` and `image` required, every other field passed through). */
export interface ContainerSpec {
  /** Name of the container, a DNS-1123 label unique among the pod's containers and init containers.
   * When the pod already has a container of this name, the pod's own is kept and the response warns. */
  readonly name: string;
  /** Container image reference, such as `envoyproxy/envoy:v1.31.0` or a digest-pinned `repo@sha256:...`. */
  readonly image: string;
  readonly [field: string]: unknown;
}

/** A pod volume as Kubernetes spells it (`name` required, the source passed through). */
export interface VolumeSpec {
  /** Name of the volume, a DNS-1123 label unique in the pod; when the pod already has a volume of
   * this name, the pod's own is kept and the response warns. */
  readonly name: string;
  readonly [field: string]: unknown;
}

/** A volume mount as Kubernetes spells it. */
export interface VolumeMountSpec {
  /** Name of the pod volume to mount (one of the pod's volumes or an injected one). */
  readonly name: string;
  /** Absolute path inside the container where the volume is mounted; a container that already
   * mounts something at this path keeps its own mount and the response warns. */
  readonly mountPath: string;
  readonly [field: string]: unknown;
}

/** An environment variable as Kubernetes spells it (`value` or `valueFrom`). */
export interface EnvVarSpec {
  /** Name of the environment variable (letters, digits, `-`, `_` and `.`, not starting with a digit);
   * a container that already sets it keeps its own value and the response warns. */
  readonly name: string;
  readonly [field: string]: unknown;
}

/** One requirement of a Kubernetes label selector's `matchExpressions`: a label key, an operator and values. */
export interface LabelSelectorRequirement {
  /** The label key the requirement applies to, a qualified name such as `app.kubernetes.io/name`. */
  readonly key: string;
  /** `In` / `NotIn`: the label's value is (not) one of `values`; `Exists` / `DoesNotExist`: the
   * label is present (absent) whatever its value. */
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  /** Label values: non-empty for `In` and `NotIn`, left out for `Exists` and `DoesNotExist`.
   * @default none */
  readonly values?: readonly string[];
}

/** Injects into every object of the target kinds that reaches the webhook. */
export interface AlwaysTrigger {
  /** Discriminates the trigger kind: `always`. */
  readonly type: 'always';
}

/** Injects when the object carries annotation `key`; its value is `{{annotation}}` in templates. */
export interface AnnotationTrigger {
  /** Discriminates the trigger kind: `annotation`. */
  readonly type: 'annotation';
  /** The annotation key to look for, a qualified name such as `example.com/wait-for`; on workloads
   * both the object's and the pod template's annotations count, the template's winning on a clash. */
  readonly key: string;
  /**
   * A regular expression in RE2 syntax (the syntax of Kubernetes CEL's `matches()`) that the whole
   * value must match, as if written `^(?:pattern)$`. RE2 matches in linear time; a pattern RE2 does
   * not accept (backreferences, lookaround) fails validation.
   * @default any value
   */
  readonly valuePattern?: string;
}

/** Injects when the object's labels match, with Kubernetes label selector semantics. */
export interface LabelSelectorTrigger {
  /** Discriminates the trigger kind: `labelSelector`. */
  readonly type: 'labelSelector';
  /** Labels the object must carry with exactly these values (ANDed with `matchExpressions`).
   * At least one of `matchLabels` and `matchExpressions` is required.
   * @default none */
  readonly matchLabels?: Readonly<Record<string, string>>;
  /** Requirements the object's labels must all meet (ANDed with `matchLabels`).
   * @default none */
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Injects only when the object's `<prefix>/inject` annotation lists this injection's name. */
export interface RequestedTrigger {
  /** Discriminates the trigger kind: `requested`. */
  readonly type: 'requested';
}

/** When an injection applies, told apart by `type`: `always`, `annotation`, `labelSelector` or `requested`.
 * Whatever the trigger, an object annotated `<prefix>/inject: "false"` gets no injection. */
export type InjectionTrigger = AlwaysTrigger | AnnotationTrigger | LabelSelectorTrigger | RequestedTrigger;

/** Sets fields inside the object's own containers, selected by name. */
export interface ContainerMerge {
  /** Names of the containers (and init containers) to merge into. */
  readonly containerNames: readonly string[];
  /** The fields to set, as a nested object: `{ readinessProbe: { initialDelaySeconds: 10 } }`. */
  readonly fields: JsonObject;
  /**
   * What to do when a nested object of `fields` does not exist in the container: `skip` leaves the
   * container alone (a probe without a handler would be rejected by the apiserver); `create` adds it.
   * @default 'skip'
   */
  readonly whenMissing?: 'skip' | 'create';
}

/** What an injection does about the pod's QoS class (Guaranteed, Burstable, BestEffort). */
export const QOS_POLICIES = ['warn', 'preserve-guaranteed'] as const;
/** One of {@link QOS_POLICIES}: `warn` or `preserve-guaranteed`; see {@link Injection.qos}. */
export type QosPolicy = (typeof QOS_POLICIES)[number];

/** What an injection does to a pod that sets pod-level resources (`spec.resources`, Kubernetes 1.34+). */
export const POD_RESOURCES_POLICIES = ['add', 'share'] as const;
/** One of {@link POD_RESOURCES_POLICIES}: `add` or `share`; see {@link Injection.podResources}. */
export type PodResourcesPolicy = (typeof POD_RESOURCES_POLICIES)[number];

/** Whether an injection changes pods (`enforce`) or only says what it would add (`audit`). */
export const INJECTION_MODES = ['enforce', 'audit'] as const;
/** `enforce` (the default) or `audit`: see Injection.mode. */
export type InjectionMode = (typeof INJECTION_MODES)[number];

/** Which pods get an injection's `containers` as native sidecars instead of regular containers. */
export const NATIVE_SIDECAR_MODES = ['never', 'jobs', 'always'] as const;
/** One of {@link NATIVE_SIDECAR_MODES}: `never`, `jobs` (Job pods only) or `always`; see {@link Injection.nativeSidecars}. */
export type NativeSidecarMode = (typeof NATIVE_SIDECAR_MODES)[number];

/** Where native sidecars go among the pod's init containers. */
export const NATIVE_SIDECAR_POSITIONS = ['first', 'last'] as const;
/** One of {@link NATIVE_SIDECAR_POSITIONS}; see {@link Injection.nativeSidecarPosition}. */
export type NativeSidecarPosition = (typeof NATIVE_SIDECAR_POSITIONS)[number];

/**
 * One injection: the containers, volumes, env, metadata and merges the webhook adds to the pods
 * whose objects meet its trigger. Applied at most once per pod (the status annotation records it).
 */
export interface Injection {
  /** Unique name; recorded in the status annotation and requested through `<prefix>/inject`. */
  readonly name: string;
  /** When this injection applies to an object of its target kinds. */
  readonly trigger: InjectionTrigger;
  /** The kinds this injection changes: `Pod` injects each pod as it is created; a workload kind
   * (Deployment, Job, ...) injects its pod template, so the stored workload shows the injection.
   * @default ['Pod'] */
  readonly targetKinds?: readonly TargetKind[];
  /** Containers appended to `spec.containers`. */
  readonly containers?: readonly ContainerSpec[];
  /** Containers appended to `spec.initContainers`; `restartPolicy: Always` makes a native sidecar. */
  readonly initContainers?: readonly ContainerSpec[];
  /** Volumes appended to `spec.volumes`. */
  readonly volumes?: readonly VolumeSpec[];
  /** Mounts added to each of the object's own containers. */
  readonly volumeMounts?: readonly VolumeMountSpec[];
  /** Environment variables added to each of the object's own containers. */
  readonly env?: readonly EnvVarSpec[];
  /** Secrets of type `kubernetes.io/dockerconfigjson` in the pod's namespace, appended to
   * `spec.imagePullSecrets` (for injected images in a private registry); ones already listed are skipped.
   * @default none */
  readonly imagePullSecrets?: readonly {
    /** Name of the Secret, in the pod's namespace. */
    readonly name: string;
  }[];
  /** Labels added to the pod (the pod template's metadata for workloads). */
  readonly labels?: Readonly<Record<string, string>>;
  /** Annotations added to the pod (the pod template's metadata for workloads). */
  readonly annotations?: Readonly<Record<string, string>>;
  /** Fields merged into existing containers. */
  readonly merges?: readonly ContainerMerge[];
  /**
   * What to do when the injection would change the pod's QoS class. `warn`: the admission response
   * warns (and the reason is counted). `preserve-guaranteed`: in a pod that is Guaranteed, the
   * injected containers' cpu and memory limits are set equal to their requests, so it stays
   * Guaranteed; every injected container must then request cpu and memory.
   * @default 'warn'
   */
  readonly qos?: QosPolicy;
  /**
   * What to do when the pod sets pod-level resources (`spec.resources`, on by default from Kubernetes
   * 1.34), where the apiserver refuses a pod whose containers' requests add up to more than the pod's
   * requests, or a container whose limit is above the pod's limit. `add`: the injected containers'
   * requests are added to the pod's cpu, memory and hugepages requests and their limits (a request where
   * no limit is set) to the pod's limits, so the app keeps its budget. `share`: the pod's budget stays as
   * written and the injected containers live inside it: their cpu and memory requests are set to 0 and
   * their limits lowered to the pod's (hugepages cannot be shared, and are added). Only the resources the
   * pod sets at pod level change; the response warns with what changed, by how much.
   * @default 'add'
   */
  readonly podResources?: PodResourcesPolicy;
  /**
   * `audit` changes no pod: where the injection would apply, the webhook adds nothing and answers with a
   * warning naming what it would have added; the metrics (`reason="audit"`), `status` (the `audit`
   * state) and the reconciler's reports count those pods. For rehearsing a new injection on a live
   * cluster. On the policy backend, a ValidatingAdmissionPolicy gives the same warning (validationActions
   * Warn and Audit) where its MutatingAdmissionPolicy would have applied the injection.
   * @default 'enforce'
   */
  readonly mode?: InjectionMode;
  /**
   * Which pods get this injection's `containers` as native sidecars (init containers with
   * `restartPolicy: Always`, Kubernetes 1.29+) instead of regular containers. A regular container
   * keeps a Job's pod running forever, so `jobs` is the choice for anything that targets Job pods:
   * pods a Job owns, and the pod templates of Jobs and CronJobs. Otherwise the response warns.
   * @default 'never'
   */
  readonly nativeSidecars?: NativeSidecarMode;
  /**
   * Where native sidecars go among the pod's init containers: `first` starts them before the pod's
   * own init containers (which can then use them), `last` after.
   * @default 'last'
   */
  readonly nativeSidecarPosition?: NativeSidecarPosition;
  /**
   * Adds a readiness gate to the pods this injection is applied to (`<prefix>/sidecars-ready`), so
   * `rollout --in-place` can take a pod out of its Services' endpoints before it replaces a sidecar's
   * image. The injector sets the gate's condition True on the pod's first status write (the webhook,
   * through a second, `failurePolicy: Fail` entry for `pods/status` that the apiserver calls only
   * while the condition is missing; or a MutatingAdmissionPolicy), so a pod is never held back when
   * no rollout runs; only `rollout --in-place` sets it False, and back to True. A pod created without
   * the gate cannot get it later (Kubernetes does not allow readinessGates to change): switching it on
   * marks the pods injected before as outdated.
   * @default false
   */
  readonly readinessGate?: boolean;
  /**
   * The Pod Security level this injection's containers, volumes, merges and annotations must meet.
   * Set, a violation fails validation (and synth). Left out, the injector's level applies; when
   * neither is set, synth warns about every "restricted" violation.
   * @default the injector's `podSecurity`
   */
  readonly podSecurity?: PodSecurityLevel;
  /**
   * Fields of this injection's containers that app teams may set per workload by annotation (a
   * resource quantity within bounds, an env var's value from a fixed set), merged field by field: an
   * override of `requests.cpu` leaves every other request and limit as configured. A value that does
   * not parse, is out of bounds or would put a request above its limit is ignored, with a warning
   * naming the annotation, and the configured value applies. Changing what may be overridden restarts
   * nothing (it is not part of the injection's hash).
   * @default none
   */
  readonly overrides?: readonly ContainerOverride[];
}

/** One complete set of injections under a name, validated exactly as a config's `injections` are. */
export interface InjectionRevision {
  /** The revision's name, a DNS-1123 label of at most 40 characters (`r1`, `envoy-1-31`): the value of
   * `<prefix>/rev` that chooses it, recorded on every pod it injects (`<prefix>/revision`). */
  readonly name: string;
  /** The injections of this revision, applied in this order; names are unique within the revision.
   * Two revisions may add containers of the same name: a pod gets one revision only. */
  readonly injections: readonly Injection[];
}

/** A revision with its injections' defaults filled in. */
export interface ResolvedRevision extends InjectionRevision {
  readonly injections: readonly ResolvedInjection[];
}

/** A name that points at a revision: `stable`, `canary`. Promoting or rolling back is moving a tag. */
export interface RevisionTag {
  /** The tag's name, a DNS-1123 label of at most 40 characters that is not also a revision's name. */
  readonly name: string;
  /** The revision it points at. */
  readonly revision: string;
  /** Whether the namespaces the injector is enabled in, and that carry no `<prefix>/rev` label, get this
   * tag's revision. Exactly one tag is the default. @default false */
  readonly default?: boolean;
}

/** What a pod labelled (or in a namespace labelled) with a revision or tag the config does not serve gets. */
export const UNSERVED_REVISION_ACTIONS = ['warn', 'refuse'] as const;
/** `warn`: admitted uninjected, with a warning naming the label; `refuse`: denied with that message. */
export type UnservedRevisionAction = (typeof UNSERVED_REVISION_ACTIONS)[number];

/** The webhook's whole configuration, as written in the ConfigMap's `config.json`: settings and injections. */
export interface InjectorConfig {
  /** Prefix of the `inject` and `status` annotations. @default 'sidecar-injector.io' */
  readonly annotationPrefix?: string;
  /** `false` admits everything unchanged: a kill switch without redeploying the webhook. @default true */
  readonly enabled?: boolean;
  /**
   * The Pod Security level every injection must meet unless it sets its own: a violation fails
   * validation. Left out, violations of "restricted" are warnings.
   * @default none
   */
  readonly podSecurity?: PodSecurityLevel;
  /** The injections, applied in this order; names are unique. Empty when `revisions` are given. */
  readonly injections: readonly Injection[];
  /**
   * Complete sets of injections served side by side, each chosen by a namespace's or pod template's
   * `<prefix>/rev` label (its name, or a tag's). Given, `injections` is empty and `tags` names the default.
   * @default none: `injections` is the one set, for every enabled namespace
   */
  readonly revisions?: readonly InjectionRevision[];
  /** Names that point at revisions; exactly one is the default. Required with `revisions`. @default none */
  readonly tags?: readonly RevisionTag[];
  /**
   * What a pod gets whose `<prefix>/rev` label (its own or its namespace's) names no served revision or
   * tag: `warn` admits it uninjected with a warning naming the label, `refuse` denies it with that message.
   * @default 'warn'
   */
  readonly unservedRevision?: UnservedRevisionAction;
}

/** An InjectorConfig whose defaults are filled in: what the construct writes and the webhook loads. */
export interface ResolvedInjectorConfig extends InjectorConfig {
  readonly annotationPrefix: string;
  readonly enabled: boolean;
  /** The injections, each with its defaults filled in, in the order written. */
  readonly injections: readonly ResolvedInjection[];
  /** The revisions, each with its injections' defaults filled in. */
  readonly revisions?: readonly ResolvedRevision[];
  /** Set on one revision's view of a config (revisionConfig): the revision the engine records on the pods it injects. */
  readonly revision?: string;
}

/** An Injection whose defaults are filled in (`targetKinds`). */
export interface ResolvedInjection extends Injection {
  readonly targetKinds: readonly TargetKind[];
}

/** The file name of the config inside the mounted ConfigMap directory. */
export const CONFIG_FILE_NAME = 'config.json';

/**
 * The annotation on each MutatingAdmissionPolicy that holds the whole resolved config as JSON (what
 * the webhook's ConfigMap holds as `config.json`), so `status --from` reads a policy backend's output too.
 */
export const POLICY_CONFIG_ANNOTATION = 'sidecar-injector.io/config.json';

/**
 * Beside POLICY_CONFIG_ANNOTATION, with revisions: the config's `tags` as JSON, kept apart so that moving a
 * tag changes one short line per policy; `status --from` puts them back into the config.
 */
export const POLICY_TAGS_ANNOTATION = 'sidecar-injector.io/tags.json';

/** The most bytes (keys plus values) the apiserver accepts in one object's annotations. */
export const ANNOTATIONS_SIZE_LIMIT = 256 * 1024;

/**
 * The two annotation keys for an annotation prefix: `inject` (`<prefix>/inject`, set by users: a
 * comma-separated list of injection names to request, or `"false"` to opt out) and `status`
 * (`<prefix>/status`, set by the webhook: the comma-separated names of the injections applied), and
 * `hashes` (`<prefix>/injection-hashes`, set beside it: `name=hash` of each injection applied, see injectionHash).
 */
export function annotationKeys(prefix: string): {
  /** `<prefix>/inject`: the annotation users set to request injections by name or opt out with `"false"`. */
  inject: string;
  /** `<prefix>/status`: the annotation the webhook sets to the names of the injections it applied. */
  status: string;
  /** `<prefix>/injection-hashes`: `name=hash,...` of the injections applied, as configured when applied. */
  hashes: string;
  /** `<prefix>/previous-images`: written by `rollout --in-place` beside the images it replaced (JSON:
   * the hashes annotation and each container's image before), so `rollout --in-place --undo` can put them back. */
  previousImages: string;
  /** `<prefix>/revision`: set by the injector beside the status, with revisions: the revision that injected the pod. */
  revision: string;
} {
  return {
    inject: `${prefix}/inject`,
    status: `${prefix}/status`,
    hashes: `${prefix}/injection-hashes`,
    previousImages: `${prefix}/previous-images`,
    revision: `${prefix}/revision`,
  };
}

/**
 * The pod condition of a readiness gate that an injection with `readinessGate: true` adds:
 * `<prefix>/sidecars-ready`. The injector sets it True on the pod's first status write; only
 * `rollout --in-place` sets it False, while it replaces a sidecar's image, so the pod leaves its
 * Services' endpoints first.
 */
export function readinessConditionType(prefix: string): string {
  return `${prefix}/sidecars-ready`;
}

/**
 * The readiness gate's condition as the injector first writes it (True), on the pod's first status
 * write: the same object from the webhook and from the admission policy.
 */
export function initialReadinessCondition(prefix: string): { readonly type: string; readonly status: 'True'; readonly reason: string; readonly message: string } {
  return { type: readinessConditionType(prefix), status: 'True', reason: 'SidecarsNotHeld', message: 'no in-place sidecar upgrade holds this pod out of its Services' };
}

/**
 * The CEL the apiserver evaluates before it calls the webhook (or applies the policy) for a pod's
 * status write: only a pod with the readiness gate and no condition for it yet (its first status
 * write, normally).
 */
export function readinessConditionMissingCel(prefix: string): string {
  const type = JSON.stringify(readinessConditionType(prefix));
  return (
    `has(object.spec.readinessGates) && object.spec.readinessGates.exists(g, g.conditionType == ${type}) && ` +
    `!(has(object.status) && has(object.status.conditions) && object.status.conditions.exists(c, c.type == ${type}))`
  );
}
