import { k8s } from 'cdk8s-plus-27';
import { ConfigIssue, Injection } from '../webhook/config';
import {
  InjectionMode,
  MergeWhenMissing,
  NativeSidecarMode,
  NativeSidecarPosition,
  PodResourcesPolicy,
  PodSecurityLevel,
  QosPolicy,
  TargetKind,
} from './api/choices';
import { WorkloadOverride } from './api/override';
import { Trigger } from './api/trigger';
import type { JsonForm } from './json-form';
import { InjectedObjectKind, kubernetesSchemaVersion, kubernetesSchemaViolations, toKubernetesJson } from './schema/injected-object-schemas';

/**
 * Fields merged into the pod's own containers, selected by name.
 */
export interface ContainerMergeProps {
  /** Names of the containers (and init containers) to merge into. */
  readonly containerNames: string[];
  /** The fields to set, as a nested object in Kubernetes' JSON (`{ readinessProbe: { initialDelaySeconds: 10 } }`);
   * fields of cdk8s's `k8s.Container` are written as Kubernetes writes them. */
  readonly fields: { [key: string]: any };
  /** What to do when a nested object of `fields` does not exist in the container: `SKIP` leaves the
   * container alone (a probe without a handler would be refused by the apiserver), `CREATE` adds it.
   * @default MergeWhenMissing.SKIP */
  readonly whenMissing?: MergeWhenMissing;
}

/**
 * One injection: the containers, volumes, env, metadata and merges added to the pods whose objects meet its
 * trigger, applied at most once per pod (the status annotation records it). Containers, volumes, mounts and
 * env vars are cdk8s-plus-27's `k8s.*` structs, or plain Kubernetes JSON for fields newer than those types
 * (`restartPolicy: 'Always'` on an init container makes a native sidecar). At synth they become Kubernetes
 * JSON and are checked against the Kubernetes OpenAPI schema.
 */
export interface InjectionProps {
  /** Unique name, a DNS-1123 label: recorded in the status annotation and requested through `<prefix>/inject`. */
  readonly name: string;
  /** When this injection applies to an object of its target kinds: `Trigger.always()`, `Trigger.labelSelector(...)`,
   * `Trigger.annotation(...)` or `Trigger.requested()`. */
  readonly trigger: Trigger;
  /** The kinds this injection changes: `POD` injects each pod as it is created; a workload kind injects its
   * pod template, so the stored workload shows the injection. @default [TargetKind.POD] */
  readonly targetKinds?: TargetKind[];
  /** Labels added to the pod (the pod template's metadata for workloads). @default none */
  readonly labels?: { [key: string]: string };
  /** Annotations added to the pod (the pod template's metadata for workloads). @default none */
  readonly annotations?: { [key: string]: string };
  /** What to do when the injection would change the pod's QoS class: warn, or keep a Guaranteed pod
   * Guaranteed (every injected container must then request cpu and memory). @default QosPolicy.WARN */
  readonly qos?: QosPolicy;
  /** What to do when the pod sets pod-level resources (Kubernetes 1.34+): add the injected containers'
   * requests and limits to the pod's, or share the pod's budget. @default PodResourcesPolicy.ADD */
  readonly podResources?: PodResourcesPolicy;
  /** `AUDIT` changes no pod: where the injection would apply, the answer warns with what it would have added,
   * and the metrics, `status` and the reconciler count it. @default InjectionMode.ENFORCE */
  readonly mode?: InjectionMode;
  /** Which pods get `containers` as native sidecars (init containers with `restartPolicy: Always`). A regular
   * container keeps a Job's pod running forever: `JOBS` is the choice for injections that target Jobs.
   * @default NativeSidecarMode.NEVER */
  readonly nativeSidecars?: NativeSidecarMode;
  /** Where native sidecars go among the pod's init containers. @default NativeSidecarPosition.LAST */
  readonly nativeSidecarPosition?: NativeSidecarPosition;
  /** Adds the readiness gate `<prefix>/sidecars-ready` to the pods, so `rollout --in-place` can take a pod out
   * of its Services' endpoints while it replaces a sidecar's image. @default false */
  readonly readinessGate?: boolean;
  /** The Pod Security level this injection's containers, volumes, merges and annotations must meet; a
   * violation fails synth. @default the injector's `podSecurity` */
  readonly podSecurity?: PodSecurityLevel;
  /** Fields of this injection's containers that app teams may set per workload by annotation:
   * `WorkloadOverride.resource(...)` or `WorkloadOverride.env(...)`. @default none */
  readonly overrides?: WorkloadOverride[];
  /** Containers appended to `spec.containers`. @default none */
  readonly containers?: (k8s.Container | { [key: string]: any })[];
  /** Containers appended to `spec.initContainers`; `restartPolicy: 'Always'` makes a native sidecar. @default none */
  readonly initContainers?: (k8s.Container | { [key: string]: any })[];
  /** Volumes appended to `spec.volumes`. @default none */
  readonly volumes?: (k8s.Volume | { [key: string]: any })[];
  /** Mounts added to each of the object's own containers. @default none */
  readonly volumeMounts?: (k8s.VolumeMount | { [key: string]: any })[];
  /** Environment variables added to each of the object's own containers. @default none */
  readonly env?: (k8s.EnvVar | { [key: string]: any })[];
  /** Secrets of type `kubernetes.io/dockerconfigjson` in the pod's namespace, appended to
   * `spec.imagePullSecrets`; ones already listed are skipped. @default none */
  readonly imagePullSecrets?: k8s.LocalObjectReference[];
  /** Fields merged into the object's own containers, selected by name. @default none */
  readonly merges?: ContainerMergeProps[];
}

/** A revision: a name and a complete set of injections, written as the `injections` prop is. */
export interface RevisionProps {
  /** The revision's name, a DNS-1123 label of at most 40 characters (`r1`, `envoy-1-31`): the value of
   * the `<prefix>/rev` label that chooses it, recorded on every pod it injects (`<prefix>/revision`). */
  readonly name: string;
  /** The injections of this revision, validated exactly as the `injections` prop is. */
  readonly injections: InjectionProps[];
}

/** The lists of an injection that hold Kubernetes objects, and the schema of their items. */
const OBJECT_LISTS: ReadonlyArray<readonly [keyof InjectionProps & keyof Injection & string, InjectedObjectKind]> = [
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

/** The keys of an injection that are settings, in the order the config writes them (before the lists and merges). */
const SETTING_KEYS = ['name', 'trigger', 'targetKinds', 'labels', 'annotations', 'qos', 'podResources', 'mode', 'nativeSidecars', 'nativeSidecarPosition', 'readinessGate', 'podSecurity', 'overrides'];

/**
 * An injection as the construct takes it from TypeScript's JSON form (the config's own words:
 * `trigger: { type: 'always' }`, overrides as objects), which `cdk8s-sidecar-injector/engine` accepts
 * beside the jsii form.
 */
export type InjectionInput = InjectionProps | Injection | JsonForm<InjectionProps>;

function triggerConfig(trigger: unknown): unknown {
  return trigger instanceof Trigger ? trigger._toConfig() : trigger;
}

function overrideConfig(override: unknown): unknown {
  return override instanceof WorkloadOverride ? override._toConfig() : override;
}

function mergeConfig(merge: unknown): unknown {
  if (!isPlainObject(merge)) return merge;
  const { fields, ...rest } = merge;
  const ordered = 'containerNames' in rest ? { containerNames: rest.containerNames, ...rest } : rest;
  return { ...(toKubernetesJson(ordered) as object), ...(fields === undefined ? {} : { fields: toKubernetesJson(unwrapJsiiStructs(fields), 'container') }) };
}

/**
 * `value` with every jsii struct wrapper replaced by the struct's fields. A struct (a `k8s.EnvVar` built in
 * Python, Java or Go) that reaches a prop typed `k8s.EnvVar | { [key: string]: any }` arrives from the jsii
 * kernel as `{ "$jsii.struct": { fqn, data } }`: the kernel leaves values in an `any` position as the wire
 * has them. Only plain objects and arrays are rebuilt; class instances (`k8s.Quantity`) are kept as they are.
 */
export function unwrapJsiiStructs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(unwrapJsiiStructs);
  if (value === null || typeof value !== 'object') return value;
  const prototype = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return value;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record);
  if (keys.length === 1 && keys[0] === '$jsii.struct' && isPlainObject(record['$jsii.struct']) && isPlainObject((record['$jsii.struct'] as Record<string, unknown>).data)) {
    return unwrapJsiiStructs((record['$jsii.struct'] as Record<string, unknown>).data);
  }
  return Object.fromEntries(keys.map((key) => [key, unwrapJsiiStructs(record[key])]));
}

/**
 * The injection as Kubernetes JSON, the way the webhook reads it (see `toKubernetesJson`), whichever form
 * it came in and in whichever order a language handed over its keys: the settings in the config's order,
 * then the lists of Kubernetes objects, then the merges. Anything malformed is passed on for the validator
 * to name.
 */
export function resolveInjectionProps(injection: InjectionInput): Injection {
  if (!isPlainObject(injection)) return injection as unknown as Injection;
  const source = injection as unknown as Record<string, unknown>;
  const settings: Record<string, unknown> = {};
  const keys = [...SETTING_KEYS.filter((key) => key in source), ...Object.keys(source).filter((key) => !SETTING_KEYS.includes(key))];
  for (const key of keys) {
    if (key === 'merges' || OBJECT_LISTS.some(([list]) => list === key) || source[key] === undefined) continue;
    const value = source[key];
    if (key === 'trigger') settings[key] = triggerConfig(value);
    else if (key === 'overrides') settings[key] = Array.isArray(value) ? value.map(overrideConfig) : value;
    else settings[key] = value;
  }
  const out = toKubernetesJson(settings) as Record<string, unknown>;
  for (const [list, kind] of OBJECT_LISTS) {
    const items = source[list];
    if (items === undefined) continue;
    out[list] = Array.isArray(items) ? items.map((item) => toKubernetesJson(unwrapJsiiStructs(item), kind)) : toKubernetesJson(items);
  }
  if (source.merges !== undefined) out.merges = Array.isArray(source.merges) ? source.merges.map(mergeConfig) : toKubernetesJson(source.merges);
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
