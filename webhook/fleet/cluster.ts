// What carrying out a plan needs of the world, as interfaces: the cluster (get and patch pods, write one
// condition, read EndpointSlices) and time. The CLI gives client-node behind them (cli/cluster.ts), the
// reconciler its own in-cluster client (reconciler/pod-client.ts), the tests a simulated cluster and a
// clock they advance.

import type { KubernetesObject } from '../engine/admission-review';
import type { GuardedOperation } from './in-place-patches';

/** A pod's images or annotations changed between the read and the patch (a failed `test`, a stale resourceVersion). */
export class PatchConflict extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PatchConflict';
  }
}

/** One endpoint of a pod in an EndpointSlice. */
export interface PodEndpoint {
  readonly slice: string;
  /** `conditions.ready` (a missing value is ready, as the EndpointSlice API says). */
  readonly ready: boolean;
}

/** What `rollout --in-place` needs of the cluster: get and patch pods, write one condition, read EndpointSlices. */
export interface PodClient {
  getPod(namespace: string, name: string): Promise<KubernetesObject>;
  /** Applies a JSON Patch to the pod; throws PatchConflict when a `test` fails or the object changed under it. */
  patchPod(namespace: string, name: string, operations: readonly GuardedOperation[]): Promise<KubernetesObject>;
  /** Sets one condition in the pod's status (pods/status, merged by type: the others are kept). */
  setPodCondition(namespace: string, name: string, condition: { type: string; status: 'True' | 'False'; reason: string; message: string }): Promise<void>;
  /** Every endpoint of the pod (by its uid) in the namespace's EndpointSlices. */
  podEndpoints(namespace: string, podUid: string): Promise<readonly PodEndpoint[]>;
}

/**
 * The pods/status strategic-merge patch that sets one condition: merged by type into status.conditions,
 * so the kubelet's own are kept (as the kubelet writes it).
 */
export function podConditionPatch(condition: Parameters<PodClient['setPodCondition']>[2]): { status: { conditions: Record<string, unknown>[] } } {
  return { status: { conditions: [{ ...condition, lastProbeTime: null, lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } };
}

/** The pod's endpoints (by its uid) in these EndpointSlices, each with the Service its slice belongs to. */
export function podEndpointsIn(slices: Iterable<any>, podUid: string): { endpoint: PodEndpoint; service: string | undefined }[] {
  const found: { endpoint: PodEndpoint; service: string | undefined }[] = [];
  for (const slice of slices) {
    for (const endpoint of Array.isArray(slice?.endpoints) ? slice.endpoints : []) {
      if (endpoint?.targetRef?.kind !== 'Pod' || endpoint.targetRef.uid !== podUid) continue;
      const service = slice.metadata?.labels?.['kubernetes.io/service-name'];
      found.push({ endpoint: { slice: String(slice.metadata?.name), ready: endpoint.conditions?.ready !== false }, service: typeof service === 'string' ? service : undefined });
    }
  }
  return found;
}

/** Time, so the tests can advance it. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const REAL_CLOCK: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};
