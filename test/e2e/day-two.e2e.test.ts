// npm run e2e: day two on a real kube-apiserver with kube-controller-manager (Deployments make
// ReplicaSets and pods; no kubelet, so pods stay Pending, admitted and injected all the same), for
// each backend:
// 1. Deployments are created under config A (Envoy v1.31.0 always, a metrics exporter by label).
// 2. The injector goes away (the webhook stops, with failurePolicy Ignore; the policies' bindings
//    are deleted) and a Deployment is created: its pod is admitted without its sidecar.
// 3. Config B is applied: Envoy v1.31.1, the metrics injection removed. A new Deployment is created.
// 4. `status` (a real process, the kubeconfig of the test PKI) reports exactly the outdated, missing
//    and no-longer-configured pods, and the new Deployment's as up to date; it exits 4.
// 5. `rollout --no-wait` restarts exactly the stale Deployments; the pods their controllers then
//    create are reported up to date.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { Injection, injectionHash } from '../../webhook/config';
import { type CliRun, describeRun, runCliAsync } from '../support/cli-process';
import { Manifest, findManifest, makeTempDir, synthChart } from '../support/synth-helpers';
import { InProcessWebhook, startInProcess, until } from '../support/webhook-harness';
import { ControlPlane, binaryVersion, findBinariesWithControllers } from './support/control-plane';
import { startPolicyServingPlane } from './support/policy-plane';

const binaries = findBinariesWithControllers();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (day two) ${skip}`);

const PREFIX = 'sidecar-injector.io';
const BACKEND_LABEL = 'e2e.sidecar-injector.io/day-two';
const envoy = (image: string): Injection => ({ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image }] });
const METRICS: Injection = { name: 'metrics', trigger: { type: 'labelSelector', matchLabels: { metrics: 'on' } }, containers: [{ name: 'exporter', image: 'prom/statsd-exporter:v0.26.0' }] };
const INJECTIONS_A = [envoy('envoyproxy/envoy:v1.31.0'), METRICS];
/** B bumps Envoy's image and removes the metrics injection. */
const INJECTIONS_B = [envoy('envoyproxy/envoy:v1.31.1')];
const HASH_A = injectionHash(INJECTIONS_A[0]);
const HASH_B = injectionHash(INJECTIONS_B[0]);
const METRICS_HASH = injectionHash(METRICS);

let plane: ControlPlane | undefined;
let policyApiVersion: AdmissionPolicyApiVersion = 'v1';
const webhooks: InProcessWebhook[] = [];
const dir = makeTempDir('day-two-e2e');

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  let version: string;
  ({ plane, version, policyApiVersion } = await startPolicyServingPlane(bins));
  console.log(`kube-apiserver ${version}; kube-controller-manager ${binaryVersion(bins.kubeControllerManager)}; policies as admissionregistration.k8s.io/${policyApiVersion}`);
});

after(async () => {
  for (const webhook of webhooks) await webhook.stop();
  await plane?.stop();
});

/** The CLI as a process, asynchronously: the in-process webhook must keep answering while it runs. */
function cli(args: readonly string[]): Promise<CliRun> {
  return runCliAsync(args, plane!.kubeconfig);
}

function deployment(name: string, labels: Record<string, string> = {}): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas: 1,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name, ...labels } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } },
    },
  };
}

async function podsOf(namespace: string, app: string): Promise<any[]> {
  return (await plane!.ok('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`app=${app}`)}`)).items;
}

/** The Deployment's pods once there are `count` of them (the controllers work asynchronously). */
function waitForPods(namespace: string, app: string, count: number): Promise<any[]> {
  return until(`${count} pod(s) of Deployment ${namespace}/${app}`, 60_000, async () => {
    const pods = await podsOf(namespace, app);
    return pods.length === count ? pods : undefined;
  });
}

/** Waits until a pod created (dry run) in `namespace` comes back with `hashes` (undefined: not injected). */
async function waitForInjection(namespace: string, hashes: string | undefined): Promise<void> {
  let last: unknown;
  await until(`pods in ${namespace} injected with ${hashes ?? 'nothing'}`, 60_000, async () => {
    const probe = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } };
    const response = await plane!.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All`, probe);
    last = response.body?.metadata?.annotations ?? response.body;
    return response.status === 201 && response.body.metadata?.annotations?.[`${PREFIX}/injection-hashes`] === hashes ? true : undefined;
  }).catch((error) => {
    throw new Error(`${(error as Error).message}; last answer: ${JSON.stringify(last)}`);
  });
}

interface Backend {
  readonly namespace: string;
  /** The value of BACKEND_LABEL that its namespace selector selects (each backend injects its own namespace only). */
  readonly label: 'webhook' | 'admissionPolicy';
  /** Puts config A in force. */
  installA(): Promise<void>;
  /** Takes the injector away: pods are then admitted without sidecars. */
  outage(): Promise<void>;
  /** Puts config B in force. */
  installB(): Promise<void>;
  /** Where `status` and `rollout` read config B from. */
  readonly sourceArgs: string[];
}

/**
 * The scenario of the file's header on one backend: Deployments under A, one created during an
 * outage, one under B; then status, rollout --no-wait, and status of the controllers' new pods.
 */
async function dayTwo(backend: Backend): Promise<void> {
  const ns = backend.namespace;
  const create = (object: Manifest) => plane!.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, object);
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels: { [BACKEND_LABEL]: backend.label } } });

  await backend.installA();
  await waitForInjection(ns, `envoy=${HASH_A}`);
  await create(deployment('web', { metrics: 'on' }));
  await create(deployment('api'));
  const [web] = await waitForPods(ns, 'web', 1);
  const [api] = await waitForPods(ns, 'api', 1);
  assert.equal(web.metadata.annotations?.[`${PREFIX}/injection-hashes`], `envoy=${HASH_A},metrics=${METRICS_HASH}`, JSON.stringify(web.metadata));
  assert.equal(api.metadata.annotations?.[`${PREFIX}/injection-hashes`], `envoy=${HASH_A}`, JSON.stringify(api.metadata));

  await backend.outage();
  await waitForInjection(ns, undefined);
  await create(deployment('cart'));
  const [cart] = await waitForPods(ns, 'cart', 1);
  assert.deepEqual(cart.spec.containers.map((c: any) => c.name), ['app'], 'admitted during the outage, without Envoy');

  await backend.installB();
  await waitForInjection(ns, `envoy=${HASH_B}`);
  await create(deployment('fresh'));
  const [fresh] = await waitForPods(ns, 'fresh', 1);
  assert.equal(fresh.metadata.annotations?.[`${PREFIX}/injection-hashes`], `envoy=${HASH_B}`);

  const status = await cli(['status', ...backend.sourceArgs, '-n', ns, '-o', 'json']);
  assert.equal(status.status, 4, describeRun(status));
  const report = JSON.parse(status.stdout);
  const findings = Object.fromEntries(report.workloads.map((w: any) => [`${w.kind}/${w.name}`, w.findings.map((f: any) => `${f.injection} ${f.state} ${f.podHash} ${f.configuredHash} ${f.pods.join(' ')}`)]));
  assert.deepEqual(findings, {
    'Deployment/api': [`envoy outdated ${HASH_A} ${HASH_B} ${api.metadata.name}`],
    'Deployment/cart': [`envoy missing null ${HASH_B} ${cart.metadata.name}`],
    'Deployment/fresh': [],
    'Deployment/web': [`envoy outdated ${HASH_A} ${HASH_B} ${web.metadata.name}`, `metrics no-longer-configured ${METRICS_HASH} null ${web.metadata.name}`],
  }, describeRun(status));
  assert.ok(report.workloads.every((w: any) => w.via === 'ownerReferences'), 'the ReplicaSets were read from the cluster');
  const text = await cli(['status', ...backend.sourceArgs, '-n', ns]);
  console.log(`status (${ns}):\n${text.stdout}`);

  const rollout = await cli(['rollout', ...backend.sourceArgs, '-n', ns, '--no-wait', '--max-concurrent', '2']);
  console.log(`rollout (${ns}):\n${rollout.stdout}${rollout.stderr}`);
  assert.equal(rollout.status, 0, describeRun(rollout));
  const restarted = [...rollout.stdout.matchAll(/^restarted Deployment ([^/]+)\/(\S+)$/gm)].map((match) => `${match[1]}/${match[2]}`).sort();
  assert.deepEqual(restarted, [`${ns}/api`, `${ns}/cart`, `${ns}/web`], describeRun(rollout));
  for (const name of ['api', 'cart', 'web', 'fresh']) {
    const stored = await plane!.ok('GET', `/apis/apps/v1/namespaces/${ns}/deployments/${name}`);
    const restartedAt = stored.spec.template.metadata?.annotations?.['kubectl.kubernetes.io/restartedAt'];
    assert.equal(restartedAt !== undefined, name !== 'fresh', `${name}: restartedAt ${restartedAt}`);
  }

  // No kubelet: the old pods never go away, so each restarted Deployment now has two.
  const old = new Set([api, cart, web].map((pod) => pod.metadata.name));
  const created = (await Promise.all(['api', 'cart', 'web'].map((app) => waitForPods(ns, app, 2)))).flat().filter((pod) => !old.has(pod.metadata.name));
  assert.equal(created.length, 3);
  const after = await cli(['status', ...backend.sourceArgs, '-n', ns, '-o', 'json']);
  const states = Object.fromEntries(JSON.parse(after.stdout).pods.map((pod: any) => [pod.name, pod.state]));
  for (const pod of [...created, fresh]) assert.equal(states[pod.metadata.name], 'up-to-date', `${pod.metadata.name}: ${describeRun(after)}`);
  for (const name of old) assert.equal(states[name], 'stale', `${name} (old pod, still there without a kubelet)`);
  console.log(`status after rollout (${ns}):\n${(await cli(['status', ...backend.sourceArgs, '-n', ns])).stdout}`);

  // Waiting for a rollout that cannot finish (no kubelet: no pod ever becomes available) fails at
  // --timeout, and rollout stops there: one at a time, the first is restarted and the rest are not.
  const waiting = await cli(['rollout', ...backend.sourceArgs, '-n', ns, '--timeout', '2s']);
  assert.equal(waiting.status, 7, describeRun(waiting));
  assert.deepEqual([...waiting.stdout.matchAll(/^restarted (.*)$/gm)].map((match) => match[1]), [`Deployment ${ns}/api`], describeRun(waiting));
  assert.match(waiting.stderr, new RegExp(`error: Deployment ${ns}/api: not rolled out within 2s \\(.*\\)\nstopped: 2 workloads not restarted: Deployment ${ns}/cart, Deployment ${ns}/web`), describeRun(waiting));
}

/** The synthesized objects of an injector with `injections`, selecting namespaces labelled `BACKEND_LABEL=<backend>`. */
function synthesized(injections: Injection[], backend: 'webhook' | 'admissionPolicy'): { manifests: Manifest[]; yamlText: string } {
  return synthChart({
    injections,
    backend,
    ...(backend === 'admissionPolicy' ? { admissionPolicyApiVersion: policyApiVersion } : {}),
    namespaceSelector: { matchLabels: { [BACKEND_LABEL]: backend } },
    // Not what this test is about: no Pod Security warnings for the sidecars' missing securityContext.
    podSecurity: 'privileged',
  });
}

test('webhook backend: status finds the outdated, missing and no-longer-configured pods, rollout restarts exactly their Deployments', { skip }, async () => {
  const a = synthesized(INJECTIONS_A, 'webhook').manifests;
  const synthesizedB = synthesized(INJECTIONS_B, 'webhook');
  const b = synthesizedB.manifests;
  // What `cdk8s synth` writes for config B: the CLI reads its ConfigMap and webhook configuration.
  const distB = path.join(dir, 'dist-webhook');
  fs.mkdirSync(distB);
  fs.writeFileSync(path.join(distB, 'injector.k8s.yaml'), synthesizedB.yamlText);
  const name = 'e2e-day-two';
  const configOf = (manifests: Manifest[]): string => manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json'])!.data['config.json'];
  /** The synthesized webhook configuration, calling `port` on 127.0.0.1 (no Service endpoints here); failurePolicy as synthesized: Ignore. */
  const served = (manifests: Manifest[], port: number) => {
    const configuration = findManifest(manifests, 'MutatingWebhookConfiguration');
    assert.equal(configuration.webhooks[0].failurePolicy, 'Ignore');
    return {
      ...configuration,
      metadata: { name },
      webhooks: configuration.webhooks.map((entry: any) => ({ ...entry, clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(plane!.pki.caCertificate).toString('base64') } })),
    };
  };
  const certificate = { caCertificate: plane!.pki.caCertificate, certificate: plane!.pki.serving.certificate, privateKey: plane!.pki.serving.privateKey };
  let webhookA: InProcessWebhook | undefined;
  await dayTwo({
    namespace: 'e2e-day-two-webhook',
    label: 'webhook',
    sourceArgs: ['--from', distB],
    async installA() {
      webhookA = await startInProcess(configOf(a), certificate);
      webhooks.push(webhookA);
      await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', served(a, webhookA.port));
    },
    async outage() {
      await webhookA!.stop();
      webhooks.splice(webhooks.indexOf(webhookA!), 1);
    },
    async installB() {
      const webhookB = await startInProcess(configOf(b), certificate);
      webhooks.push(webhookB);
      const stored = await plane!.ok('GET', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`);
      await plane!.ok('PUT', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`, { ...served(b, webhookB.port), metadata: { name, resourceVersion: stored.metadata.resourceVersion } });
    },
  });
});

test('admission-policy backend: the same, with the policies writing the hashes', { skip }, async () => {
  const synthesizedB = synthesized(INJECTIONS_B, 'admissionPolicy');
  const policyObjects = (manifests: Manifest[]) => manifests.filter((m) => m.kind === 'MutatingAdmissionPolicy' || m.kind === 'MutatingAdmissionPolicyBinding');
  const base = `/apis/admissionregistration.k8s.io/${policyApiVersion}`;
  const plural = (object: Manifest) => (object.kind === 'MutatingAdmissionPolicy' ? 'mutatingadmissionpolicies' : 'mutatingadmissionpolicybindings');
  const createAll = async (objects: Manifest[]) => {
    for (const object of objects) await plane!.ok('POST', `${base}/${plural(object)}`, object);
  };
  const deleteAll = async (objects: Manifest[], kind?: string) => {
    for (const object of objects) if (!kind || object.kind === kind) await plane!.ok('DELETE', `${base}/${plural(object)}/${object.metadata.name}`);
  };
  const a = policyObjects(synthesized(INJECTIONS_A, 'admissionPolicy').manifests);
  const b = policyObjects(synthesizedB.manifests);
  assert.ok(a.length >= 2 && b.length >= 2, 'policies and bindings synthesized');
  // What `cdk8s synth` writes for config B: the CLI reads the config from the policies' annotation
  // and the scope from the bindings (the apiserver stores both as applied here).
  const distB = path.join(dir, 'dist-policy');
  fs.mkdirSync(distB);
  fs.writeFileSync(path.join(distB, 'injector.k8s.yaml'), synthesizedB.yamlText);
  await dayTwo({
    namespace: 'e2e-day-two-policy',
    label: 'admissionPolicy',
    sourceArgs: ['--from', distB],
    installA: () => createAll(a),
    // The bindings go: the policies are no longer in force, as a webhook that is down.
    outage: () => deleteAll(a, 'MutatingAdmissionPolicyBinding'),
    async installB() {
      await deleteAll(a, 'MutatingAdmissionPolicy');
      await createAll(b);
    },
  });
});
