// The one injection config that both sides share: the construct writes it into the ConfigMap, the
// webhook loads it from there. This file and its siblings depend on nothing but the language, so the
// construct library does not pull in express and the webhook bundle does not pull in cdk8s.

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
  /** A regular expression the whole value must match. @default any value */
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
}

export interface InjectorConfig {
  /** Prefix of the `inject` and `status` annotations. @default 'sidecar-injector.io' */
  readonly annotationPrefix?: string;
  /** `false` admits everything unchanged: a kill switch without redeploying the webhook. @default true */
  readonly enabled?: boolean;
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
