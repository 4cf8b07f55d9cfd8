// Pod-level resources (`spec.resources`, KEP-2837, on by default from Kubernetes 1.34): the apiserver
// refuses a pod whose containers' requests add up to more than the pod's request, any of whose
// containers' limits is above the pod's limit, or whose pod request is above its pod limit
// (pkg/apis/core/validation: validatePodResourceConsistency, validateResourceRequirements). The sum is
// component-helpers' AggregateContainerRequests: the regular containers and native sidecars added up,
// each plain init container counted with the native sidecars before it, and the larger of the two.
// A pod that sets only limits gets its requests defaulted from the containers' (or from its limits),
// after admission from 1.37 and before it on 1.34 to 1.36; either way the sums below keep it valid.
//
// `add` raises the pod's figures by the injected containers' own: every injected container counted in
// full, which is at least what the apiserver's sum grows by (a plain init container grows it by at most
// its request), so it is exact for sidecars and never short for init containers; and it needs no sum
// over the pod's own containers, so the policies (CEL, which cannot sum a list) do the same.
// `share` leaves the pod's figures alone: the injected containers' requests are 0 (the sum cannot
// grow) and their limits at most the pod's. Hugepages are not overcommittable (request equals limit),
// so they are always added.

import type { PodResourcesPolicy, ResolvedInjection } from '../config';
import { Json, isJsonObject } from './json-object';
import { cachedQuantity } from './qos';

/** The resources a pod may set at pod level (component-helpers: IsSupportedPodLevelResource). */
export function isPodLevelResource(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

/** The resources `share` keeps inside the pod's budget; the rest (hugepages) are added. */
function isShared(name: string): boolean {
  return name === 'cpu' || name === 'memory';
}

/** A pod's `spec.resources` as the injection goes: the figures it sets, in nano-units, and how they changed. */
export class PodBudget {
  /** The first figures, for the warning: by `requests/<name>` and `limits/<name>`. */
  private readonly first = new Map<string, bigint>();
  /** Figures changed by the injections so far. */
  private readonly changed = new Map<string, bigint>();

  /** The pod's own limits, as written: `share` bounds the injected containers by these. */
  private readonly ownLimits: Map<string, { nanos: bigint; text: string }>;

  private constructor(
    readonly requests: Map<string, bigint>,
    readonly limits: Map<string, bigint>,
    podResources: Json,
  ) {
    this.ownLimits = new Map();
    const written = isJsonObject(podResources.limits) ? podResources.limits : {};
    for (const [name, nanos] of limits) this.ownLimits.set(name, { nanos, text: String(written[name]) });
  }

  /**
   * The budget of a pod with these `spec.resources`: undefined when it sets no pod-level resource
   * (IsPodLevelResourcesSet) or a figure is not a quantity (the apiserver refuses the pod anyway).
   */
  static of(podResources: unknown): PodBudget | undefined {
    if (!isJsonObject(podResources)) return undefined;
    const read = (map: unknown): Map<string, bigint> | undefined => {
      const out = new Map<string, bigint>();
      if (!isJsonObject(map)) return out;
      for (const [name, value] of Object.entries(map)) {
        if (!isPodLevelResource(name)) continue;
        const parsed = cachedQuantity(value);
        if (parsed === undefined) return undefined;
        out.set(name, parsed);
      }
      return out;
    };
    const requests = read(podResources.requests);
    const limits = read(podResources.limits);
    if (!requests || !limits || requests.size + limits.size === 0) return undefined;
    return new PodBudget(requests, limits, podResources);
  }

  /** The names the pod budgets, requests' first. */
  names(): string[] {
    return [...new Set([...this.requests.keys(), ...this.limits.keys()])];
  }

  /** `spec.resources` as it stands, cpu and memory (for the QoS class, which pod-level figures decide). */
  qosResources(): Json {
    const map = (figures: Map<string, bigint>) => {
      const out: Json = {};
      for (const name of ['cpu', 'memory']) if (figures.has(name)) out[name] = `${figures.get(name)}n`;
      return out;
    };
    return { requests: map(this.requests), limits: map(this.limits) };
  }

  private raise(field: 'requests' | 'limits', name: string, by: bigint): void {
    const figures = this[field];
    const now = figures.get(name);
    if (now === undefined || by === 0n) return;
    const key = `${field}/${name}`;
    if (!this.first.has(key)) this.first.set(key, now);
    figures.set(name, now + by);
    this.changed.set(key, now + by);
  }

  /**
   * Adds the containers just injected to the figures the pod sets (under `share`, their hugepages
   * only); returns what changed, as `requests memory 100Mi→278Mi`, or an empty list.
   */
  add(containers: readonly Json[], policy: PodResourcesPolicy): string[] {
    const said: string[] = [];
    for (const name of this.names()) {
      if (policy === 'share' && isShared(name)) continue;
      let requested = 0n;
      let limited = 0n;
      for (const container of containers) {
        const { request, limit } = figuresOf(container, name);
        requested += request ?? limit ?? 0n;
        limited += limit ?? request ?? 0n;
      }
      const before = { requests: this.requests.get(name), limits: this.limits.get(name) };
      this.raise('requests', name, requested);
      this.raise('limits', name, limited);
      for (const field of ['requests', 'limits'] as const) {
        const was = before[field];
        const now = this[field].get(name);
        if (was !== undefined && now !== was) said.push(`${field} ${name} ${formatQuantity(was, name)}→${formatQuantity(now!, name)}`);
      }
    }
    return said;
  }

  /**
   * The container as `share` injects it into this pod: for each of cpu and memory the pod budgets,
   * its request 0 (written: a missing request would default to the limit) and its limit at most the
   * pod's own (as the pod writes it; not as an earlier `add` raised it, which the policies cannot read). `said` gets what changed, as `container "envoy" requests memory 128Mi→0`.
   */
  shared<T extends Json>(container: T, said: string[]): T {
    const resources = isJsonObject(container.resources) ? container.resources : undefined;
    if (!resources) return container;
    let requests = isJsonObject(resources.requests) ? resources.requests : undefined;
    let limits = isJsonObject(resources.limits) ? resources.limits : undefined;
    const changes: string[] = [];
    for (const name of this.names()) {
      if (!isShared(name)) continue;
      const { request, limit } = figuresOf(container, name);
      const podLimit = this.ownLimits.get(name);
      if (limit !== undefined && podLimit !== undefined && limit > podLimit.nanos) {
        limits = { ...limits, [name]: podLimit.text };
        changes.push(`limits ${name} ${formatQuantity(limit, name)}→${formatQuantity(podLimit.nanos, name)}`);
      }
      const effective = request ?? limit;
      if (effective !== undefined && effective > 0n) {
        requests = { ...requests, [name]: '0' };
        changes.push(`requests ${name} ${formatQuantity(effective, name)}→0`);
      }
    }
    if (changes.length === 0) return container;
    said.push(`container "${String(container.name)}" ${changes.join(', ')}`);
    const out: Json = { ...resources };
    if (requests) out.requests = requests;
    if (limits) out.limits = limits;
    return { ...container, resources: out };
  }

  /** The figures changed, as `requests/<name>` and the new quantity, in the order first changed. */
  changes(): [string, string][] {
    return [...this.changed].map(([key, value]) => [key, formatQuantity(value, key.slice(key.indexOf('/') + 1))]);
  }
}

/** A container's request and limit of one resource (undefined when not set or not a quantity). */
function figuresOf(container: Json, name: string): { request?: bigint; limit?: bigint } {
  const resources = isJsonObject(container.resources) ? container.resources : undefined;
  const read = (map: unknown) => (isJsonObject(map) && map[name] !== undefined && map[name] !== null ? cachedQuantity(map[name]) : undefined);
  return { request: read(resources?.requests), limit: read(resources?.limits) };
}

const NANO = 1_000_000_000n;
const BINARY_SUFFIXES = ['Ei', 'Pi', 'Ti', 'Gi', 'Mi', 'Ki'] as const;

/** A quantity in nano-units as Kubernetes writes one: `278Mi` for memory, `600m` or `2` for cpu. */
export function formatQuantity(nanos: bigint, name: string): string {
  if (nanos === 0n) return '0';
  if (nanos % NANO === 0n) {
    const units = nanos / NANO;
    if (name !== 'cpu') {
      for (let i = 0; i < BINARY_SUFFIXES.length; i++) {
        const scale = 1n << BigInt(10 * (BINARY_SUFFIXES.length - i));
        if (units % scale === 0n) return `${units / scale}${BINARY_SUFFIXES[i]}`;
      }
    }
    return `${units}`;
  }
  // Below a whole unit: millicores (milli-units), rounded up as the policies round (they cannot write nano-units).
  return `${(nanos + 999_999n) / 1_000_000n}m`;
}

/** The warning for what one injection did to a pod's pod-level resources. */
export function podResourcesWarning(injection: ResolvedInjection, said: readonly string[]): string {
  const policy = injection.podResources ?? 'add';
  const how = policy === 'add' ? "adds its containers' requests and limits to the pod's spec.resources" : "fits its containers inside the pod's spec.resources";
  return `injection "${injection.name}" ${how} (podResources "${policy}"): ${said.join('; ')}`;
}
