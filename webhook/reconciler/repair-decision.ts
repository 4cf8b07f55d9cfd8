// What the reconciler does about one workload `status` found stale: pure, from the workload's status
// line and the platform team's settings. The rules it keeps whatever the settings: a pod without an
// owner is never deleted (nothing would make it again), Jobs and CronJobs are left to their next run,
// pods the injector owes nothing (opted out, excluded) never reach here, and a label naming an
// unserved revision is reported, never "fixed" behind the app team's back.

import { createHash } from 'node:crypto';
import type { ReconcilerSettings } from '../config';
import { RESTARTABLE_KINDS, type WorkloadStatus } from '../fleet/status-report';
import type { EventReason } from './event-recorder';

/** Why a stale workload was not repaired this pass (fixed words: metric labels). */
export const WAIT_REASONS = ['injector-not-ready', 'rollout-in-progress', 'disruption-budget', 'rate-limit', 'restarted-already', 'backoff'] as const;
export type WaitReason = (typeof WAIT_REASONS)[number];

/** Stale findings of a workload's pods, as `status` counts them (a pod counts once per state it is in). */
export function staleCount(workload: WorkloadStatus): number {
  return workload.missing + workload.outdated + workload.noLongerConfigured + (workload.unservedRevision ?? 0);
}

export type RepairDecision =
  /** Nothing stale. */
  | { readonly action: 'none' }
  /** Say so (Event, metrics, report) and do nothing: by setting, or because nothing safe can be done. */
  | { readonly action: 'report'; readonly type: 'Normal' | 'Warning'; readonly reason: EventReason; readonly message: string }
  /** Restart the workload (once per config), or upgrade its pods in place. */
  | { readonly action: 'restart' | 'in-place'; readonly verb: string; readonly findings: string; readonly expected: ReadonlyMap<string, string> };

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

/** `envoy missing in 3 pods; log-shipper outdated in 1 pod`. */
export function describeFindings(workload: WorkloadStatus): string {
  const parts = workload.findings.filter((finding) => finding.state !== 'audit').map((finding) => `${finding.injection} ${finding.state.replace(/-/g, ' ')} in ${plural(finding.pods.length, 'pod')}`);
  if (workload.unservedRevision) parts.push(`${plural(workload.unservedRevision, 'pod')} labelled with a revision nobody serves`);
  return parts.join('; ');
}

/** The injections (and the hashes configured now) a repair must bring: the missing and the outdated. */
export function expectedInjections(workload: WorkloadStatus): Map<string, string> {
  const expected = new Map<string, string>();
  for (const finding of workload.findings) {
    if ((finding.state === 'missing' || finding.state === 'outdated') && finding.configuredHash) expected.set(finding.injection, finding.configuredHash);
  }
  return expected;
}

/** The key a restart is recorded under on the workload: the injections and hashes it was restarted for. */
export function repairKey(expected: ReadonlyMap<string, string>): string {
  const text = [...expected].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, hash]) => `${name}=${hash}`).join(',');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

export function repairDecision(workload: WorkloadStatus, settings: Pick<ReconcilerSettings, 'missing' | 'outdated'>): RepairDecision {
  if (staleCount(workload) === 0) return { action: 'none' };
  const findings = describeFindings(workload);
  const missing = workload.missing > 0;
  const reason: EventReason = missing || workload.unservedRevision ? 'SidecarsMissing' : 'SidecarsOutdated';
  if (workload.kind === 'Pod') {
    return { action: 'report', type: 'Warning', reason: 'NotRepaired', message: `${findings}: a pod with no owner is never deleted, since nothing would make it again; delete it and create it again yourself` };
  }
  if (!RESTARTABLE_KINDS.includes(workload.kind)) {
    const why = workload.kind === 'Job' || workload.kind === 'CronJob' ? `a ${workload.kind}'s next run gets them` : `a ${workload.kind} is not restarted (Deployments, StatefulSets and DaemonSets are)`;
    return { action: 'report', type: 'Warning', reason, message: `${findings}: not repaired, ${why}` };
  }
  if (workload.unservedRevision && !missing && workload.outdated + workload.noLongerConfigured === 0) {
    return { action: 'report', type: 'Warning', reason, message: `${findings}: fix the label; a restart would not help` };
  }
  const action = missing ? settings.missing : settings.outdated;
  if (action === 'report') {
    const setting = missing ? `reconciler.missing is 'report'` : `reconciler.outdated is 'report'`;
    return { action: 'report', type: missing ? 'Warning' : 'Normal', reason, message: `${findings}: reported only (${setting}); run rollout to repair` };
  }
  const expected = expectedInjections(workload);
  const verb = missing ? `add ${[...expected.keys()].join(', ')}` : `update ${[...expected.keys()].join(', ') || 'its injections'}`;
  // Missing containers cannot be added to a running pod: a workload missing some is restarted even
  // with outdated: 'in-place' (the restart brings the outdated ones up to date too).
  return { action: missing ? 'restart' : action, verb, findings, expected };
}
