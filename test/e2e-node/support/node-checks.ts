// What the node suite reads back, always through the apiserver's own view (pod phase, container
// statuses, conditions, events, status.qosClass), and how it waits for it: on a condition with a
// deadline, never on a fixed sleep.
import { spawn, spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { NodeCluster } from './node-cluster';

export type Pod = Record<string, any>;

/** The pod, or undefined while it does not exist. */
export async function getPod(cluster: NodeCluster, namespace: string, name: string): Promise<Pod | undefined> {
  const response = await cluster.plane.request('GET', `/api/v1/namespaces/${namespace}/pods/${name}`);
  return response.status === 200 ? response.body : undefined;
}

/** The pods matching a label selector. */
export async function listPods(cluster: NodeCluster, namespace: string, selector?: string): Promise<Pod[]> {
  const query = selector ? `?labelSelector=${encodeURIComponent(selector)}` : '';
  return (await cluster.plane.ok('GET', `/api/v1/namespaces/${namespace}/pods${query}`)).items;
}

export function containerStatus(pod: Pod, name: string): Record<string, any> | undefined {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].find((status: any) => status.name === name);
}

export function condition(pod: Pod, type: string): Record<string, any> | undefined {
  return pod.status?.conditions?.find((c: any) => c.type === type);
}

export const isReady = (pod: Pod | undefined) => condition(pod ?? {}, 'Ready')?.status === 'True';

/** One line per container: name, state, ready, restarts, image; for failure messages. */
export function describePod(pod: Pod | undefined): string {
  if (!pod) return '(no such pod)';
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  const lines = statuses.map((s: any) => `  ${s.name}: ${Object.keys(s.state ?? {})[0]} ${JSON.stringify(Object.values(s.state ?? {})[0] ?? {})} ready=${s.ready} restarts=${s.restartCount} image=${s.image}`);
  return `pod ${pod.metadata?.namespace}/${pod.metadata?.name}: phase ${pod.status?.phase}, qos ${pod.status?.qosClass}\n${lines.join('\n')}`;
}

/** The events about an object, oldest first, as `reason: message` lines. */
export async function events(cluster: NodeCluster, namespace: string, name: string): Promise<string[]> {
  const list = await cluster.plane.ok('GET', `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`involvedObject.name=${name}`)}`);
  return list.items.map((event: any) => `${event.reason}: ${event.message}`);
}

/** Waits for a pod to satisfy `check`, or fails with its containers and events. */
export async function waitForPod(cluster: NodeCluster, namespace: string, name: string, what: string, check: (pod: Pod) => boolean, timeoutMs = 120_000): Promise<Pod> {
  let last: Pod | undefined;
  try {
    await cluster.until(`${namespace}/${name}: ${what}`, async () => {
      last = await getPod(cluster, namespace, name);
      return last !== undefined && check(last);
    }, timeoutMs);
  } catch (error) {
    const seen = await events(cluster, namespace, name).catch(() => []);
    throw new Error(`${(error as Error).message.split('\n')[0]}\n${describePod(last)}\nevents:\n  ${seen.join('\n  ')}`);
  }
  return last!;
}

/** kubectl, failing with its output unless it exits 0. */
export function kubectl(cluster: NodeCluster, args: readonly string[], input?: string): string {
  const result = cluster.kubectl(args, input);
  if (result.status !== 0) throw new Error(`kubectl ${args.join(' ')} exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

/** A command in a container, through the apiserver and the kubelet (kubectl exec). */
export function exec(cluster: NodeCluster, namespace: string, pod: string, container: string, command: readonly string[]): { status: number | null; stdout: string; stderr: string } {
  return cluster.kubectl(['exec', '-n', namespace, pod, '-c', container, '--', ...command]);
}

export interface CliResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly seconds: number;
}

export const REPO_ROOT = path.resolve(__dirname, '../../..');
const CLI_MAIN = path.join(REPO_ROOT, 'webhook/cli/main.ts');

/** The CLI as a process with the cluster's kubeconfig; asynchronous, so the suite keeps watching. */
export function cli(cluster: NodeCluster, args: readonly string[]): Promise<CliResult> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CLI_MAIN, ...args, '--kubeconfig', cluster.kubeconfig], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr, seconds: (performance.now() - started) / 1000 }));
  });
}

export const describeRun = (run: { status: number | null; stdout: string; stderr: string }) => `exit ${run.status}\n--- stdout\n${run.stdout}\n--- stderr\n${run.stderr}`;

/** `npm run synth` as a user runs it, into `outdir`, with its certificate store in `certDir`. */
export function npmSynth(outdir: string, certDir: string, env: NodeJS.ProcessEnv = {}): string {
  const result = spawnSync('npm', ['run', '--silent', 'synth'], {
    cwd: REPO_ROOT,
    encoding: 'utf8',
    env: { ...process.env, CDK8S_OUTDIR: outdir, SIDECAR_INJECTOR_CERT_DIR: certDir, ...env },
    timeout: 300_000,
  });
  if (result.status !== 0) throw new Error(`npm run synth exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return result.stdout;
}

/** Seconds between two RFC 3339 timestamps of the apiserver. */
export const secondsBetween = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 1000;
