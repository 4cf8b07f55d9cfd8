import { k8s } from 'cdk8s-plus-27';
import {
  ConfigIssue,
  ContainerMerge,
  ContainerSpec,
  EnvVarSpec,
  Injection,
  JsonObject,
  VolumeMountSpec,
  VolumeSpec,
} from '../webhook/config';
import { InjectedObjectKind, kubernetesSchemaVersion, kubernetesSchemaViolations, toKubernetesJson } from './schema/injected-object-schemas';

/**
 * A container to inject: plain Kubernetes JSON (`{ name, image, ... }`), or cdk8s's typed
 * `k8s.Container` (with `k8s.Quantity` resources and `k8s.IntOrString` ports). Fields newer than the
 * types (`restartPolicy: 'Always'` for a native sidecar) can be written as plain JSON.
 */
export type InjectedContainer = ContainerSpec | k8s.Container;
/** A pod volume to inject: plain Kubernetes JSON or cdk8s's typed `k8s.Volume`. */
export type InjectedVolume = VolumeSpec | k8s.Volume;
/** A volume mount to add to the pod's own containers: plain Kubernetes JSON or `k8s.VolumeMount`. */
export type InjectedVolumeMount = VolumeMountSpec | k8s.VolumeMount;
/** An environment variable to add to the pod's own containers: plain Kubernetes JSON or `k8s.EnvVar`. */
export type InjectedEnvVar = EnvVarSpec | k8s.EnvVar;

/** A merge into the pod's own containers whose fields may also be written with cdk8s's typed `k8s.Container` fields. */
export interface ContainerMergeProps extends Omit<ContainerMerge, 'fields'> {
  /** The fields to set, as a nested object: `{ readinessProbe: { initialDelaySeconds: 10 } }`. */
  readonly fields: JsonObject | Partial<k8s.Container>;
}

/**
 * An injection as the construct takes it: the webhook's `Injection`, whose containers, volumes,
 * mounts, env vars and pull secrets may also be written with cdk8s-plus-27's `k8s.*` types. At synth
 * they become plain Kubernetes JSON and are checked against the Kubernetes OpenAPI schema.
 */
export interface InjectionProps
  extends Omit<Injection, 'containers' | 'initContainers' | 'volumes' | 'volumeMounts' | 'env' | 'imagePullSecrets' | 'merges'> {
  /** Containers appended to `spec.containers`. @default none */
  readonly containers?: readonly InjectedContainer[];
  /** Containers appended to `spec.initContainers`; `restartPolicy: 'Always'` makes a native sidecar. @default none */
  readonly initContainers?: readonly InjectedContainer[];
  /** Volumes appended to `spec.volumes`. @default none */
  readonly volumes?: readonly InjectedVolume[];
  /** Mounts added to each of the object's own containers. @default none */
  readonly volumeMounts?: readonly InjectedVolumeMount[];
  /** Environment variables added to each of the object's own containers. @default none */
  readonly env?: readonly InjectedEnvVar[];
  /** Image pull secrets added to the pod. @default none */
  readonly imagePullSecrets?: readonly k8s.LocalObjectReference[];
  /** Fields merged into the object's own containers, selected by name. @default none */
  readonly merges?: readonly (ContainerMerge | ContainerMergeProps)[];
}

/** A revision as the construct takes it: a name and a complete set of injections, written as `injections` are. */
export interface RevisionProps {
  /** The revision's name, a DNS-1123 label of at most 40 characters (`r1`, `envoy-1-31`): the value of
   * the `<prefix>/rev` label that chooses it, recorded on every pod it injects (`<prefix>/revision`). */
  readonly name: string;
  /** The injections of this revision, validated exactly as the `injections` prop is. */
  readonly injections: InjectionProps[];
}

/** The lists of an injection that hold Kubernetes objects, and the schema of their items. */
const OBJECT_LISTS: ReadonlyArray<readonly [keyof InjectionProps & keyof Injection, InjectedObjectKind]> = [
  ['containers', 'container'],
  ['initContainers', 'container'],
  ['volumes', 'volume'],
  ['volumeMounts', 'volumeMount'],
  ['env', 'envVar'],
  ['imagePullSecrets', 'localObjectReference'],
];

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** The injection as Kubernetes JSON, the way the webhook reads it (see `toKubernetesJson`). */
export function resolveInjectionProps(injection: InjectionProps): Injection {
  if (!isPlainObject(injection)) return injection as unknown as Injection;
  const out: Record<string, unknown> = toKubernetesJson(
    Object.fromEntries(Object.entries(injection).filter(([key]) => key !== 'merges' && !OBJECT_LISTS.some(([list]) => list === key))),
  ) as Record<string, unknown>;
  for (const [list, kind] of OBJECT_LISTS) {
    const items = injection[list];
    if (items === undefined) continue;
    out[list] = Array.isArray(items) ? items.map((item) => toKubernetesJson(item, kind)) : toKubernetesJson(items);
  }
  if (injection.merges !== undefined) {
    out.merges = Array.isArray(injection.merges)
      ? injection.merges.map((merge) =>
          isPlainObject(merge) ? { ...(toKubernetesJson({ ...merge, fields: undefined }) as object), ...(merge.fields === undefined ? {} : { fields: toKubernetesJson(merge.fields, 'container') }) } : merge,
        )
      : toKubernetesJson(injection.merges);
  }
  return out as unknown as Injection;
}

/**
 * Every way the objects of a resolved injection do not match the Kubernetes OpenAPI schema, at
 * `injections[index].containers[M].<field>`. Only lists and items that are themselves well-formed
 * are checked; the config validator reports the rest.
 */
export function injectionSchemaIssues(injection: Injection, index: number, base = 'injections'): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  if (!isPlainObject(injection)) return issues;
  const at = (where: string, violationPath: string) => (violationPath === '(root)' ? where : `${where}.${violationPath}`);
  for (const [list, kind] of OBJECT_LISTS) {
    const items = injection[list];
    if (!Array.isArray(items)) continue;
    items.forEach((item: unknown, itemIndex) => {
      if (!isPlainObject(item)) return;
      for (const violation of kubernetesSchemaViolations(item, kind)) {
        issues.push({ path: at(`${base}[${index}].${list}[${itemIndex}]`, violation.path), message: `${violation.message} (Kubernetes ${kubernetesSchemaVersion()} schema)` });
      }
    });
  }
  if (Array.isArray(injection.merges)) {
    injection.merges.forEach((merge, mergeIndex) => {
      if (!isPlainObject(merge) || !isPlainObject(merge.fields)) return;
      // The fields go into an existing container, which has a name: only what they set is checked.
      for (const violation of kubernetesSchemaViolations({ name: 'merged', ...merge.fields }, 'container')) {
        issues.push({ path: at(`${base}[${index}].merges[${mergeIndex}].fields`, violation.path), message: `${violation.message} (Kubernetes ${kubernetesSchemaVersion()} schema)` });
      }
    });
  }
  return issues;
}
