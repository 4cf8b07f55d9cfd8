// The pods' injections per namespace and workload, counted: what `status` prints (a table and what is
// stale, or --output json) and exits with, and what the reconciler reports (Events, PolicyReports)
// and repairs from.

import { injectionHash, revisionChoosers, revisionConfigs, type ResolvedInjectorConfig } from '../config';
import { type InjectionState, type PodStatus, type WorkloadRef, configuredHashes } from './injection-status';

/** Every pod up to date (or carrying no injection and owing none). */
export const EXIT_STATUS_UP_TO_DATE = 0;
/** Some pod runs an outdated injection or one no longer configured, and none misses one: a rollout fixes it. */
export const EXIT_STATUS_OUTDATED = 3;
/** Some pod misses an injection it should have (admitted while the webhook was down, with failurePolicy Ignore). */
export const EXIT_STATUS_MISSING = 4;
/** Nothing stale, but some pod was injected by a version that recorded no hashes: its versions are unknown. */
export const EXIT_STATUS_VERSION_UNKNOWN = 5;

/** The workloads whose pods `rollout` restarts the way `kubectl rollout restart` does. */
export const RESTARTABLE_KINDS: readonly string[] = ['Deployment', 'StatefulSet', 'DaemonSet'];

/** The states counted per pod (`audit` is counted apart: it is not a state of an injection the pod has). */
const STATES: readonly Exclude<InjectionState, 'audit'>[] = ['up-to-date', 'outdated', 'missing', 'no-longer-configured', 'version-unknown'];

/** Whether the config (or one of its revisions) has an injection in audit mode: then `audit` counts appear. */
function hasAudit(config: ResolvedInjectorConfig): boolean {
  return revisionConfigs(config).some((view) => view.injections.some((injection) => injection.mode === 'audit'));
}

/** One workload's pods, counted. A pod counts once under `pods`, and under each state one of its injections is in. */
export interface WorkloadStatus {
  readonly namespace: string;
  /** As the pods' owner references give it (`apps/v1`, `argoproj.io/v1alpha1`); absent when a reference had none. */
  readonly apiVersion?: string;
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
  /** With an injection in audit mode: pods it would have been added to (they run without it, as configured). */
  readonly audit?: number;
  /** Pods whose `<prefix>/rev` label (their own or their namespace's) names nothing served: they run without
   * the injections they asked for. Counted in the exit code as missing. */
  readonly unservedRevision?: number;
  /** With revisions: the revisions its pods record (run now) and the ones they should run, each sorted. */
  readonly revisions?: { readonly running: readonly string[]; readonly chosen: readonly string[] };
  /** Why some of its pods have no revision, each with its pods. */
  readonly revisionFindings?: readonly { readonly message: string; readonly pods: readonly string[] }[];
}

export interface Finding {
  readonly injection: string;
  readonly state: Exclude<InjectionState, 'up-to-date'>;
  readonly podHash: string | null;
  readonly configuredHash: string | null;
  readonly pods: readonly string[];
}

/** One revision as `status` reports it. */
export interface RevisionStatus {
  readonly name: string;
  /** The tags pointing at it now. */
  readonly tags: readonly string[];
  /** Whether the default tag is among them. */
  readonly default: boolean;
  readonly injections: readonly { name: string; hash: string }[];
  /** Pods that record this revision (it injected them). */
  readonly running: number;
  /** Pods that should run it now (their label, their namespace's, or the default tag lead to it). */
  readonly chosen: number;
}

export interface StatusReport {
  /** The injections configured now, with their hashes (empty with revisions: see `revisions`). */
  readonly injections: readonly { name: string; hash: string }[];
  /** With revisions: each served revision, its tags, and its pods. */
  readonly revisions?: readonly RevisionStatus[];
  /** Revisions that pods still record but the config no longer serves, with those pods (`namespace/name`). */
  readonly removedRevisions?: readonly { readonly revision: string; readonly pods: readonly string[] }[];
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
    /** With revisions: pods whose revision label names nothing served. */
    readonly unservedRevision?: number;
    /** With an injection in audit mode: pods it would have been added to. */
    readonly audit?: number;
  };
  readonly exitCode: number;
}

const COUNTER: Record<Exclude<InjectionState, 'audit'>, keyof Pick<WorkloadStatus, 'upToDate' | 'outdated' | 'missing' | 'noLongerConfigured' | 'versionUnknown'>> = {
  'up-to-date': 'upToDate',
  outdated: 'outdated',
  missing: 'missing',
  'no-longer-configured': 'noLongerConfigured',
  'version-unknown': 'versionUnknown',
};

/** One workload's pods as they are counted. */
interface WorkloadTally {
  status: { -readonly [key in keyof Omit<WorkloadStatus, 'findings' | 'ignoredOverrides' | 'unservedRevision' | 'revisions' | 'revisionFindings' | 'audit'>]: WorkloadStatus[key] };
  findings: Map<string, Finding & { pods: string[] }>;
  ignoredOverrides: Map<string, string[]>;
  unservedRevision: number;
  audit: number;
  running: Set<string>;
  chosen: Set<string>;
  revisionFindings: Map<string, string[]>;
}

type Summary = { -readonly [key in Exclude<keyof StatusReport['summary'], 'unservedRevision' | 'audit'>]: number };

/** Appends `value` to the list kept under `key`. */
function listed<K>(map: Map<K, string[]>, key: K, value: string): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}

export function statusReport(all: readonly PodStatus[], config: ResolvedInjectorConfig): StatusReport {
  // A pod being deleted is going, whatever it carries: its workload is judged by the pods that stay.
  const pods = all.some((pod) => pod.terminating) ? all.filter((pod) => !pod.terminating) : all;
  const byWorkload = new Map<string, WorkloadTally>();
  const summary: Summary = { pods: pods.length, podsWithoutInjections: 0, upToDate: 0, outdated: 0, missing: 0, noLongerConfigured: 0, versionUnknown: 0 };
  let unservedRevision = 0;
  let audited = 0;
  const served = new Set((config.revisions ?? []).map((revision) => revision.name));
  const running = new Map<string, number>();
  const chosen = new Map<string, number>();
  const removed = new Map<string, string[]>();
  for (const pod of pods) {
    const revision = pod.revision;
    if (revision?.recorded !== undefined) {
      running.set(revision.recorded, (running.get(revision.recorded) ?? 0) + 1);
      if (!served.has(revision.recorded)) listed(removed, revision.recorded, `${pod.namespace}/${pod.name}`);
    }
    const audit = pod.injections.some((injection) => injection.state === 'audit');
    if (audit) audited++;
    if (pod.state === 'none' && !audit) {
      summary.podsWithoutInjections++;
      continue;
    }
    if (revision?.chosen !== undefined) chosen.set(revision.chosen, (chosen.get(revision.chosen) ?? 0) + 1);
    const key = `${pod.namespace}\u0000${pod.workload.kind}\u0000${pod.workload.name}`;
    let entry = byWorkload.get(key);
    if (!entry) {
      entry = newWorkloadTally(pod);
      byWorkload.set(key, entry);
    }
    if (revision?.recorded !== undefined) entry.running.add(revision.recorded);
    if (revision?.chosen !== undefined) entry.chosen.add(revision.chosen);
    if (revision?.unserved !== undefined) {
      entry.unservedRevision++;
      unservedRevision++;
      listed(entry.revisionFindings, revision.unserved, pod.name);
    }
    if (revision?.recorded !== undefined && !served.has(revision.recorded)) listed(entry.revisionFindings, `revision ${revision.recorded}, which injected it, is no longer served`, pod.name);
    for (const message of pod.ignoredOverrides) listed(entry.ignoredOverrides, message, pod.name);
    entry.status.pods++;
    if (audit) entry.audit++;
    countStates(entry, summary, pod);
  }
  const withAudit = hasAudit(config);
  const workloads = [...byWorkload.values()]
    .map((entry) => workloadStatus(entry, config, withAudit))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name));
  const exitCode =
    summary.missing + unservedRevision > 0 ? EXIT_STATUS_MISSING
    : summary.outdated + summary.noLongerConfigured > 0 ? EXIT_STATUS_OUTDATED
    : summary.versionUnknown > 0 ? EXIT_STATUS_VERSION_UNKNOWN
    : EXIT_STATUS_UP_TO_DATE;
  const revisions = config.revisions ? revisionStatuses(config, running, chosen) : undefined;
  return {
    // The config's hashes, computed once per config: the reconciler makes a report per namespace.
    injections: config.injections.map((injection) => ({ name: injection.name, hash: configuredHashes(config).get(injection.name)! })),
    ...(revisions ? { revisions, removedRevisions: [...removed].map(([revision, list]) => ({ revision, pods: list })) } : {}),
    workloads,
    summary: { ...summary, ...(revisions ? { unservedRevision } : {}), ...(withAudit ? { audit: audited } : {}) },
    exitCode,
  };
}

/** A workload first met through this pod, nothing counted yet. */
function newWorkloadTally(pod: PodStatus): WorkloadTally {
  return {
    status: {
      namespace: pod.namespace,
      ...(pod.workload.apiVersion !== undefined ? { apiVersion: pod.workload.apiVersion } : {}),
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
    unservedRevision: 0,
    audit: 0,
    running: new Set(),
    chosen: new Set(),
    revisionFindings: new Map(),
  };
}

/** Counts a pod under each state one of its injections is in, and each injection not up to date as a finding. */
function countStates(entry: WorkloadTally, summary: Summary, pod: PodStatus): void {
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

/** A workload's counts as the report gives them. */
function workloadStatus(entry: WorkloadTally, config: ResolvedInjectorConfig, withAudit: boolean): WorkloadStatus {
  return {
    ...entry.status,
    findings: [...entry.findings.values()],
    ignoredOverrides: [...entry.ignoredOverrides].map(([message, pods]) => ({ message, pods })),
    ...(withAudit ? { audit: entry.audit } : {}),
    // Without revisions the report keeps the shape scripts already read: no revision fields at all.
    ...(config.revisions
      ? {
          unservedRevision: entry.unservedRevision,
          revisions: { running: [...entry.running].sort(), chosen: [...entry.chosen].sort() },
          revisionFindings: [...entry.revisionFindings].map(([message, pods]) => ({ message, pods })),
        }
      : {}),
  } as WorkloadStatus;
}

/** Each served revision: its tags, its injections' hashes, and how many pods run it and should. */
function revisionStatuses(config: ResolvedInjectorConfig, running: ReadonlyMap<string, number>, chosen: ReadonlyMap<string, number>): RevisionStatus[] {
  return revisionConfigs(config).map((view) => {
    const name = view.revision!;
    const tags = revisionChoosers(config, name).slice(1);
    return {
      name,
      tags,
      default: (config.tags ?? []).some((tag) => tag.default === true && tag.revision === name),
      injections: view.injections.map((injection) => ({ name: injection.name, hash: injectionHash(injection) })),
      running: running.get(name) ?? 0,
      chosen: chosen.get(name) ?? 0,
    };
  });
}
