// Builds the JSONPatch for one pod (or pod template) straight from the operations performed, never by
// diffing whole objects: the cost follows what is injected, not the size of the pod.
//
// Each injection sees what the injections before it did (labels, annotations, merged fields), so one
// call reaches the same result a second call would: reinvocation never finds anything left to do.

import type { ContainerMerge, Injection, JsonObject, NativeSidecarPosition } from '../config';
import { childPointer, pointer } from './json-pointer';
import { singletonList, stableCopy, stableRecord } from './patch-encoding';
import { Json, isJsonObject as isObject } from './json-object';
import { hasOwnKey as hasOwn, setOwn } from '../config/own-property';
import type { PodTemplate } from './pod-template';

/** One RFC 6902 JSON Patch operation of the admission response's patch; the injector only adds. */
export interface PatchOperation {
  /** The operation: always `add` (append to a list with `/-`, insert at a list index, or set a field). */
  readonly op: 'add';
  /** RFC 6901 JSON pointer to the target, such as `/spec/containers/-` or `/spec/template/metadata/annotations`. */
  readonly path: string;
  /** The JSON value added at `path`. */
  readonly value: unknown;
}

/** One injection, its templates rendered, as the builder applies it. */
export type RenderedInjection = Omit<Injection, 'trigger' | 'targetKinds'>;

/** How this pod gets an injection's containers. */
export interface ContainerPlacement {
  /** Native sidecars: `containers` become init containers with `restartPolicy: Always`. */
  readonly native: boolean;
  readonly position: NativeSidecarPosition;
}

const REGULAR_CONTAINERS: ContainerPlacement = { native: false, position: 'last' };
const CONTAINER_LISTS = ['containers', 'initContainers'] as const;

type PodList = 'containers' | 'initContainers' | 'volumes' | 'imagePullSecrets' | 'readinessGates';
/** `<spec pointer>/<list>`, made once per place a pod spec sits (a Pod's, a template's, a CronJob's). */
const LIST_POINTERS = new Map<string, Record<PodList, string>>();

/** `<template>/spec` and `<template>/metadata` by template pointer, made once (a handful of kinds). */
const SPEC_POINTERS: Record<string, string> = Object.create(null);
const METADATA_POINTERS: Record<string, string> = Object.create(null);

function listPointer(specPointer: string, list: PodList): string {
  let pointers = LIST_POINTERS.get(specPointer);
  if (pointers === undefined) {
    pointers = { containers: '', initContainers: '', volumes: '', imagePullSecrets: '', readinessGates: '' };
    for (const name of Object.keys(pointers) as PodList[]) pointers[name] = pointer(specPointer, name);
    LIST_POINTERS.set(specPointer, pointers);
  }
  return pointers[list];
}
/** `regularContainersAdded` when the last `apply` added none (never pushed to: replaced on first add). */
const NO_NAMES: string[] = [];

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => hasOwn(b, key) && jsonEqual(a[key], b[key]));
  }
  return false;
}

function namesOf(list: unknown, field = 'name'): Set<string> {
  const names = new Set<string>();
  if (Array.isArray(list)) {
    for (const item of list) if (isObject(item) && typeof item[field] === 'string') names.add(item[field] as string);
  }
  return names;
}

/** A string map read from an object: own string values only, no prototype to trip over. */
export function ownStringMap(value: unknown): Record<string, string> {
  const map: Record<string, string> = Object.create(null);
  if (!isObject(value)) return map;
  for (const key of Object.keys(value)) {
    if (typeof value[key] === 'string') map[key] = value[key] as string;
  }
  return map;
}

type ContainerList = 'containers' | 'initContainers';

/**
 * The names in some of the pod's lists, plus those this patch adds. Looked up by scanning: a pod has
 * a handful of containers and volumes, and an injection adds a few, so a scan costs less than the Set
 * it would otherwise build on every request (and stays linear in the pod for each name added).
 */
class ListNames {
  private added: string[] | undefined;

  constructor(private readonly lists: readonly unknown[]) {}

  has(name: string): boolean {
    for (const list of this.lists) {
      if (!Array.isArray(list)) continue;
      for (const item of list) if (isObject(item) && item.name === name) return true;
    }
    return this.added !== undefined && this.added.includes(name);
  }

  add(name: string): void {
    (this.added ??= []).push(name);
  }
}

export class PodPatchBuilder {
  readonly operations: PatchOperation[] = [];
  /** The pod's annotations as they stand after the operations so far. */
  readonly annotations: Record<string, string>;
  /** The pod's labels likewise: read from the pod when first asked for (most triggers never look). */
  private labelsMap?: Record<string, string>;
  get labels(): Record<string, string> {
    return (this.labelsMap ??= ownStringMap(this.pod.metadata?.labels));
  }
  private readonly specPointer: string;
  private readonly metadataPointer: string;
  /** Arrays and maps this patch has already created, so later additions append instead of replacing
   * (made on first use: most patches add to lists and maps the pod has). */
  private createdSet?: Set<string>;
  private created(path: string): boolean {
    return this.createdSet !== undefined && this.createdSet.has(path);
  }
  private markCreated(path: string): void {
    (this.createdSet ??= new Set()).add(path);
  }
  private readonly containerNames: ListNames;
  private readonly volumeNames: ListNames;
  private pullSecretNames: Set<string> | undefined;
  // Made on first use: most pods get no env, mounts or merges, and a Map per request is not free.
  private envNamesMap?: Map<string, Set<string>>;
  private mountPathsMap?: Map<string, Set<string>>;
  /** Fields set by merges so far, per container pointer (a sparse overlay on the original container). */
  private mergeOverlaysMap?: Map<string, Json>;
  /** Container fields set by merges in this patch, and which injection set them. */
  private mergedByMap?: Map<string, string>;
  private get envNames(): Map<string, Set<string>> {
    return (this.envNamesMap ??= new Map());
  }
  private get mountPaths(): Map<string, Set<string>> {
    return (this.mountPathsMap ??= new Map());
  }
  private get mergeOverlays(): Map<string, Json> {
    return (this.mergeOverlaysMap ??= new Map());
  }
  private get mergedBy(): Map<string, string> {
    return (this.mergedByMap ??= new Map());
  }
  /** Containers and init containers this patch adds, in order (native sidecars as added, with their restartPolicy). */
  readonly added: Json[] = [];
  /** Native sidecars that go before the pod's init containers: inserted last, so earlier paths keep their indices. */
  private readonly firstInitContainers: Json[] = [];
  /** Regular containers (not native sidecars) that the last `apply` added. */
  regularContainersAdded: string[] = NO_NAMES;

  private listPointer(list: PodList): string {
    return listPointer(this.specPointer, list);
  }

  constructor(
    private readonly pod: PodTemplate,
    private readonly warnings: string[],
    /** Names of containers that earlier calls injected: they belong to the injector, not the user. */
    private readonly injectedContainerNames: ReadonlySet<string>,
    /** `ownStringMap(pod.metadata.annotations)` when the caller made it already; the builder updates it. */
    annotations?: Record<string, string>,
  ) {
    this.specPointer = SPEC_POINTERS[pod.pointer] ??= pod.pointer + '/spec';
    this.metadataPointer = METADATA_POINTERS[pod.pointer] ??= pod.pointer + '/metadata';
    this.containerNames = new ListNames([pod.spec.containers, pod.spec.initContainers]);
    this.volumeNames = new ListNames([pod.spec.volumes]);
    this.annotations = annotations ?? ownStringMap(pod.metadata?.annotations);
  }

  /** Applies one injection; returns whether it changed anything. */
  apply(injection: RenderedInjection, placement: ContainerPlacement = REGULAR_CONTAINERS): boolean {
    const before = this.operations.length + this.firstInitContainers.length;
    const warn = (message: string) => this.warnings.push(`injection "${injection.name}": ${message}`);
    this.regularContainersAdded = NO_NAMES;

    for (const list of CONTAINER_LISTS) {
      const containers = injection[list];
      if (containers === undefined) continue;
      for (const container of containers) {
        const name = container.name;
        if (this.containerNames.has(name)) {
          warn(`container "${name}" already exists in the pod; kept the pod's own`);
          continue;
        }
        this.containerNames.add(name);
        if (list === 'containers' && placement.native) {
          const sidecar = stableCopy(container as Json, 'native-sidecar', { restartPolicy: 'Always' });
          this.added.push(sidecar);
          if (placement.position === 'first') this.firstInitContainers.push(sidecar);
          else this.append(this.listPointer('initContainers'), this.pod.spec.initContainers, sidecar);
          continue;
        }
        if (list === 'containers') {
          if (this.regularContainersAdded === NO_NAMES) this.regularContainersAdded = [];
          this.regularContainersAdded.push(name);
        }
        this.added.push(container as Json);
        this.append(this.listPointer(list), this.pod.spec[list], container);
      }
    }
    if (injection.volumes !== undefined) {
      for (const volume of injection.volumes) {
        if (this.volumeNames.has(volume.name)) {
          warn(`volume "${volume.name}" already exists in the pod; kept the pod's own`);
          continue;
        }
        this.volumeNames.add(volume.name);
        this.append(this.listPointer('volumes'), this.pod.spec.volumes, volume);
      }
    }
    for (const secret of injection.imagePullSecrets ?? []) {
      this.pullSecretNames ??= namesOf(this.pod.spec.imagePullSecrets);
      if (this.pullSecretNames.has(secret.name)) continue; // the same reference: nothing to add
      this.pullSecretNames.add(secret.name);
      this.append(this.listPointer('imagePullSecrets'), this.pod.spec.imagePullSecrets, secret);
    }
    if (injection.env?.length || injection.volumeMounts?.length) {
      this.pod.spec.containers.forEach((container, index) => {
        if (!this.isUsersContainer(container)) return;
        const containerPointer = pointer(this.specPointer, 'containers', index);
        for (const variable of injection.env ?? []) {
          const names = this.cached(this.envNames, containerPointer, () => namesOf(container.env));
          if (names.has(variable.name)) {
            warn(`env "${variable.name}" already set in container "${container.name}"; kept the container's own`);
            continue;
          }
          names.add(variable.name);
          this.append(containerPointer + '/env', container.env, variable);
        }
        for (const mount of injection.volumeMounts ?? []) {
          const paths = this.cached(this.mountPaths, containerPointer, () => namesOf(container.volumeMounts, 'mountPath'));
          if (paths.has(mount.mountPath)) {
            warn(`mountPath "${mount.mountPath}" already used in container "${container.name}"; kept the container's own`);
            continue;
          }
          paths.add(mount.mountPath);
          this.append(containerPointer + '/volumeMounts', container.volumeMounts, mount);
        }
      });
    }
    if (injection.labels !== undefined) for (const [key, value] of Object.entries(injection.labels)) this.setMetadata('labels', key, value, warn);
    if (injection.annotations !== undefined) for (const [key, value] of Object.entries(injection.annotations)) this.setMetadata('annotations', key, value, warn);
    if (injection.merges !== undefined) for (const merge of injection.merges) this.applyMerge(merge, injection.name, warn);
    return this.operations.length + this.firstInitContainers.length > before;
  }

  /** Adds the native sidecars that go first among the init containers, after every other operation. */
  finish(): void {
    if (this.firstInitContainers.length === 0) return;
    const listPointer = pointer(this.specPointer, 'initContainers');
    if (!Array.isArray(this.pod.spec.initContainers) && !this.created(listPointer)) {
      this.operations.push({ op: 'add', path: listPointer, value: [...this.firstInitContainers] });
      this.markCreated(listPointer);
    } else {
      this.firstInitContainers.forEach((container, index) => this.operations.push({ op: 'add', path: `${listPointer}/${index}`, value: container }));
    }
    this.firstInitContainers.length = 0;
  }

  /** The pod's containers and init containers as they stand now, with merged resources (for the QoS class). */
  containersNow(): unknown[] {
    const out: unknown[] = [];
    for (const list of ['containers', 'initContainers'] as const) {
      const containers = this.pod.spec[list];
      if (!Array.isArray(containers)) continue;
      // Without merges there is nothing to overlay: no pointer string built per container.
      if (this.mergeOverlaysMap === undefined || this.mergeOverlaysMap.size === 0) {
        for (const container of containers) out.push(container);
        continue;
      }
      containers.forEach((container, index) => {
        const overlay = this.mergeOverlays.get(pointer(this.specPointer, list, index));
        out.push(overlay && overlay.resources !== undefined && isObject(container)
          ? { resources: overlaid(container.resources, overlay.resources) }
          : container);
      });
    }
    for (const container of this.added) out.push(container);
    return out;
  }

  /** Sets one figure of the pod's `spec.resources` (`requests/memory`), a map the pod has already. */
  setPodResource(key: string, value: string): void {
    const slash = key.indexOf('/');
    this.operations.push({ op: 'add', path: pointer(this.specPointer, 'resources', key.slice(0, slash), key.slice(slash + 1)), value });
  }

  /** Adds a readiness gate (`{ conditionType }`), unless the pod has one of its condition type already. */
  addReadinessGate(gate: Json & { conditionType: string }): void {
    const gates = this.pod.spec.readinessGates;
    if (Array.isArray(gates) && gates.some((existing) => isObject(existing) && existing.conditionType === gate.conditionType)) return;
    this.append(this.listPointer('readinessGates'), gates, gate);
  }

  /** Records in the status annotation which injections the pod carries. */
  setStatus(key: string, value: string): void {
    this.setMetadata('annotations', key, value, undefined);
  }

  /** Whether a container is the user's own (not one an injection added): env, mounts and merges go there. */
  private isUsersContainer(container: unknown): container is Json {
    return isObject(container) && !(typeof container.name === 'string' && this.injectedContainerNames.has(container.name));
  }

  private cached<T>(map: Map<string, T>, key: string, make: () => T): T {
    let value = map.get(key);
    if (value === undefined) map.set(key, (value = make()));
    return value;
  }

  private append(arrayPointer: string, existing: unknown, item: unknown): void {
    if (Array.isArray(existing) || this.created(arrayPointer)) {
      this.operations.push({ op: 'add', path: childPointer(arrayPointer, '-'), value: item });
    } else {
      // Creates the list, replacing a null or absent field, and never an existing list.
      this.operations.push({ op: 'add', path: arrayPointer, value: singletonList(item) });
      this.markCreated(arrayPointer);
    }
  }

  private setMetadata(map: 'labels' | 'annotations', key: string, value: string, warn: ((message: string) => void) | undefined): void {
    const current = this[map];
    if (current[key] === value) return;
    if (key in current && warn) {
      warn(`${map === 'labels' ? 'label' : 'annotation'} "${key}" is already set; kept "${current[key]}"`);
      return;
    }
    current[key] = value;
    const metadata = this.pod.metadata;
    const mapPointer = childPointer(this.metadataPointer, map);
    if (!metadata && !this.created(this.metadataPointer)) {
      this.operations.push({ op: 'add', path: this.metadataPointer, value: stableRecord(map, stableRecord(key, value)) });
      this.markCreated(this.metadataPointer);
      this.markCreated(mapPointer);
    } else if (!isObject(metadata?.[map]) && !this.created(mapPointer)) {
      this.operations.push({ op: 'add', path: mapPointer, value: stableRecord(key, value) });
      this.markCreated(mapPointer);
    } else {
      this.operations.push({ op: 'add', path: childPointer(mapPointer, key), value });
    }
  }

  private applyMerge(merge: ContainerMerge, injection: string, warn: (message: string) => void): void {
    const targets = new Set(merge.containerNames);
    for (const list of ['containers', 'initContainers'] as ContainerList[]) {
      const containers = this.pod.spec[list];
      if (!Array.isArray(containers)) continue;
      containers.forEach((container, index) => {
        if (!this.isUsersContainer(container) || !targets.has(container.name as string)) return;
        const containerPointer = pointer(this.specPointer, list, index);
        const overlay = this.cached(this.mergeOverlays, containerPointer, () => ({}));
        const plan: MergePlan = { operations: [], commits: [] };
        const outcome = planMerge(containerPointer, container, overlay, merge.fields, merge.whenMissing ?? 'skip', plan);
        if (outcome !== 'ok') {
          // A merge applies whole or not at all: half a probe is worse than none.
          if (outcome !== 'missing') warn(`cannot merge into container "${container.name}": ${outcome}`);
          return;
        }
        const conflict = plan.operations.find((operation) => this.mergedBy.has(operation.path));
        if (conflict) {
          warn(`${conflict.path} was already set by injection "${this.mergedBy.get(conflict.path)}"; kept that value`);
          return;
        }
        for (const commit of plan.commits) commit();
        for (const operation of plan.operations) {
          this.mergedBy.set(operation.path, injection);
          this.operations.push(operation);
        }
      });
    }
  }
}

/** `base` with `overlay`'s fields set on top, nested objects merged. */
function overlaid(base: unknown, overlay: unknown): unknown {
  if (!isObject(overlay) || !isObject(base)) return overlay;
  const out: Json = { ...base };
  for (const [key, value] of Object.entries(overlay)) setOwn(out, key, overlaid(hasOwn(base, key) ? base[key] : undefined, value));
  return out;
}

interface MergePlan {
  readonly operations: PatchOperation[];
  /** Overlay updates, run only when the whole merge applies. */
  readonly commits: (() => void)[];
}

/**
 * Plans the operations that set `fields` inside a container, reading the container as `original`
 * with `overlay` (what earlier merges set) on top. 'ok', 'missing' (skip), or a conflict message.
 */
function planMerge(
  base: string,
  original: Json | undefined,
  overlay: Json,
  fields: JsonObject,
  whenMissing: 'skip' | 'create',
  plan: MergePlan,
): 'ok' | 'missing' | string {
  for (const [key, value] of Object.entries(fields)) {
    const path = pointer(base, key);
    const fromOverlay = hasOwn(overlay, key) ? overlay[key] : undefined;
    const fromOriginal = original && hasOwn(original, key) ? original[key] : undefined;
    const current = fromOverlay !== undefined ? fromOverlay : fromOriginal;
    if (isObject(value)) {
      if (current === undefined || current === null) {
        if (whenMissing === 'skip') return 'missing';
        plan.operations.push({ op: 'add', path, value });
        plan.commits.push(() => setOwn(overlay, key, structuredClone(value)));
      } else if (isObject(current)) {
        let childOverlay = isObject(fromOverlay) ? fromOverlay : undefined;
        if (!childOverlay) {
          const created: Json = {};
          childOverlay = created;
          plan.commits.unshift(() => setOwn(overlay, key, created));
        }
        const outcome = planMerge(path, isObject(fromOriginal) ? fromOriginal : undefined, childOverlay, value as JsonObject, whenMissing, plan);
        if (outcome !== 'ok') return outcome;
      } else {
        return `${key} is ${Array.isArray(current) ? 'a list' : typeof current}, not an object`;
      }
    } else if (!jsonEqual(current, value)) {
      plan.operations.push({ op: 'add', path, value });
      plan.commits.push(() => setOwn(overlay, key, value));
    }
  }
  return 'ok';
}
