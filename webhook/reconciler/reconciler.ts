// One pass of the reconciler over the cluster, while this replica holds the Lease: read the injector as
// the cluster has it, judge every pod with the same code as `status` (cli/injection-status.ts, which
// runs the webhook's engine), namespace by namespace as the apiserver lists them, writing Events and a
// PolicyReport per namespace as it goes; then, with the list done, repair the stale workloads the
// settings say to, behind every guard: the injector must be able to inject now (its endpoints ready, a
// dry-run create of the workload's pod answered with the injections), the workload not mid-rollout,
// its PodDisruptionBudgets not at their limit, at most one restart per workload and config (recorded
// on the workload, so a new leader knows), a rate limit, and a backoff per workload after an error.
// Memory: one page of pods, one namespace's pod statuses (at most MAX_NAMESPACE_PODS) and at most
// MAX_REPAIR_CANDIDATES workloads to repair (names and findings, no pod lists) are held.

import { repairedForAnnotation, type ReconcilerSettings } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { ownStringMap } from '../engine/pod-patch-builder';
import { type ClusterObjects, type PodStatus, classifyPods } from '../cli/injection-status';
import type { InjectorSource } from '../cli/injector-source';
import type { Clock } from '../cli/in-place-rollout';
import { type StatusReport, type WorkloadStatus, statusReport } from '../cli/status-command';
import { type EventReason, type EventTarget, EventRecorder } from './event-recorder';
import { disruptionBlocked, rolloutInProgress } from './disruption-guard';
import { probeInjection } from './injection-probe';
import { type KubeApi, isConflict, listPages } from './kube-api';
import type { LeaderLease } from './lease';
import { readLiveInjector, webhookUnready } from './live-injector';
import { POLICY_REPORT_API, POLICY_REPORT_NAME, POLICY_REPORT_SELECTOR, PolicyReportWriter, policyReport, policyReportsServed } from './policy-report';
import { type RepairDecision, WAIT_REASONS, type WaitReason, repairDecision, repairKey } from './repair-decision';
import { upgradeInPlace } from './in-place-repair';
import { type WorkloadName, workloadApiVersion, workloadKey, workloadPath } from './workload-name';

/** Pod statuses held for one namespace; pods past it are counted (untracked), not judged, that pass. */
export const MAX_NAMESPACE_PODS = 20_000;
/** Workloads remembered for their backoff after a failed repair (names: bounded, oldest dropped). */
const MAX_BACKOFF_ENTRIES = 4096;
/** Workloads kept to repair after the pods are listed; more than a pass can repair anyway at 60 a minute. */
export const MAX_REPAIR_CANDIDATES = 64;

/** A workload to repair once the list is done: its name and what to do (no pod names: bounded). */
interface RepairCandidate {
  readonly workload: WorkloadName;
  readonly decision: Extract<RepairDecision, { action: 'restart' | 'in-place' }>;
}

/** What the reconciler reports of itself; main.ts binds it to Prometheus metrics. */
export interface ReconcilerMetrics {
  pass(result: 'done' | 'failed' | 'not-leader' | 'injector-unreadable', seconds: number): void;
  pods(counts: Readonly<Record<'upToDate' | 'stale' | 'versionUnknown' | 'untracked', number>>): void;
  repair(action: 'restart' | 'in-place', result: 'done' | 'failed'): void;
  waiting(counts: Readonly<Record<WaitReason, number>>): void;
}

export interface ReconcilerOptions {
  readonly api: KubeApi;
  readonly settings: ReconcilerSettings;
  /** The reconciler's (and the injector's) namespace. */
  readonly namespace: string;
  readonly identity: string;
  readonly clock: Clock;
  readonly lease: Pick<LeaderLease, 'held'>;
  readonly log: (level: 'info' | 'warn' | 'error', message: string, fields?: Record<string, unknown>) => void;
  readonly metrics?: ReconcilerMetrics;
  /** How long an in-place upgrade of one pod may take. @default 300 s */
  readonly podTimeoutMs?: number;
  /** How often an in-place upgrade reads the pod while it waits. @default 2 s */
  readonly pollMs?: number;
}

/** What one pass saw and did. */
export interface PassOutcome {
  readonly leader: boolean;
  /** Why the injector could not be read (nothing was judged). */
  readonly injectorUnreadable?: string;
  /** Why the injector cannot inject now (pods were judged and reported, nothing repaired). */
  readonly injectorNotReady?: string;
  readonly pods: number;
  readonly untracked: number;
  readonly restarted: readonly string[];
  readonly upgraded: readonly string[];
  readonly waiting: readonly { readonly workload: string; readonly reason: WaitReason; readonly message: string }[];
  /** PolicyReports written this pass (only those whose content changed). */
  readonly reports: number;
}

class LostLease extends Error {}


export class Reconciler {
  readonly events: EventRecorder;
  private readonly reports: PolicyReportWriter;
  private readonly tokens: { available: number; refilledAt: number };
  private readonly backoff = new Map<string, { failures: number; until: number }>();

  constructor(private readonly options: ReconcilerOptions) {
    this.events = new EventRecorder(options.api, options.clock, options.identity);
    this.reports = new PolicyReportWriter(options.api);
    this.tokens = { available: options.settings.repairsPerMinute, refilledAt: options.clock.now() };
  }

  /** One pass; throws only what the caller should back off on (the apiserver unreachable, say). */
  async pass(): Promise<PassOutcome> {
    const started = this.options.clock.now();
    const seconds = () => (this.options.clock.now() - started) / 1000;
    const empty = { pods: 0, untracked: 0, restarted: [], upgraded: [], waiting: [], reports: 0 };
    if (!this.options.lease.held()) {
      this.options.metrics?.pass('not-leader', seconds());
      return { leader: false, ...empty };
    }
    const { api, settings, namespace } = this.options;
    const live = await readLiveInjector(api, namespace, settings.injector);
    if ('waiting' in live) {
      this.options.log('warn', 'cannot read the injector; nothing judged this pass', { reason: live.waiting });
      this.options.metrics?.pass('injector-unreadable', seconds());
      return { leader: true, injectorUnreadable: live.waiting, ...empty };
    }
    const pass = new PassState(live.source, settings.injector.backend === 'webhook' ? await webhookUnready(api, namespace, settings.injector.serviceName) : undefined);
    if (pass.injectorNotReady) this.options.log('warn', 'the injector cannot inject now: nothing is repaired this pass', { reason: pass.injectorNotReady });
    const reportsServed = settings.policyReports && (await policyReportsServed(api));
    try {
      await this.judgeCluster(pass, reportsServed);
    } catch (error) {
      if (!(error instanceof LostLease)) {
        this.options.metrics?.pass('failed', seconds());
        throw error;
      }
      this.options.log('warn', 'lost the Lease mid-pass: stopped acting');
    }
    this.options.metrics?.pods({ upToDate: pass.counts.upToDate, stale: pass.counts.stale, versionUnknown: pass.counts.versionUnknown, untracked: pass.untracked });
    const waiting = Object.fromEntries(WAIT_REASONS.map((reason) => [reason, 0])) as Record<WaitReason, number>;
    for (const entry of pass.waiting) waiting[entry.reason]++;
    this.options.metrics?.waiting(waiting);
    this.options.metrics?.pass('done', seconds());
    return {
      leader: true,
      ...(pass.injectorNotReady ? { injectorNotReady: pass.injectorNotReady } : {}),
      pods: pass.pods,
      untracked: pass.untracked,
      restarted: pass.restarted,
      upgraded: pass.upgraded,
      waiting: pass.waiting,
      reports: pass.reports,
    };
  }

  private excluded(namespace: string): boolean {
    return namespace === 'kube-system' || namespace === this.options.namespace || this.options.settings.excludedNamespaces.includes(namespace);
  }

  /** Every pod, page by page, judged namespace by namespace (the apiserver lists them in that order). */
  private async judgeCluster(pass: PassState, reportsServed: boolean): Promise<void> {
    const { api } = this.options;
    const namespaceLabels = new Map<string, Record<string, string>>();
    const namespaceAnnotations = new Map<string, Record<string, string>>();
    pass.namespaceLabels = namespaceLabels;
    pass.namespaceAnnotations = namespaceAnnotations;
    await listPages(api, '/api/v1/namespaces', (items) => {
      for (const item of items) {
        const name = String(item?.metadata?.name);
        namespaceLabels.set(name, ownStringMap(item?.metadata?.labels));
        namespaceAnnotations.set(name, ownStringMap(item?.metadata?.annotations));
      }
    });
    const owners: ClusterObjects['owners'] = new Map();
    let current: { namespace: string; statuses: PodStatus[] } | undefined;
    const flushed = new Set<string>();
    const flush = async () => {
      if (!current) return;
      const { namespace, statuses } = current;
      current = undefined;
      if (flushed.has(namespace)) {
        this.options.log('warn', 'the pod list came back out of namespace order: this namespace was judged in parts, and its report is not written this pass', { namespace });
        await this.judgeNamespace(pass, namespace, statuses, false);
        return;
      }
      flushed.add(namespace);
      await this.judgeNamespace(pass, namespace, statuses, reportsServed);
    };
    await listPages(api, '/api/v1/pods', async (pods) => {
      for (const pod of pods as KubernetesObject[]) {
        const namespace = String((pod.metadata as Record<string, unknown> | undefined)?.namespace ?? '');
        if (this.excluded(namespace)) continue;
        if (current && current.namespace !== namespace) await flush();
        if (!current) current = { namespace, statuses: [] };
        pass.pods++;
        if (current.statuses.length >= MAX_NAMESPACE_PODS) {
          pass.untracked++;
          continue;
        }
        const [status] = classifyPods({ pods: [pod], namespaceLabels, namespaceAnnotations, owners }, pass.source);
        current.statuses.push(status);
      }
    });
    await flush();
    if (reportsServed) {
      // Like a report's write, this must not stop the repairs that follow.
      await this.emptyVacatedReports(pass, flushed).catch((error: Error) => this.options.log('warn', 'could not list the PolicyReports to empty those of namespaces left without pods; trying again next pass', { error: error.message }));
    }
    // Repairs only now, with the list done: an in-place upgrade waits minutes for the kubelet, and a
    // list's continue token does not outlive etcd's compaction.
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

  private async judgeNamespace(pass: PassState, namespace: string, statuses: readonly PodStatus[], writeReport: boolean): Promise<void> {
    const report: StatusReport = statusReport(statuses, pass.source.config);
    for (const status of statuses) {
      if (status.state === 'up-to-date') pass.counts.upToDate++;
      else if (status.state === 'stale') pass.counts.stale++;
      else if (status.state === 'version-unknown') pass.counts.versionUnknown++;
    }
    for (const workload of report.workloads) {
      const decision = repairDecision(workload, this.options.settings);
      if (decision.action === 'none') continue;
      await this.judged(pass, workload, decision);
    }
    if (writeReport) await this.writeReport(pass, policyReport(namespace, statuses, report, this.options.clock.now()));
  }

  /**
   * A report that cannot be written (its namespace being deleted refuses every create, say) is logged
   * and tried again next pass: it must not stop the pass, whose repairs come after the list.
   */
  private async writeReport(pass: PassState, report: KubernetesObject): Promise<void> {
    try {
      if (await this.reports.write(report)) pass.reports++;
    } catch (error) {
      this.options.log('warn', 'could not write a PolicyReport; trying again next pass', { namespace: (report.metadata as Record<string, unknown>).namespace, error: (error as Error).message });
    }
  }

  /**
   * Empties the reports of namespaces that had pods and have none now (the pod list named them not): a
   * namespace's report is written as it is judged, so without this its last `fail` would outlive its
   * pods. Emptied, not deleted: the reconciler may not delete. One list of its own reports a pass.
   */
  private async emptyVacatedReports(pass: PassState, judged: ReadonlySet<string>): Promise<void> {
    const empty = statusReport([], pass.source.config);
    await listPages(
      this.options.api,
      `${POLICY_REPORT_API}/policyreports`,
      async (reports) => {
        for (const report of reports) {
          const namespace = String(report?.metadata?.namespace ?? '');
          if (report?.metadata?.name !== POLICY_REPORT_NAME || judged.has(namespace) || namespace === 'kube-system' || namespace === this.options.namespace) continue;
          await this.writeReport(pass, policyReport(namespace, [], empty, this.options.clock.now()));
        }
      },
      { labelSelector: POLICY_REPORT_SELECTOR },
    );
  }

  private target(workload: WorkloadName, uid?: string): EventTarget {
    const apiVersion = workloadApiVersion(workload);
    return { ...(apiVersion !== undefined ? { apiVersion } : {}), kind: workload.kind, namespace: workload.namespace, name: workload.name, ...(uid ? { uid } : {}) };
  }

  private wait(pass: PassState, workload: WorkloadName, reason: WaitReason, eventReason: EventReason, message: string, uid?: string): Promise<boolean> {
    pass.waiting.push({ workload: workloadKey(workload), reason, message });
    return this.events.record(this.target(workload, uid), 'Warning', eventReason, message);
  }

  /** What can be said at once: reports, and repairs that wait for the injector or a backoff; the rest become candidates. */
  private async judged(pass: PassState, workload: WorkloadStatus, decision: Exclude<RepairDecision, { action: 'none' }>): Promise<void> {
    if (decision.action === 'report') {
      await this.events.record(this.target(workload), decision.type, decision.reason, decision.message);
      return;
    }
    const key = workloadKey(workload);
    if (pass.injectorNotReady) {
      await this.wait(pass, workload, 'injector-not-ready', 'WaitingForInjector', `${decision.findings}: waiting, not restarted while ${pass.injectorNotReady}`);
      return;
    }
    const backoff = this.backoff.get(key);
    if (backoff && this.options.clock.now() < backoff.until) {
      pass.waiting.push({ workload: key, reason: 'backoff', message: `backing off after ${backoff.failures} failed repairs` });
      return;
    }
    if (pass.candidates.length >= MAX_REPAIR_CANDIDATES) {
      pass.waiting.push({ workload: key, reason: 'rate-limit', message: `more than ${MAX_REPAIR_CANDIDATES} workloads to repair: the next pass takes it` });
      return;
    }
    pass.candidates.push({ workload: { namespace: workload.namespace, apiVersion: workload.apiVersion, kind: workload.kind, name: workload.name }, decision });
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
        events: this.events,
        target: this.target(workload, uid),
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
    const patch = {
      metadata: { resourceVersion: (object.metadata as any)?.resourceVersion },
      spec: { template: { metadata: { annotations: { 'kubectl.kubernetes.io/restartedAt': new Date(this.options.clock.now()).toISOString().replace(/\.\d+Z$/, 'Z'), [repairedForAnnotation(prefix)]: restartKey } } } },
    };
    try {
      await api.request('PATCH', path, { body: patch, query: { fieldManager: 'sidecar-injector-reconciler' } });
    } catch (error) {
      // Changed since it was read: judged again next pass.
      if (isConflict(error)) return;
      throw error;
    }
    this.backoff.delete(key);
    pass.restarted.push(key);
    this.options.metrics?.repair('restart', 'done');
    this.options.log('info', 'restarted a workload', { workload: key, for: what, config: restartKey });
    await this.events.record(this.target(workload, uid), 'Normal', 'RestartedForSidecars', `restarted to ${decision.verb} (${what}); once per config: this one is ${restartKey}`);
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
    void this.events.record(this.target(workload), 'Warning', 'RepairFailed', `repair failed: ${error.message}; trying again in ${wait / 1000} s`);
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

/** What one pass gathers as it goes. */
class PassState {
  pods = 0;
  untracked = 0;
  reports = 0;
  readonly counts = { upToDate: 0, stale: 0, versionUnknown: 0 };
  readonly restarted: string[] = [];
  readonly upgraded: string[] = [];
  readonly waiting: { workload: string; reason: WaitReason; message: string }[] = [];
  /** Workloads to repair once the list is done (at most MAX_REPAIR_CANDIDATES). */
  readonly candidates: RepairCandidate[] = [];
  namespaceLabels: ReadonlyMap<string, Record<string, string>> = new Map();
  namespaceAnnotations: ReadonlyMap<string, Record<string, string>> = new Map();

  constructor(
    readonly source: InjectorSource,
    readonly injectorNotReady: string | undefined,
  ) {}
}
