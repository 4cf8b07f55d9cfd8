// `status`: for each pod, whether each injection it has (or should have) is the one configured now.
// Read from the pod and the config alone: the status annotation says what the pod got, the hashes
// annotation beside it which version, and the engine the webhook runs says what it should have got.
// Pure: pods, namespaces and ReplicaSets in, a classification out (the cluster is read elsewhere).

import { type ResolvedInjectorConfig, type TargetKind, annotationKeys, injectionHash, parseInjectionHashes } from '../config';
import { evaluate, parseStatus } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';
import { type MutatingWebhookConfiguration, type RequestKind, webhookCalledFor } from '../engine/webhook-match';
import type { KubernetesObject } from '../engine/admission-review';
import type { InjectorSource } from './synthesized-injectors';
import { type PodRevision, appliedConfig, podRevision } from './pod-revision';
import { createRequestFor } from './admission-request';

/** What one injection of one pod is, measured against the current config. */
export type InjectionState = 'up-to-date' | 'outdated' | 'version-unknown' | 'missing' | 'no-longer-configured' | 'audit';
/** The states a rollout changes: the pod is not what the config says now. */
export const STALE_STATES: readonly InjectionState[] = ['outdated', 'missing', 'no-longer-configured'];

export interface PodInjection {
  readonly injection: string;
  readonly state: InjectionState;
  /** The hash the pod records for it; absent when it records none (or does not have it). */
  readonly podHash?: string;
  /** The hash of the injection as configured now; absent when it is no longer configured. */
  readonly configuredHash?: string;
}

/** The object that owns a pod, as `kubectl rollout restart` names it: `Deployment/web`. */
export interface WorkloadRef {
  /** The owner's apiVersion (`argoproj.io/v1alpha1` for a Rollout): as its reference gives it, `apps/v1` when inferred; absent when the reference had none. */
  readonly apiVersion?: string;
  readonly kind: string;
  readonly name: string;
  /** How the owner was found: `ownerReferences`, or `inferred` from a ReplicaSet's name and the pod-template-hash label. */
  readonly via: 'ownerReferences' | 'inferred' | 'self';
}

export interface PodStatus {
  readonly namespace: string;
  readonly name: string;
  readonly workload: WorkloadRef;
  /** Every injection the pod has or should have, in config order, then the ones no longer configured. */
  readonly injections: readonly PodInjection[];
  /** `up-to-date` unless some injection is not; `none` when the pod has and needs none (an injection in
   * audit mode that would apply is listed as `audit` and changes nothing here). */
  readonly state: 'up-to-date' | 'stale' | 'version-unknown' | 'none';
  /** Override annotation values the config ignores for this pod, each with why (the webhook's warnings). A pod
   * that carries good overrides is not outdated for it: only its injections' hashes decide that. */
  readonly ignoredOverrides: readonly string[];
  /** With revisions: the revision the pod should run now and the one it records; undefined without. */
  readonly revision?: PodRevision;
  /**
   * Being deleted (it has a `deletionTimestamp`): listed, never counted. A restarted workload's old pods
   * linger while they stop, after its rollout is done; counted, they would be "missing" what their
   * replacements carry, and a repair would look failed.
   */
  readonly terminating?: true;
}

/** The pod's own ReplicaSets and Jobs, and the namespaces' labels, as far as they are known. */
export interface ClusterObjects {
  readonly pods: readonly KubernetesObject[];
  /** Labels by namespace name; a namespace not here is matched by its name label alone. */
  readonly namespaceLabels: ReadonlyMap<string, Record<string, string>>;
  /** Annotations by namespace name, for the overrides that read namespace defaults; unknown when absent. */
  readonly namespaceAnnotations?: ReadonlyMap<string, Record<string, string>>;
  /** ReplicaSets and Jobs by `namespace/kind/name`, to find a pod's Deployment or CronJob. */
  readonly owners: ReadonlyMap<string, KubernetesObject>;
}

const WORKLOAD_KINDS: readonly string[] = ['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob'];

function metadataOf(object: KubernetesObject | undefined): Record<string, any> {
  const metadata = object?.metadata;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, any>) : {};
}

function controllerOf(object: KubernetesObject | undefined): { apiVersion?: string; kind: string; name: string } | undefined {
  const owners = metadataOf(object).ownerReferences;
  if (!Array.isArray(owners)) return undefined;
  const owner = owners.find((candidate) => candidate && candidate.controller === true) ?? owners[0];
  if (!owner || typeof owner.kind !== 'string' || typeof owner.name !== 'string') return undefined;
  return { ...(typeof owner.apiVersion === 'string' ? { apiVersion: owner.apiVersion } : {}), kind: owner.kind, name: owner.name };
}

export function ownerKey(namespace: string, kind: string, name: string): string {
  return `${namespace}/${kind}/${name}`;
}

/** The workload to restart for a pod: its controller, followed through a ReplicaSet to its Deployment and a Job to its CronJob. */
export function workloadOf(pod: KubernetesObject, namespace: string, owners: ClusterObjects['owners']): WorkloadRef & { chain: string[] } {
  const controller = controllerOf(pod);
  if (!controller) return { apiVersion: 'v1', kind: 'Pod', name: String(metadataOf(pod).name), via: 'self', chain: [] };
  if (controller.kind === 'ReplicaSet' || controller.kind === 'Job') {
    const owner = owners.get(ownerKey(namespace, controller.kind, controller.name));
    if (owner) {
      const next = controllerOf(owner);
      if (next) return { ...next, via: 'ownerReferences', chain: [controller.kind, next.kind] };
      return { ...controller, via: 'ownerReferences', chain: [controller.kind] };
    }
    // Not given the ReplicaSet: a Deployment names its ReplicaSets <deployment>-<pod-template-hash>.
    const hash = ownStringMap(metadataOf(pod).labels)['pod-template-hash'];
    if (controller.kind === 'ReplicaSet' && hash && controller.name.endsWith(`-${hash}`)) {
      return { apiVersion: 'apps/v1', kind: 'Deployment', name: controller.name.slice(0, -hash.length - 1), via: 'inferred', chain: ['ReplicaSet', 'Deployment'] };
    }
  }
  return { ...controller, via: 'ownerReferences', chain: [controller.kind] };
}

/**
 * The config as it applies to this pod: an injection that targets the pod's owner (a Deployment's
 * template, say) applies to the pod as well, which was made from that template.
 */
export function configForPod(config: ResolvedInjectorConfig, chain: readonly string[]): ResolvedInjectorConfig {
  const kinds = chain.filter((kind) => WORKLOAD_KINDS.includes(kind)) as TargetKind[];
  if (kinds.length === 0) return config;
  const widened = configCache.get(config)?.get(kinds.join(','));
  if (widened) return widened;
  const made: ResolvedInjectorConfig = {
    ...config,
    injections: config.injections.map((injection) =>
      !injection.targetKinds.includes('Pod') && injection.targetKinds.some((kind) => kinds.includes(kind)) ? { ...injection, targetKinds: [...injection.targetKinds, 'Pod'] } : injection,
    ),
  };
  if (!configCache.has(config)) configCache.set(config, new Map());
  configCache.get(config)!.set(kinds.join(','), made);
  return made;
}
const configCache = new WeakMap<ResolvedInjectorConfig, Map<string, ResolvedInjectorConfig>>();

/** Each webhook configuration's predicate for pod CREATEs (its rules checked once, a namespace's selector once per pass). */
const podCreatesCalled = new WeakMap<MutatingWebhookConfiguration, ReturnType<typeof webhookCalledFor>>();
const POD_CREATE: RequestKind = { group: '', version: 'v1', resource: 'pods', operation: 'CREATE' };

/** Whether the apiserver would send this pod's CREATE to the webhook (assumed without a webhook configuration). */
function sentToWebhook(source: InjectorSource, podLabels: Readonly<Record<string, string>>, namespace: string, namespaceLabels: Record<string, string> | undefined): boolean {
  const configuration = source.webhookConfiguration;
  if (!configuration) return true;
  let called = podCreatesCalled.get(configuration);
  if (!called) podCreatesCalled.set(configuration, (called = webhookCalledFor(configuration, POD_CREATE)));
  return called(namespace, namespaceLabels, podLabels);
}

/**
 * The injections the webhook would apply to the pod now, were it created again: the engine's
 * decisions on the pod with its status annotations taken off. An injection it already carries adds
 * nothing ("no-change"); one it lacks and whose trigger holds is "injected".
 */
function injectionsDueNow(
  source: InjectorSource,
  config: ResolvedInjectorConfig,
  pod: KubernetesObject,
  /** The pod's own string annotations and labels (ownStringMap), read once by the caller. */
  own: { readonly annotations: Readonly<Record<string, string>>; readonly labels: Readonly<Record<string, string>> },
  namespace: string,
  chain: readonly string[],
  namespaceLabels: Record<string, string> | undefined,
  namespaceAnnotations: Record<string, string> | undefined,
): { due: Set<string>; audit: Set<string>; ignoredOverrides: string[] } {
  if (!config.enabled || !sentToWebhook(source, own.labels, namespace, namespaceLabels)) return { due: new Set(), audit: new Set(), ignoredOverrides: [] };
  const keys = annotationKeys(config.annotationPrefix);
  // Copied without them (not copied and deleted from: a deletion makes V8 keep the copy as a slower dictionary).
  const annotations: Record<string, string> = {};
  for (const key of Object.keys(own.annotations)) if (key !== keys.status && key !== keys.hashes && key !== keys.revision) annotations[key] = own.annotations[key];
  const bare = { ...pod, apiVersion: 'v1', kind: 'Pod', metadata: { ...metadataOf(pod), annotations } };
  const context = namespaceAnnotations ? { namespaceAnnotations } : { namespaceUnknown: `namespace ${namespace} was not read` };
  // Evaluated only: the pod itself goes in, not a deep copy of it (the engine writes nothing into its request).
  const result = evaluate(createRequestFor(bare, namespace, 'status', false), configForPod(config, chain), context);
  return {
    due: new Set(result.decisions.filter((decision) => decision.reason === 'injected').map((decision) => decision.injection)),
    audit: new Set(result.decisions.filter((decision) => decision.reason === 'audit').map((decision) => decision.injection)),
    ignoredOverrides: result.podWarnings.filter((warning) => warning.reason === 'override-ignored' && warning.override?.reason !== 'namespace-unknown').map((warning) => warning.message),
  };
}

/** Each pod's injections measured against `source`'s config, in the order given. */
export function classifyPods(objects: ClusterObjects, source: InjectorSource): PodStatus[] {
  const config = source.config;
  const keys = annotationKeys(config.annotationPrefix);
  return objects.pods.map((pod) => {
    const metadata = metadataOf(pod);
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
    const annotations = ownStringMap(metadata.annotations);
    const labels = ownStringMap(metadata.labels);
    const { chain, ...workload } = workloadOf(pod, namespace, objects.owners);
    // With revisions, the pod is measured against the revision it should run now (its tag's, today).
    const revision = podRevision(config, labels, annotations, objects.namespaceLabels.get(namespace));
    const applies = appliedConfig(config, revision);
    const configured = applies ? configuredHashes(applies) : NOTHING_CONFIGURED;
    const has = parseStatus(annotations[keys.status]);
    const recorded = parseInjectionHashes(annotations[keys.hashes]);
    const { due, audit, ignoredOverrides } = applies
      ? injectionsDueNow(source, applies, pod, { annotations, labels }, namespace, chain, objects.namespaceLabels.get(namespace), objects.namespaceAnnotations?.get(namespace))
      : { due: new Set<string>(), audit: new Set<string>(), ignoredOverrides: [] };
    const injections: PodInjection[] = [];
    for (const [name, configuredHash] of configured) {
      if (has.has(name)) {
        const podHash = recorded?.get(name);
        const state: InjectionState = podHash === undefined ? 'version-unknown' : podHash === configuredHash ? 'up-to-date' : 'outdated';
        injections.push({ injection: name, state, ...(podHash ? { podHash } : {}), configuredHash });
      } else if (due.has(name)) {
        injections.push({ injection: name, state: 'missing', configuredHash });
      } else if (audit.has(name)) {
        injections.push({ injection: name, state: 'audit', configuredHash });
      }
    }
    for (const name of has) {
      if (configured.has(name)) continue;
      const podHash = recorded?.get(name);
      injections.push({ injection: name, state: 'no-longer-configured', ...(podHash ? { podHash } : {}) });
    }
    const unserved = revision?.unserved !== undefined && (revision.by === 'workload' || sentToWebhook(source, labels, namespace, objects.namespaceLabels.get(namespace)));
    const state: PodStatus['state'] =
      unserved ? 'stale'
      : injections.every((entry) => entry.state === 'audit') ? 'none'
      : injections.some((entry) => STALE_STATES.includes(entry.state)) ? 'stale'
      : injections.some((entry) => entry.state === 'version-unknown') ? 'version-unknown'
      : 'up-to-date';
    return {
      namespace,
      name: String(metadata.name ?? metadata.generateName ?? '(no name)'),
      workload,
      injections,
      state,
      ignoredOverrides,
      ...(revision ? { revision } : {}),
      ...(metadata.deletionTimestamp ? { terminating: true as const } : {}),
    };
  });
}

const NOTHING_CONFIGURED: ReadonlyMap<string, string> = new Map();
const hashesOf = new WeakMap<ResolvedInjectorConfig, ReadonlyMap<string, string>>();

/** Each injection's name and hash as configured, in config order (made once per config or revision). */
export function configuredHashes(config: ResolvedInjectorConfig): ReadonlyMap<string, string> {
  let hashes = hashesOf.get(config);
  if (!hashes) hashesOf.set(config, (hashes = new Map(config.injections.map((injection) => [injection.name, injectionHash(injection)]))));
  return hashes;
}
