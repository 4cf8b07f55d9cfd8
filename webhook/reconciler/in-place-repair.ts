// `reconciler.outdated: 'in-place'`: a workload's outdated pods get their sidecar images replaced
// where they run, one pod at a time, with the code `rollout --in-place` runs (the plan, the guarded
// patch, the readiness-gate drain, the wait for the kubelet). Before each pod: the workload's budgets
// must allow a disruption, a repair token must be free, and this replica must still hold the Lease.
// A pod that cannot be upgraded in place (more than images differ) sends the whole workload to a restart.

import type { KubernetesObject } from '../engine/admission-review';
import { classifyPods, workloadOf, type ClusterObjects } from '../fleet/injection-status';
import type { InjectorSource } from '../fleet/synthesized-injectors';
import { DEFAULT_NATIVE_SIDECARS, type InPlaceOptions, inPlacePatch, planPod } from '../fleet/in-place-plan';
import type { Clock } from '../fleet/cluster';
import { type Replan, describeUpgrade, upgradePod } from '../fleet/in-place-rollout';
import { disruptionBlocked } from './disruption-guard';
import type { EventRecorder, EventTarget } from './event-recorder';
import { type KubeApi, listPages } from '../kube-client/kube-api';
import { kubePodClient } from './pod-client';
import type { WaitReason } from './repair-decision';
import type { WorkloadName } from './workload-name';

export interface InPlaceRepair {
  readonly api: KubeApi;
  readonly clock: Clock;
  readonly source: InjectorSource;
  readonly namespace: string;
  readonly workload: WorkloadName;
  /** The workload object as read (its replicas and strategy, for the budgets). */
  readonly object: KubernetesObject;
  readonly namespaceLabels: ClusterObjects['namespaceLabels'];
  readonly namespaceAnnotations: NonNullable<ClusterObjects['namespaceAnnotations']>;
  /** The namespace's PodDisruptionBudgets, read again. */
  readonly budgets: () => Promise<KubernetesObject[]>;
  readonly takeToken: () => boolean;
  /** Throws when this replica no longer holds the Lease. */
  readonly stillLeader: () => void;
  readonly events: EventRecorder;
  readonly target: EventTarget;
  readonly podTimeoutMs: number;
  readonly pollMs: number;
}

export interface InPlaceOutcome {
  readonly upgraded: readonly string[];
  /** Some pod differs in more than images: restart the workload. */
  readonly restartNeeded: boolean;
  /** Why it stopped before the last pod (picked up again next pass). */
  readonly waiting?: { readonly reason: WaitReason; readonly message: string };
}

const OPTIONS: InPlaceOptions = { nativeSidecars: DEFAULT_NATIVE_SIDECARS, includeUnknown: false, requireReadinessGate: false };

export async function upgradeInPlace(repair: InPlaceRepair): Promise<InPlaceOutcome> {
  const { namespace, workload, source } = repair;
  const owners: ClusterObjects['owners'] = new Map();
  const context = { namespaceLabels: repair.namespaceLabels, namespaceAnnotations: repair.namespaceAnnotations, owners };
  const pods: KubernetesObject[] = [];
  await listPages(repair.api, `/api/v1/namespaces/${namespace}/pods`, (items) => {
    for (const pod of items as KubernetesObject[]) {
      const owner = workloadOf(pod, namespace, owners);
      if (owner.kind === workload.kind && owner.name === workload.name) pods.push(pod);
    }
  });
  const plan = (pod: KubernetesObject) => {
    const status = classifyPods({ pods: [pod], ...context }, source)[0];
    return planPod(pod, status, workloadOf(pod, namespace, owners).chain, source, OPTIONS);
  };
  const replan: Replan = (pod) => {
    const fresh = plan(pod);
    if (fresh.action === 'none') return { skip: 'up to date already' };
    if (fresh.action !== 'in-place') return { skip: `no longer qualifies: ${fresh.reasons.join('; ')}` };
    return { changes: fresh.changes, operations: inPlacePatch(pod, fresh, source.config.annotationPrefix), readinessGate: fresh.readinessGate };
  };
  const planned = pods.map((pod) => ({ pod, plan: plan(pod) }));
  if (planned.some(({ plan: podPlan }) => podPlan.action === 'restart')) return { upgraded: [], restartNeeded: true };
  const client = kubePodClient(repair.api);
  const upgraded: string[] = [];
  for (const { plan: podPlan } of planned) {
    if (podPlan.action !== 'in-place') continue;
    const blocked = disruptionBlocked(repair.object, await repair.budgets(), 'in-place');
    if (blocked) return { upgraded, restartNeeded: false, waiting: { reason: 'disruption-budget', message: blocked } };
    if (!repair.takeToken()) return { upgraded, restartNeeded: false, waiting: { reason: 'rate-limit', message: 'repairs a minute used up' } };
    repair.stillLeader();
    const settings = { prefix: source.config.annotationPrefix, drain: 'auto' as const, drainGraceMs: 0, timeoutMs: repair.podTimeoutMs, pollMs: repair.pollMs };
    const result = await upgradePod(client, repair.clock, settings, namespace, podPlan.name, replan, () => {});
    if ('skipped' in result) continue;
    upgraded.push(`${namespace}/${podPlan.name}`);
    await repair.events.record(repair.target, 'Normal', 'UpgradedSidecarsInPlace', `${describeUpgrade(result, 'upgraded in place')}`);
  }
  return { upgraded, restartNeeded: false };
}
