// Whether restarting a workload now keeps it as available as its owners asked: not while a rollout of
// it is under way, not while a PodDisruptionBudget covering its pods allows no disruption, and never
// when its own rollout strategy may take down more pods at once than such a budget allows (the
// Deployment controller follows maxUnavailable, not budgets: the reconciler checks it instead).
// Pure: the workload and the namespace's budgets in, a reason to wait (or none) out.

import type { KubernetesObject } from '../engine/admission-review';
import { type LabelSelector, matchesLabelSelector } from '../engine/label-selector';
import { ownStringMap } from '../engine/pod-patch-builder';

const isRecord = (value: unknown): value is Record<string, any> => value !== null && typeof value === 'object' && !Array.isArray(value);

/** An IntOrString against a total, as the controllers read it (percentages rounded as `roundUp` says). */
export function scaledValue(value: unknown, total: number, roundUp: boolean, fallback: number): number {
  if (typeof value === 'number' && Number.isInteger(value)) return value;
  if (typeof value === 'string' && /^\d+%$/.test(value)) {
    const exact = (Number(value.slice(0, -1)) * total) / 100;
    return roundUp ? Math.ceil(exact) : Math.floor(exact);
  }
  return fallback;
}

/** The most pods of the workload its own rollout takes down at once. */
export function strategyMaxUnavailable(workload: KubernetesObject): number {
  const spec = isRecord(workload.spec) ? workload.spec : {};
  const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1;
  if (workload.kind === 'Deployment') {
    if (spec.strategy?.type === 'Recreate') return replicas;
    const rolling = spec.strategy?.rollingUpdate ?? {};
    const unavailable = scaledValue(rolling.maxUnavailable ?? '25%', replicas, false, 0);
    const surge = scaledValue(rolling.maxSurge ?? '25%', replicas, true, 0);
    // Both zero is refused by the apiserver; the controller then treats maxUnavailable as 1.
    return unavailable === 0 && surge === 0 ? 1 : unavailable;
  }
  if (workload.kind === 'StatefulSet') {
    if (spec.updateStrategy?.type === 'OnDelete') return 0;
    return Math.max(1, scaledValue(spec.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1, replicas, false, 1));
  }
  if (workload.kind === 'DaemonSet') {
    const scheduled = Number((workload.status as any)?.desiredNumberScheduled ?? 1);
    return Math.max(scaledValue(spec.updateStrategy?.rollingUpdate?.maxUnavailable ?? 1, scheduled, true, 1), 0);
  }
  return replicas;
}

/** Why the workload's rollout is not settled (a restart now would stack on it), or undefined. */
export function rolloutInProgress(workload: KubernetesObject): string | undefined {
  const metadata = isRecord(workload.metadata) ? workload.metadata : {};
  const status = isRecord(workload.status) ? workload.status : {};
  const spec = isRecord(workload.spec) ? workload.spec : {};
  if (typeof metadata.generation === 'number' && Number(status.observedGeneration ?? 0) < metadata.generation) return 'its controller has not yet seen its latest change';
  if (workload.kind === 'DaemonSet') {
    const desired = Number(status.desiredNumberScheduled ?? 0);
    if (Number(status.updatedNumberScheduled ?? 0) < desired || Number(status.numberUnavailable ?? 0) > 0) return 'its rollout is in progress';
    return undefined;
  }
  const replicas = typeof spec.replicas === 'number' ? spec.replicas : 1;
  if (Number(status.updatedReplicas ?? 0) < replicas) return 'its rollout is in progress';
  if (workload.kind === 'Deployment' && Number(status.unavailableReplicas ?? 0) > 0) return `${status.unavailableReplicas} of its pods are unavailable`;
  if (workload.kind === 'StatefulSet' && Number(status.readyReplicas ?? 0) < replicas) return `${replicas - Number(status.readyReplicas ?? 0)} of its pods are not ready`;
  return undefined;
}

/** The budgets whose selector matches the workload's pod template labels. */
export function budgetsFor(workload: KubernetesObject, budgets: readonly KubernetesObject[]): KubernetesObject[] {
  const labels = ownStringMap((workload.spec as any)?.template?.metadata?.labels);
  return budgets.filter((budget) => {
    const selector = (budget.spec as any)?.selector as LabelSelector | undefined;
    // A budget with no (or an empty) selector matches no pod in policy/v1.
    if (!isRecord(selector) || (Object.keys(selector.matchLabels ?? {}).length === 0 && (selector.matchExpressions ?? []).length === 0)) return false;
    return matchesLabelSelector(selector, labels);
  });
}

/** Why restarting the workload now could break one of its budgets, or undefined. */
export function disruptionBlocked(workload: KubernetesObject, budgets: readonly KubernetesObject[], action: 'restart' | 'in-place'): string | undefined {
  const replicas = typeof (workload.spec as any)?.replicas === 'number' ? (workload.spec as any).replicas : Number((workload.status as any)?.desiredNumberScheduled ?? 1);
  const takes = action === 'in-place' ? 1 : strategyMaxUnavailable(workload);
  for (const budget of budgetsFor(workload, budgets)) {
    const name = String((budget.metadata as any)?.name);
    const spec = (budget.spec ?? {}) as Record<string, unknown>;
    const allowedNow = Number((budget.status as any)?.disruptionsAllowed ?? 0);
    if (allowedNow < 1) return `PodDisruptionBudget ${name} allows no disruption now`;
    const allows =
      spec.maxUnavailable !== undefined ? scaledValue(spec.maxUnavailable, replicas, true, 0)
      : spec.minAvailable !== undefined ? replicas - scaledValue(spec.minAvailable, replicas, true, replicas)
      : replicas;
    if (takes > allows) {
      return `its rollout strategy takes down up to ${takes} of ${replicas} pods at once, more than PodDisruptionBudget ${name} allows (${Math.max(allows, 0)}): restart it yourself, or lower its maxUnavailable`;
    }
  }
  return undefined;
}
