// The apiserver's rules for pod-level resources (`spec.resources`, KEP-2837), written from the
// Kubernetes 1.37.2 source and independent of the engine, to judge injected pods by:
// - defaulting (pkg/apis/core/v1/defaults.go SetDefaults_Pod; pkg/api/pod/util.go DefaultPodLevelResources
//   from 1.37, PodLevelResourcesFixDefaulting): a container's missing request is its limit; a pod-level
//   request left out is the containers' aggregate request (cpu, memory), else the pod-level limit; from
//   1.37 this runs after admission, on 1.34 to 1.36 before it (so the webhook sees the requests);
// - the sums (component-helpers resource.AggregateContainerRequests): regular containers and native
//   sidecars added up; each plain init container with the native sidecars before it; the larger;
// - validation (pkg/apis/core/validation: validatePodResources, validatePodResourceConsistency,
//   validateResourceRequirements): pod-level requests at most the pod-level limits (hugepages equal), the
//   aggregate request at most the pod-level request, the aggregate hugepage limits at most the pod-level
//   limit, each container's limit at most the pod-level limit. The apiserver checks the last for
//   `spec.containers`; this checks init containers too, which is stricter, never looser.

import { parseQuantity } from '../../webhook/config';

type Json = Record<string, any>;
type Figures = Map<string, bigint>;

export function isPodLevelResource(name: string): boolean {
  return name === 'cpu' || name === 'memory' || name.startsWith('hugepages-');
}

const isHugePages = (name: string) => name.startsWith('hugepages-');

function figures(map: unknown): Figures {
  const out: Figures = new Map();
  if (map === null || typeof map !== 'object') return out;
  for (const [name, value] of Object.entries(map as Json)) {
    const parsed = parseQuantity(value);
    if (parsed === undefined) throw new Error(`${name}: ${JSON.stringify(value)} is not a quantity`);
    out.set(name, parsed);
  }
  return out;
}

/** A container's requests as the apiserver stores them: each limit without a request copied. */
function containerRequests(container: Json): Figures {
  const requests = figures(container.resources?.requests);
  for (const [name, limit] of figures(container.resources?.limits)) if (!requests.has(name)) requests.set(name, limit);
  return requests;
}

function containerLimits(container: Json): Figures {
  return figures(container.resources?.limits);
}

function add(into: Figures, from: Figures): void {
  for (const [name, value] of from) into.set(name, (into.get(name) ?? 0n) + value);
}

function maxInto(into: Figures, from: Figures): void {
  for (const [name, value] of from) if (!into.has(name) || value > into.get(name)!) into.set(name, value);
}

/** component-helpers' aggregateContainerResourcesByFn. */
export function aggregate(spec: Json, get: (container: Json) => Figures): Figures {
  const result: Figures = new Map();
  for (const container of spec.containers ?? []) add(result, get(container));
  const sidecars: Figures = new Map();
  const init: Figures = new Map();
  for (const container of spec.initContainers ?? []) {
    const own = get(container);
    let usage: Figures;
    if (container.restartPolicy === 'Always') {
      add(result, own);
      add(sidecars, own);
      usage = new Map(sidecars);
    } else {
      usage = new Map(own);
      add(usage, sidecars);
    }
    maxInto(init, usage);
  }
  maxInto(result, init);
  return result;
}

export const aggregateRequests = (spec: Json) => aggregate(spec, containerRequests);
export const aggregateLimits = (spec: Json) => aggregate(spec, containerLimits);

/** The pod-level defaulting, on a copy of `spec`: `fixed` is 1.37's (limits defaulted too). */
export function withPodLevelDefaults(spec: Json, fixed: boolean): Json {
  const out = structuredClone(spec);
  const resources = out.resources;
  if (!resources || (Object.keys(resources.requests ?? {}).length === 0 && Object.keys(resources.limits ?? {}).length === 0)) return out;
  const requests = figures(resources.requests);
  const limits = figures(resources.limits);
  for (const [name, value] of aggregateLimits(out)) {
    if (isHugePages(name) && !requests.has(name) && !limits.has(name) && isPodLevelResource(name)) limits.set(name, value);
  }
  if (!fixed && limits.size === 0) return out; // 1.34 to 1.36 default requests only where limits are set
  for (const [name, value] of aggregateRequests(out)) {
    if (!requests.has(name) && isPodLevelResource(name) && !isHugePages(name)) requests.set(name, value);
  }
  for (const [name, value] of limits) if (!requests.has(name)) requests.set(name, value);
  if (fixed) {
    const allLimited = (name: string) => [...(out.containers ?? []), ...(out.initContainers ?? [])].every((c: Json) => containerLimits(c).has(name));
    const aggregated = aggregateLimits(out);
    for (const [name, request] of requests) {
      if (limits.has(name) || !allLimited(name)) continue;
      const limit = aggregated.get(name) ?? 0n;
      limits.set(name, limit > request ? limit : request);
    }
  }
  // Figures the pod wrote keep their text; defaulted ones are written in nano-units.
  const text = (map: Figures, written: Json | undefined) => Object.fromEntries([...map].map(([name, value]) => [name, written?.[name] ?? `${value}n`]));
  if (requests.size > 0) resources.requests = text(requests, resources.requests);
  if (limits.size > 0) resources.limits = text(limits, resources.limits);
  return out;
}

const show = (nanos: bigint) => `${nanos}n`;

/** Every reason the apiserver refuses this (defaulted) pod spec over pod-level resources; [] when valid. */
export function podLevelViolations(spec: Json): string[] {
  const resources = spec.resources;
  if (!resources) return [];
  const out: string[] = [];
  const requests = figures(resources.requests);
  const limits = figures(resources.limits);
  for (const name of [...requests.keys(), ...limits.keys()]) {
    if (!isPodLevelResource(name)) out.push(`spec.resources[${name}]: Unsupported value: only cpu, memory and hugepages-* can be set at pod level`);
  }
  for (const [name, request] of requests) {
    const limit = limits.get(name);
    if (limit === undefined) continue;
    if (isHugePages(name) && request !== limit) out.push(`spec.resources.requests: Invalid value: "${show(request)}": must be equal to ${name} limit of ${show(limit)}`);
    else if (request > limit) out.push(`spec.resources.requests: Invalid value: "${show(request)}": must be less than or equal to ${name} limit of ${show(limit)}`);
  }
  for (const [name, sum] of aggregateRequests(spec)) {
    const request = requests.get(name);
    if (request !== undefined && sum > request) out.push(`spec.resources.requests[${name}]: Invalid value: "${show(request)}": must be greater than or equal to aggregate container requests of ${show(sum)}`);
  }
  for (const [name, sum] of aggregateLimits(spec)) {
    const limit = limits.get(name);
    if (isHugePages(name) && limit !== undefined && sum > limit) out.push(`spec.resources.limits[${name}]: Invalid value: "${show(limit)}": must be greater than or equal to aggregate container limits of ${show(sum)}`);
  }
  for (const list of ['containers', 'initContainers'] as const) {
    (spec[list] ?? []).forEach((container: Json, index: number) => {
      for (const [name, limit] of containerLimits(container)) {
        const podLimit = limits.get(name);
        if (podLimit !== undefined && limit > podLimit) out.push(`spec.resources.${list}[${index}][${name}].limits: Invalid value: "${show(limit)}": must be less than or equal to pod limits of ${show(podLimit)}`);
      }
      const own = figures(container.resources?.requests);
      for (const [name, request] of own) {
        const limit = containerLimits(container).get(name);
        if (limit !== undefined && request > limit) out.push(`spec.${list}[${index}].resources.requests[${name}]: must be less than or equal to ${name} limit`);
      }
    });
  }
  return out;
}

/** Container defaulting (requests from limits) on a copy of `spec`, as SetDefaults_Pod does. */
export function withContainerDefaults(spec: Json): Json {
  const out = structuredClone(spec);
  for (const container of [...(out.containers ?? []), ...(out.initContainers ?? [])]) {
    const limits = container.resources?.limits;
    if (!limits) continue;
    container.resources.requests ??= {};
    for (const [name, value] of Object.entries(limits)) if (container.resources.requests[name] === undefined) container.resources.requests[name] = value;
  }
  return out;
}

/**
 * The pod spec as an apiserver of `version` stores it when `inject` is its mutating admission:
 * decoded and defaulted, admitted, defaulted again, and its violations.
 */
export function admittedSpec(spec: Json, version: '1.36' | '1.37', inject: (spec: Json) => Json): { spec: Json; violations: string[] } {
  const fixed = version === '1.37';
  let decoded = withContainerDefaults(spec);
  if (!fixed) decoded = withPodLevelDefaults(decoded, false);
  let stored = withContainerDefaults(inject(decoded));
  stored = withPodLevelDefaults(stored, fixed);
  return { spec: stored, violations: podLevelViolations(stored) };
}

/**
 * The Kubernetes website's pod-level-resources example (content/en/examples/pods/resource/pod-level-resources.yaml),
 * with `resources`, init containers and metadata as given: the pod the issue was met with, and its variants.
 */
export function websitePod(
  resources: Json = { limits: { cpu: '1', memory: '200Mi' }, requests: { cpu: '1', memory: '100Mi' } },
  initContainers?: Json[],
  metadata: Json = { name: 'pod-resources-demo', namespace: 'pod-resources-example' },
): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata,
    spec: {
      resources,
      containers: [
        { name: 'pod-resources-demo-ctr-1', image: 'nginx', resources: { limits: { cpu: '0.5', memory: '100Mi' }, requests: { cpu: '0.5', memory: '50Mi' } } },
        { name: 'pod-resources-demo-ctr-2', image: 'fedora', command: ['sleep', 'inf'] },
      ],
      ...(initContainers ? { initContainers } : {}),
    },
  };
}
