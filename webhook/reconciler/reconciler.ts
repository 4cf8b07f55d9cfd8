// One pass of the reconciler over the cluster, while this replica holds the Lease: read the injector as
// the cluster has it, judge pods with the same code as `status` (fleet/injection-status.ts, which runs
// the webhook's engine), namespace by namespace as the apiserver lists them, writing Events and a
// PolicyReport per namespace as it goes. Every pod, or (pod-changes.ts) only the namespaces where pods
// or the namespace's labels changed since the last pass, or where work was left. Then, with the list
// done, it repairs (workload-repairs.ts) the stale workloads the settings say to, behind every guard:
// the injector must be able to inject now (its endpoints ready, a dry-run create of the workload's pod
// answered with the injections), the workload not mid-rollout, its PodDisruptionBudgets not at their
// limit, at most one restart per workload and config (recorded on the workload, so a new leader
// knows), a rate limit, and a backoff per workload after an error.
// Memory: one page of pods, one namespace's pod statuses (at most MAX_NAMESPACE_PODS) and at most
// MAX_REPAIR_CANDIDATES workloads to repair (names and findings, no pod lists) are held; between passes,
// per existing namespace its counts and whether work is left, and the names of the changed ones.

import { createHash } from 'node:crypto';
import type { ReconcilerSettings } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { ownStringMap } from '../engine/pod-patch-builder';
import { type ClusterObjects, type PodStatus, classifyPods } from '../fleet/injection-status';
import type { Clock } from '../fleet/cluster';
import { type StatusReport, type WorkloadStatus, statusReport } from '../fleet/status-report';
import { EventRecorder } from './event-recorder';
import { type KubeApi, listPages } from '../kube-client/kube-api';
import type { LeaderLease } from './lease';
import { readLiveInjector, webhookUnready } from './live-injector';
import { LostLease, PassState, type ReconcilerMetrics } from './pass-state';
import { type ListPlan, PodChanges } from './pod-changes';
import { POLICY_REPORT_API, POLICY_REPORT_NAME, POLICY_REPORT_SELECTOR, PolicyReportWriter, policyReport, policyReportsServed } from './policy-report';
import { type RepairDecision, WAIT_REASONS, type WaitReason, repairDecision } from './repair-decision';
import { eventTarget, workloadKey } from './workload-name';
import { WorkloadRepairs } from './workload-repairs';

/** Pod statuses held for one namespace; pods past it are counted (untracked), not judged, that pass. */
export const MAX_NAMESPACE_PODS = 20_000;
/** Workloads kept to repair after the pods are listed; more than a pass can repair anyway at 60 a minute. */
export const MAX_REPAIR_CANDIDATES = 64;


export type { ReconcilerMetrics } from './pass-state';

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
  /** `all` when every pod was listed; else how many namespaces' pods were (changed, or with work left). */
  readonly listed: 'all' | number;
}

/** A namespace's pods as its last listing counted them, for the metrics of passes that do not list it. */
interface NamespaceCounts {
  readonly upToDate: number;
  readonly stale: number;
  /** Of the stale, those without an injection they should have (a fail-open's pods, say). */
  readonly missing: number;
  readonly versionUnknown: number;
  readonly untracked: number;
}


/** One namespace's pods as they are listed: the statuses of at most MAX_NAMESPACE_PODS, the rest counted. */
interface NamespacePods {
  readonly namespace: string;
  readonly statuses: PodStatus[];
  untracked: number;
}

/** The reconciler reads no ReplicaSets or Jobs: a pod's Deployment is inferred from its ReplicaSet's name. */
const NO_OWNERS: ClusterObjects['owners'] = new Map();

/** Judges one listed pod into its namespace's statuses, or counts it as untracked past the bound. */
function addPod(pass: PassState, listed: NamespacePods, pod: KubernetesObject): void {
  pass.pods++;
  if (listed.statuses.length >= MAX_NAMESPACE_PODS) {
    listed.untracked++;
    return;
  }
  listed.statuses.push(classifyPods({ pods: [pod], namespaceLabels: pass.namespaceLabels, namespaceAnnotations: pass.namespaceAnnotations, owners: NO_OWNERS }, pass.source)[0]);
}

export class Reconciler {
  readonly events: EventRecorder;
  private readonly reports: PolicyReportWriter;
  private readonly repairs: WorkloadRepairs;
  /** Where pods changed since the last pass (a watch), so a pass lists those rather than every pod. */
  private readonly changes: PodChanges;
  /** What the injector was at the last pass: when it changes, every pod is judged again. */
  private injectorKey: string | undefined;
  /** Each namespace's labels and annotations at the last pass: when they change, its pods are judged again. */
  private namespaceKeys = new Map<string, string>();
  /** Namespaces whose last judgement left something to say or do: listed every pass until it is gone. */
  private readonly unsettled = new Set<string>();
  private readonly namespaceCounts = new Map<string, NamespaceCounts>();

  constructor(private readonly options: ReconcilerOptions) {
    this.changes = new PodChanges(options.api, options.clock, (level, message, fields) => options.log(level, message, fields));
    this.events = new EventRecorder(options.api, options.clock, options.identity);
    this.reports = new PolicyReportWriter(options.api);
    this.repairs = new WorkloadRepairs({ ...options, events: this.events });
  }

  /** One pass; throws only what the caller should back off on (the apiserver unreachable, say). */
  async pass(): Promise<PassOutcome> {
    const started = this.options.clock.now();
    const seconds = () => (this.options.clock.now() - started) / 1000;
    const empty = { pods: 0, untracked: 0, restarted: [], upgraded: [], waiting: [], reports: 0, listed: 0 };
    if (!this.options.lease.held()) {
      this.changes.stop();
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
    // Whatever the judgement or the reports depend on beside the pods: a change means every pod again
    // (the PolicyReport CRD installed, say: every namespace gets its report now, not at the next full pass).
    const injectorKey = createHash('sha256').update(JSON.stringify([live.source.config, live.source.webhookConfiguration ?? null, reportsServed])).digest('base64');
    const plan: ListPlan = injectorKey !== this.injectorKey ? { all: true, reason: 'the injector, or whether PolicyReports are served, changed' } : this.changes.plan();
    this.injectorKey = injectorKey;
    try {
      await this.judgeCluster(pass, reportsServed, plan);
    } catch (error) {
      if (!(error instanceof LostLease)) {
        this.options.metrics?.pass('failed', seconds());
        // What this pass left half done (the namespaces with work left, say) is not trusted: the next lists every pod.
        this.changes.stop();
        throw error;
      }
      this.options.log('warn', 'lost the Lease mid-pass: stopped acting');
      this.changes.stop();
    }
    const totals = { upToDate: 0, stale: 0, missing: 0, versionUnknown: 0, untracked: 0 };
    for (const counts of this.namespaceCounts.values()) for (const key of Object.keys(totals) as (keyof NamespaceCounts)[]) totals[key] += counts[key];
    this.options.metrics?.pods(totals);
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
      listed: pass.listed,
    };
  }

  /** Stops the pod watch (the process is ending). */
  stop(): void {
    this.changes.stop();
  }

  private excluded(namespace: string): boolean {
    return namespace === 'kube-system' || namespace === this.options.namespace || this.options.settings.excludedNamespaces.includes(namespace);
  }

  /**
   * The pods the plan names, judged namespace by namespace: every pod, page by page (the apiserver lists
   * them in namespace order), or the pods of each namespace where they changed, where the namespace's
   * labels or annotations changed, and where the last judgement left something to do.
   */
  private async judgeCluster(pass: PassState, reportsServed: boolean, plan: ListPlan): Promise<void> {
    const { api } = this.options;
    const namespaceLabels = new Map<string, Record<string, string>>();
    const namespaceAnnotations = new Map<string, Record<string, string>>();
    pass.namespaceLabels = namespaceLabels;
    pass.namespaceAnnotations = namespaceAnnotations;
    const keys = new Map<string, string>();
    await listPages(api, '/api/v1/namespaces', (items) => {
      for (const item of items) {
        const name = String(item?.metadata?.name);
        namespaceLabels.set(name, ownStringMap(item?.metadata?.labels));
        namespaceAnnotations.set(name, ownStringMap(item?.metadata?.annotations));
        keys.set(name, JSON.stringify([namespaceLabels.get(name), namespaceAnnotations.get(name)]));
      }
    });
    const relabelled = [...keys].filter(([name, key]) => this.namespaceKeys.get(name) !== key).map(([name]) => name);
    this.namespaceKeys = keys;
    for (const name of [...this.namespaceCounts.keys()]) if (!keys.has(name)) this.namespaceCounts.delete(name);
    for (const name of [...this.unsettled]) if (!keys.has(name)) this.unsettled.delete(name);
    if (plan.all) await this.judgeEveryPod(pass, reportsServed, plan.reason);
    else await this.judgeNamespaces(pass, reportsServed, [...new Set([...plan.namespaces, ...this.unsettled, ...relabelled])].filter((name) => keys.has(name) && !this.excluded(name)).sort());
    await this.repairs.repairAll(pass);
  }

  /** The pods of `namespaces`, one namespace's list at a time. */
  private async judgeNamespaces(pass: PassState, reportsServed: boolean, namespaces: readonly string[]): Promise<void> {
    pass.listed = namespaces.length;
    for (const namespace of namespaces) {
      const listed: NamespacePods = { namespace, statuses: [], untracked: 0 };
      await listPages(this.options.api, `/api/v1/namespaces/${namespace}/pods`, (pods) => {
        for (const pod of pods as KubernetesObject[]) addPod(pass, listed, pod);
      });
      // A namespace listed with no pods has its report emptied (the writer writes only over one that had results).
      await this.judgeNamespace(pass, listed, reportsServed);
    }
  }

  /** Every pod, page by page; then the pod watch goes on from this list. */
  private async judgeEveryPod(pass: PassState, reportsServed: boolean, reason: string): Promise<void> {
    this.options.log('info', 'listing every pod', { reason });
    this.namespaceCounts.clear();
    this.unsettled.clear();
    let current: NamespacePods | undefined;
    const flushed = new Set<string>();
    const flush = async () => {
      if (!current) return;
      const listed = current;
      current = undefined;
      if (flushed.has(listed.namespace)) {
        this.options.log('warn', 'the pod list came back out of namespace order: this namespace was judged in parts, and its report is not written this pass', { namespace: listed.namespace });
        await this.judgeNamespace(pass, listed, false);
        return;
      }
      flushed.add(listed.namespace);
      await this.judgeNamespace(pass, listed, reportsServed);
    };
    const resourceVersion = await listPages(this.options.api, '/api/v1/pods', async (pods) => {
      for (const pod of pods as KubernetesObject[]) {
        const namespace = String((pod.metadata as Record<string, unknown> | undefined)?.namespace ?? '');
        if (this.excluded(namespace)) continue;
        if (current && current.namespace !== namespace) await flush();
        current ??= { namespace, statuses: [], untracked: 0 };
        addPod(pass, current, pod);
      }
    });
    await flush();
    // From this list on, the watch says where pods change.
    this.changes.synced(resourceVersion);
    if (reportsServed) {
      // Like a report's write, this must not stop the repairs that follow.
      await this.emptyVacatedReports(pass, flushed).catch((error: Error) => this.options.log('warn', 'could not list the PolicyReports to empty those of namespaces left without pods; trying again next pass', { error: error.message }));
    }
  }

  private async judgeNamespace(pass: PassState, listed: NamespacePods, writeReport: boolean): Promise<void> {
    const { namespace, untracked } = listed;
    // Pods being deleted are neither counted nor repaired (statusReport leaves them out too), so the
    // metrics, the report and `status` count the same pods; their deletion is a change the watch reports.
    const statuses = listed.statuses.filter((status) => !status.terminating);
    const report: StatusReport = statusReport(statuses, pass.source.config);
    pass.untracked += untracked;
    const counts = { upToDate: 0, stale: 0, missing: 0, versionUnknown: 0, untracked };
    for (const status of statuses) {
      if (status.state === 'up-to-date') counts.upToDate++;
      else if (status.state === 'stale') {
        counts.stale++;
        if (status.injections.some((injection) => injection.state === 'missing')) counts.missing++;
      }
      else if (status.state === 'version-unknown') counts.versionUnknown++;
    }
    if (statuses.length + untracked > 0) this.namespaceCounts.set(namespace, counts);
    else this.namespaceCounts.delete(namespace);
    let decided = false;
    for (const workload of report.workloads) {
      const decision = repairDecision(workload, this.options.settings);
      if (decision.action === 'none') continue;
      decided = true;
      await this.judged(pass, workload, decision);
    }
    // Listed again next pass, changed or not, while something is stale, unknown, untracked or decided.
    if (decided || counts.stale + counts.versionUnknown + counts.untracked > 0) this.unsettled.add(namespace);
    else this.unsettled.delete(namespace);
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

  /** What can be said at once: reports, and repairs that wait for the injector or a backoff; the rest become candidates. */
  private async judged(pass: PassState, workload: WorkloadStatus, decision: Exclude<RepairDecision, { action: 'none' }>): Promise<void> {
    if (decision.action === 'report') {
      await this.events.record(eventTarget(workload), decision.type, decision.reason, decision.message);
      return;
    }
    const key = workloadKey(workload);
    if (pass.injectorNotReady) {
      await this.repairs.wait(pass, workload, 'injector-not-ready', 'WaitingForInjector', `${decision.findings}: waiting, not restarted while ${pass.injectorNotReady}`);
      return;
    }
    const backoff = this.repairs.backingOff(key);
    if (backoff) {
      pass.waiting.push({ workload: key, reason: 'backoff', message: `backing off after ${backoff.failures} failed repairs` });
      return;
    }
    if (pass.candidates.length >= MAX_REPAIR_CANDIDATES) {
      pass.waiting.push({ workload: key, reason: 'rate-limit', message: `more than ${MAX_REPAIR_CANDIDATES} workloads to repair: the next pass takes it` });
      return;
    }
    pass.candidates.push({ workload: { namespace: workload.namespace, apiVersion: workload.apiVersion, kind: workload.kind, name: workload.name }, decision });
  }
}
