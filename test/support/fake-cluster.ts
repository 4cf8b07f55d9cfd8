// A cluster for `rollout --in-place` tests: pods stored as the apiserver stores them (each write a new
// resourceVersion, a JSON Patch applied whole or not at all, only images and metadata changeable on a
// running pod), a simulated kubelet that restarts a container whose image changed (one tick to stop
// it, one to start it on the new image unless the image cannot be pulled, one for its readiness
// probe) and computes Ready from the containers and the readiness gates, and an EndpointSlice per app
// label that follows Ready a tick late.
// Time is a FakeClock: each sleep advances it and runs one tick, so the tests wait on events, not time.
import { applyPatch, type Operation } from 'fast-json-patch';
import { createHash } from 'node:crypto';
import type { KubernetesObject } from '../../webhook/engine/admission-review';
import type { GuardedOperation } from '../../webhook/fleet/in-place-plan';
import type { InPlaceCommandOptions } from '../../webhook/cli/in-place-command';
import type { Clock, PodClient, PodEndpoint } from '../../webhook/fleet/cluster';
import { normalizeImage } from '../../webhook/fleet/in-place-rollout';

/** `rollout --in-place` options as the tests against this fake cluster run it: one pod at a time, no drain wait. */
export const FAKE_CLUSTER_IN_PLACE_OPTIONS: InPlaceCommandOptions = {
  dryRun: false,
  maxUnavailable: 1,
  maxConcurrent: 1,
  continueAfterCanary: false,
  undo: false,
  drain: 'auto',
  drainGraceMs: 0,
  timeoutMs: 60_000,
  pollMs: 1000,
  nativeSidecars: 'restart',
  includeUnknown: false,
};

/** One thing that happened, in order: what the tests check the sequence by. */
export interface ClusterEvent {
  readonly at: number;
  readonly pod: string;
  readonly what: string;
}

interface RunningContainer {
  image: string;
  /** The image the kubelet is pulling and cannot get (ImagePullBackOff); `image` stays the last container's. */
  pulling?: string;
  containerID: string;
  restartCount: number;
  /** 'running' (and ready), 'started' (running, its readiness probe not passed yet), or why not. */
  state: 'running' | 'started' | 'stopping' | 'ImagePullBackOff' | 'CrashLoopBackOff';
}

export class FakeCluster implements PodClient {
  readonly events: ClusterEvent[] = [];
  private readonly pods = new Map<string, any>();
  private readonly running = new Map<string, Map<string, RunningContainer>>();
  /** Endpoint readiness by pod key, as the EndpointSlice controller last wrote it (a tick behind). */
  private readonly endpoints = new Map<string, boolean>();
  private version = 1000;
  private containerSerial = 0;
  /** Images the simulated registry does not have. */
  readonly badImages = new Set<string>();
  /** Images whose process exits at once: the container crash-loops. */
  readonly crashingImages = new Set<string>();
  /**
   * Groups of references that name one image (one digest), as `ctr images import` of one archive
   * with several tags makes them. As containerd 1.6 does, the status reports such an image by the
   * first of its names in sort order, not the one the pod asked for, and one imageID for all.
   */
  readonly sameImage: string[][] = [];
  /** Every patch is refused with this message, the pod unchanged (an admission webhook's denial, say). */
  refusePatches: string | undefined;
  /** Called before each patch is applied: a test makes a concurrent write here. */
  beforePatch: ((key: string) => void) | undefined;
  /** Most pods of one app not Ready at once, per app label. */
  readonly maxUnready = new Map<string, number>();
  patches = 0;
  conflicts = 0;
  time = 0;

  /** Adds a pod (as the apiserver stored it) with every container running and ready on its image. */
  addPod(pod: any): void {
    const key = `${pod.metadata.namespace}/${pod.metadata.name}`;
    const stored = structuredClone(pod);
    stored.metadata.uid ??= `uid-${pod.metadata.name}`;
    stored.metadata.resourceVersion = String(++this.version);
    const containers = new Map<string, RunningContainer>();
    for (const container of this.restartable(stored)) containers.set(container.name, { image: container.image, containerID: this.newContainerID(), restartCount: 0, state: 'running' });
    this.running.set(key, containers);
    this.pods.set(key, stored);
    this.writeStatus(key);
    this.endpoints.set(key, this.isReady(stored));
  }

  pod(namespace: string, name: string): any {
    return structuredClone(this.pods.get(`${namespace}/${name}`));
  }

  listPods(): any[] {
    return [...this.pods.values()].map((pod) => structuredClone(pod));
  }

  async getPod(namespace: string, name: string): Promise<KubernetesObject> {
    const pod = this.pods.get(`${namespace}/${name}`);
    if (!pod) throw new Error(`HTTP 404: pods "${name}" not found`);
    return structuredClone(pod);
  }

  async patchPod(namespace: string, name: string, operations: readonly GuardedOperation[]): Promise<KubernetesObject> {
    const key = `${namespace}/${name}`;
    this.beforePatch?.(key);
    this.patches++;
    if (this.refusePatches) throw new Error(`HTTP 422: ${this.refusePatches}`);
    const stored = this.pods.get(key);
    let patched: any;
    try {
      patched = applyPatch(structuredClone(stored), structuredClone(operations) as Operation[], true, false).newDocument;
    } catch (error) {
      this.conflicts++;
      this.log(key, `patch refused: ${(error as Error).name}`);
      // What kube-apiserver answers for a failed test (measured by the e2e suite): nothing more.
      throw new Error('HTTP 422: the server rejected our request due to an error in our request');
    }
    // The apiserver's rule for a pod update: only images (and metadata) change.
    const withoutImages = (pod: any) => JSON.stringify({ ...pod.spec, containers: pod.spec.containers.map(({ image: _, ...rest }: any) => rest), initContainers: (pod.spec.initContainers ?? []).map(({ image: _, ...rest }: any) => rest) });
    if (withoutImages(patched.spec ? patched : stored) !== withoutImages(stored) || JSON.stringify(patched.status) !== JSON.stringify(stored.status)) {
      throw new Error('HTTP 422: Pod is invalid: spec: Forbidden: pod updates may not change fields other than images');
    }
    patched.metadata.resourceVersion = String(++this.version);
    this.pods.set(key, patched);
    const images = [...patched.spec.containers, ...(patched.spec.initContainers ?? [])].map((c: any) => `${c.name}=${c.image}`).join(' ');
    this.log(key, `patched: ${images}`);
    return structuredClone(patched);
  }

  async setPodCondition(namespace: string, name: string, condition: { type: string; status: 'True' | 'False'; reason: string; message: string }): Promise<void> {
    const key = `${namespace}/${name}`;
    const pod = this.pods.get(key);
    const conditions = (pod.status.conditions ??= []);
    const index = conditions.findIndex((existing: any) => existing.type === condition.type);
    if (index >= 0) conditions[index] = { ...condition };
    else conditions.push({ ...condition });
    pod.metadata.resourceVersion = String(++this.version);
    this.log(key, `condition ${condition.type}=${condition.status}`);
  }

  async podEndpoints(namespace: string, podUid: string): Promise<readonly PodEndpoint[]> {
    const pod = [...this.pods.values()].find((candidate) => candidate.metadata.uid === podUid && candidate.metadata.namespace === namespace);
    if (!pod || !pod.metadata.labels?.app) return [];
    return [{ slice: `${pod.metadata.labels.app}-slice`, ready: this.endpoints.get(`${namespace}/${pod.metadata.name}`) ?? false }];
  }

  /** One step of the kubelet and the EndpointSlice controller. */
  tick(): void {
    for (const [key, pod] of this.pods) {
      // The EndpointSlice controller acts on what the pod's status said before this tick.
      const wasReady = this.endpoints.get(key);
      const ready = this.isReady(pod);
      if (wasReady !== ready) {
        this.endpoints.set(key, ready);
        this.log(key, `endpoint ready=${ready}`);
      }
      const containers = this.running.get(key)!;
      let changed = false;
      for (const spec of this.restartable(pod)) {
        const container = containers.get(spec.name)!;
        if (container.image === spec.image && container.state === 'running') continue;
        changed = true;
        if (container.image === spec.image && container.state === 'started') {
          container.state = 'running';
          this.log(key, `kubelet: ${spec.name} ready`);
        } else if (container.state === 'running' || container.state === 'started') {
          container.state = 'stopping';
          this.log(key, `kubelet: ${spec.name} stopped`);
        } else if (this.badImages.has(spec.image)) {
          // As the kubelet reports it: the last container's image and ID, waiting on the new image's pull.
          container.state = 'ImagePullBackOff';
          container.pulling = spec.image;
        } else if (this.crashingImages.has(spec.image)) {
          if (container.state !== 'CrashLoopBackOff') container.restartCount++;
          container.state = 'CrashLoopBackOff';
          container.image = spec.image;
          container.containerID = this.newContainerID();
        } else {
          container.state = 'started';
          container.pulling = undefined;
          container.image = spec.image;
          container.containerID = this.newContainerID();
          container.restartCount++;
          this.log(key, `kubelet: ${spec.name} started on ${spec.image}`);
        }
      }
      const before = JSON.stringify(pod.status);
      this.writeStatus(key);
      if (changed || JSON.stringify(pod.status) !== before) pod.metadata.resourceVersion = String(++this.version);
    }
    const unready = new Map<string, number>();
    for (const pod of this.pods.values()) {
      const app = pod.metadata.labels?.app ?? '';
      if (!this.isReady(pod)) unready.set(app, (unready.get(app) ?? 0) + 1);
    }
    for (const [app, count] of unready) this.maxUnready.set(app, Math.max(this.maxUnready.get(app) ?? 0, count));
  }

  /** A clock whose sleeps advance time and tick the cluster. */
  clock(): Clock {
    return {
      now: () => this.time,
      sleep: async (ms: number) => {
        this.time += Math.max(ms, 1);
        this.tick();
        await new Promise((resolve) => setImmediate(resolve));
      },
    };
  }

  private restartable(pod: any): { name: string; image: string }[] {
    return [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter((c: any) => c.restartPolicy === 'Always')];
  }

  private isReady(pod: any): boolean {
    const conditions = pod.status?.conditions ?? [];
    return conditions.some((condition: any) => condition.type === 'Ready' && condition.status === 'True');
  }

  /** The status the kubelet reports: each container's state, and Ready from the containers and the gates. */
  private writeStatus(key: string): void {
    const pod = this.pods.get(key);
    const containers = this.running.get(key)!;
    const entry = (name: string) => {
      const container = containers.get(name)!;
      const running = container.state === 'running' || container.state === 'started';
      const ready = container.state === 'running';
      const names = this.sameImage.find((group) => group.includes(container.image));
      const image = names ? names.map(normalizeImage).sort()[0] : normalizeImage(container.image);
      return {
        name,
        image,
        imageID: names ? `sha256:${createHash('sha256').update(names.join(' ')).digest('hex')}` : `${normalizeImage(container.image).replace(/:[^:/]*$/, '')}@sha256:${createHash('sha256').update(container.image).digest('hex')}`,
        containerID: container.state === 'stopping' ? undefined : container.containerID,
        restartCount: container.restartCount,
        ready,
        started: running,
        state: running
          ? { running: { startedAt: 'now' } }
          : container.state === 'ImagePullBackOff'
            ? { waiting: { reason: 'ImagePullBackOff', message: `Back-off pulling image "${container.pulling}"` } }
            : container.state === 'CrashLoopBackOff'
              ? { waiting: { reason: 'CrashLoopBackOff', message: `back-off 10s restarting failed container=${name}` } }
              : { waiting: { reason: 'ContainerCreating' } },
      };
    };
    const regular = pod.spec.containers.map((c: any) => entry(c.name));
    const native = (pod.spec.initContainers ?? []).filter((c: any) => c.restartPolicy === 'Always').map((c: any) => entry(c.name));
    const containersReady = [...regular, ...native].every((c) => c.ready);
    const others = (pod.status?.conditions ?? []).filter((c: any) => c.type !== 'Ready' && c.type !== 'ContainersReady');
    const gates = (pod.spec.readinessGates ?? []).every((gate: any) => others.some((c: any) => c.type === gate.conditionType && c.status === 'True'));
    pod.status = {
      phase: 'Running',
      conditions: [...others, { type: 'ContainersReady', status: String(containersReady === true ? 'True' : 'False') }, { type: 'Ready', status: containersReady && gates ? 'True' : 'False' }],
      containerStatuses: regular,
      ...(native.length > 0 ? { initContainerStatuses: native } : {}),
    };
    for (const list of [pod.status.containerStatuses, pod.status.initContainerStatuses ?? []]) for (const c of list) if (c.containerID === undefined) delete c.containerID;
  }

  private newContainerID(): string {
    return `containerd://${(++this.containerSerial).toString(16).padStart(8, '0')}`;
  }

  private log(pod: string, what: string): void {
    this.events.push({ at: this.time, pod, what });
  }
}
