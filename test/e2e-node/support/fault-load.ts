// Faults on the node under a load of pod creates: the injector's Deployment restarted
// (`kubectl rollout restart`) and, separately, one webhook pod's process killed (SIGKILL, found
// through containerd), each while 300 pods are created in a labelled namespace. With
// `failurePolicy: Fail`, a create the webhook does not answer is rejected, so the counts say
// whether the injector stayed available: creates rejected, pods without envoy, and how long the
// fault took to heal.
import { spawn } from 'node:child_process';
import { NodeCluster } from './node-cluster';
import { containerStatus, isReady, listPods } from './node-checks';

export type Fault = 'rolling restart' | 'killed webhook process';

export interface FaultResult {
  readonly fault: Fault;
  /** Rejections after the injector was whole again (the rollout finished; the killed pod Ready). */
  readonly rejectedAfterHealed: number;
  readonly requested: number;
  readonly created: number;
  readonly rejected: number;
  readonly withoutEnvoy: number;
  /** Each rejection: the status and the apiserver's message. */
  readonly errors: string[];
  /** From the fault's start until the injector was whole again (rollout finished; the killed pod Ready). */
  readonly faultSeconds: number;
  readonly loadSeconds: number;
}

export interface FaultLoadOptions {
  /** The injector's namespace. */
  readonly namespace: string;
  readonly pods?: number;
  /** Creates per second. */
  readonly rate?: number;
  readonly progress?: (line: string) => void;
}

const RESTRICTED = { runAsNonRoot: true, runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };

function kubectlAsync(cluster: NodeCluster, args: readonly string[]): Promise<{ status: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', ['--kubeconfig', cluster.kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    child.on('close', (status) => resolve({ status, output }));
  });
}

/** Creates `count` pods at `rate` per second, at most 16 in flight; resolves with each answer's status and message. */
interface Answer {
  readonly status: number;
  readonly message: string;
  /** When the create was sent (performance.now()). */
  readonly sent: number;
}

async function createPods(cluster: NodeCluster, namespace: string, count: number, rate: number): Promise<Answer[]> {
  const answers: Promise<Answer>[] = [];
  const started = performance.now();
  const inFlight = new Set<Promise<unknown>>();
  for (let i = 0; i < count; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    while (inFlight.size >= 16) await Promise.race(inFlight);
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: `load-${String(i).padStart(3, '0')}`, namespace, labels: { load: 'fault' } },
      // Admitted and injected, then left Pending: the node's two cores serve the injector, not 300 sandboxes.
      spec: { nodeSelector: { 'e2e.sidecar-injector.io/schedule': 'never' }, containers: [{ name: 'app', image: 'busybox:1.36', command: ['sleep', '3600'], securityContext: RESTRICTED }] },
    };
    const sent = performance.now();
    const answer = cluster.plane
      .request('POST', `/api/v1/namespaces/${namespace}/pods`, pod)
      .then((response) => ({ sent, status: response.status, message: response.status === 201 ? '' : `${pod.metadata.name}: ${response.status} ${response.body?.message ?? JSON.stringify(response.body)}` }))
      .catch((error: Error) => ({ sent, status: 0, message: `${pod.metadata.name}: ${error.message}` }));
    inFlight.add(answer);
    void answer.then(() => inFlight.delete(answer));
    answers.push(answer);
  }
  return Promise.all(answers);
}

/** Runs the fault; resolves when the injector is whole again, with when that was (performance.now()). */
async function runFault(cluster: NodeCluster, fault: Fault, injectorNamespace: string, progress: (line: string) => void): Promise<number> {
  if (fault === 'rolling restart') {
    const restart = await kubectlAsync(cluster, ['-n', injectorNamespace, 'rollout', 'restart', 'deploy/sidecar-injector']);
    if (restart.status !== 0) throw new Error(`rollout restart: ${restart.output}`);
    const status = await kubectlAsync(cluster, ['-n', injectorNamespace, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=300s']);
    if (status.status !== 0) throw new Error(`rollout status: ${status.output}`);
  } else {
    const [victim] = await listPods(cluster, injectorNamespace, 'app.kubernetes.io/name=sidecar-injector');
    const before = containerStatus(victim, 'webhook')!;
    const pid = cluster.containerPid(before.containerID);
    progress(`killing pid ${pid}, the webhook process of ${victim.metadata.name}`);
    process.kill(pid, 'SIGKILL');
    await cluster.until(`${victim.metadata.name} restarted and Ready`, async () => {
      const [pod] = (await listPods(cluster, injectorNamespace, 'app.kubernetes.io/name=sidecar-injector')).filter((p) => p.metadata.name === victim.metadata.name);
      return !!pod && containerStatus(pod, 'webhook')!.restartCount > before.restartCount && isReady(pod);
    }, 180_000);
  }
  return performance.now();
}

/** Each fault under its own load, in its own namespace. */
export async function runFaultLoad(cluster: NodeCluster, options: FaultLoadOptions): Promise<FaultResult[]> {
  const progress = options.progress ?? (() => undefined);
  const count = options.pods ?? 300;
  const rate = options.rate ?? 6;
  const results: FaultResult[] = [];
  for (const [index, fault] of (['rolling restart', 'killed webhook process'] as const).entries()) {
    const namespace = `load-${index}`;
    await cluster.plane.ok('POST', '/api/v1/namespaces', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: namespace, labels: { injection: 'enabled', 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    progress(`faults: ${count} pod creates at ${rate}/s into ${namespace}, ${fault} 2 s in`);
    const loadStarted = performance.now();
    const load = createPods(cluster, namespace, count, rate);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const faultStarted = performance.now();
    const healed = await runFault(cluster, fault, options.namespace, progress);
    const answers = await load;
    const loadSeconds = (performance.now() - loadStarted) / 1000;
    const pods = await listPods(cluster, namespace, 'load=fault');
    const withoutEnvoy = pods.filter((pod) => !pod.spec.containers.some((c: any) => c.name === 'envoy')).length;
    const errors = answers.filter((answer) => answer.status !== 201).map((answer) => answer.message);
    const rejectedAfterHealed = answers.filter((answer) => answer.status !== 201 && answer.sent > healed).length;
    results.push({ fault, requested: count, created: pods.length, rejected: errors.length, rejectedAfterHealed, withoutEnvoy, errors, faultSeconds: (healed - faultStarted) / 1000, loadSeconds });
    await cluster.plane.request('DELETE', `/api/v1/namespaces/${namespace}`);
  }
  return results;
}
