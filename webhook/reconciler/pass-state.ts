// What one pass of the reconciler gathers as it goes, shared by its judging (reconciler.ts) and its
// repairs (workload-repairs.ts).

import type { InjectorSource } from '../fleet/synthesized-injectors';
import type { RepairDecision, WaitReason } from './repair-decision';
import type { WorkloadName } from './workload-name';

/** The Lease was lost mid-pass: stop acting at once. */
export class LostLease extends Error {}

/** What the reconciler reports of itself; reconciler-process.ts binds it to Prometheus metrics. */
export interface ReconcilerMetrics {
  pass(result: 'done' | 'failed' | 'not-leader' | 'injector-unreadable', seconds: number): void;
  /** Pods by state at the last pass; `missing`: those of them (stale) without an injection they should have. */
  pods(counts: Readonly<Record<'upToDate' | 'stale' | 'versionUnknown' | 'untracked' | 'missing', number>>): void;
  repair(action: 'restart' | 'in-place', result: 'done' | 'failed'): void;
  waiting(counts: Readonly<Record<WaitReason, number>>): void;
}

/** A workload to repair once the list is done: its name and what to do (no pod names: bounded). */
export interface RepairCandidate {
  readonly workload: WorkloadName;
  readonly decision: Extract<RepairDecision, { action: 'restart' | 'in-place' }>;
}

/** What one pass gathers as it goes. */
export class PassState {
  pods = 0;
  untracked = 0;
  reports = 0;
  listed: 'all' | number = 'all';
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
