// The node suite's shared setup: the one-node cluster (started by startSuite in a test file's `before`),
// the default app applied as `kubectl apply -f dist/` applies it, and what the test files use on it:
// namespaces, Deployments, pod facts read through the apiserver, config variants synthesized with the
// same certificates, applied and waited for. Each test file runs in its own process, with its own cluster.
import { spawn, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { policyApiVersionFor, policyApiserverFlags } from '../../e2e/support/control-plane';
import { NodeCluster, NODE_NAME, findNodeBinaries, minorVersion } from './node-cluster';
import { containerStatus, exec, isReady, kubectl, listPods, npmSynth, REPO_ROOT } from './node-checks';

export const binaries = findNodeBinaries();
/** Why the suite is skipped (the binaries it needs, by env var), or false. */
export const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e:node ${skip}`);

export const BACKEND = process.env.INJECTOR_BACKEND === 'admissionPolicy' ? 'admissionPolicy' : 'webhook';
export const WEBHOOK = BACKEND === 'webhook';
export const INJECTOR_NAMESPACE = 'sidecar-injector';
/** The Envoy version of the default app (dist/). */
export const ENVOY_FIRST = '1.20.3';
/** The Envoy version the day-two step bumps to (a stand-in image of it is imported). */
export const ENVOY_NEXT = '1.21.0';
/** The version `rollout --in-place` upgrades to; and one no image exists for. */
export const ENVOY_IN_PLACE = '1.22.0';
export const ENVOY_MISSING = '9.9.9';
/** Envoy's resources in the overrides variant, and what it offers (issue 39). */
export const ENVOY_OVERRIDE_RESOURCES = { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '256Mi' } };
export const ENVOY_OVERRIDES = [
  { annotation: 'envoy.example.com/cpu-request', container: 'envoy', resource: 'requests.cpu', max: '1' },
  { annotation: 'envoy.example.com/memory-request', container: 'envoy', resource: 'requests.memory', max: '256Mi', fromNamespace: true },
];
/** One image under two tags: `v1.31` sorts before `v1.31.0`, and containerd 1.6 reports an image by its first tag. */
export const ENVOY_PINNED = '1.31.0';
export const ENVOY_FLOATING = '1.31';

export const RESTRICTED = { runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } };
/** An app that stops at once on SIGTERM, as a well-behaved app does. */
export const SERVE_FOREVER = ['sh', '-c', 'trap "exit 0" TERM; while :; do sleep 1; done'];
export const app = (name = 'app', extra: Record<string, unknown> = {}) => ({ name, image: 'busybox:1.36', command: SERVE_FOREVER, securityContext: RESTRICTED, ...extra });

let cluster: NodeCluster;
export const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sidecar-injector-e2e-node-'));
export const dist = path.join(work, 'dist');
export const certs = path.join(work, 'certs');
let policyEnv: NodeJS.ProcessEnv = {};
const began = performance.now();
export const progress = (line: string) => console.log(`[e2e:node ${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s] ${line}`);

/** Starts the one-node cluster, synthesizes the default app (with the backend the env asks for) and applies it; the test file's `before`. */
export async function startSuite(options: { readonly featureGates?: Readonly<Record<string, boolean>> } = {}): Promise<NodeCluster> {
  const bins = binaries as Exclude<typeof binaries, string>;
  const minor = minorVersion(bins.kubeApiserver);
  let apiserverFlags: string[] = [];
  if (!WEBHOOK) {
    const apiVersion = policyApiVersionFor(`v1.${minor}`);
    policyEnv = { INJECTOR_BACKEND: 'admissionPolicy', INJECTOR_POLICY_API_VERSION: apiVersion };
    apiserverFlags = minor >= 36 ? [] : policyApiserverFlags(apiVersion);
  }
  cluster = await NodeCluster.start(bins, { dir: path.join(work, 'cluster'), envoyVersions: [ENVOY_FIRST, ENVOY_NEXT, ENVOY_IN_PLACE, ENVOY_PINNED], envoyAliases: { [ENVOY_PINNED]: [ENVOY_FLOATING] }, apiserverFlags, featureGates: options.featureGates, progress });
  const version = await cluster.plane.ok('GET', '/version');
  const node = await cluster.plane.ok('GET', `/api/v1/nodes/${NODE_NAME}`);
  progress(`kube-apiserver /version ${version.gitVersion}; kubelet ${node.status.nodeInfo.kubeletVersion}, ${node.status.nodeInfo.containerRuntimeVersion}, kube-proxy ${cluster.versions.kubeProxy}; backend ${BACKEND}`);
  progress(`npm run synth${WEBHOOK ? '' : ` (${Object.entries(policyEnv).map(([k, v]) => `${k}=${v}`).join(' ')})`} → ${dist}`);
  npmSynth(dist, certs, policyEnv);
  progress(kubectl(cluster, ['apply', '-f', dist]).trim().split('\n').join('; '));
  if (WEBHOOK) kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
  else await policiesInForce(dist);
  return cluster;
}

/** Stops the cluster and removes the work directory (kept with E2E_NODE_KEEP); the test file's `after`. */
export async function stopSuite(): Promise<void> {
  await cluster?.stop();
  if (!process.env.E2E_NODE_KEEP) fs.rmSync(work, { recursive: true, force: true });
}

export function namespace(name: string, labels: Record<string, string> = {}): void {
  kubectl(cluster, ['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted', ...labels } },
  }));
}

export const apply = (object: Record<string, unknown>) => kubectl(cluster, ['apply', '-f', '-'], JSON.stringify(object));
/** Deletes a test's namespaces and waits until they are gone: the node has 2 CPUs, and every Envoy requests 100m of them. */
export const cleanUp = (...namespaces: string[]) => kubectl(cluster, ['delete', 'namespace', ...namespaces, '--timeout=180s']);
export const ENABLED = { injection: 'enabled' };

/** A Deployment of 3 replicas of the app, injected as its namespace says. */
export function echoDeployment(ns: string, name: string): void {
  apply({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ns },
    spec: { replicas: 3, selector: { matchLabels: { app: name } }, template: { metadata: { labels: { app: name } }, spec: { containers: [app('app')] } } },
  });
}

export interface PodFacts {
  readonly name: string;
  readonly uid: string;
  readonly ready: boolean;
  readonly appRestarts: number;
  /** The app process's start time (clock ticks after boot, /proc/1/stat): unchanged unless it restarted. */
  readonly appProcessStart: string;
  readonly envoyRestarts: number;
  /** The image the kubelet reports running (the last container's, while a new one cannot be pulled). */
  readonly envoyImage: string;
  readonly envoyImageId: string;
  /** The image the pod's spec asks for. */
  readonly envoySpecImage: string;
}

export async function podFacts(ns: string, selector: string): Promise<PodFacts[]> {
  const pods = await listPods(cluster, ns, selector);
  return pods.map((pod) => {
    const appStatus = containerStatus(pod, 'app')!;
    const envoy = containerStatus(pod, 'envoy')!;
    const stat = exec(cluster, ns, pod.metadata.name, 'app', ['cat', '/proc/1/stat']).stdout;
    return {
      name: pod.metadata.name,
      uid: pod.metadata.uid,
      ready: isReady(pod),
      appRestarts: appStatus.restartCount,
      appProcessStart: stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19],
      envoyRestarts: envoy.restartCount,
      envoyImage: envoy.image,
      envoyImageId: envoy.imageID,
      envoySpecImage: pod.spec.containers.find((c: any) => c.name === 'envoy').image,
    };
  });
}

/** A command's output as the docs show it. */
export function shown(command: string, run: { status: number | null; stdout: string; stderr: string }): void {
  progress(`$ npx cdk8s-sidecar-injector ${command}; echo "exit $?"\n${run.stdout}${run.stderr}exit ${run.status}`);
}

export function kubectlAsync(args: readonly string[]): Promise<{ status: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn('kubectl', ['--kubeconfig', cluster.kubeconfig, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stdout += chunk));
    child.on('close', (status) => resolve({ status, stdout }));
  });
}

/**
 * Waits until the apiserver injects what `outdir`'s config says: it loads policies asynchronously, so a
 * pod created right after `kubectl apply` may meet none, or the policies it replaced. Server-side dry
 * runs of a pod in an enabled namespace (Envoy's image, its readiness gate) and of a Deployment with
 * wait-for-it's annotation (the workloads' policy), until both get the config's injections.
 */
export async function policiesInForce(outdir: string): Promise<void> {
  const { version, gated, audit } = variants.get(outdir) ?? { version: ENVOY_FIRST, gated: false, audit: false };
  const image = `envoyproxy/envoy:v${version}`;
  kubectl(cluster, ['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'policy-probe', labels: ENABLED } }));
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [app('app')] } };
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'probe', annotations: { 'com.foreach/wait-for-it': 'db:5432' } },
    spec: { selector: { matchLabels: { app: 'probe' } }, template: { metadata: { labels: { app: 'probe' } }, spec: { containers: [app('app')] } } },
  };
  let seen = '';
  const expected = audit ? 'envoy in audit mode (its warning, no container)' : `envoy ${image}`;
  await cluster.until(`the policies of ${path.basename(outdir)} in force (${expected}${gated ? ', readiness gate' : ''}, wait-for-it)`, async () => {
    const made = await cluster.plane.ok('POST', '/api/v1/namespaces/policy-probe/pods?dryRun=All', pod);
    const workload = await cluster.plane.ok('POST', '/apis/apps/v1/namespaces/policy-probe/deployments?dryRun=All', deployment);
    const got = made.spec.containers.find((c: any) => c.name === 'envoy')?.image;
    const gates = made.spec.readinessGates?.length ?? 0;
    const waits = (workload.spec.template.spec.initContainers ?? []).some((c: any) => c.name === 'wait-for-it');
    // An audited injection adds nothing: its ValidatingAdmissionPolicy's warning is what shows it in force.
    const warned = audit && cluster.kubectl(['-n', 'policy-probe', 'create', '--dry-run=server', '-o', 'name', '-f', '-'], JSON.stringify(pod)).stderr.includes('audit: injection "envoy" would add containers envoy');
    seen = `envoy ${got}, ${gates} readiness gates, wait-for-it ${waits}${audit ? `, audit warning ${warned}` : ''}`;
    return (audit ? got === undefined && warned : got === image) && gates > 0 === gated && waits;
  }, 120_000).catch((error: Error) => {
    throw new Error(`${error.message}; the last dry run: ${seen}`);
  });
}

/** What each variant's config injects that its tests change. */
const variants = new Map<string, { version: string; gated: boolean; audit: boolean }>();

/** The default app with Envoy's image at `version` (and `readinessGate`), synthesized to a directory of its own with the same certificates. */
export function variant(version: string, options: { readinessGate?: boolean; overrides?: boolean; reconciler?: Record<string, unknown>; audit?: boolean } = {}): string {
  const outdir = path.join(work, `dist-envoy-${version}${options.readinessGate ? '-gated' : ''}${options.overrides ? '-overrides' : ''}${options.reconciler ? `-reconciler-${Object.values(options.reconciler).join('-')}` : ''}${options.audit ? '-audit' : ''}`);
  variants.set(outdir, { version, gated: options.readinessGate === true, audit: options.audit === true });
  if (fs.existsSync(outdir)) return outdir;
  // With overrides, Envoy also gets a cpu limit: a namespace whose ResourceQuota covers limits.cpu
  // admits only pods whose every container sets one.
  const container = { image: `envoyproxy/envoy:v${version}`, ...(options.overrides ? { resources: ENVOY_OVERRIDE_RESOURCES } : {}) };
  const injection = { ...(options.readinessGate ? { readinessGate: true } : {}), ...(options.overrides ? { overrides: ENVOY_OVERRIDES } : {}), ...(options.audit ? { mode: 'audit' } : {}) };
  const script = path.join(work, 'variant.ts');
  fs.writeFileSync(
    script,
    [
      `import { synthDefaultApp } from ${JSON.stringify(path.join(__dirname, '../../../app/default-app'))};`,
      `import { DEFAULT_INJECTIONS } from ${JSON.stringify(path.join(__dirname, '../../../app/default-injections'))};`,
      `const injections = DEFAULT_INJECTIONS.map((i) => i.name !== 'envoy' ? i : { ...i, ...${JSON.stringify(injection)}, containers: i.containers!.map((c) => ({ ...c, ...${JSON.stringify(container)} })) });`,
      `synthDefaultApp({ outdir: ${JSON.stringify(outdir)}, certificateStore: ${JSON.stringify(certs)}, injections, backend: ${JSON.stringify(policyEnv.INJECTOR_BACKEND)}, admissionPolicyApiVersion: ${JSON.stringify(policyEnv.INJECTOR_POLICY_API_VERSION)}, reconciler: ${JSON.stringify(options.reconciler)} });`,
      '',
    ].join('\n'),
  );
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`synth of the variant exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return outdir;
}

/**
 * The default app with revisions (issue 37): r1 is the default injections with Envoy at `ENVOY_FIRST`, r2
 * the same with Envoy at `ENVOY_PINNED`; the tag `stable` (the default) on `defaultOn`, `canary` on r2.
 */
export function revisionVariant(defaultOn: 'r1' | 'r2'): string {
  const outdir = path.join(work, `dist-revisions-${defaultOn}`);
  variants.set(outdir, { version: defaultOn === 'r1' ? ENVOY_FIRST : ENVOY_PINNED, gated: false, audit: false });
  if (fs.existsSync(outdir)) return outdir;
  const script = path.join(work, 'revision-variant.ts');
  fs.writeFileSync(
    script,
    [
      `import { synthDefaultApp } from ${JSON.stringify(path.join(__dirname, '../../../app/default-app'))};`,
      `import { DEFAULT_INJECTIONS } from ${JSON.stringify(path.join(__dirname, '../../../app/default-injections'))};`,
      `const withEnvoy = (version: string) => DEFAULT_INJECTIONS.map((i) => i.name !== 'envoy' ? i : { ...i, containers: i.containers!.map((c) => ({ ...c, image: 'envoyproxy/envoy:v' + version })) });`,
      `const revisions = [{ name: 'r1', injections: withEnvoy(${JSON.stringify(ENVOY_FIRST)}) }, { name: 'r2', injections: withEnvoy(${JSON.stringify(ENVOY_PINNED)}) }];`,
      `const tags = [{ name: 'stable', revision: ${JSON.stringify(defaultOn)}, default: true }, { name: 'canary', revision: 'r2' }];`,
      `synthDefaultApp({ outdir: ${JSON.stringify(outdir)}, certificateStore: ${JSON.stringify(certs)}, revisions, tags, backend: ${JSON.stringify(policyEnv.INJECTOR_BACKEND)}, admissionPolicyApiVersion: ${JSON.stringify(policyEnv.INJECTOR_POLICY_API_VERSION)} });`,
      '',
    ].join('\n'),
  );
  const result = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: REPO_ROOT, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`synth of the revisions variant exited ${result.status}:\n${result.stderr}${result.stdout}`);
  return outdir;
}

/**
 * Applies a synthesized output and waits until the injector serves it: the rollout done and the old
 * replicas gone (a replica being replaced still answers the admissions on its pooled connections while
 * it drains, with the config it has).
 */
export async function applyConfig(outdir: string): Promise<void> {
  progress(`apply ${path.basename(outdir)}: ${kubectl(cluster, ['apply', '-f', outdir]).trim().split('\n').filter((line) => !line.endsWith('unchanged')).join('; ')}`);
  if (!WEBHOOK) {
    await policiesInForce(outdir);
    return;
  }
  kubectl(cluster, ['-n', INJECTOR_NAMESPACE, 'rollout', 'status', 'deploy/sidecar-injector', '--timeout=180s']);
  await cluster.until('only the new injector replicas', async () => {
    const pods = await listPods(cluster, INJECTOR_NAMESPACE, 'app.kubernetes.io/name=sidecar-injector');
    return pods.length === 2 && new Set(pods.map((pod) => pod.metadata.labels['pod-template-hash'])).size === 1;
  }, 120_000);
}
