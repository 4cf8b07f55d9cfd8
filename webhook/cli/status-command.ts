// `status`: the pods' injections per namespace and workload, for people (a table and what is stale)
// or for scripts (--output json), and an exit code a pipeline can gate on.

import { injectionHash, type ResolvedInjectorConfig } from '../config';
import type { InjectionState, PodStatus, WorkloadRef } from './injection-status';

/** Every pod up to date (or carrying no injection and owing none). */
export const EXIT_STATUS_UP_TO_DATE = 0;
/** Some pod runs an outdated injection or one no longer configured, and none misses one: a rollout fixes it. */
export const EXIT_STATUS_OUTDATED = 3;
/** Some pod misses an injection it should have (admitted while the webhook was down, with failurePolicy Ignore). */
export const EXIT_STATUS_MISSING = 4;
/** Nothing stale, but some pod was injected by a version that recorded no hashes: its versions are unknown. */
export const EXIT_STATUS_VERSION_UNKNOWN = 5;
/**
 * An injected volume's ConfigMap, Secret or PersistentVolumeClaim is missing in a namespace where pods
 * carry it: those pods cannot start (wins over every other state).
 */
export const EXIT_STATUS_VOLUME_SOURCE_MISSING = 8;

/** The workloads whose pods `rollout` restarts the way `kubectl rollout restart` does. */
export const RESTARTABLE_KINDS: readonly string[] = ['Deployment', 'StatefulSet', 'DaemonSet'];

const STATES: readonly InjectionState[] = ['up-to-date', 'outdated', 'missing', 'no-longer-configured', 'version-unknown'];

/** One workload's pods, counted. A pod counts once under `pods`, and under each state one of its injections is in. */
export interface WorkloadStatus {
  readonly namespace: string;
  readonly kind: string;
  readonly name: string;
  /** How the workload was found from its pods (`inferred`: a ReplicaSet's name, when the ReplicaSet was not read). */
  readonly via: WorkloadRef['via'];
  /** Whether `rollout` restarts it (Deployments, StatefulSets, DaemonSets). */
  readonly restartable: boolean;
  readonly pods: number;
  /** Pods whose every injection is up to date. */
  readonly upToDate: number;
  readonly outdated: number;
  readonly missing: number;
  readonly noLongerConfigured: number;
  readonly versionUnknown: number;
  /** What is not up to date: each injection, state and pair of hashes, with the pods it applies to. */
  readonly findings: readonly Finding[];
  /** Override annotation values the config ignores (out of bounds, unparsable, not offered), each with its pods.
   * Reported, not counted in the exit code: those pods run with the configured values. */
  readonly ignoredOverrides: readonly { readonly message: string; readonly pods: readonly string[] }[];
}

export interface Finding {
  readonly injection: string;
  readonly state: Exclude<InjectionState, 'up-to-date'>;
  readonly podHash: string | null;
  readonly configuredHash: string | null;
  readonly pods: readonly string[];
}

export interface StatusReport {
  /** The injections configured now, with their hashes. */
  readonly injections: readonly { name: string; hash: string }[];
  /** Workloads with at least one pod that has or owes an injection, by namespace then kind and name. */
  readonly workloads: readonly WorkloadStatus[];
  readonly summary: {
    readonly pods: number;
    readonly podsWithoutInjections: number;
    readonly upToDate: number;
    readonly outdated: number;
    readonly missing: number;
    readonly noLongerConfigured: number;
    readonly versionUnknown: number;
  };
  readonly exitCode: number;
}

const COUNTER: Record<InjectionState, keyof Pick<WorkloadStatus, 'upToDate' | 'outdated' | 'missing' | 'noLongerConfigured' | 'versionUnknown'>> = {
  'up-to-date': 'upToDate',
  outdated: 'outdated',
  missing: 'missing',
  'no-longer-configured': 'noLongerConfigured',
  'version-unknown': 'versionUnknown',
};

export function statusReport(pods: readonly PodStatus[], config: ResolvedInjectorConfig): StatusReport {
  type Counts = { -readonly [key in keyof Omit<WorkloadStatus, 'findings' | 'ignoredOverrides'>]: WorkloadStatus[key] };
  const byWorkload = new Map<string, { status: Counts; findings: Map<string, Finding & { pods: string[] }>; ignoredOverrides: Map<string, string[]> }>();
  const summary = { pods: pods.length, podsWithoutInjections: 0, upToDate: 0, outdated: 0, missing: 0, noLongerConfigured: 0, versionUnknown: 0 };
  for (const pod of pods) {
    if (pod.state === 'none') {
      summary.podsWithoutInjections++;
      continue;
    }
    const key = `${pod.namespace}\u0000${pod.workload.kind}\u0000${pod.workload.name}`;
    let entry = byWorkload.get(key);
    if (!entry) {
      entry = {
        status: {
          namespace: pod.namespace,
          kind: pod.workload.kind,
          name: pod.workload.name,
          via: pod.workload.via,
          restartable: RESTARTABLE_KINDS.includes(pod.workload.kind),
          pods: 0,
          upToDate: 0,
          outdated: 0,
          missing: 0,
          noLongerConfigured: 0,
          versionUnknown: 0,
        },
        findings: new Map(),
        ignoredOverrides: new Map(),
      };
      byWorkload.set(key, entry);
    }
    for (const message of pod.ignoredOverrides) {
      const pods = entry.ignoredOverrides.get(message) ?? [];
      pods.push(pod.name);
      entry.ignoredOverrides.set(message, pods);
    }
    entry.status.pods++;
    const states = new Set(pod.injections.map((injection) => injection.state));
    if (pod.state === 'up-to-date') {
      entry.status.upToDate++;
      summary.upToDate++;
    }
    for (const state of STATES) {
      if (state === 'up-to-date' || !states.has(state)) continue;
      entry.status[COUNTER[state]]++;
      summary[COUNTER[state]]++;
    }
    for (const injection of pod.injections) {
      if (injection.state === 'up-to-date') continue;
      const findingKey = `${injection.injection}\u0000${injection.state}\u0000${injection.podHash ?? ''}`;
      let finding = entry.findings.get(findingKey);
      if (!finding) {
        finding = { injection: injection.injection, state: injection.state, podHash: injection.podHash ?? null, configuredHash: injection.configuredHash ?? null, pods: [] };
        entry.findings.set(findingKey, finding);
      }
      finding.pods.push(pod.name);
    }
  }
  const workloads = [...byWorkload.values()]
    .map(({ status, findings, ignoredOverrides }) => ({ ...status, findings: [...findings.values()], ignoredOverrides: [...ignoredOverrides].map(([message, pods]) => ({ message, pods })) }) as WorkloadStatus)
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
  const exitCode =
    summary.missing > 0 ? EXIT_STATUS_MISSING
    : summary.outdated + summary.noLongerConfigured > 0 ? EXIT_STATUS_OUTDATED
    : summary.versionUnknown > 0 ? EXIT_STATUS_VERSION_UNKNOWN
    : EXIT_STATUS_UP_TO_DATE;
  return { injections: config.injections.map((injection) => ({ name: injection.name, hash: injectionHash(injection) })), workloads, summary, exitCode };
}

function table(rows: readonly string[][]): string[] {
  const widths = rows[0].map((_, column) => Math.max(...rows.map((row) => row[column].length)));
  return rows.map((row) => row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]))).join('  ').trimEnd());
}

function describeFinding(finding: Finding): string {
  const pods = `${finding.pods.length} pod${finding.pods.length === 1 ? '' : 's'}`;
  switch (finding.state) {
    case 'outdated':
      return `${finding.injection}: outdated in ${pods} (pod has ${finding.podHash}, configured now ${finding.configuredHash})`;
    case 'missing':
      return `${finding.injection}: missing from ${pods} (configured ${finding.configuredHash}; admitted without it)`;
    case 'no-longer-configured':
      return `${finding.injection}: no longer configured, still in ${pods}${finding.podHash ? ` (pod has ${finding.podHash})` : ''}`;
    case 'version-unknown':
      return `${finding.injection}: version unknown in ${pods} (injected by a version that recorded no hash; configured now ${finding.configuredHash})`;
  }
}

/** The human-readable report. */
export function formatStatus(report: StatusReport, sourceDescription: string): string {
  const lines = [`config: ${sourceDescription}`, `injections: ${report.injections.map((injection) => `${injection.name}=${injection.hash}`).join(', ') || '(none)'}`, ''];
  if (report.workloads.length === 0) {
    lines.push('no pod has or owes an injection');
  } else {
    const rows = [['NAMESPACE', 'WORKLOAD', 'PODS', 'UP-TO-DATE', 'OUTDATED', 'MISSING', 'NOT-CONFIGURED', 'UNKNOWN']];
    for (const workload of report.workloads) {
      rows.push([
        workload.namespace,
        `${workload.kind}/${workload.name}`,
        String(workload.pods),
        String(workload.upToDate),
        String(workload.outdated),
        String(workload.missing),
        String(workload.noLongerConfigured),
        String(workload.versionUnknown),
      ]);
    }
    lines.push(...table(rows));
    const stale = report.workloads.filter((workload) => workload.findings.length > 0 || workload.ignoredOverrides.length > 0);
    if (stale.length > 0) lines.push('');
    for (const workload of stale) {
      const note = workload.restartable || workload.findings.length === 0 ? '' : ` (${workload.kind === 'Pod' ? 'a bare pod' : `a ${workload.kind}`}: rollout does not restart it)`;
      lines.push(`${workload.namespace} ${workload.kind}/${workload.name}${note}:`);
      for (const finding of workload.findings) lines.push(`  ${describeFinding(finding)}`);
      for (const ignored of workload.ignoredOverrides) lines.push(`  override ignored in ${ignored.pods.length} pod${ignored.pods.length === 1 ? '' : 's'}: ${ignored.message}`);
    }
  }
  const s = report.summary;
  lines.push(
    '',
    `${s.pods} pods: ${s.upToDate} up to date, ${s.outdated} outdated, ${s.missing} missing an injection, ${s.noLongerConfigured} with one no longer configured, ${s.versionUnknown} version unknown, ${s.podsWithoutInjections} without injections`,
  );
  return lines.join('\n') + '\n';
}
