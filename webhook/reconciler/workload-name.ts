// A workload as the reconciler names it: in its tables and outcomes (`apps/Deployment/web`), in the
// objects it points at (Events, PolicyReport results: the kind's apiVersion), and at its REST path.

import { TARGET_KIND_RESOURCES, type TargetKind } from '../config';
import type { WorkloadStatus } from '../fleet/status-report';
import type { EventTarget } from './event-recorder';

/** A workload, as far as the reconciler needs to name it. */
export type WorkloadName = Pick<WorkloadStatus, 'namespace' | 'apiVersion' | 'kind' | 'name'>;

/** `namespace/Kind/name`: the key of its backoff, the name in a pass's outcome. */
export function workloadKey(workload: WorkloadName): string {
  return `${workload.namespace}/${workload.kind}/${workload.name}`;
}

const known = (kind: string): kind is TargetKind => Object.prototype.hasOwnProperty.call(TARGET_KIND_RESOURCES, kind);

/**
 * The workload's apiVersion: as its pods' owner references give it (a custom controller's kind, an Argo
 * Rollout's `argoproj.io/v1alpha1`), else that of a target kind (`apps/v1`); undefined when neither says.
 */
export function workloadApiVersion(workload: Pick<WorkloadName, 'apiVersion' | 'kind'>): string | undefined {
  if (workload.apiVersion !== undefined) return workload.apiVersion;
  if (!known(workload.kind)) return undefined;
  const { group } = TARGET_KIND_RESOURCES[workload.kind];
  return group === '' ? 'v1' : `${group}/v1`;
}

/** The REST path of a workload of a target kind (`/apis/apps/v1/namespaces/apps/deployments/web`). */
export function workloadPath(workload: WorkloadName): string {
  if (!known(workload.kind)) throw new Error(`${workload.kind} is not a kind the reconciler restarts`);
  const { group, resource } = TARGET_KIND_RESOURCES[workload.kind];
  return `${group === '' ? '/api/v1' : `/apis/${group}/v1`}/namespaces/${workload.namespace}/${resource}/${workload.name}`;
}

/** The workload as an Event's involvedObject (its apiVersion left out when unknown). */
export function eventTarget(workload: WorkloadName, uid?: string): EventTarget {
  const apiVersion = workloadApiVersion(workload);
  return { ...(apiVersion !== undefined ? { apiVersion } : {}), kind: workload.kind, namespace: workload.namespace, name: workload.name, ...(uid ? { uid } : {}) };
}
