// `rollout --in-place` (and the reconciler's in-place repair), carried out: pod by pod, each one's
// images replaced in one guarded request, then waited on until the kubelet reports the container
// restarted on the new image and the pod Ready. With the injector's readiness gate on the pod, the pod
// first leaves its Services' endpoints: this sets the gate's condition False (pods/status), waits until
// every EndpointSlice listing the pod has it not ready, replaces the image, waits for the container, and
// sets the condition True again. The cluster is an interface, and so is time (cluster.ts): the waits
// poll through `clock.sleep`, which the tests advance.

import { readinessConditionType } from '../config';
import type { KubernetesObject } from '../engine/admission-review';
import type { GuardedOperation, ImageChange } from './in-place-plan';
import { type Clock, PatchConflict, type PodClient, type PodEndpoint } from './cluster';

/** How the pod leaves its Services' endpoints before the restart. */
export type DrainMode = 'auto' | 'gate' | 'none';

export interface PodUpgradeSettings {
  readonly prefix: string;
  /** `auto` and `gate` use the readiness gate where the pod has it; `none` never touches it. */
  readonly drain: DrainMode;
  /** How long to wait, after every EndpointSlice has the pod not ready, before the image is replaced (kube-proxy and load balancers catching up). */
  readonly drainGraceMs: number;
  /** How long one pod may take, from the first write to Ready. */
  readonly timeoutMs: number;
  /** How often the pod and the EndpointSlices are read while waiting. */
  readonly pollMs: number;
}

/** Waiting reasons that no wait will cure: the pod does not come back Ready on its own. */
/** Waiting reasons about pulling the image; the kubelet's message names the image. */
const PULL_REASONS = new Set(['ImagePullBackOff', 'ErrImagePull', 'ErrImageNeverPull', 'InvalidImageName']);
const HOPELESS_WAITING_REASONS = new Set(['ImagePullBackOff', 'ErrImagePull', 'InvalidImageName', 'ErrImageNeverPull', 'CrashLoopBackOff', 'CreateContainerConfigError', 'CreateContainerError', 'RunContainerError']);

function isObject(value: unknown): value is Record<string, any> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** A container's entry in the pod's status: containerStatuses, or initContainerStatuses for native sidecars. */
export function containerStatus(pod: KubernetesObject, name: string): Record<string, any> | undefined {
  const status = isObject(pod.status) ? pod.status : {};
  for (const list of ['containerStatuses', 'initContainerStatuses']) {
    const entries = status[list];
    if (!Array.isArray(entries)) continue;
    const entry = entries.find((candidate) => isObject(candidate) && candidate.name === name);
    if (entry) return entry;
  }
  return undefined;
}

/** Every container's restart count, by name. */
function restartCounts(pod: KubernetesObject): Map<string, number> {
  const counts = new Map<string, number>();
  const status = isObject(pod.status) ? pod.status : {};
  for (const list of ['containerStatuses', 'initContainerStatuses']) {
    for (const entry of Array.isArray(status[list]) ? status[list] : []) {
      if (isObject(entry) && typeof entry.name === 'string') counts.set(entry.name, Number(entry.restartCount ?? 0));
    }
  }
  return counts;
}

/** The pod's condition of this type: 'True', 'False', or undefined when it has none. */
export function podCondition(pod: KubernetesObject, type: string): string | undefined {
  const conditions = isObject(pod.status) && Array.isArray(pod.status.conditions) ? pod.status.conditions : [];
  const condition = conditions.find((candidate: unknown) => isObject(candidate) && candidate.type === type);
  return condition ? String(condition.status) : undefined;
}

/** An image reference as the container runtime reports it: docker.io's implicit registry and library/ spelled out, :latest when untagged. */
export function normalizeImage(image: string): string {
  let name = image;
  let suffix = '';
  const at = name.indexOf('@');
  if (at >= 0) {
    suffix = name.slice(at);
    name = name.slice(0, at);
  }
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  if (colon <= slash && suffix === '') suffix = ':latest';
  else if (colon > slash) {
    suffix = name.slice(colon) + suffix;
    name = name.slice(0, colon);
  }
  const first = name.split('/')[0];
  const hasRegistry = name.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasRegistry) name = name.includes('/') ? `docker.io/${name}` : `docker.io/library/${name}`;
  return name + suffix;
}

/** Whether the runtime's report of a container's image is the reference the spec names. */
export function runsImage(reported: unknown, spec: string): boolean {
  if (typeof reported !== 'string') return false;
  if (normalizeImage(reported) === normalizeImage(spec)) return true;
  // A digest reference may be reported by its tag, or the other way round: the digest decides.
  const digest = /@(sha256:[0-9a-f]{64})$/.exec(spec)?.[1];
  return digest !== undefined && reported.endsWith(digest);
}

/** Whether the kubelet's message names `image` (quoted, as it writes it, or normalized: `docker.io/library/...`). */
export function mentionsImage(message: unknown, image: string): boolean {
  if (typeof message !== 'string') return false;
  return message.includes(`"${image}"`) || message.includes(`"${normalizeImage(image)}"`);
}

/** A container as the kubelet last reported it, before the upgrade. */
interface ContainerBefore {
  readonly containerID?: string;
  readonly imageID?: string;
  readonly restartCount: number;
}

/** What became of one container. */
export interface ContainerOutcome {
  readonly container: string;
  readonly from: string;
  readonly to: string;
  readonly restartCount: readonly [number, number];
  readonly imageID: readonly [string | undefined, string | undefined];
  /** The image name the runtime reports for the new container, where it is not `to` (another name of the image it started). */
  readonly reportedImage?: string;
}

/** What became of one pod. */
export interface PodUpgrade {
  readonly namespace: string;
  readonly name: string;
  readonly containers: readonly ContainerOutcome[];
  /** Whether it left its Services' endpoints first (the readiness gate), and how many EndpointSlices listed it. */
  readonly drained: { readonly slices: number } | undefined;
  /** Containers other than the upgraded ones whose restart count changed meanwhile (the app should not restart). */
  readonly otherRestarts: readonly string[];
  readonly milliseconds: number;
}

/** The pod did not come back Ready, or a write was refused: the run stops here. */
export class PodUpgradeFailure extends Error {
  constructor(
    message: string,
    /** Whether the pod's images were replaced (then `--undo` puts them back). */
    readonly patched: boolean,
  ) {
    super(message);
    this.name = 'PodUpgradeFailure';
  }
}

/** The patch for the pod as read now, or why it no longer needs one: the plan is made again from each fresh read. */
export type Replan = (pod: KubernetesObject) => { changes: readonly ImageChange[]; operations: readonly GuardedOperation[]; readinessGate: boolean } | { skip: string };

/**
 * Upgrades one pod: drains it through the readiness gate when it has one (and `drain` allows), sends
 * the guarded patch (read again and re-planned after a conflict), and waits for the kubelet. Returns
 * `{ skipped }` when the pod needed nothing any more; throws PodUpgradeFailure when it did not come back.
 */
export async function upgradePod(
  client: PodClient,
  clock: Clock,
  settings: PodUpgradeSettings,
  namespace: string,
  name: string,
  replan: Replan,
  say: (line: string) => void,
): Promise<PodUpgrade | { skipped: string }> {
  const run = startRun(client, clock, settings, namespace, name, say);
  let pod = await run.readPod(false);
  let planned = replan(pod);
  if ('skip' in planned) return { skipped: planned.skip };
  const uid = String((pod.metadata as Record<string, unknown>)?.uid ?? '');
  run.gate = settings.drain !== 'none' && planned.readinessGate;
  let drained: PodUpgrade['drained'];
  let endpointsBefore: readonly PodEndpoint[] = [];
  if (run.gate) {
    const out = await drainThroughGate(run, uid, replan);
    if ('skipped' in out) return out;
    ({ drained, endpointsBefore, pod, planned } = out);
  }

  const patch = await patchWithRetries(run, pod, planned, replan);
  if ('skipped' in patch) return patch;
  const { changes, before, countsBefore } = patch;
  say(`  ${name}: ${changes.map((change) => `${change.container} ${change.from} -> ${change.to}`).join(', ')}: patched`);

  pod = await waitForContainers(run, changes, before);
  if (run.gate) pod = await returnThroughGate(run, uid, endpointsBefore);
  return upgradeOutcome(run, pod, changes, before, countsBefore, drained);
}

/** A plan for the pod as read now (not a skip). */
type Planned = Exclude<ReturnType<Replan>, { skip: string }>;

/** One pod's upgrade under way: its deadline, whether it drains through the gate, and how a failure is reported. */
interface UpgradeRun {
  readonly client: PodClient;
  readonly clock: Clock;
  readonly settings: PodUpgradeSettings;
  readonly namespace: string;
  readonly name: string;
  readonly say: (line: string) => void;
  readonly started: number;
  readonly deadline: number;
  readonly conditionType: string;
  readonly where: string;
  /** Whether the pod leaves its Services through the readiness gate: then a failure sets the gate True again. */
  gate: boolean;
  refused(what: string, error: unknown, patched: boolean): PodUpgradeFailure;
  setGate(status: 'True' | 'False', patched: boolean): Promise<void>;
  /** On a failure after draining: the condition goes back to True, so readiness is the containers' own again. */
  failed(failure: PodUpgradeFailure): Promise<never>;
  /** The pod as the apiserver has it now; a refused read fails the upgrade. */
  readPod(patched: boolean): Promise<KubernetesObject>;
  /** The pod's endpoints in its EndpointSlices now; a refused read fails the upgrade. */
  readEndpoints(uid: string, patched: boolean): Promise<readonly PodEndpoint[]>;
}

/** Starts the clock on one pod's upgrade: its deadline, and how its refusals and failures are reported. */
function startRun(client: PodClient, clock: Clock, settings: PodUpgradeSettings, namespace: string, name: string, say: (line: string) => void): UpgradeRun {
  const started = clock.now();
  const conditionType = readinessConditionType(settings.prefix);
  const where = `pod ${namespace}/${name}`;
  const refused = (what: string, error: unknown, patched: boolean) => new PodUpgradeFailure(`${where}: ${what}: ${(error as Error).message}`, patched);
  const setGate = async (status: 'True' | 'False', patched: boolean) => {
    const message = status === 'False' ? 'rollout --in-place is replacing sidecar images: out of its Services until they are ready' : 'sidecar images replaced in place';
    await client.setPodCondition(namespace, name, { type: conditionType, status, reason: status === 'False' ? 'InPlaceUpgrade' : 'InPlaceUpgraded', message }).catch((error) => {
      throw refused(`setting ${conditionType} ${status}`, error, patched);
    });
  };
  const run: UpgradeRun = {
    client,
    clock,
    settings,
    namespace,
    name,
    say,
    started,
    deadline: started + settings.timeoutMs,
    conditionType,
    where,
    gate: false,
    refused,
    setGate,
    failed: async (failure) => {
      if (run.gate) await setGate('True', failure.patched).catch(() => undefined);
      throw failure;
    },
    readPod: (patched) => client.getPod(namespace, name).catch((error) => run.failed(refused('reading it', error, patched))),
    readEndpoints: (uid, patched) => client.podEndpoints(namespace, uid).catch((error) => run.failed(refused('reading its EndpointSlices', error, patched))),
  };
  return run;
}

/**
 * Takes the pod out of its Services' endpoints: sets the gate's condition False and waits until no
 * EndpointSlice lists it ready, then the grace. Returns the pod read again and planned anew (it changed
 * meanwhile), or why it needs no patch any more (the gate then set True again).
 */
async function drainThroughGate(
  run: UpgradeRun,
  uid: string,
  replan: Replan,
): Promise<{ drained: { slices: number }; endpointsBefore: readonly PodEndpoint[]; pod: KubernetesObject; planned: Planned } | { skipped: string }> {
  const { clock, settings, where, started, deadline, conditionType, setGate, failed } = run;
  const endpointsBefore = await run.client.podEndpoints(run.namespace, uid).catch((error) => {
    throw run.refused('reading its EndpointSlices', error, false);
  });
  await setGate('False', false);
  let drained: { slices: number };
  for (;;) {
    const endpoints = await run.readEndpoints(uid, false);
    if (endpoints.every((endpoint) => !endpoint.ready)) {
      drained = { slices: new Set(endpointsBefore.map((endpoint) => endpoint.slice)).size };
      break;
    }
    if (clock.now() > deadline) {
      await failed(new PodUpgradeFailure(`${where}: still ready in EndpointSlice ${endpoints.filter((e) => e.ready).map((e) => e.slice).join(', ')} ${Math.round((clock.now() - started) / 1000)}s after ${conditionType} was set False`, false));
    }
    await clock.sleep(settings.pollMs);
  }
  run.say(`  ${run.name}: out of its Services' endpoints (${conditionType} False; ${drained.slices} EndpointSlice${drained.slices === 1 ? '' : 's'} listed it)`);
  if (settings.drainGraceMs > 0) await clock.sleep(settings.drainGraceMs);
  // Read again: the pod changed (its status), and its images may have too.
  const pod = await run.readPod(false);
  const planned = replan(pod);
  if ('skip' in planned) {
    await setGate('True', false);
    return { skipped: planned.skip };
  }
  return { drained, endpointsBefore, pod, planned };
}

/** How many times a patch is sent again after the pod changed under it (the kubelet writes status often). */
const PATCH_ATTEMPTS = 5;

/**
 * Sends the guarded patch. Refused, the pod is read again: when it changed under the patch, the plan
 * is made anew and sent again (up to PATCH_ATTEMPTS); when it did not, the refusal is real. Returns
 * the images replaced and the kubelet's last report of each container before, or why the pod needs no
 * patch any more.
 */
async function patchWithRetries(
  run: UpgradeRun,
  pod: KubernetesObject,
  planned: Planned,
  replan: Replan,
): Promise<{ changes: readonly ImageChange[]; before: Map<string, ContainerBefore>; countsBefore: Map<string, number> } | { skipped: string }> {
  // The kubelet's last report of each container to replace, and of every container.
  let before = new Map(planned.changes.map((change) => [change.container, snapshot(pod, change.container)]));
  let countsBefore = restartCounts(pod);
  for (let attempt = 1; ; attempt++) {
    try {
      const answer = await run.client.patchPod(run.namespace, run.name, planned.operations);
      // The pod as the patch left it: its status is the kubelet's last word before the new spec
      // existed, so a container it names was started from the old one. A container started after
      // that (another containerID, or a restart count past it) was started from the patched spec.
      if (isObject(answer?.status)) before = new Map(planned.changes.map((change) => [change.container, snapshot(answer, change.container)]));
      return { changes: planned.changes, before, countsBefore };
    } catch (error) {
      const readVersion = resourceVersionOf(pod);
      pod = await run.readPod(false);
      // A pod changed since it was read fails the patch's tests (the apiserver answers a failed test
      // with a bare 422): read again, it has another resourceVersion. The same one: a real refusal.
      const changed = error instanceof PatchConflict || resourceVersionOf(pod) !== readVersion;
      if (!changed || attempt >= PATCH_ATTEMPTS) await run.failed(run.refused(`replacing images (attempt ${attempt})`, error, false));
      const again = replan(pod);
      if ('skip' in again) {
        if (run.gate) await run.setGate('True', false);
        return { skipped: again.skip };
      }
      planned = again;
      before = new Map(planned.changes.map((change) => [change.container, snapshot(pod, change.container)]));
      countsBefore = restartCounts(pod);
    }
  }
}

/** The kubelet's part: each container stopped, started anew on the new image, and ready. Returns the pod as last read. */
async function waitForContainers(run: UpgradeRun, changes: readonly ImageChange[], before: ReadonlyMap<string, ContainerBefore>): Promise<KubernetesObject> {
  const { clock, settings, where, deadline, failed } = run;
  for (;;) {
    const pod = await run.readPod(true);
    const waiting: string[] = [];
    for (const change of changes) {
      const state = newContainerState(pod, change, before.get(change.container)!);
      if (state && 'failure' in state) await failed(new PodUpgradeFailure(`${where}: ${state.failure}`, true));
      if (state && 'waiting' in state) waiting.push(state.waiting);
    }
    // With the gate False, the pod is not Ready by design: its containers decide until it is set back.
    if (waiting.length === 0 && !run.gate && podCondition(pod, 'Ready') !== 'True') waiting.push('pod not Ready');
    if (waiting.length === 0) return pod;
    if (clock.now() > deadline) await failed(new PodUpgradeFailure(`${where}: not back within ${Math.round(settings.timeoutMs / 1000)}s: ${waiting.join(', ')}${describeWaiting(pod, changes)}`, true));
    await clock.sleep(settings.pollMs);
  }
}

/**
 * Where one replaced container stands, from the kubelet's report against its report before the patch:
 * a failure no wait will cure (on the new image), what is still waited for, or nothing (running and ready).
 */
function newContainerState(pod: KubernetesObject, change: ImageChange, was: ContainerBefore): { failure: string } | { waiting: string } | undefined {
  const entry = containerStatus(pod, change.container);
  const reason = entry?.state?.waiting?.reason;
  // On the new image: an image that cannot be pulled, or a new container that crashed (a restart
  // count past the one before: the old container's own back-off is no verdict on the new image).
  // A kubelet that cannot pull an image keeps reporting the last container's image and ID (seen on
  // a real node): only its message, which names the image it pulls, says which image failed. That
  // matters both ways: a new image that cannot be pulled stops the run at once, and the back-off
  // still reported for it while --undo goes back to the last container's image is no verdict.
  const message = entry?.state?.waiting?.message;
  const pullMessage = typeof reason === 'string' && PULL_REASONS.has(reason) && typeof message === 'string' && /image "/.test(message);
  const aboutNewImage =
    reason === 'CrashLoopBackOff' ? Number(entry?.restartCount ?? 0) > was.restartCount
    : pullMessage ? mentionsImage(message, change.to)
    : runsImage(entry?.image, change.to) || entry?.containerID !== was.containerID;
  if (typeof reason === 'string' && HOPELESS_WAITING_REASONS.has(reason) && aboutNewImage) {
    return { failure: `container ${change.container} on ${change.to}: ${reason}${entry?.state?.waiting?.message ? `: ${entry.state.waiting.message}` : ''}` };
  }
  // Started after the patch, so from the patched spec, whatever name the runtime reports for its
  // image: containerd 1.6 reports an image's first reference in sort order, not the one the pod
  // asked for, so a move between two names of one image (v1.31 to v1.31.0, a registry mirror)
  // keeps both the reported name and the imageID (seen on a real node).
  if (!startedSince(entry, was) || !isObject(entry?.state?.running)) return { waiting: `${change.container} not yet restarted on ${change.to}` };
  if (entry?.ready !== true) return { waiting: `${change.container} not ready` };
  return undefined;
}

/** Puts the pod back in its Services: the gate's condition True, then waits until it is Ready and back in every EndpointSlice that listed it. Returns the pod as last read. */
async function returnThroughGate(run: UpgradeRun, uid: string, endpointsBefore: readonly PodEndpoint[]): Promise<KubernetesObject> {
  const { clock, settings, where, deadline, conditionType } = run;
  await run.setGate('True', true);
  for (;;) {
    const pod = await run.readPod(true);
    const ready = podCondition(pod, 'Ready') === 'True';
    const listedBefore = new Set(endpointsBefore.map((endpoint) => endpoint.slice));
    const endpoints = ready && listedBefore.size > 0 ? await run.readEndpoints(uid, true) : [];
    const back = [...listedBefore].every((slice) => endpoints.some((endpoint) => endpoint.slice === slice && endpoint.ready));
    if (ready && back) return pod;
    if (clock.now() > deadline) await run.failed(new PodUpgradeFailure(`${where}: ${ready ? 'not back in its EndpointSlices' : 'not Ready'} within ${Math.round(settings.timeoutMs / 1000)}s after ${conditionType} was set True`, true));
    await clock.sleep(settings.pollMs);
  }
}

/** What became of the pod: each replaced container's restart count and imageID before and after, and any other container that restarted meanwhile. */
function upgradeOutcome(
  run: UpgradeRun,
  pod: KubernetesObject,
  changes: readonly ImageChange[],
  before: ReadonlyMap<string, ContainerBefore>,
  countsBefore: ReadonlyMap<string, number>,
  drained: PodUpgrade['drained'],
): PodUpgrade {
  const countsAfter = restartCounts(pod);
  const upgradedNames = new Set(changes.map((change) => change.container));
  const otherRestarts = [...countsAfter].filter(([container, count]) => !upgradedNames.has(container) && count !== (countsBefore.get(container) ?? count)).map(([container, count]) => `${container} ${countsBefore.get(container)} -> ${count}`);
  return {
    namespace: run.namespace,
    name: run.name,
    containers: changes.map((change) => {
      const was = before.get(change.container)!;
      const entry = containerStatus(pod, change.container);
      const reported = typeof entry?.image === 'string' && !runsImage(entry.image, change.to) ? entry.image : undefined;
      return { container: change.container, from: change.from, to: change.to, restartCount: [was.restartCount, Number(entry?.restartCount ?? 0)], imageID: [was.imageID, entry?.imageID], ...(reported ? { reportedImage: reported } : {}) };
    }),
    drained,
    otherRestarts,
    milliseconds: run.clock.now() - run.started,
  };
}

function resourceVersionOf(pod: KubernetesObject): unknown {
  return isObject(pod.metadata) ? pod.metadata.resourceVersion : undefined;
}

/** Whether the kubelet reports a container started after `was`: another containerID, or a restart count past it. */
function startedSince(entry: Record<string, any> | undefined, was: ContainerBefore): boolean {
  if (entry === undefined || typeof entry.containerID !== 'string') return false;
  return entry.containerID !== was.containerID || Number(entry.restartCount ?? 0) > was.restartCount;
}

function snapshot(pod: KubernetesObject, container: string): ContainerBefore {
  const entry = containerStatus(pod, container);
  return { containerID: entry?.containerID, imageID: entry?.imageID, restartCount: Number(entry?.restartCount ?? 0) };
}

/** The kubelet's own words on the containers still waited for: `; envoy: waiting ImagePullBackOff (...)`. */
function describeWaiting(pod: KubernetesObject, changes: readonly ImageChange[]): string {
  const parts = changes.map((change) => {
    const entry = containerStatus(pod, change.container);
    if (!entry) return `${change.container}: no status reported`;
    const state = isObject(entry.state) ? Object.keys(entry.state)[0] : undefined;
    const detail = state ? entry.state[state] : undefined;
    return `${change.container}: ${state ?? 'no state'}${detail?.reason ? ` ${detail.reason}` : ''}${detail?.message ? ` (${String(detail.message).slice(0, 200)})` : ''}, image ${entry.image ?? '?'}`;
  });
  return parts.length > 0 ? `; ${parts.join('; ')}` : '';
}

/** Why a container restarted on the patched spec is reported under a name the spec does not give. */
function otherName(c: ContainerOutcome): string {
  const same = c.imageID[0] !== undefined && c.imageID[0] === c.imageID[1];
  return (
    ` (the runtime reports its image as ${c.reportedImage}, not ${c.to}: ` +
    (same
      ? 'the imageID is unchanged, so both names are the same image, and the runtime reports one of its names; the container was started from the patched spec)'
      : 'the runtime reports one of the names of the image it started; the container was started from the patched spec)')
  );
}

/** The text of one upgraded pod, as the run prints it. */
export function describeUpgrade(upgrade: PodUpgrade, verb = 'upgraded'): string {
  const containers = upgrade.containers
    .map((c) => `${c.container} restartCount ${c.restartCount[0]} -> ${c.restartCount[1]}, imageID ${c.imageID[0] ?? '(none)'} -> ${c.imageID[1] ?? '(none)'}${c.reportedImage ? otherName(c) : ''}`)
    .join('; ');
  const others = upgrade.otherRestarts.length > 0 ? `; OTHER CONTAINERS RESTARTED: ${upgrade.otherRestarts.join(', ')}` : '; no other container restarted';
  return `${verb} pod ${upgrade.namespace}/${upgrade.name} in ${(upgrade.milliseconds / 1000).toFixed(1)}s: ${containers}${others}`;
}
