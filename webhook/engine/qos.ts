// A pod's QoS class, computed as Kubernetes computes it (pkg/apis/core/helper/qos, ComputePodQOS):
// over containers and init containers (native sidecars included), cpu and memory only, zero
// quantities ignored, and requests defaulted from limits the way the apiserver defaults a Pod.

import { parseQuantity } from '../config';
import { Json, isJsonObject } from './json-object';

/** A pod's Quality of Service class (`status.qosClass`), which decides its eviction order under node
 * memory pressure: Guaranteed (every container's cpu and memory limits equal its requests), Burstable, BestEffort (no requests or limits). */
export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** A container's cpu and memory requests and limits, in nano-units; undefined when a value is not a quantity. */
interface Compute {
  readonly requests: Partial<Record<'cpu' | 'memory', bigint>>;
  readonly limits: Partial<Record<'cpu' | 'memory', bigint>>;
}

/** Parsed quantities by their text: a cluster uses few distinct ones ("100m", "128Mi"), and every
 * request parses each container's before and after each injection. Bounded; cleared when full. */
const quantityCache = new Map<unknown, bigint | undefined>();
const QUANTITY_CACHE_ENTRIES = 4096;

function cachedQuantity(value: unknown): bigint | undefined {
  if (typeof value !== 'string') return parseQuantity(value);
  let parsed = quantityCache.get(value);
  if (parsed === undefined && !quantityCache.has(value)) {
    parsed = parseQuantity(value);
    if (quantityCache.size >= QUANTITY_CACHE_ENTRIES) quantityCache.clear();
    quantityCache.set(value, parsed);
  }
  return parsed;
}

/** Each `resources` object read once: the QoS class is computed before and after every injection
 * over the same containers, and the injected ones are the config's own objects on every request. */
const computeCache = new WeakMap<object, Compute | null>();

function computeOf(resources: unknown): Compute | undefined {
  if (!isJsonObject(resources)) return computeUncached(resources);
  let compute = computeCache.get(resources);
  if (compute === undefined) computeCache.set(resources, (compute = computeUncached(resources) ?? null));
  return compute ?? undefined;
}

function computeUncached(resources: unknown): Compute | undefined {
  const out: { requests: Compute['requests']; limits: Compute['limits'] } = { requests: {}, limits: {} };
  if (!isJsonObject(resources)) return out;
  for (const kind of ['limits', 'requests'] as const) {
    const map = resources[kind];
    if (!isJsonObject(map)) continue;
    for (const name of QOS_RESOURCES) {
      if (map[name] === undefined || map[name] === null) continue;
      const value = cachedQuantity(map[name]);
      if (value === undefined) return undefined;
      if (value > 0n) out[kind][name] = value;
    }
  }
  // The apiserver defaults a missing request to the limit.
  for (const name of QOS_RESOURCES) {
    if (out.requests[name] === undefined && isJsonObject(resources.requests) && resources.requests[name] !== undefined) continue;
    if (out.requests[name] === undefined && out.limits[name] !== undefined) out.requests[name] = out.limits[name];
  }
  return out;
}

/**
 * The QoS class of a pod with these containers (and init containers) and pod-level `resources`;
 * undefined when a quantity cannot be read (only a client other than the apiserver sends those).
 */
export function qosClassOf(containers: Iterable<unknown>, podResources?: unknown): QosClass | undefined {
  const requests: Partial<Record<string, bigint>> = {};
  const limits: Partial<Record<string, bigint>> = {};
  let guaranteed = true;
  const add = (compute: Compute) => {
    for (const name of QOS_RESOURCES) {
      const request = compute.requests[name];
      if (request !== undefined) requests[name] = (requests[name] ?? 0n) + request;
      const limit = compute.limits[name];
      if (limit !== undefined) limits[name] = (limits[name] ?? 0n) + limit;
    }
    if (compute.limits.cpu === undefined || compute.limits.memory === undefined) guaranteed = false;
  };
  // Pod-level resources (the PodLevelResources feature) decide alone when they are set.
  if (isJsonObject(podResources) && (isJsonObject(podResources.requests) || isJsonObject(podResources.limits))) {
    const compute = computeOf(podResources);
    if (!compute) return undefined;
    add(compute);
  } else {
    for (const container of containers) {
      const compute = computeOf(isJsonObject(container) ? container.resources : undefined);
      if (!compute) return undefined;
      add(compute);
    }
  }
  const names = (map: object) => Object.keys(map);
  if (names(requests).length === 0 && names(limits).length === 0) return 'BestEffort';
  if (guaranteed) {
    for (const name of names(requests)) {
      if (limits[name] === undefined || limits[name] !== requests[name]) {
        guaranteed = false;
        break;
      }
    }
  }
  return guaranteed && names(requests).length === names(limits).length ? 'Guaranteed' : 'Burstable';
}

/**
 * A container to inject into a Guaranteed pod, with its cpu and memory limits set to its requests
 * (a request left out is the limit, so that limit stays).
 */
export function withLimitsAtRequests<T extends Json>(container: T): T {
  const resources = isJsonObject(container.resources) ? container.resources : {};
  const requests = isJsonObject(resources.requests) ? resources.requests : {};
  const limits: Json = isJsonObject(resources.limits) ? { ...resources.limits } : {};
  for (const name of QOS_RESOURCES) {
    if (requests[name] !== undefined) limits[name] = requests[name];
  }
  return { ...container, resources: { ...resources, limits } };
}
