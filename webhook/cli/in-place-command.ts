// `rollout --in-place` and `rollout --in-place --undo`: the plan printed, then carried out pod by pod,
// --max-unavailable pods of a workload and --max-concurrent workloads at a time, stopping at the first
// pod that does not come back Ready. --canary N upgrades N pods and stops; --continue goes on once
// every pod upgraded so far is Ready. The workloads with a pod that cannot be upgraded in place are
// restarted afterwards, as `rollout` restarts them.

import { readinessConditionType } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import {
  type ImageChange,
  type InPlaceOptions,
  type InPlacePlan,
  heldPods,
  inPlacePatch,
  inPlacePlan,
  planPod,
  undoPatch,
  undoPlan,
} from '../fleet/in-place-plan';
import type { Clock, PodClient } from '../fleet/cluster';
import { type DrainMode, PodUpgradeFailure, type Replan, describeUpgrade, podCondition, upgradePod } from '../fleet/in-place-rollout';
import { type ClusterObjects, classifyPods, workloadOf } from '../fleet/injection-status';
import type { InjectorSource } from './injector-source';

/** A rollout stopped at a pod that did not come back (or a refused write): exit code 7, as a failed rollout. */
export const EXIT_IN_PLACE_FAILED = 7;

export interface InPlaceCommandOptions {
  readonly dryRun: boolean;
  /** Pods of one workload upgraded at a time. */
  readonly maxUnavailable: number;
  /** Workloads at a time. */
  readonly maxConcurrent: number;
  /** Upgrade this many pods, then stop. */
  readonly canary?: number;
  /** After a canary: go on, once every pod upgraded in place so far is Ready. */
  readonly continueAfterCanary: boolean;
  readonly undo: boolean;
  readonly drain: DrainMode;
  readonly drainGraceMs: number;
  readonly timeoutMs: number;
  readonly pollMs: number;
  readonly nativeSidecars: InPlaceOptions['nativeSidecars'];
  readonly includeUnknown: boolean;
}

export interface InPlaceCommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly exit: (code: number) => void;
}

/** What the command needs of the cluster, made only when it acts (a dry run reads nothing more). */
export interface InPlaceCluster {
  readonly pods: PodClient;
  /** Restarts the workloads that cannot be upgraded in place, as `rollout` does; false when it stopped at a failure. */
  readonly restart: (workloads: readonly { namespace: string; kind: string; name: string }[]) => Promise<boolean>;
}

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? '' : 's'}`;

function describeChanges(changes: readonly ImageChange[]): string {
  return changes.map((change) => `${change.container}${change.nativeSidecar ? ' (native sidecar)' : ''} ${change.from} -> ${change.to}`).join(', ');
}

function drainNote(readinessGate: boolean, drain: DrainMode, prefix: string): string {
  if (drain === 'none') return ' [--drain none: stays in its Services while the sidecar restarts]';
  return readinessGate ? ` [readiness gate ${readinessConditionType(prefix)}: out of its Services first]` : ' [no readiness gate: stays in its Services while the sidecar restarts]';
}

function untouchedReason(kind: string): string {
  if (kind === 'Pod') return 'a bare pod: delete it and create it again';
  if (kind === 'Job' || kind === 'CronJob') return `a ${kind}: its next run's pods get the current injections`;
  return `a ${kind}: rollout restarts Deployments, StatefulSets and DaemonSets only`;
}

/** The plan as printed: each workload, what happens to it, and each pod with its images or its reasons. */
export function formatInPlacePlan(plan: InPlacePlan, options: Pick<InPlaceCommandOptions, 'maxUnavailable' | 'maxConcurrent' | 'drain'>, prefix: string): string {
  const inPlace = plan.workloads.filter((workload) => workload.inPlace.length > 0);
  const restart = plan.workloads.filter((workload) => workload.action === 'restart');
  const untouched = plan.workloads.filter((workload) => workload.action === 'untouched');
  const pods = inPlace.reduce((sum, workload) => sum + workload.inPlace.length, 0);
  const lines = [
    `plan: upgrade ${plural(pods, 'pod')} in place (${options.maxUnavailable} at a time per workload, ${plural(options.maxConcurrent, 'workload')} at a time), restart ${plural(restart.length, 'workload')}`,
  ];
  for (const workload of [...inPlace.filter((w) => w.action === 'in-place'), ...restart]) {
    const head = `  ${workload.kind} ${workload.namespace}/${workload.name}`;
    if (workload.action === 'in-place') {
      lines.push(`${head}: in place, ${plural(workload.inPlace.length, 'pod')}`);
      for (const pod of workload.inPlace) lines.push(`    ${pod.name}: ${describeChanges(pod.changes)}${drainNote(pod.readinessGate, options.drain, prefix)}`);
    } else {
      lines.push(`${head}: restart: ${plural(workload.fallBack.length, 'pod')} cannot be upgraded in place`);
      for (const pod of workload.fallBack) lines.push(`    ${pod.name}: ${pod.reasons.join('; ')}`);
    }
  }
  if (untouched.length > 0) {
    lines.push(`not restarted: ${plural(untouched.length, 'workload')}`);
    for (const workload of untouched) {
      lines.push(`  ${workload.kind} ${workload.namespace}/${workload.name}: ${untouchedReason(workload.kind)}`);
      for (const pod of workload.inPlace) lines.push(`    ${pod.name}: in place: ${describeChanges(pod.changes)}${drainNote(pod.readinessGate, options.drain, prefix)}`);
      for (const pod of workload.fallBack) lines.push(`    ${pod.name}: not touched: ${pod.reasons.join('; ')}`);
    }
  }
  return lines.join('\n') + '\n';
}

/** One pod to act on, with how its patch is made again from each fresh read. */
interface PodJob {
  readonly namespace: string;
  readonly name: string;
  readonly replan: Replan;
}

interface WorkloadJob {
  readonly label: string;
  readonly pods: readonly PodJob[];
}

/**
 * Runs the pods, --max-unavailable of a workload and --max-concurrent workloads at a time, and at most
 * `limit` pods in all. Stops starting pods at the first failure (the pods already started finish).
 */
async function runPods(
  workloads: readonly WorkloadJob[],
  client: PodClient,
  clock: Clock,
  options: InPlaceCommandOptions,
  prefix: string,
  limit: number,
  say: (line: string) => void,
  verb: string,
): Promise<{ upgraded: string[]; skipped: string[]; failure?: PodUpgradeFailure; failedPod?: string; notStarted: number }> {
  const upgraded: string[] = [];
  const skipped: string[] = [];
  let failure: PodUpgradeFailure | undefined;
  let failedPod: string | undefined;
  let started = 0;
  const total = workloads.reduce((sum, workload) => sum + workload.pods.length, 0);
  const settings = { prefix, drain: options.drain, drainGraceMs: options.drainGraceMs, timeoutMs: options.timeoutMs, pollMs: options.pollMs };
  const queue = [...workloads];
  const workloadWorker = async () => {
    for (let workload = queue.shift(); workload && !failure && started < limit; workload = queue.shift()) {
      const pods = [...workload.pods];
      say(`${workload.label}: ${plural(pods.length, 'pod')}, ${options.maxUnavailable} at a time`);
      const podWorker = async () => {
        for (let pod = pods.shift(); pod && !failure && started < limit; pod = pods.shift()) {
          started++;
          const name = `${pod.namespace}/${pod.name}`;
          try {
            const result = await upgradePod(client, clock, settings, pod.namespace, pod.name, pod.replan, say);
            if ('skipped' in result) {
              skipped.push(name);
              say(`skipped pod ${name}: ${result.skipped}`);
            } else {
              upgraded.push(name);
              say(describeUpgrade(result, verb));
            }
          } catch (error) {
            if (!(error instanceof PodUpgradeFailure)) throw error;
            if (!failure) {
              failure = error;
              failedPod = name;
            }
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(options.maxUnavailable, pods.length) }, podWorker));
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.maxConcurrent, workloads.length) }, workloadWorker));
  return { upgraded, skipped, failure, failedPod, notStarted: total - started };
}

/** The selection's pods that were upgraded in place (they carry the previous images) and are not Ready now. */
function unreadyUpgradedPods(objects: ClusterObjects, prefix: string): string[] {
  return undoPlan(objects, prefix)
    .pods.map((pod) => objects.pods.find((candidate) => (candidate.metadata as any)?.name === pod.name && ((candidate.metadata as any)?.namespace ?? 'default') === pod.namespace)!)
    .filter((pod) => podCondition(pod, 'Ready') !== 'True')
    .map((pod) => `${(pod.metadata as any).namespace}/${(pod.metadata as any).name}`);
}

/** `rollout --in-place` (or `--undo`) on the objects read, printed to `io`; acts through `cluster` unless a dry run. */
export async function runInPlaceCommand(
  objects: ClusterObjects,
  source: InjectorSource,
  header: readonly string[],
  options: InPlaceCommandOptions,
  io: InPlaceCommandIo,
  cluster: () => Promise<InPlaceCluster>,
  clock: Clock,
): Promise<void> {
  const prefix = source.config.annotationPrefix;
  const say = (line: string) => io.stdout(line + '\n');
  const planOptions: InPlaceOptions = { nativeSidecars: options.nativeSidecars, includeUnknown: options.includeUnknown, requireReadinessGate: options.drain === 'gate' };
  const context = { namespaceLabels: objects.namespaceLabels, owners: objects.owners };

  if (options.undo) {
    const plan = undoPlan(objects, prefix, source.config);
    const lines = [...header, `plan: put the previous images back in ${plural(plan.pods.length, 'pod')} (${options.maxUnavailable} at a time per workload)`];
    for (const pod of plan.pods) {
      lines.push(`  ${pod.workload.kind} ${pod.namespace}/${pod.workload.name} pod ${pod.name}: ${pod.changes.length > 0 ? describeChanges(pod.changes) : 'images already back: the annotations only'}${pod.changes.length > 0 ? drainNote(pod.readinessGate, options.drain, prefix) : ''}`);
    }
    for (const pod of plan.unreadable) lines.push(`  cannot undo pod ${pod.namespace}/${pod.name}: ${pod.reason}`);
    for (const pod of plan.otherRuns) lines.push(`  left as it is: pod ${pod.namespace}/${pod.name}, ${pod.reason}`);
    io.stdout(lines.join('\n') + '\n');
    if (options.dryRun) return say('dry run: nothing changed');
    if (plan.pods.length === 0) return;
    const replanUndo = (pod: KubernetesObject): ReturnType<Replan> => {
      const fresh = undoPlan({ pods: [pod], ...context }, prefix, source.config);
      if (fresh.pods.length === 0) return { skip: fresh.unreadable[0]?.reason ?? 'no previous images recorded any more' };
      const only = fresh.pods[0];
      return { changes: only.changes, operations: undoPatch(pod, only, prefix), readinessGate: only.readinessGate && only.changes.length > 0 };
    };
    const byWorkload = groupPods(plan.pods, (pod) => ({ namespace: pod.namespace, name: pod.name, replan: replanUndo }));
    const { pods } = await cluster();
    const result = await runPods(byWorkload, pods, clock, options, prefix, Infinity, say, 'put back');
    if (result.failure) {
      io.stderr(`error: ${result.failure.message}\nstopped: ${plural(result.upgraded.length, 'pod')} put back, ${plural(result.notStarted, 'pod')} not started\n`);
      io.exit(EXIT_IN_PLACE_FAILED);
    } else say(`put back: ${plural(result.upgraded.length, 'pod')}${result.skipped.length > 0 ? `, ${result.skipped.length} skipped` : ''}`);
    return;
  }

  const plan = inPlacePlan(objects, source, planOptions);
  // Pods an interrupted run left out of their Services that this run does not drain itself: set back
  // (one whose workload is restarted too, in case the restart waits for a --continue).
  const planned = new Set(plan.workloads.flatMap((workload) => workload.inPlace).map((pod) => `${pod.namespace}/${pod.name}`));
  const held = heldPods(objects.pods, prefix).filter((pod) => !planned.has(pod));
  const heldLine = held.length > 0 ? [`set back in their Services (held by an interrupted rollout --in-place): ${held.join(', ')}`] : [];
  io.stdout([...header, formatInPlacePlan(plan, options, prefix).trimEnd(), ...heldLine].join('\n') + '\n');
  if (options.dryRun) return say('dry run: nothing changed');
  if (held.length > 0) {
    const { pods } = await cluster();
    for (const pod of held) {
      const [namespace, name] = pod.split('/');
      await pods.setPodCondition(namespace, name, { type: readinessConditionType(prefix), status: 'True', reason: 'InPlaceUpgraded', message: 'set back after an interrupted rollout --in-place' });
      say(`set back pod ${pod}`);
    }
  }
  if (options.continueAfterCanary) {
    const unready = unreadyUpgradedPods(objects, prefix);
    if (unready.length > 0) {
      io.stderr(`error: --continue: ${plural(unready.length, 'pod')} upgraded in place ${unready.length === 1 ? 'is' : 'are'} not Ready: ${unready.join(', ')}; look at ${unready.length === 1 ? 'it' : 'them'}, or put the previous images back with --undo\n`);
      io.exit(EXIT_IN_PLACE_FAILED);
      return;
    }
  }
  const replan = (pod: KubernetesObject): ReturnType<Replan> => {
    const status = classifyPods({ pods: [pod], ...context }, source)[0];
    const { chain } = workloadOf(pod, status.namespace, objects.owners);
    const fresh = planPod(pod, status, chain, source, planOptions);
    if (fresh.action === 'none') return { skip: 'up to date already' };
    if (fresh.action !== 'in-place') return { skip: `no longer qualifies: ${fresh.reasons.join('; ')}` };
    return { changes: fresh.changes, operations: inPlacePatch(pod, fresh, prefix), readinessGate: fresh.readinessGate };
  };
  const inPlaceWorkloads = plan.workloads.filter((workload) => workload.inPlace.length > 0);
  const jobs = inPlaceWorkloads.map((workload) => ({ label: `${workload.kind} ${workload.namespace}/${workload.name}`, pods: workload.inPlace.map((pod) => ({ namespace: pod.namespace, name: pod.name, replan })) }));
  const restarts = plan.workloads.filter((workload) => workload.action === 'restart');
  const podCount = jobs.reduce((sum, job) => sum + job.pods.length, 0);
  if (podCount === 0 && restarts.length === 0) return;
  const { pods, restart } = await cluster();
  const limit = options.canary ?? Infinity;
  const result = podCount > 0 ? await runPods(jobs, pods, clock, options, prefix, limit, say, 'upgraded') : { upgraded: [], skipped: [], notStarted: 0 };
  if ('failure' in result && result.failure) {
    const undo = result.failure.patched ? `; the images of pod ${result.failedPod} were replaced: rollout --in-place --undo puts the previous ones back` : '';
    io.stderr(
      `error: ${result.failure.message}\nstopped: ${plural(result.upgraded.length, 'pod')} upgraded, ${plural(result.notStarted, 'pod')} and ${plural(restarts.length, 'workload restart')} not started${undo}\n`,
    );
    io.exit(EXIT_IN_PLACE_FAILED);
    return;
  }
  if (options.canary !== undefined && (result.notStarted > 0 || restarts.length > 0)) {
    say(
      `canary: ${plural(result.upgraded.length, 'pod')} upgraded; ${plural(result.notStarted, 'pod')} and ${plural(restarts.length, 'workload restart')} left: ` +
        'check the upgraded pods, then run again with --continue (or put them back with --undo)',
    );
    return;
  }
  if (podCount > 0) say(`upgraded in place: ${plural(result.upgraded.length, 'pod')}${result.skipped.length > 0 ? `, ${result.skipped.length} skipped` : ''}`);
  if (restarts.length > 0 && !(await restart(restarts))) return;
}

function groupPods<T extends { namespace: string; workload: { kind: string; name: string } }>(pods: readonly T[], job: (pod: T) => PodJob): WorkloadJob[] {
  const groups = new Map<string, { label: string; pods: PodJob[] }>();
  for (const pod of pods) {
    const label = `${pod.workload.kind} ${pod.namespace}/${pod.workload.name}`;
    if (!groups.has(label)) groups.set(label, { label, pods: [] });
    groups.get(label)!.pods.push(job(pod));
  }
  return [...groups.values()];
}
