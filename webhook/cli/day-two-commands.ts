// `status` and `rollout`: which running pods have the injections the config says now, and restarting
// the workloads whose pods do not. Pods come from the cluster (the user's kubeconfig) or from
// `kubectl get namespaces,replicasets,pods -o json` on stdin.

import { Command, Option } from 'commander';
import { dns1123LabelError, type LabelSelectorRequirement, readinessConditionType } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import { matchesLabelSelector, type LabelSelector } from '../engine/label-selector';
import { ownStringMap } from '../engine/pod-patch-builder';
import { type ClusterObjects, type InjectionState, type PodStatus, STALE_STATES, classifyPods, ownerKey } from '../fleet/injection-status';
import { type InjectorSource, loadConfigFile, loadSynthesized } from './injector-source';
import { UsageError, readManifests } from './manifest-input';
import { DEFAULT_NATIVE_SIDECARS, type InPlaceOptions, heldPods } from '../fleet/in-place-plan';
import { type InPlaceCluster, type InPlaceCommandOptions, runInPlaceCommand } from './in-place-command';
import { REAL_CLOCK } from '../fleet/cluster';
import type { DrainMode } from '../fleet/in-place-rollout';
import { listItems } from './preview';
import { type StatusReport, type WorkloadStatus, statusReport } from '../fleet/status-report';
import { EXIT_STATUS_VOLUME_SOURCE_MISSING, formatStatus } from './status-command';
import { describeVolumeSourceFinding, injectedVolumeSources, mergeVolumeNeeds, missingVolumeSources, type VolumeSourceLookup, type VolumeSourceNeed } from './volume-sources';

/** The cluster could not be read or a workload not restarted: exit code 6. */
export const EXIT_CLUSTER = 6;
/** A rollout failed or did not finish within --timeout: exit code 7. */
export const EXIT_ROLLOUT_FAILED = 7;

interface SelectionOptions {
  readonly from?: string;
  readonly config?: string;
  readonly namespace?: string;
  readonly allNamespaces?: boolean;
  readonly selector?: string;
  readonly filename?: string;
  readonly stdin?: boolean;
  readonly kubeconfig?: string;
}

export interface CommandIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  readonly readStdin: () => string;
  /** Sets the exit code of the command that ran. */
  readonly exit: (code: number) => void;
}

function withSelectionOptions(command: Command): Command {
  return command
    .option('--from <dist>', "what cdk8s synth wrote: the injector ConfigMap's config.json and the MutatingWebhookConfiguration (as applied)")
    .option('--config <file>', 'an injector config.json instead of --from (needed for the admission-policy backend, which has no ConfigMap)')
    .option('-n, --namespace <namespace>', "only pods in this namespace (default: the kubeconfig context's namespace; with stdin: every pod given)")
    .option('-A, --all-namespaces', 'pods in every namespace')
    .option('-l, --selector <selector>', 'only pods with these labels, as kubectl -l: a=b,c!=d,e in (x,y),f,!g')
    .option('-f, --filename <file>', 'read the objects from a file or - (stdin) instead of the cluster: the output of kubectl get namespaces,replicasets,pods -A -o json')
    .option('--stdin', 'the same as -f -')
    .option('--kubeconfig <file>', 'the kubeconfig to use (default: KUBECONFIG, then ~/.kube/config, as kubectl)');
}

/** Parses a kubectl label selector (`a=b,c!=d,e in (x,y),f,!g`) into a LabelSelector. */
export function parseSelector(text: string): LabelSelector {
  const matchLabels: Record<string, string> = {};
  const matchExpressions: LabelSelectorRequirement[] = [];
  const parts: string[] = [];
  let depth = 0;
  let current = '';
  for (const char of text) {
    if (char === '(') depth++;
    if (char === ')') depth--;
    if (char === ',' && depth === 0) {
      parts.push(current);
      current = '';
    } else current += char;
  }
  parts.push(current);
  for (const raw of parts) {
    const part = raw.trim();
    if (part === '') continue;
    let match: RegExpExecArray | null;
    if ((match = /^([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part))) {
      const values = match[3].split(',').map((value) => value.trim()).filter((value) => value !== '');
      matchExpressions.push({ key: match[1], operator: match[2] === 'in' ? 'In' : 'NotIn', values });
    } else if ((match = /^([^\s!=(),]+)\s*!=\s*([^\s!=(),]*)$/.exec(part))) {
      matchExpressions.push({ key: match[1], operator: 'NotIn', values: [match[2]] });
    } else if ((match = /^([^\s!=(),]+)\s*==?\s*([^\s!=(),]*)$/.exec(part))) {
      matchLabels[match[1]] = match[2];
    } else if ((match = /^!\s*([^\s!=(),]+)$/.exec(part))) {
      matchExpressions.push({ key: match[1], operator: 'DoesNotExist' });
    } else if ((match = /^([^\s!=(),]+)$/.exec(part))) {
      matchExpressions.push({ key: match[1], operator: 'Exists' });
    } else {
      throw new UsageError(`--selector: cannot read "${part}" (write a=b, a!=b, a in (x,y), a notin (x,y), a or !a)`);
    }
  }
  return { matchLabels, matchExpressions };
}

function sourceOf(options: SelectionOptions): InjectorSource {
  if (options.from !== undefined && options.config !== undefined) throw new UsageError('give either --from or --config, not both');
  if (options.from === undefined && options.config === undefined) throw new UsageError('give --from <dist> (the synthesized output) or --config <config.json>');
  if (options.from !== undefined) return loadSynthesized(options.from);
  return loadConfigFile(options.config!);
}

function checkSelection(options: SelectionOptions): void {
  if (options.namespace !== undefined && options.allNamespaces) throw new UsageError('give either --namespace or --all-namespaces, not both');
  if (options.namespace !== undefined) {
    const error = dns1123LabelError(options.namespace);
    if (error) throw new UsageError(`--namespace "${options.namespace}" ${error}`);
  }
  if (options.stdin && options.filename !== undefined && options.filename !== '-') throw new UsageError('give either --stdin or -f <file>, not both');
  if (options.selector !== undefined) parseSelector(options.selector);
}

function inputFile(options: SelectionOptions): string | undefined {
  return options.stdin ? '-' : options.filename;
}

/** Pods, namespaces, ReplicaSets and Jobs from `kubectl get ... -o json` (a List, or objects one by one). */
function readObjectsFromInput(file: string, options: SelectionOptions, io: CommandIo): ClusterObjects {
  const objects: KubernetesObject[] = [];
  for (const document of readManifests([file], io.readStdin)) {
    if (!document.object) continue;
    objects.push(...(listItems(document.object)?.map((item) => item.object) ?? [document.object]));
  }
  const selector = options.selector !== undefined ? parseSelector(options.selector) : undefined;
  const metadata = (object: KubernetesObject) => (object.metadata ?? {}) as Record<string, any>;
  const namespaceOf = (object: KubernetesObject) => String(metadata(object).namespace ?? 'default');
  const pods = objects.filter(
    (object) =>
      object.apiVersion === 'v1' && object.kind === 'Pod'
      && (options.namespace === undefined || namespaceOf(object) === options.namespace)
      && (selector === undefined || matchesLabelSelector(selector, ownStringMap(metadata(object).labels))),
  );
  const namespaceLabels = new Map<string, Record<string, string>>();
  const namespaceAnnotations = new Map<string, Record<string, string>>();
  const owners = new Map<string, KubernetesObject>();
  for (const object of objects) {
    if (object.apiVersion === 'v1' && object.kind === 'Namespace') {
      namespaceLabels.set(String(metadata(object).name), ownStringMap(metadata(object).labels));
      namespaceAnnotations.set(String(metadata(object).name), ownStringMap(metadata(object).annotations));
    }
    if (object.kind === 'ReplicaSet' || object.kind === 'Job') owners.set(ownerKey(namespaceOf(object), String(object.kind), String(metadata(object).name)), object);
  }
  const unknown = [...new Set(pods.map(namespaceOf))].filter((namespace) => !namespaceLabels.has(namespace));
  if (unknown.length > 0) {
    io.stderr(
      `note: no Namespace object for ${unknown.join(', ')} in the input: their labels are taken to be kubernetes.io/metadata.name alone when matching the namespaceSelector (pipe kubectl get namespaces,replicasets,pods -A -o json)\n`,
    );
  }
  return { pods, namespaceLabels, namespaceAnnotations, owners };
}

/** What the command says it read: the file, or the cluster's context and the namespace selected. */
const clusterWhere = (connection: import('./cluster').ClusterConnection, namespace: string | undefined) => `${connection.description}, ${namespace ? `namespace ${namespace}` : 'all namespaces'}`;

/** The pods to look at and their surroundings, from the input file or the cluster. */
async function readObjects(options: SelectionOptions, io: CommandIo): Promise<{ objects: ClusterObjects; connection?: import('./cluster').ClusterConnection; where: string }> {
  const file = inputFile(options);
  if (file !== undefined) {
    return { objects: readObjectsFromInput(file, options, io), where: file === '-' ? 'stdin' : file };
  }
  const { connect, readCluster } = await import('./cluster');
  const connection = await connect(options.kubeconfig);
  const namespace = options.allNamespaces ? undefined : (options.namespace ?? connection.contextNamespace);
  const objects = await readCluster(connection, { namespace, selector: options.selector });
  return { objects, connection, where: clusterWhere(connection, namespace) };
}

interface JudgedPods {
  readonly pods: PodStatus[];
  /** Pods an interrupted rollout --in-place left out of their Services. */
  readonly held: string[];
  /** What the pods' injected volumes need in their namespaces. */
  readonly volumeNeeds: VolumeSourceNeed[];
  readonly connection?: import('./cluster').ClusterConnection;
  readonly where: string;
}

/** `status`'s reading: each page of pods judged as it comes from the cluster and let go (the input file's pods at once). */
async function judgeObjects(options: SelectionOptions, io: CommandIo, source: InjectorSource): Promise<JudgedPods> {
  const pods: PodStatus[] = [];
  const held: string[] = [];
  const needs: VolumeSourceNeed[][] = [];
  const judge = (objects: ClusterObjects) => {
    for (const status of classifyPods(objects, source)) pods.push(status);
    held.push(...heldPods(objects.pods, source.config.annotationPrefix));
    needs.push(injectedVolumeSources(objects.pods, source.config));
  };
  const file = inputFile(options);
  if (file !== undefined) {
    judge(readObjectsFromInput(file, options, io));
    return { pods, held, volumeNeeds: mergeVolumeNeeds(needs), where: file === '-' ? 'stdin' : file };
  }
  const { connect, readClusterPages } = await import('./cluster');
  const connection = await connect(options.kubeconfig);
  const namespace = options.allNamespaces ? undefined : (options.namespace ?? connection.contextNamespace);
  await readClusterPages(connection, { namespace, selector: options.selector }, judge);
  return { pods, held, volumeNeeds: mergeVolumeNeeds(needs), connection, where: clusterWhere(connection, namespace) };
}

/** What the cluster says of each source the pods' injected volumes need. */
async function volumeSourceLookups(needs: VolumeSourceNeed[], connection: import('./cluster').ClusterConnection): Promise<[VolumeSourceNeed[], Map<string, VolumeSourceLookup>]> {
  const { lookUpVolumeSources } = await import('./cluster');
  return [needs, needs.length === 0 ? new Map() : await lookUpVolumeSources(connection, needs)];
}

/** The workloads `rollout` would act on: those with a pod in one of `states`. */
export function rolloutPlan(report: StatusReport, states: readonly InjectionState[]): { restart: WorkloadStatus[]; untouched: WorkloadStatus[] } {
  const listed = report.workloads.filter((workload) => workload.findings.some((finding) => states.includes(finding.state)));
  return { restart: listed.filter((workload) => workload.restartable), untouched: listed.filter((workload) => !workload.restartable) };
}

function describeWorkload(workload: WorkloadStatus, states: readonly InjectionState[]): string {
  const findings = workload.findings.filter((finding) => states.includes(finding.state)).map((finding) => `${finding.injection} ${finding.state}`);
  return `${workload.kind} ${workload.namespace}/${workload.name}: ${workload.pods} pod${workload.pods === 1 ? '' : 's'} (${findings.join(', ')})${workload.via === 'inferred' ? ' [Deployment inferred from the ReplicaSet name]' : ''}`;
}

function untouchedReason(workload: WorkloadStatus): string {
  if (workload.kind === 'Pod') return 'a bare pod: delete it and create it again';
  if (workload.kind === 'Job' || workload.kind === 'CronJob') return `a ${workload.kind}: its next run's pods get the current injections`;
  return `a ${workload.kind}: rollout restarts Deployments, StatefulSets and DaemonSets only`;
}

function parseDuration(text: string, option = '--timeout'): number {
  const match = /^(\d+)(ms|s|m)?$/.exec(text.trim());
  if (!match) throw new UsageError(`${option} "${text}" is not a duration (such as 300s or 5m)`);
  const value = Number(match[1]);
  return match[2] === 'ms' ? value : match[2] === 'm' ? value * 60_000 : value * 1000;
}

export function addDayTwoCommands(program: Command, io: CommandIo): void {
  withSelectionOptions(
    program
      .command('status')
      .description(
        'for each namespace and workload, how many pods have the injections the config says now: up to date, outdated (another hash), ' +
          'missing one they should have (admitted while the webhook was unreachable), carrying one no longer configured, or injected ' +
          'by a version that recorded no hashes.\n\nExit codes: 0 every pod up to date, 3 outdated or no longer configured, 4 missing an ' +
          'injection, 5 only versions unknown, 8 an injected volume\'s ConfigMap, Secret or PVC missing in a namespace where pods carry it ' +
          '(they cannot start; wins over the others), 1 bad input, 2 bad usage, 6 cluster unreachable or refused.',
      ),
  )
    .addOption(new Option('-o, --output <format>', 'text for people, json for scripts').choices(['text', 'json']).default('text'))
    .action(async (options: SelectionOptions & { output: 'text' | 'json' }) => {
      checkSelection(options);
      const source = sourceOf(options);
      // Each pod too, for scripts: which workload, and the state of each of its injections; the pods an
      // interrupted rollout --in-place left out of their Services (the gate's condition False).
      const { pods, held, volumeNeeds, connection, where } = await judgeObjects(options, io, source);
      const report = statusReport(pods, source.config);
      // What the pods' injected volumes need in their own namespaces, looked up in the cluster (a file has no other objects to look in).
      const volumeSources = connection ? missingVolumeSources(...(await volumeSourceLookups(volumeNeeds, connection))) : [];
      const exitCode = volumeSources.some((finding) => finding.state === 'missing') ? EXIT_STATUS_VOLUME_SOURCE_MISSING : report.exitCode;
      if (options.output === 'json') io.stdout(JSON.stringify({ config: source.description, from: where, ...report, exitCode, pods, held, volumeSources }, null, 2) + '\n');
      else {
        io.stdout(`pods: ${where}\n` + formatStatus(report, source.description));
        if (held.length > 0) {
          io.stdout(`${held.length} pod${held.length === 1 ? '' : 's'} held out of ${held.length === 1 ? 'its' : 'their'} Services by an interrupted rollout --in-place (${readinessConditionType(source.config.annotationPrefix)} False): ${held.join(', ')}; rollout --in-place sets it back\n`);
        }
        if (volumeSources.length > 0) io.stdout(`\nvolume sources:\n${volumeSources.map((finding) => `  ${describeVolumeSourceFinding(finding)}\n`).join('')}`);
      }
      io.exit(exitCode);
    });

  withSelectionOptions(
    program
      .command('rollout')
      .description(
        'restarts, as kubectl rollout restart does, the Deployments, StatefulSets and DaemonSets whose pods status finds outdated, missing ' +
          'an injection or carrying one no longer configured, --max-concurrent at a time, waiting for each rollout to finish, and stops at ' +
          'the first that fails. Bare pods, Jobs and CronJobs are listed, not touched.\n\n' +
          'With --in-place, a pod whose injections differ from the config in their containers\' images alone keeps running: its images are ' +
          'replaced in one guarded patch and the kubelet restarts those containers only (the pod leaves its Services first when it has the ' +
          'injector\'s readiness gate); the workloads of the other pods are restarted. --undo puts the previous images back.\n\n' +
          'Exit codes: 0 done, 1 bad input, 2 bad usage, 6 cluster unreachable or a restart refused, 7 a rollout failed or timed out, or a pod ' +
          'did not come back Ready.',
      ),
  )
    .option('--max-concurrent <n>', 'workloads restarted (or upgraded in place) at a time', '1')
    .option('--dry-run', 'print the plan and change nothing')
    .option('--no-wait', 'start each rollout and do not wait for it to finish (not with --in-place)')
    .option('--timeout <duration>', 'how long to wait for each rollout, or with --in-place for each pod (300s, 5m)', '300s')
    .option('--include-unknown', 'also restart workloads whose pods were injected by a version that recorded no hashes')
    .option('--in-place', 'replace the images of sidecars whose injections changed only in images, in the running pods, instead of restarting them')
    .option('--max-unavailable <n>', 'with --in-place: pods of one workload upgraded at a time', '1')
    .option('--canary <n>', 'with --in-place: upgrade this many pods, then stop (run again with --continue)')
    .option('--continue', 'with --in-place: go on after a canary, once every pod upgraded in place is Ready')
    .option('--undo', 'with --in-place: put back the images the last in-place upgrade of each pod replaced')
    .addOption(
      new Option('--drain <mode>', "with --in-place: how a pod leaves its Services' endpoints before its sidecar restarts: auto (through the injector's readiness gate where the pod has it), gate (only pods that have it are upgraded in place), none (never)")
        .choices(['auto', 'gate', 'none'])
        .default('auto'),
    )
    .option('--drain-grace <duration>', 'with --in-place: how long to wait after the EndpointSlices have the pod not ready, before its image is replaced', '2s')
    .addOption(
      new Option('--native-sidecars <mode>', 'with --in-place: native sidecars (restartable init containers) are upgraded in place, or their workload restarted')
        .choices(['in-place', 'restart'])
        .default(DEFAULT_NATIVE_SIDECARS),
    )
    .action(async (options: SelectionOptions & RolloutOptions) => {
      checkSelection(options);
      const maxConcurrent = positiveWhole('--max-concurrent', options.maxConcurrent);
      const timeoutMs = parseDuration(options.timeout, '--timeout');
      if (inputFile(options) !== undefined && !options.dryRun) throw new UsageError('objects from a file or stdin can only be planned: add --dry-run, or read the cluster');
      const inPlaceOnly = (['canary', 'continue', 'undo'] as const).filter((option) => options[option] !== undefined);
      if (!options.inPlace && inPlaceOnly.length > 0) throw new UsageError(`--${inPlaceOnly[0]} goes with --in-place`);
      if (options.inPlace) {
        if (!options.wait) throw new UsageError('--in-place waits for each pod to come back Ready before the next: leave out --no-wait');
        if (options.canary !== undefined && options.continue) throw new UsageError('give either --canary or --continue, not both');
        if (options.undo && (options.canary !== undefined || options.continue)) throw new UsageError('--undo puts back every pod upgraded in place: leave out --canary and --continue');
        const inPlaceOptions: InPlaceCommandOptions = {
          dryRun: options.dryRun === true,
          maxUnavailable: positiveWhole('--max-unavailable', options.maxUnavailable),
          maxConcurrent,
          canary: options.canary !== undefined ? positiveWhole('--canary', options.canary) : undefined,
          continueAfterCanary: options.continue === true,
          undo: options.undo === true,
          drain: options.drain,
          drainGraceMs: parseDuration(options.drainGrace, '--drain-grace'),
          timeoutMs,
          pollMs: IN_PLACE_POLL_MS,
          nativeSidecars: options.nativeSidecars,
          includeUnknown: options.includeUnknown === true,
        };
        const source = sourceOf(options);
        const { objects, connection, where } = await readObjects(options, io);
        const cluster = async (): Promise<InPlaceCluster> => {
          const { podClient } = await import('./cluster');
          return {
            pods: podClient(connection!),
            restart: (workloads) => restartWorkloads(workloads, connection!, { maxConcurrent, wait: true, timeoutMs, timeout: options.timeout }, io),
          };
        };
        await runInPlaceCommand(objects, source, [`pods: ${where}`, `config: ${source.description}`], inPlaceOptions, io, cluster, REAL_CLOCK);
        return;
      }
      const source = sourceOf(options);
      const { objects, connection, where } = await readObjects(options, io);
      const report = statusReport(classifyPods(objects, source), source.config);
      const states: InjectionState[] = options.includeUnknown ? [...STALE_STATES, 'version-unknown'] : [...STALE_STATES];
      const plan = rolloutPlan(report, states);
      const lines = [`pods: ${where}`, `config: ${source.description}`];
      lines.push(`plan: restart ${plan.restart.length} workload${plan.restart.length === 1 ? '' : 's'}, ${maxConcurrent} at a time${options.wait ? '' : ', without waiting'}`);
      for (const workload of plan.restart) lines.push(`  ${describeWorkload(workload, states)}`);
      if (plan.untouched.length > 0) {
        lines.push(`not touched: ${plan.untouched.length}`);
        for (const workload of plan.untouched) lines.push(`  ${describeWorkload(workload, states)}: ${untouchedReason(workload)}`);
      }
      io.stdout(lines.join('\n') + '\n');
      if (options.dryRun || plan.restart.length === 0) {
        if (options.dryRun) io.stdout('dry run: nothing changed\n');
        return;
      }
      await restartWorkloads(plan.restart, connection!, { maxConcurrent, wait: options.wait, timeoutMs, timeout: options.timeout }, io);
    });
}

interface RolloutOptions {
  readonly maxConcurrent: string;
  readonly dryRun?: boolean;
  readonly wait: boolean;
  readonly timeout: string;
  readonly includeUnknown?: boolean;
  readonly inPlace?: boolean;
  readonly maxUnavailable: string;
  readonly canary?: string;
  readonly continue?: boolean;
  readonly undo?: boolean;
  readonly drain: DrainMode;
  readonly drainGrace: string;
  readonly nativeSidecars: InPlaceOptions['nativeSidecars'];
}

/** How often `rollout --in-place` reads a pod (and its EndpointSlices) while it waits for it. */
const IN_PLACE_POLL_MS = 1000;

function positiveWhole(option: string, text: string): number {
  const value = Number(text);
  if (!/^\d+$/.test(text.trim()) || !Number.isInteger(value) || value < 1) throw new UsageError(`${option} "${text}" must be a whole number, 1 or more`);
  return value;
}

/**
 * Restarts `workloads` as `kubectl rollout restart` does, `maxConcurrent` at a time, waiting for each
 * rollout unless told not to; stops at the first failure. Returns whether every one was restarted (and rolled out).
 */
async function restartWorkloads(
  workloads: readonly { namespace: string; kind: string; name: string }[],
  connection: import('./cluster').ClusterConnection,
  settings: { maxConcurrent: number; wait: boolean; timeoutMs: number; timeout: string },
  io: CommandIo,
): Promise<boolean> {
  const { restartWorkload, rolloutProgress } = await import('./cluster');
  const queue = [...workloads];
  let failure: string | undefined;
  // RFC 3339 in seconds, as kubectl writes it.
  const at = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
  const worker = async () => {
    while (failure === undefined && queue.length > 0) {
      const workload = queue.shift()!;
      const name = `${workload.kind} ${workload.namespace}/${workload.name}`;
      try {
        await restartWorkload(connection, workload.namespace, workload.kind, workload.name, at);
      } catch (error) {
        failure ??= (error as Error).message;
        io.exit(EXIT_CLUSTER);
        return;
      }
      io.stdout(`restarted ${name}\n`);
      if (!settings.wait) continue;
      const deadline = Date.now() + settings.timeoutMs;
      for (;;) {
        let progress: { done: boolean; message: string };
        try {
          progress = await rolloutProgress(connection, workload.namespace, workload.kind, workload.name);
        } catch (error) {
          failure ??= (error as Error).message;
          io.exit(EXIT_ROLLOUT_FAILED);
          return;
        }
        if (progress.done) {
          io.stdout(`rolled out ${name} (${progress.message})\n`);
          break;
        }
        if (Date.now() > deadline) {
          failure ??= `${name}: not rolled out within ${settings.timeout} (${progress.message})`;
          io.exit(EXIT_ROLLOUT_FAILED);
          return;
        }
        await new Promise((resolve) => setTimeout(resolve, 2000));
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(settings.maxConcurrent, queue.length) }, worker));
  if (failure !== undefined) {
    io.stderr(`error: ${failure}\nstopped: ${queue.length} workload${queue.length === 1 ? '' : 's'} not restarted${queue.length > 0 ? `: ${queue.map((w) => `${w.kind} ${w.namespace}/${w.name}`).join(', ')}` : ''}\n`);
    return false;
  }
  return true;
}
