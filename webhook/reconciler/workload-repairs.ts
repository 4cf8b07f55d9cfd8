// The repairs of one pass, once its pods are listed: each candidate workload behind every guard (not
// mid-rollout, once per config, its PodDisruptionBudgets, the dry-run probe), restarted or upgraded in
// place; a rate limit over all of them, and a backoff per workload after an error.

import { RECONCILER_WRITES, repairedForAnnotation, type ReconcilerSettings } from '../config';
import type { Clock } from '../fleet/cluster';
import type { KubernetesObject } from '../engine/admission-review';
import { ownStringMap } from '../engine/pod-patch-builder';
import { disruptionBlocked, rolloutInProgress } from './disruption-guard';
import type { EventReason, EventRecorder } from './event-recorder';
import { upgradeInPlace } from './in-place-repair';
import { probeInjection } from './injection-probe';
import { type KubeApi, isConflict, listPages } from '../kube-client/kube-api';
import type { LeaderLease } from './lease';
import { LostLease, type PassState, type RepairCandidate, type ReconcilerMetrics } from './pass-state';
import { type RepairDecision, type WaitReason, repairKey } from './repair-decision';
import { type WorkloadName, eventTarget, workloadKey, workloadPath } from './workload-name';

/** Workloads remembered for their backoff after a failed repair (names: bounded, oldest dropped). */
const MAX_BACKOFF_ENTRIES = 4096;

export interface WorkloadRepairsOptions {
  readonly api: KubeApi;
  readonly settings: ReconcilerSettings;
  readonly clock: Clock;
  readonly lease: Pick<LeaderLease, 'held'>;
  readonly events: EventRecorder;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  readonly metrics?: ReconcilerMetrics;
  readonly podTimeoutMs?: number;
  readonly pollMs?: number;
}

/**
 * The restart, as `kubectl rollout restart` makes it (a merge patch of the pod template's restartedAt
 * annotation) with the config it was for beside it, held to the workload as read by its resourceVersion.
 * Nothing else: the reconciler's admission fence refuses a workload write that changes more.
 */
export function restartPatch(object: KubernetesObject, now: number, prefix: string, restartKey: string): Record<string, unknown> {
  return {
    metadata: { resourceVersion: (object.metadata as any)?.resourceVersion },
    spec: { template: { metadata: { annotations: { [RECONCILER_WRITES.restartedAtAnnotation]: new Date(now).toISOString().replace(/\.\d+Z$/, 'Z'), [repairedForAnnotation(prefix)]: restartKey } } } },
  };
}

export class WorkloadRepairs {
  private readonly tokens: { available: number; refilledAt: number };
  private readonly backoff = new Map<string, { failures: number; until: number }>();

  constructor(private readonly options: WorkloadRepairsOptions) {
    this.tokens = { available: options.settings.repairsPerMinute, refilledAt: options.clock.now() };
  }

  /** The workload's backoff, while it lasts. */
  backingOff(key: string): { readonly failures: number } | undefined {
    const entry = this.backoff.get(key);
    return entry && this.options.clock.now() < entry.until ? entry : undefined;
  }

  /** Records why a workload waits, in the pass and as a Warning Event on it. */
  wait(pass: PassState, workload: WorkloadName, reason: WaitReason, eventReason: EventReason, message: string, uid?: string): Promise<boolean> {
    pass.waiting.push({ workload: workloadKey(workload), reason, message });
    return this.options.events.record(eventTarget(workload, uid), 'Warning', eventReason, message);
  }

  /**
   * Repairs only now, with the list done: an in-place upgrade waits minutes for the kubelet, and a
   * list's continue token does not outlive etcd's compaction.
   */
  async repairAll(pass: PassState): Promise<void> {
    const budgets = new Map<string, KubernetesObject[]>();
    const readBudgets = async (namespace: string) => {
      const cached = budgets.get(namespace);
      if (cached) return cached;
      const found: KubernetesObject[] = [];
      await listPages(this.options.api, `/apis/policy/v1/namespaces/${namespace}/poddisruptionbudgets`, (items) => void found.push(...items));
      budgets.set(namespace, found);
      return found;
    };
    for (const candidate of pass.candidates) {
      try {
        await this.repair(pass, candidate, () => readBudgets(candidate.workload.namespace), () => budgets.delete(candidate.workload.namespace));
      } catch (error) {
        if (error instanceof LostLease) throw error;
        this.failed(candidate.workload, candidate.decision, error as Error);
      }
    }
  }

  /** One repair, behind every guard, once the pods are listed. */
  private async repair(pass: PassState, candidate: RepairCandidate, readBudgets: () => Promise<KubernetesObject[]>, budgetsChanged: () => void): Promise<void> {
    const { workload, decision } = candidate;
    const key = workloadKey(workload);
    const what = decision.findings;
    const { api, settings } = this.options;
    const prefix = pass.source.config.annotationPrefix;
    const path = workloadPath(workload);
    const object: KubernetesObject = await api.request('GET', path);
    const uid = String((object.metadata as any)?.uid ?? '');
    const template = (object.spec as any)?.template ?? {};
    const restartKey = repairKey(decision.expected);
    const recorded = ownStringMap(template.metadata?.annotations)[repairedForAnnotation(prefix)];
    const inProgress = rolloutInProgress(object);
    if (inProgress) {
      await this.wait(pass, workload, 'rollout-in-progress', 'WaitingForRollout', `${what}: waiting, ${inProgress}`, uid);
      return;
    }
    // Once per config, for a restart as chosen or as in-place's fallback (checked before the probe and the budgets for the first).
    const restartedAlready = recorded === restartKey;
    const waitRestartedAlready = () =>
      this.wait(pass, workload, 'restarted-already', 'NotRepaired', `${what}: restarted once for this config already and still not right: not restarting again; look at the injector (its logs, status --from)`, uid);
    if (decision.action === 'restart' && restartedAlready) {
      await waitRestartedAlready();
      return;
    }
    const blocked = disruptionBlocked(object, await readBudgets(), decision.action);
    if (blocked) {
      await this.wait(pass, workload, 'disruption-budget', 'WaitingForDisruptionBudget', `${what}: waiting, ${blocked}`, uid);
      return;
    }
    const probe = await probeInjection(api, prefix, workload.namespace, workload.name, template, decision.expected);
    if (probe) {
      await this.wait(pass, workload, 'injector-not-ready', 'WaitingForInjector', `${what}: waiting, ${probe}`, uid);
      return;
    }
    if (decision.action === 'in-place') {
      const outcome = await upgradeInPlace({
        api,
        clock: this.options.clock,
        source: pass.source,
        namespace: workload.namespace,
        workload,
        object,
        namespaceLabels: pass.namespaceLabels,
        namespaceAnnotations: pass.namespaceAnnotations,
        budgets: async () => (budgetsChanged(), readBudgets()),
        takeToken: () => this.takeToken(),
        stillLeader: () => this.assertLeader(),
        events: this.options.events,
        target: eventTarget(workload, uid),
        podTimeoutMs: this.options.podTimeoutMs ?? 300_000,
        pollMs: this.options.pollMs ?? 2000,
      });
      pass.upgraded.push(...outcome.upgraded);
      for (let count = 0; count < outcome.upgraded.length; count++) this.options.metrics?.repair('in-place', 'done');
      if (outcome.waiting) pass.waiting.push({ workload: key, reason: outcome.waiting.reason, message: outcome.waiting.message });
      if (!outcome.restartNeeded) {
        this.backoff.delete(key);
        return;
      }
      // More than images differ in some pod: a restart, held to once per config like any other.
      if (restartedAlready) {
        await waitRestartedAlready();
        return;
      }
    }
    if (!this.takeToken()) {
      pass.waiting.push({ workload: key, reason: 'rate-limit', message: `at most ${settings.repairsPerMinute} repairs a minute` });
      return;
    }
    this.assertLeader();
    try {
      await api.request('PATCH', path, { body: restartPatch(object, this.options.clock.now(), prefix, restartKey), query: { fieldManager: 'sidecar-injector-reconciler' } });
    } catch (error) {
      // Changed since it was read: judged again next pass.
      if (isConflict(error)) return;
      throw error;
    }
    this.backoff.delete(key);
    pass.restarted.push(key);
    this.options.metrics?.repair('restart', 'done');
    this.options.log('info', 'restarted a workload', { workload: key, for: what, config: restartKey });
    await this.options.events.record(eventTarget(workload, uid), 'Normal', 'RestartedForSidecars', `restarted to ${decision.verb} (${what}); once per config: this one is ${restartKey}`);
  }

  private failed(workload: WorkloadName, decision: RepairDecision, error: Error): void {
    const key = workloadKey(workload);
    const previous = this.backoff.get(key);
    const failures = (previous?.failures ?? 0) + 1;
    // 30 s doubling to 30 min.
    const wait = Math.min(30_000 * 2 ** (failures - 1), 30 * 60_000);
    if (!previous && this.backoff.size >= MAX_BACKOFF_ENTRIES) this.backoff.delete(this.backoff.keys().next().value as string);
    this.backoff.set(key, { failures, until: this.options.clock.now() + wait });
    if (decision.action === 'restart' || decision.action === 'in-place') this.options.metrics?.repair(decision.action, 'failed');
    this.options.log('error', 'repair failed; backing off', { workload: key, error: error.message, retryInSeconds: wait / 1000 });
    void this.options.events.record(eventTarget(workload), 'Warning', 'RepairFailed', `repair failed: ${error.message}; trying again in ${wait / 1000} s`);
  }

  private takeToken(): boolean {
    const now = this.options.clock.now();
    const perMs = this.options.settings.repairsPerMinute / 60_000;
    this.tokens.available = Math.min(this.options.settings.repairsPerMinute, this.tokens.available + (now - this.tokens.refilledAt) * perMs);
    this.tokens.refilledAt = now;
    if (this.tokens.available < 1) return false;
    this.tokens.available -= 1;
    return true;
  }

  private assertLeader(): void {
    if (!this.options.lease.held()) throw new LostLease();
  }
}
