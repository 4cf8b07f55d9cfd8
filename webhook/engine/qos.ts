// A pod's QoS class, computed as Kubernetes computes it (pkg/apis/core/helper/qos, ComputePodQOS):
// over containers and init containers (native sidecars included), cpu and memory only, zero
// quantities ignored, and requests defaulted from limits the way the apiserver defaults a Pod.

import { parseQuantity } from '../config';
import { BoundedCache, stringBytes } from './bounded-cache';
import { Json, isJsonObject } from './json-object';

/** A pod's Quality of Service class (`status.qosClass`), which decides its eviction order under node
 * memory pressure: Guaranteed (every container's cpu and memory limits equal its requests), Burstable, BestEffort (no requests or limits). */
export type QosClass = 'Guaranteed' | 'Burstable' | 'BestEffort';

const QOS_RESOURCES = ['cpu', 'memory'] as const;

/** A container's cpu and memory requests and limits, in nano-units; 0n when absent (zero counts as absent). */
interface Compute {
  readonly requestCpu: bigint;
  readonly requestMemory: bigint;
  readonly limitCpu: bigint;
  readonly limitMemory: bigint;
}

/** A container without requests or limits: most pods' containers, read without an allocation. */
const NONE: Compute = Object.freeze({ requestCpu: 0n, requestMemory: 0n, limitCpu: 0n, limitMemory: 0n });

/** Parsed quantities by their text: a cluster uses few distinct ones ("100m", "128Mi"), and every
 * request parses each container's. The text is the request's, so only short ones that parse are kept
 * (a quantity is rarely over a dozen characters), in a cache bounded in entries and bytes. */
const quantityCache = new BoundedCache<string, bigint>({ maxEntries: 4096, maxBytes: 256 * 1024 });
const MAX_CACHED_QUANTITY_LENGTH = 64;

/** `parseQuantity`, through the bounded cache of parsed quantities (the overrides read the same ones). */
export function cachedQuantity(value: unknown): bigint | undefined {
  if (typeof value !== 'string') return parseQuantity(value);
  let parsed = quantityCache.get(value);
  if (parsed === undefined) {
    parsed = parseQuantity(value);
    if (parsed !== undefined && value.length <= MAX_CACHED_QUANTITY_LENGTH) quantityCache.set(value, parsed, stringBytes(value) + 32);
  }
  return parsed;
}

/** The injected containers' `resources`, read once: they are the config's own objects on every
 * request. A pod's own containers are read once per request and not cached (a WeakMap entry per
 * fresh object costs more than reading it). */
const computeCache = new WeakMap<object, Compute | null>();

/** A quantity of a requests or limits map: 0n when absent or zero, undefined when unreadable. */
function quantityOf(map: Json, name: 'cpu' | 'memory'): bigint | undefined {
  const value = map[name];
  if (value === undefined || value === null) return 0n;
  const parsed = cachedQuantity(value);
  return parsed === undefined ? undefined : parsed > 0n ? parsed : 0n;
}

function computeOf(resources: unknown, cache: boolean): Compute | undefined {
  if (!isJsonObject(resources)) return NONE;
  const limits = resources.limits;
  const requests = resources.requests;
  if (!isJsonObject(limits) && !isJsonObject(requests)) return NONE;
  if (!cache) return computeUncached(limits, requests);
  let compute = computeCache.get(resources);
  if (compute === undefined) computeCache.set(resources, (compute = computeUncached(limits, requests) ?? null));
  return compute ?? undefined;
}

function computeUncached(limits: unknown, requests: unknown): Compute | undefined {
  const limitCpu = isJsonObject(limits) ? quantityOf(limits, 'cpu') : 0n;
  const limitMemory = isJsonObject(limits) ? quantityOf(limits, 'memory') : 0n;
  let requestCpu = isJsonObject(requests) ? quantityOf(requests, 'cpu') : 0n;
  let requestMemory = isJsonObject(requests) ? quantityOf(requests, 'memory') : 0n;
  if (limitCpu === undefined || limitMemory === undefined || requestCpu === undefined || requestMemory === undefined) return undefined;
  // The apiserver defaults a missing request to the limit (a request written as zero stays zero).
  const written = (name: 'cpu' | 'memory') => isJsonObject(requests) && requests[name] !== undefined;
  if (requestCpu === 0n && !written('cpu')) requestCpu = limitCpu;
  if (requestMemory === 0n && !written('memory')) requestMemory = limitMemory;
  return { requestCpu, requestMemory, limitCpu, limitMemory };
}

/**
 * Running sums of a pod's container requests and limits, from which its QoS class follows; containers
 * are added one by one, so an injection's effect on the class costs its own containers only.
 */
export class QosTally {
  private requestCpu = 0n;
  private requestMemory = 0n;
  private limitCpu = 0n;
  private limitMemory = 0n;
  /** Every container so far has a cpu and a memory limit. */
  private limitedEverywhere = true;
  /** A quantity could not be read: no class. */
  private unreadable = false;

  /** The sums over `containers` (a pod's containers and init containers). */
  static over(containers: Iterable<unknown>): QosTally {
    const tally = new QosTally();
    for (const container of containers) tally.add(container, false);
    return tally;
  }

  /** Adds one container. `cache`: its resources object is the config's, the same on every request. */
  add(container: unknown, cache: boolean): void {
    const compute = computeOf(isJsonObject(container) ? container.resources : undefined, cache);
    if (!compute) {
      this.unreadable = true;
      return;
    }
    if (compute === NONE) {
      this.limitedEverywhere = false;
      return;
    }
    // Burstable already (something requested or limited, not everywhere limited): sums only grow and
    // the flag stays false, so nothing but an unreadable quantity can change the class now.
    if (!this.limitedEverywhere && !this.isZero()) return;
    this.requestCpu += compute.requestCpu;
    this.requestMemory += compute.requestMemory;
    this.limitCpu += compute.limitCpu;
    this.limitMemory += compute.limitMemory;
    if (compute.limitCpu === 0n || compute.limitMemory === 0n) this.limitedEverywhere = false;
  }

  private isZero(): boolean {
    return this.requestCpu === 0n && this.requestMemory === 0n && this.limitCpu === 0n && this.limitMemory === 0n;
  }

  /** The class of the containers added so far; undefined when a quantity could not be read. */
  qosClass(): QosClass | undefined {
    if (this.unreadable) return undefined;
    if (this.isZero()) return 'BestEffort';
    // Limited everywhere (so both limits are set), and every request equal to its limit.
    return this.limitedEverywhere && this.requestCpu === this.limitCpu && this.requestMemory === this.limitMemory ? 'Guaranteed' : 'Burstable';
  }
}

/** Pod-level resources (the PodLevelResources feature): when set, they alone decide the class. */
export function hasPodLevelResources(podResources: unknown): boolean {
  return isJsonObject(podResources) && (isJsonObject(podResources.requests) || isJsonObject(podResources.limits));
}

/**
 * The QoS class of a pod with these containers (and init containers) and pod-level `resources`;
 * undefined when a quantity cannot be read (only a client other than the apiserver sends those).
 */
export function qosClassOf(containers: Iterable<unknown>, podResources?: unknown): QosClass | undefined {
  if (hasPodLevelResources(podResources)) return QosTally.over([{ resources: podResources }]).qosClass();
  return QosTally.over(containers).qosClass();
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
