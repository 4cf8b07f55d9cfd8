// `rollout --in-place`: which pods can have their sidecars upgraded without a restart of the pod, and
// the one guarded JSON Patch that does it. Kubernetes lets a running pod's containers[*].image and
// initContainers[*].image change (nothing else in its spec); the kubelet then restarts that container
// alone. So a pod qualifies only when the injections it carries differ from the config's in images and
// nothing else, which is proven two ways:
// - by the hash: the current definition with the pod's own images hashes to the hash the pod records,
//   so nothing else in the definition changed (a removed env var, a new volume, a changed probe);
// - by the engine: the containers the webhook would add to this pod now are, field by field, what
//   the pod has (the apiserver's defaults aside), but for the image.
// Pure: pods and the config in, a plan and patches out (the cluster is read and written elsewhere).

import {
  type ContainerSpec,
  type ResolvedInjection,
  type ResolvedInjectorConfig,
  annotationKeys,
  injectionHash,
  parseInjectionHashes,
  parseQuantity,
  readinessConditionType,
} from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { evaluate } from '../engine/mutate';
import { ownStringMap } from '../engine/pod-patch-builder';
import { applyPatch, type Operation } from 'fast-json-patch';
import { type ClusterObjects, type PodStatus, type WorkloadRef, classifyPods, configForPod, configuredHashes, workloadOf } from './injection-status';
import type { InjectorSource } from './synthesized-injectors';
import { appliedConfig, podRevision } from './pod-revision';
import { createRequestFor, decodeResponsePatch } from './admission-request';
import { RESTARTABLE_KINDS } from './status-report';
import { type ContainerList, type ImageChange, type PreviousImages, parsePreviousImages } from './in-place-patches';

export { type ContainerList, type GuardedOperation, type ImageChange, type PreviousImages, MAX_PREVIOUS_IMAGES_LENGTH, formatPreviousImages, inPlacePatch, parsePreviousImages, undoPatch } from './in-place-patches';

/** What `rollout --in-place` does to one pod. */
export type PodAction =
  /** Replace images in place. */
  | 'in-place'
  /** Not possible in place: its workload is restarted (or, a bare pod or a Job's, not touched). */
  | 'restart'
  /** Nothing to do. */
  | 'none';

export interface PodInPlacePlan {
  readonly namespace: string;
  readonly name: string;
  readonly workload: WorkloadRef;
  readonly action: PodAction;
  /** Why not in place (for 'restart'), one per finding, as the plan prints them. */
  readonly reasons: readonly string[];
  /** The images to replace (for 'in-place'). */
  readonly changes: readonly ImageChange[];
  /** The hashes annotation once the images are replaced: each upgraded injection's entry carries the hash configured now. */
  readonly hashesAfter?: string;
  /** With revisions, the revision the pod records once upgraded, when it is not the one it records now (its tag moved). */
  readonly revisionAfter?: string;
  /** Whether the pod has the injector's readiness gate, so it can be taken out of its Services' endpoints first. */
  readonly readinessGate: boolean;
}

export interface InPlaceOptions {
  /**
   * Native sidecars (restartable init containers): `in-place` replaces their image like a regular
   * container's; `restart` restarts their workload. Whether the kubelet restarts a native sidecar on
   * an image change is a property of the node's kubelet, to be measured there.
   */
  readonly nativeSidecars: 'in-place' | 'restart';
  /** Also pods whose versions are unknown (they can never qualify: no hash to prove anything by). */
  readonly includeUnknown: boolean;
  /** `gate`: pods without the injector's readiness gate are not upgraded in place. */
  readonly requireReadinessGate: boolean;
}

/**
 * `--native-sidecars` when not given: in place. Measured on real kubelets (v1.32.13 and v1.36.3, the node
 * suite): an image change of a restartable init container restarts that container alone, as it does a
 * regular one ("Init container envoy definition changed"), and the pod's other containers keep running.
 */
export const DEFAULT_NATIVE_SIDECARS: InPlaceOptions['nativeSidecars'] = 'in-place';

function metadataOf(object: KubernetesObject | undefined): Record<string, any> {
  const metadata = object?.metadata;
  return metadata && typeof metadata === 'object' && !Array.isArray(metadata) ? (metadata as Record<string, any>) : {};
}

function specOf(pod: KubernetesObject): Record<string, any> {
  const spec = pod.spec;
  return spec && typeof spec === 'object' && !Array.isArray(spec) ? (spec as Record<string, any>) : {};
}

function isObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Where a container of this name sits in the pod: its list, index and object. */
export function findContainer(pod: KubernetesObject, name: string): { list: ContainerList; index: number; container: Record<string, unknown> } | undefined {
  const spec = specOf(pod);
  for (const list of ['containers', 'initContainers'] as const) {
    const containers = spec[list];
    if (!Array.isArray(containers)) continue;
    const index = containers.findIndex((container) => isObject(container) && container.name === name);
    if (index >= 0) return { list, index, container: containers[index] };
  }
  return undefined;
}

function injectedContainers(injection: ResolvedInjection): ContainerSpec[] {
  return [...(injection.containers ?? []), ...(injection.initContainers ?? [])];
}

/** The injection as configured, with each of its containers' images set to what the pod runs. */
function withPodImages(injection: ResolvedInjection, images: ReadonlyMap<string, string>): ResolvedInjection {
  const swap = (containers: readonly ContainerSpec[] | undefined) => containers?.map((container) => ({ ...container, image: images.get(container.name) ?? container.image }));
  return { ...injection, containers: swap(injection.containers), initContainers: swap(injection.initContainers) };
}

/**
 * The first place where `actual` (the stored pod's container) is not what `expected` (the engine's)
 * says, or undefined when every field the engine sets is there with its value. Fields only the pod
 * has are the apiserver's defaults (terminationMessagePath, a probe's periodSeconds, a port's
 * protocol); quantities compare by value, as the apiserver stores them in canonical form.
 */
export function containerDifference(expected: unknown, actual: unknown, path = ''): string | undefined {
  if (expected === actual) return undefined;
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length) return `${path || '/'}: pod has ${JSON.stringify(actual)}, the injection adds ${JSON.stringify(expected)}`;
    for (let i = 0; i < expected.length; i++) {
      const difference = containerDifference(expected[i], actual[i], `${path}/${i}`);
      if (difference) return difference;
    }
    return undefined;
  }
  if (isObject(expected)) {
    if (!isObject(actual)) return `${path || '/'}: pod has ${JSON.stringify(actual)}, the injection adds an object`;
    for (const key of Object.keys(expected)) {
      const difference = containerDifference(expected[key], actual[key], `${path}/${key}`);
      if (difference) return difference;
    }
    return undefined;
  }
  if (typeof expected === 'string' && typeof actual === 'string' && /\/resources\/(requests|limits|claims)\//.test(path)) {
    const [a, b] = [parseQuantity(expected), parseQuantity(actual)];
    if (a !== undefined && a === b) return undefined;
  }
  if (typeof expected === 'number' && typeof actual === 'string' && /\/resources\//.test(path) && parseQuantity(expected) === parseQuantity(actual)) return undefined;
  return `${path}: pod has ${JSON.stringify(actual)}, the injection adds ${JSON.stringify(expected)}`;
}

/**
 * The pod as the webhook would make it now from the pod without the containers of the injections it
 * carries (and without the status annotations): what the engine adds, applied.
 */
function reinjected(pod: KubernetesObject, namespace: string, chain: readonly string[], config: ResolvedInjectorConfig, carried: readonly ResolvedInjection[]): KubernetesObject {
  const keys = annotationKeys(config.annotationPrefix);
  const names = new Set(carried.flatMap((injection) => injectedContainers(injection).map((container) => container.name)));
  const spec = { ...specOf(pod) };
  for (const list of ['containers', 'initContainers'] as const) {
    if (Array.isArray(spec[list])) spec[list] = (spec[list] as unknown[]).filter((container) => !(isObject(container) && names.has(container.name as string)));
  }
  const metadata = { ...metadataOf(pod) };
  const annotations = { ...ownStringMap(metadata.annotations) };
  for (const key of [keys.status, keys.hashes, keys.previousImages, keys.revision]) delete annotations[key];
  metadata.annotations = annotations;
  const bare: KubernetesObject = { ...pod, apiVersion: 'v1', kind: 'Pod', metadata, spec };
  delete (bare as Record<string, unknown>).status;
  const patch = decodeResponsePatch(evaluate(createRequestFor(bare, namespace, 'in-place'), configForPod(config, chain)));
  return patch.length > 0 ? (applyPatch(structuredClone(bare), patch as Operation[], true, true).newDocument as KubernetesObject) : bare;
}

/** The hashes annotation with each of `updated`'s entries set to its hash now (every duplicate of a name, in place). */
export function replaceHashEntries(value: string, updated: ReadonlyMap<string, string>): string {
  const seen = new Set<string>();
  const entries = value.split(',').map((entry) => {
    const equals = entry.lastIndexOf('=');
    const name = equals > 0 ? entry.slice(0, equals).trim() : '';
    const hash = updated.get(name);
    if (hash === undefined) return entry;
    seen.add(name);
    return `${name}=${hash}`;
  });
  for (const [name, hash] of updated) if (!seen.has(name)) entries.push(`${name}=${hash}`);
  return entries.filter((entry) => entry !== '').join(',');
}

/** Why a pod's phase rules out an upgrade (it is going or gone), or undefined. */
function lifecycleReason(pod: KubernetesObject): string | undefined {
  if (metadataOf(pod).deletionTimestamp) return 'terminating';
  const phase = isObject(pod.status) ? pod.status.phase : undefined;
  if (phase === 'Succeeded' || phase === 'Failed') return `finished (phase ${phase})`;
  return undefined;
}

/** Plans one pod, given what `status` found for it. */
export function planPod(pod: KubernetesObject, status: PodStatus, chain: readonly string[], source: InjectorSource, options: InPlaceOptions): PodInPlacePlan {
  // With revisions, the pod moves to the revision it should run now (its tag's): that revision's injections.
  const config = appliedConfig(source.config, status.revision) ?? source.config;
  const chosen = status.revision?.chosen;
  const keys = annotationKeys(config.annotationPrefix);
  const gateType = readinessConditionType(config.annotationPrefix);
  const readinessGates = specOf(pod).readinessGates;
  const readinessGate = Array.isArray(readinessGates) && readinessGates.some((gate) => isObject(gate) && gate.conditionType === gateType);
  const base = { namespace: status.namespace, name: status.name, workload: status.workload, readinessGate };
  const stale = status.injections.filter((entry) => entry.state !== 'up-to-date' && (entry.state !== 'version-unknown' || options.includeUnknown));
  if (stale.length === 0) return { ...base, action: 'none', reasons: [], changes: [] };

  const reasons: string[] = [];
  const lifecycle = lifecycleReason(pod);
  if (lifecycle) reasons.push(`the pod is ${lifecycle}`);
  const byName = new Map(config.injections.map((injection) => [injection.name, injection]));
  const { outdated, notInPlace } = sortStale(stale, byName);
  reasons.push(...notInPlace);
  if (!readinessGate && options.requireReadinessGate) reasons.push(`no readiness gate ${gateType} (--drain gate): give the injection readinessGate: true`);

  const podHashes = parseInjectionHashes(ownStringMap(metadataOf(pod).annotations)[keys.hashes]);
  const changes: ImageChange[] = [];
  const upgraded = new Map<string, string>();
  const workloadKinds = chain.filter((kind) => kind !== 'Pod');
  let fresh: KubernetesObject | undefined;
  for (const injection of outdated) {
    const before = reasons.length;
    const proof = imagesOnlyProof(pod, injection, workloadKinds, podHashes);
    if ('reasons' in proof) {
      reasons.push(...proof.reasons);
      continue;
    }
    // The engine: what it would add to this pod now, against what the pod has.
    fresh ??= reinjected(pod, status.namespace, chain, config, status.injections.flatMap((entry) => (byName.has(entry.injection) && entry.state !== 'missing' ? [byName.get(entry.injection)!] : [])));
    for (const container of injectedContainers(injection)) {
      const verdict = imageChange(injection, container.name, findContainer(fresh, container.name), proof.located.get(container.name)!, options);
      if (typeof verdict === 'string') reasons.push(verdict);
      else if (verdict) changes.push(verdict);
    }
    if (reasons.length === before) upgraded.set(injection.name, injectionHash(injection));
  }
  if (reasons.length > 0) return { ...base, action: 'restart', reasons, changes: [] };
  const hashesAfter = replaceHashEntries(ownStringMap(metadataOf(pod).annotations)[keys.hashes] ?? '', upgraded);
  const revisionAfter = chosen !== undefined && status.revision?.recorded !== chosen ? { revisionAfter: chosen } : {};
  return { ...base, action: 'in-place', reasons: [], changes, hashesAfter, ...revisionAfter };
}

/** The stale injections an image change might fix (outdated ones), and why each other one rules out an upgrade in place. */
function sortStale(stale: PodStatus['injections'], byName: ReadonlyMap<string, ResolvedInjection>): { outdated: ResolvedInjection[]; notInPlace: string[] } {
  const outdated: ResolvedInjection[] = [];
  const notInPlace: string[] = [];
  for (const entry of stale) {
    switch (entry.state) {
      case 'missing':
        notInPlace.push(`${entry.injection} missing: a running pod cannot get containers`);
        break;
      case 'no-longer-configured':
        notInPlace.push(`${entry.injection} no longer configured: a running pod cannot lose containers`);
        break;
      case 'version-unknown':
        notInPlace.push(`${entry.injection} version unknown: no recorded hash to prove that only images changed`);
        break;
      case 'outdated':
        outdated.push(byName.get(entry.injection)!);
        break;
    }
  }
  return { outdated, notInPlace };
}

type LocatedContainer = NonNullable<ReturnType<typeof findContainer>>;

/**
 * Whether only images separate the pod's version of an outdated injection from the config's: the
 * injection is not in a stored pod template, its containers are all in the pod, and the current
 * definition with the pod's images hashes to the hash the pod records. Returns where each of its
 * containers sits in the pod, or why not.
 */
function imagesOnlyProof(
  pod: KubernetesObject,
  injection: ResolvedInjection,
  workloadKinds: readonly string[],
  podHashes: ReadonlyMap<string, string> | undefined,
): { located: Map<string, LocatedContainer> } | { reasons: string[] } {
  const templateKind = injection.targetKinds.find((kind) => workloadKinds.includes(kind));
  if (templateKind) return { reasons: [`${injection.name} is in the ${templateKind}'s stored pod template (targetKinds): pods made later would get the old version; re-apply the ${templateKind}`] };
  const containers = injectedContainers(injection);
  if (containers.length === 0) return { reasons: [`${injection.name} changed and adds no container whose image could be replaced`] };
  const reasons: string[] = [];
  const images = new Map<string, string>();
  const located = new Map<string, LocatedContainer>();
  for (const container of containers) {
    const found = findContainer(pod, container.name);
    if (!found || typeof found.container.image !== 'string') {
      reasons.push(`${injection.name}: container ${container.name} is not in the pod`);
      continue;
    }
    images.set(container.name, found.container.image);
    located.set(container.name, found);
  }
  if (reasons.length > 0) return { reasons };
  // The hash proof: nothing but images separates the pod's version from the config's.
  const podHash = podHashes?.get(injection.name);
  const asThePodHasIt = injectionHash(withPodImages(injection, images));
  if (podHash !== asThePodHasIt) return { reasons: [`${injection.name} changed more than its images (pod has ${podHash}; the current definition with the pod's images is ${asThePodHasIt})`] };
  return { located };
}

/**
 * One container of an outdated injection, as the webhook would add it now (`want`) against the pod's
 * (`have`): the image to replace, nothing when the image is already the one, or why it cannot be
 * replaced in place (not added now, another list, another field differs, a native sidecar with
 * `--native-sidecars restart`, an init container that has run).
 */
function imageChange(injection: ResolvedInjection, name: string, want: LocatedContainer | undefined, have: LocatedContainer, options: InPlaceOptions): ImageChange | string | undefined {
  if (!want) return `${injection.name}: the webhook would not add container ${name} to this pod now`;
  if (want.list !== have.list) return `${injection.name}: container ${name} is in ${have.list}, the webhook would put it in ${want.list}`;
  const { image: wantImage, ...wantRest } = want.container;
  const { image: _haveImage, ...haveRest } = have.container;
  const difference = containerDifference(wantRest, haveRest);
  if (difference) return `${injection.name}: container ${name} differs from what the webhook adds now at ${difference}`;
  const nativeSidecar = have.list === 'initContainers' && have.container.restartPolicy === 'Always';
  if (nativeSidecar && options.nativeSidecars === 'restart') return `${injection.name}: container ${name} is a native sidecar (--native-sidecars restart)`;
  if (have.list === 'initContainers' && !nativeSidecar) return `${injection.name}: container ${name} is an init container that has run to completion: a new image would not run`;
  if (wantImage === have.container.image) return undefined;
  return { injection: injection.name, container: name, list: have.list, index: have.index, from: String(have.container.image), to: String(wantImage), nativeSidecar };
}

/** A workload's pods, and what `rollout --in-place` does to it as a whole. */
export interface WorkloadInPlacePlan {
  readonly namespace: string;
  readonly kind: string;
  readonly name: string;
  /**
   * `in-place`: every stale pod qualifies; `restart`: some pod does not, so the workload is restarted
   * (its pods are made anew, the in-place ones with them); `untouched`: not restartable (a bare pod, a
   * Job's), and some pod does not qualify: those pods are listed, the others are upgraded in place.
   */
  readonly action: 'in-place' | 'restart' | 'untouched';
  /** The pods upgraded in place (all of them for 'in-place'; the qualifying ones for 'untouched'). */
  readonly inPlace: readonly PodInPlacePlan[];
  /** The pods that do not qualify, with their reasons. */
  readonly fallBack: readonly PodInPlacePlan[];
}

export interface InPlacePlan {
  readonly workloads: readonly WorkloadInPlacePlan[];
  readonly pods: readonly PodInPlacePlan[];
}

/** Plans every selected pod, grouped by workload (namespace, kind, name). */
export function inPlacePlan(objects: ClusterObjects, source: InjectorSource, options: InPlaceOptions): InPlacePlan {
  const statuses = classifyPods(objects, source);
  const pods = objects.pods.map((pod, index) => {
    const status = statuses[index];
    const { chain } = workloadOf(pod, status.namespace, objects.owners);
    return planPod(pod, status, chain, source, options);
  });
  const byWorkload = new Map<string, PodInPlacePlan[]>();
  for (const pod of pods) {
    if (pod.action === 'none') continue;
    const key = `${pod.namespace}\u0000${pod.workload.kind}\u0000${pod.workload.name}`;
    byWorkload.set(key, [...(byWorkload.get(key) ?? []), pod]);
  }
  const workloads = [...byWorkload.values()]
    .map((members): WorkloadInPlacePlan => {
      const { namespace, workload } = members[0];
      const fallBack = members.filter((pod) => pod.action === 'restart');
      const inPlace = members.filter((pod) => pod.action === 'in-place').sort((a, b) => a.name.localeCompare(b.name));
      const action = fallBack.length === 0 ? 'in-place' : RESTARTABLE_KINDS.includes(workload.kind) ? 'restart' : 'untouched';
      return { namespace, kind: workload.kind, name: workload.name, action, inPlace: action === 'restart' ? [] : inPlace, fallBack };
    })
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
  return { workloads, pods };
}

/** What `--undo` does to a pod that carries a previous-images annotation. */
export interface PodUndoPlan {
  readonly namespace: string;
  readonly name: string;
  readonly workload: WorkloadRef;
  /** The images to put back (empty when they are back already: then only the annotations are). */
  readonly changes: readonly ImageChange[];
  readonly previous: PreviousImages;
  readonly readinessGate: boolean;
}

/**
 * The pods to undo: each with a readable previous-images annotation, or why it cannot be undone. With
 * `config`, only the pods this config's run upgraded: those whose upgraded injections carry this
 * config's hashes now. A pod upgraded by an earlier run (to another config) is left as it is, so that
 * `--undo` after a failed run puts back what that run did, not what the run before it did.
 */
export function undoPlan(
  objects: ClusterObjects,
  prefix: string,
  config?: ResolvedInjectorConfig,
): { pods: PodUndoPlan[]; unreadable: { namespace: string; name: string; reason: string }[]; otherRuns: { namespace: string; name: string; reason: string }[] } {
  const keys = annotationKeys(prefix);
  const gateType = readinessConditionType(prefix);
  /** The hashes `config` gives a pod: with revisions, those of the revision it should run now. */
  const configuredFor = (pod: KubernetesObject, namespace: string): ReadonlyMap<string, string> | undefined => {
    if (!config) return undefined;
    const revision = podRevision(config, ownStringMap(metadataOf(pod).labels), ownStringMap(metadataOf(pod).annotations), objects.namespaceLabels.get(namespace));
    return configuredHashes(appliedConfig(config, revision) ?? config);
  };
  const pods: PodUndoPlan[] = [];
  const unreadable: { namespace: string; name: string; reason: string }[] = [];
  const otherRuns: { namespace: string; name: string; reason: string }[] = [];
  for (const pod of objects.pods) {
    const metadata = metadataOf(pod);
    const annotations = ownStringMap(metadata.annotations);
    if (annotations[keys.previousImages] === undefined) continue;
    const namespace = typeof metadata.namespace === 'string' ? metadata.namespace : 'default';
    const name = String(metadata.name);
    const previous = parsePreviousImages(annotations[keys.previousImages]);
    if (typeof previous === 'string') {
      unreadable.push({ namespace, name, reason: previous });
      continue;
    }
    const configured = configuredFor(pod, namespace);
    if (configured) {
      const now = parseInjectionHashes(annotations[keys.hashes]) ?? new Map<string, string>();
      const before = parseInjectionHashes(previous.hashes) ?? new Map<string, string>();
      const upgraded = [...now].filter(([injection, hash]) => before.get(injection) !== hash);
      const elsewhere = upgraded.filter(([injection, hash]) => configured.has(injection) && configured.get(injection) !== hash);
      if (elsewhere.length > 0) {
        const theirs = elsewhere.map(([injection, hash]) => `${injection}=${hash}`).join(',');
        const ours = elsewhere.map(([injection]) => `${injection}=${configured.get(injection)}`).join(',');
        otherRuns.push({ namespace, name, reason: `upgraded in place to ${theirs}, not to this config's ${ours}: --undo with the --from of that run puts it back` });
        continue;
      }
    }
    const changes: ImageChange[] = [];
    let problem: string | undefined;
    for (const [container, image] of Object.entries(previous.images)) {
      const found = findContainer(pod, container);
      if (!found || typeof found.container.image !== 'string') {
        problem = `container ${container} is not in the pod`;
        break;
      }
      const nativeSidecar = found.list === 'initContainers' && found.container.restartPolicy === 'Always';
      if (found.container.image !== image) changes.push({ injection: '', container, list: found.list, index: found.index, from: found.container.image, to: image, nativeSidecar });
    }
    if (problem) {
      unreadable.push({ namespace, name, reason: problem });
      continue;
    }
    const { chain: _chain, ...workload } = workloadOf(pod, namespace, objects.owners);
    const gates = specOf(pod).readinessGates;
    const readinessGate = Array.isArray(gates) && gates.some((gate) => isObject(gate) && gate.conditionType === gateType);
    pods.push({ namespace, name, workload, changes, previous, readinessGate });
  }
  pods.sort((a, b) => a.namespace.localeCompare(b.namespace) || a.workload.kind.localeCompare(b.workload.kind) || a.workload.name.localeCompare(b.workload.name) || a.name.localeCompare(b.name));
  return { pods, unreadable, otherRuns };
}

/**
 * The pods an interrupted `rollout --in-place` left out of their Services: the readiness gate's
 * condition False. `namespace/name` each; `rollout --in-place` sets it back where nothing else is left to do.
 */
export function heldPods(pods: readonly KubernetesObject[], prefix: string): string[] {
  const type = readinessConditionType(prefix);
  return pods
    .filter((pod) => {
      const conditions = isObject(pod.status) && Array.isArray(pod.status.conditions) ? pod.status.conditions : [];
      return conditions.some((condition) => isObject(condition) && condition.type === type && condition.status === 'False');
    })
    .map((pod) => `${metadataOf(pod).namespace ?? 'default'}/${metadataOf(pod).name}`);
}
