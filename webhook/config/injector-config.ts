// The one injection config that both sides share: the construct writes it into the ConfigMap, the
// webhook loads it from there. This file and its siblings depend on nothing but the language (and
// re2js, the linear-time pattern engine), so the construct library does not pull in express and the
// webhook bundle does not pull in cdk8s.

import type { PodSecurityLevel } from './pod-security';

/** Any JSON value. Injected Kubernetes objects are kept as raw JSON so fields this library does not
 * know yet (the next Kubernetes release's) pass through untouched. */
export type JsonValue = null | boolean | number | string | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

/** The kinds whose pods an injection can change: Pods themselves, or the pod templates of workloads. */
export const TARGET_KINDS = ['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'] as const;
export type TargetKind = (typeof TARGET_KINDS)[number];

export const DEFAULT_ANNOTATION_PREFIX = 'sidecar-injector.io';

/** A container as Kubernetes spells it (`name` and `image` required, every other field passed through). */
export interface ContainerSpec {
  readonly name: string;
  readonly image: string;
  readonly [field: string]: unknown;
}

/** A pod volume as Kubernetes spells it (`name` required, the source passed through). */
export interface VolumeSpec {
  readonly name: string;
  readonly [field: string]: unknown;
}

/** A volume mount as Kubernetes spells it. */
export interface VolumeMountSpec {
  readonly name: string;
  readonly mountPath: string;
  readonly [field: string]: unknown;
}

/** An environment variable as Kubernetes spells it (`value` or `valueFrom`). */
export interface EnvVarSpec {
  readonly name: string;
  readonly [field: string]: unknown;
}

export interface LabelSelectorRequirement {
  readonly key: string;
  readonly operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist';
  readonly values?: readonly string[];
}

/** Injects into every object of the target kinds that reaches the webhook. */
export interface AlwaysTrigger {
  readonly type: 'always';
}

/** Injects when the object carries annotation `key`; its value is `{{annotation}}` in templates. */
export interface AnnotationTrigger {
  readonly type: 'annotation';
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
  readonly type: 'labelSelector';
  readonly matchLabels?: Readonly<Record<string, string>>;
  readonly matchExpressions?: readonly LabelSelectorRequirement[];
}

/** Injects only when the object's `<prefix>/inject` annotation lists this injection's name. */
export interface RequestedTrigger {
  readonly type: 'requested';
}

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
export type QosPolicy = (typeof QOS_POLICIES)[number];

/** Which pods get an injection's `containers` as native sidecars instead of regular containers. */
export const NATIVE_SIDECAR_MODES = ['never', 'jobs', 'always'] as const;
export type NativeSidecarMode = (typeof NATIVE_SIDECAR_MODES)[number];

/** Where native sidecars go among the pod's init containers. */
export const NATIVE_SIDECAR_POSITIONS = ['first', 'last'] as const;
export type NativeSidecarPosition = (typeof NATIVE_SIDECAR_POSITIONS)[number];

export interface Injection {
  /** Unique name; recorded in the status annotation and requested through `<prefix>/inject`. */
  readonly name: string;
  readonly trigger: InjectionTrigger;
  /** @default ['Pod'] */
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
  readonly imagePullSecrets?: readonly { readonly name: string }[];
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
   * The Pod Security level this injection's containers, volumes, merges and annotations must meet.
   * Set, a violation fails validation (and synth). Left out, the injector's level applies; when
   * neither is set, synth warns about every "restricted" violation.
   * @default the injector's `podSecurity`
   */
  readonly podSecurity?: PodSecurityLevel;
}

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
  readonly injections: readonly Injection[];
}

/** An InjectorConfig whose defaults are filled in: what the construct writes and the webhook loads. */
export interface ResolvedInjectorConfig extends InjectorConfig {
  readonly annotationPrefix: string;
  readonly enabled: boolean;
  readonly injections: readonly ResolvedInjection[];
}

export interface ResolvedInjection extends Injection {
  readonly targetKinds: readonly TargetKind[];
}

/** The file name of the config inside the mounted ConfigMap directory. */
export const CONFIG_FILE_NAME = 'config.json';

export function annotationKeys(prefix: string): { inject: string; status: string } {
  return { inject: `${prefix}/inject`, status: `${prefix}/status` };
}
