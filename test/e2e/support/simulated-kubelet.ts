// The kubelet's part, played against a real kube-apiserver for the pods of one namespace (there is no
// node here, and the real kubelet's checks are the lead's, on a real node): it binds each pod to a
// Node object, reports every container running on its spec's image with an IP, and when a container's
// image changes in the spec it stops it for one round and starts a new one on the new image (a new
// containerID, restartCount + 1), as the kubelet does. Ready is computed as the kubelet computes it:
// every container ready and every readiness gate's condition True. Status is written as the kubelet
// writes it: a strategic merge patch of pods/status with its own conditions only (merged by type), so
// a condition another writer owns (the injector's, the CLI's) is kept, and goes through admission.
// It also records what it saw, for the test to check the order of events against.
import { createHash } from 'node:crypto';
import type { ControlPlane } from './control-plane';

const KUBELET_CONDITIONS = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'];

function timestamp(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z');
}

interface Running {
  image: string;
  containerID: string;
  restartCount: number;
  /** Rounds left before it runs again (after an image change). */
  stopped: number;
  startedAt: string;
}

export interface KubeletEvent {
  readonly at: number;
  readonly pod: string;
  readonly what: string;
}

export class SimulatedKubelet {
  readonly events: KubeletEvent[] = [];
  private readonly running = new Map<string, Map<string, Running>>();
  private readonly addresses = new Map<string, string>();
  private readonly written = new Map<string, string>();
  private stopping = false;
  private loop: Promise<void> | undefined;
  private serial = 0;
  private lastError: unknown;

  constructor(
    private readonly plane: ControlPlane,
    readonly namespace: string,
    readonly nodeName: string,
    private readonly roundMs = 250,
  ) {}

  /** Creates the Node object the pods are bound to (the EndpointSlice controller skips pods on unknown nodes). */
  static async createNode(plane: ControlPlane, name: string): Promise<void> {
    await plane.ok('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubernetes.io/hostname': name } } });
  }

  start(): void {
    this.loop = (async () => {
      while (!this.stopping) {
        try {
          await this.round();
        } catch (error) {
          this.lastError = error;
        }
        await new Promise((resolve) => setTimeout(resolve, this.roundMs));
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.loop;
  }

  /** The last error a round met (a test that waits in vain shows it). */
  get error(): string {
    return this.lastError ? String((this.lastError as Error).message ?? this.lastError) : 'none';
  }

  private log(pod: string, what: string): void {
    this.events.push({ at: Date.now(), pod, what });
  }

  private async round(): Promise<void> {
    const pods = (await this.plane.ok('GET', `/api/v1/namespaces/${this.namespace}/pods`)).items as any[];
    for (const pod of pods) {
      if (pod.metadata.deletionTimestamp) continue;
      const name = pod.metadata.name;
      if (!pod.spec.nodeName) {
        await this.plane.ok('POST', `/api/v1/namespaces/${this.namespace}/pods/${name}/binding`, {
          apiVersion: 'v1',
          kind: 'Binding',
          metadata: { name },
          target: { apiVersion: 'v1', kind: 'Node', name: this.nodeName },
        });
        continue; // read again next round, bound
      }
      await this.sync(pod);
    }
  }

  private async sync(pod: any): Promise<void> {
    const name = pod.metadata.name;
    let containers = this.running.get(name);
    if (!containers) this.running.set(name, (containers = new Map()));
    if (!this.addresses.has(name)) this.addresses.set(name, `10.244.0.${this.addresses.size + 2}`);
    const restartable = [...pod.spec.containers, ...(pod.spec.initContainers ?? []).filter((c: any) => c.restartPolicy === 'Always')];
    for (const spec of restartable) {
      const container = containers.get(spec.name);
      if (!container) {
        containers.set(spec.name, { image: spec.image, containerID: this.containerID(), restartCount: 0, stopped: 0, startedAt: timestamp() });
        this.log(name, `${spec.name} started on ${spec.image}`);
      } else if (container.image !== spec.image) {
        // The kubelet kills the container whose spec changed, and starts it again on the new image.
        container.image = spec.image;
        container.stopped = 1;
        this.log(name, `${spec.name} stopped for ${spec.image}`);
      } else if (container.stopped > 0 && --container.stopped === 0) {
        container.containerID = this.containerID();
        container.restartCount++;
        container.startedAt = timestamp();
        this.log(name, `${spec.name} started on ${spec.image}`);
      }
    }
    const statusOf = (spec: any) => {
      const container = containers.get(spec.name)!;
      const up = container.stopped === 0;
      return {
        name: spec.name,
        image: spec.image,
        imageID: `${spec.image.split(':')[0]}@sha256:${createHash('sha256').update(spec.image).digest('hex')}`,
        ...(up ? { containerID: container.containerID } : {}),
        restartCount: container.restartCount,
        ready: up,
        started: up,
        state: up ? { running: { startedAt: container.startedAt } } : { waiting: { reason: 'ContainerCreating' } },
      };
    };
    const containerStatuses = pod.spec.containers.map(statusOf);
    const initContainerStatuses = (pod.spec.initContainers ?? []).filter((c: any) => c.restartPolicy === 'Always').map(statusOf);
    const containersReady = [...containerStatuses, ...initContainerStatuses].every((c) => c.ready);
    const conditions = pod.status?.conditions ?? [];
    const gatesTrue = (pod.spec.readinessGates ?? []).every((gate: any) => conditions.some((c: any) => c.type === gate.conditionType && c.status === 'True'));
    const ready = containersReady && gatesTrue;
    const now = timestamp();
    const condition = (type: string, value: boolean) => {
      const before = conditions.find((c: any) => c.type === type);
      const status = value ? 'True' : 'False';
      return { type, status, lastProbeTime: null, lastTransitionTime: before?.status === status ? before.lastTransitionTime : now };
    };
    const status = {
      phase: 'Running',
      hostIP: '10.0.0.10',
      podIP: this.addresses.get(name),
      podIPs: [{ ip: this.addresses.get(name) }],
      startTime: pod.status?.startTime ?? now,
      conditions: [condition('PodScheduled', true), condition('Initialized', true), condition('ContainersReady', containersReady), condition('Ready', ready)],
      containerStatuses,
      ...(initContainerStatuses.length > 0 ? { initContainerStatuses } : {}),
    };
    // Written when what it reports changed (not its timestamps), or when the stored status lost it.
    const signature = JSON.stringify({ containerStatuses, initContainerStatuses, conditions: status.conditions.map((c) => `${c.type}=${c.status}`) });
    const stored = KUBELET_CONDITIONS.map((type) => `${type}=${conditions.find((c: any) => c.type === type)?.status}`).join(',');
    const wasReady = conditions.find((c: any) => c.type === 'Ready')?.status === 'True';
    if (this.written.get(name) === signature && stored === status.conditions.map((c) => `${c.type}=${c.status}`).join(',')) return;
    await this.plane.ok('PATCH', `/api/v1/namespaces/${this.namespace}/pods/${name}/status`, { status }, 'application/strategic-merge-patch+json');
    this.written.set(name, signature);
    if (wasReady !== ready) this.log(name, `Ready ${ready}`);
  }

  private containerID(): string {
    return `containerd://${createHash('sha256').update(`${this.namespace}-${++this.serial}`).digest('hex')}`;
  }
}
