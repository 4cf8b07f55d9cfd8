// Builds the JSONPatch for one pod (or pod template) straight from the operations performed, never by
// diffing whole objects: the cost follows what is injected, not the size of the pod.

import type { ContainerMerge, Injection, JsonObject } from '../config';
import { pointer } from './json-pointer';
import type { Json, PodTemplate } from './pod-template';

export interface PatchOperation {
  readonly op: 'add';
  readonly path: string;
  readonly value: unknown;
}

/** One injection, its templates rendered, as the builder applies it. */
export type RenderedInjection = Omit<Injection, 'trigger' | 'targetKinds'>;

function isObject(value: unknown): value is Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a)) {
    return Array.isArray(b) && a.length === b.length && a.every((item, index) => jsonEqual(item, b[index]));
  }
  if (isObject(a) && isObject(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && jsonEqual(a[key], b[key]));
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

type ContainerList = 'containers' | 'initContainers';

export class PodPatchBuilder {
  readonly operations: PatchOperation[] = [];
  private readonly specPointer: string;
  private readonly metadataPointer: string;
  /** Arrays and maps this patch has already created, so later additions append instead of replacing. */
  private readonly created = new Set<string>();
  private readonly containerNames: Set<string>;
  private readonly volumeNames: Set<string>;
  private pullSecretNames: Set<string> | undefined;
  private readonly envNames = new Map<string, Set<string>>();
  private readonly mountPaths = new Map<string, Set<string>>();
  /** Metadata values set by this patch, by map and key. */
  private readonly metadataSet = new Map<string, string>();
  /** Container fields set by merges in this patch, and which injection set them. */
  private readonly mergedBy = new Map<string, { injection: string; value: unknown }>();

  constructor(
    private readonly pod: PodTemplate,
    private readonly warnings: string[],
  ) {
    this.specPointer = pod.pointer + '/spec';
    this.metadataPointer = pod.pointer + '/metadata';
    this.containerNames = namesOf(pod.spec.containers);
    for (const name of namesOf(pod.spec.initContainers)) this.containerNames.add(name);
    this.volumeNames = namesOf(pod.spec.volumes);
  }

  /** Applies one injection; returns whether it changed anything. */
  apply(injection: RenderedInjection): boolean {
    const before = this.operations.length;
    const warn = (message: string) => this.warnings.push(`injection "${injection.name}": ${message}`);

    for (const list of ['containers', 'initContainers'] as const) {
      for (const container of injection[list] ?? []) {
        const name = container.name as string;
        if (this.containerNames.has(name)) {
          warn(`container "${name}" already exists in the pod; kept the pod's own`);
          continue;
        }
        this.containerNames.add(name);
        this.append(pointer(this.specPointer, list), this.pod.spec[list], container);
      }
    }
    for (const volume of injection.volumes ?? []) {
      const name = volume.name as string;
      if (this.volumeNames.has(name)) {
        warn(`volume "${name}" already exists in the pod; kept the pod's own`);
        continue;
      }
      this.volumeNames.add(name);
      this.append(pointer(this.specPointer, 'volumes'), this.pod.spec.volumes, volume);
    }
    for (const secret of injection.imagePullSecrets ?? []) {
      this.pullSecretNames ??= namesOf(this.pod.spec.imagePullSecrets);
      if (this.pullSecretNames.has(secret.name as string)) continue; // the same reference: nothing to add
      this.pullSecretNames.add(secret.name as string);
      this.append(pointer(this.specPointer, 'imagePullSecrets'), this.pod.spec.imagePullSecrets, secret);
    }
    if (injection.env?.length || injection.volumeMounts?.length) {
      this.pod.spec.containers.forEach((container, index) => {
        if (!isObject(container)) return;
        const containerPointer = pointer(this.specPointer, 'containers', index);
        for (const variable of injection.env ?? []) {
          const names = this.cached(this.envNames, containerPointer, () => namesOf(container.env));
          if (names.has(variable.name as string)) {
            warn(`env "${variable.name}" already set in container "${container.name}"; kept the container's own`);
            continue;
          }
          names.add(variable.name as string);
          this.append(containerPointer + '/env', container.env, variable);
        }
        for (const mount of injection.volumeMounts ?? []) {
          const paths = this.cached(this.mountPaths, containerPointer, () => namesOf(container.volumeMounts, 'mountPath'));
          if (paths.has(mount.mountPath as string)) {
            warn(`mountPath "${mount.mountPath}" already used in container "${container.name}"; kept the container's own`);
            continue;
          }
          paths.add(mount.mountPath as string);
          this.append(containerPointer + '/volumeMounts', container.volumeMounts, mount);
        }
      });
    }
    for (const [map, entries] of [['labels', injection.labels], ['annotations', injection.annotations]] as const) {
      for (const [key, value] of Object.entries(entries ?? {})) this.setMetadata(map, key, value, warn);
    }
    for (const merge of injection.merges ?? []) this.applyMerge(merge, injection.name, warn);
    return this.operations.length > before;
  }

  /** Records in the status annotation which injections the pod carries. */
  setStatus(key: string, value: string): void {
    this.setMetadata('annotations', key, value, undefined);
  }

  private cached<T>(map: Map<string, T>, key: string, make: () => T): T {
    let value = map.get(key);
    if (value === undefined) map.set(key, (value = make()));
    return value;
  }

  private append(arrayPointer: string, existing: unknown, item: unknown): void {
    if (Array.isArray(existing) || this.created.has(arrayPointer)) {
      this.operations.push({ op: 'add', path: arrayPointer + '/-', value: item });
    } else {
      // Creates the list, replacing a null or absent field, and never an existing list.
      this.operations.push({ op: 'add', path: arrayPointer, value: [item] });
      this.created.add(arrayPointer);
    }
  }

  private setMetadata(
    map: 'labels' | 'annotations',
    key: string,
    value: string,
    warn: ((message: string) => void) | undefined,
  ): void {
    const metadata = this.pod.metadata;
    const existingMap = isObject(metadata?.[map]) ? (metadata[map] as Json) : undefined;
    const setKey = `${map}\u0000${key}`;
    const current = this.metadataSet.has(setKey) ? this.metadataSet.get(setKey) : existingMap?.[key];
    if (current === value) return;
    if (current !== undefined && warn) {
      warn(`${map === 'labels' ? 'label' : 'annotation'} "${key}" is already set; kept "${String(current)}"`);
      return;
    }
    this.metadataSet.set(setKey, value);
    const mapPointer = pointer(this.metadataPointer, map);
    if (!metadata && !this.created.has(this.metadataPointer)) {
      this.operations.push({ op: 'add', path: this.metadataPointer, value: { [map]: { [key]: value } } });
      this.created.add(this.metadataPointer);
      this.created.add(mapPointer);
    } else if (!existingMap && !this.created.has(mapPointer)) {
      this.operations.push({ op: 'add', path: mapPointer, value: { [key]: value } });
      this.created.add(mapPointer);
    } else {
      this.operations.push({ op: 'add', path: pointer(mapPointer, key), value });
    }
  }

  private applyMerge(merge: ContainerMerge, injection: string, warn: (message: string) => void): void {
    const targets = new Set(merge.containerNames);
    for (const list of ['containers', 'initContainers'] as ContainerList[]) {
      const containers = this.pod.spec[list];
      if (!Array.isArray(containers)) continue;
      containers.forEach((container, index) => {
        if (!isObject(container) || !targets.has(container.name as string)) return;
        const planned: PatchOperation[] = [];
        const containerPointer = pointer(this.specPointer, list, index);
        const outcome = planMerge(containerPointer, container, merge.fields, merge.whenMissing ?? 'skip', planned);
        if (outcome !== 'ok') {
          // A merge applies whole or not at all: half a probe is worse than none.
          if (outcome !== 'missing') warn(`cannot merge into container "${container.name}": ${outcome}`);
          return;
        }
        for (const operation of planned) {
          const earlier = this.mergedBy.get(operation.path);
          if (earlier && !jsonEqual(earlier.value, operation.value)) {
            warn(`${operation.path} was already set by injection "${earlier.injection}"; kept that value`);
            continue;
          }
          this.mergedBy.set(operation.path, { injection, value: operation.value });
          if (!earlier) this.operations.push(operation);
        }
      });
    }
  }
}

/** Plans the operations that set `fields` inside `target`: 'ok', 'missing' (skip), or a conflict message. */
function planMerge(
  base: string,
  target: Json,
  fields: JsonObject,
  whenMissing: 'skip' | 'create',
  out: PatchOperation[],
): 'ok' | 'missing' | string {
  for (const [key, value] of Object.entries(fields)) {
    const path = pointer(base, key);
    const current = target[key];
    if (isObject(value) && !(value === null)) {
      if (current === undefined || current === null) {
        if (whenMissing === 'skip') return 'missing';
        out.push({ op: 'add', path, value });
      } else if (isObject(current)) {
        const outcome = planMerge(path, current, value as JsonObject, whenMissing, out);
        if (outcome !== 'ok') return outcome;
      } else {
        return `${key} is ${Array.isArray(current) ? 'a list' : typeof current}, not an object`;
      }
    } else if (!jsonEqual(current, value)) {
      out.push({ op: 'add', path, value });
    }
  }
  return 'ok';
}
