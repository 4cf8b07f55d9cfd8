// npm run e2e: `rollout --in-place` against a real kube-apiserver and kube-controller-manager (its
// Deployment, ReplicaSet and EndpointSlice controllers; the node lifecycle controller is off, as there
// is no node to report). There is no kubelet: test/e2e/support/simulated-kubelet.ts plays its part
// (binding, container states, restarts on an image change, Ready from containers and readiness gates)
// through the apiserver, as the kubelet writes pods/status. What the real kubelet does is checked on a
// real node (docs/day-two.md); what this file checks is the apiserver's side:
// 1. The apiserver itself: a new pod's status is reset at CREATE (so no webhook can set the readiness
//    gate's condition there), readinessGates cannot be added to a pod, and the guarded image patch is
//    applied whole or refused whole on a stale resourceVersion.
// 2. The readiness gate and its condition, through the webhook and through the admission policies:
//    the gate at CREATE, the condition True on the first status write (the Service's EndpointSlice
//    then lists the pod ready).
// 3. The CLI as a process: status, rollout --in-place --dry-run, --canary 1, --continue, status again,
//    --undo. Each pod keeps its uid, the app container its container and restartCount 0, envoy
//    restarts once on the new image, and each pod leaves the EndpointSlice before its image changes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { applyPatch, type Operation } from 'fast-json-patch';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { type Injection, annotationKeys, injectionHash, readinessConditionType, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { inPlacePatch, inPlacePlan } from '../../webhook/fleet/in-place-plan';
import { createRequestFor } from '../../webhook/fleet/admission-request';
import { type CliRun, describeRun, runCliAsync } from '../support/cli-process';
import { type Manifest, findManifest, makeTempDir, synthChart } from '../support/synth-helpers';
import { type InProcessWebhook, startInProcess, until } from '../support/webhook-harness';
import { ControlPlane, binaryVersion, findBinariesWithControllers } from './support/control-plane';
import { startPolicyServingPlane } from './support/policy-plane';
import { SimulatedKubelet } from './support/simulated-kubelet';

const binaries = findBinariesWithControllers();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (in place) ${skip}`);

const PREFIX = 'sidecar-injector.io';
const KEYS = annotationKeys(PREFIX);
const GATE = readinessConditionType(PREFIX);
const BACKEND_LABEL = 'e2e.sidecar-injector.io/in-place';
const NODE = 'e2e-node';
const envoy = (image: string): Injection => ({ name: 'envoy', trigger: { type: 'always' }, readinessGate: true, containers: [{ name: 'envoy', image, ports: [{ containerPort: 15001 }] }] });
const A = [envoy('envoyproxy/envoy:v1.31.0')];
const B = [envoy('envoyproxy/envoy:v1.31.1')];

let plane: ControlPlane | undefined;
let policyApiVersion: AdmissionPolicyApiVersion = 'v1';
const webhooks: InProcessWebhook[] = [];
const kubelets: SimulatedKubelet[] = [];
const dir = makeTempDir('in-place-e2e');

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  let version: string;
  ({ plane, version, policyApiVersion } = await startPolicyServingPlane(bins, { controllerManagerFlags: ['--controllers=-node-lifecycle-controller'] }));
  await SimulatedKubelet.createNode(plane, NODE);
  console.log(`kube-apiserver ${version}; kube-controller-manager ${binaryVersion(bins.kubeControllerManager)}; policies as admissionregistration.k8s.io/${policyApiVersion}`);
});

after(async () => {
  for (const kubelet of kubelets) await kubelet.stop();
  for (const webhook of webhooks) await webhook.stop();
  await plane?.stop();
});

function cli(args: readonly string[]): Promise<CliRun> {
  return runCliAsync(args, plane!.kubeconfig);
}

async function createNamespace(name: string, label?: string): Promise<void> {
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: label ? { [BACKEND_LABEL]: label } : {} } });
}

function startKubelet(namespace: string): SimulatedKubelet {
  const kubelet = new SimulatedKubelet(plane!, namespace, NODE);
  kubelets.push(kubelet);
  kubelet.start();
  return kubelet;
}

async function podsOf(namespace: string, app: string): Promise<any[]> {
  return (await plane!.ok('GET', `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(`app=${app}`)}`)).items;
}

/** The endpoints of the Service's EndpointSlices: pod name -> ready. */
async function endpointsOf(namespace: string, service: string): Promise<Record<string, boolean>> {
  const slices = (await plane!.ok('GET', `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices?labelSelector=${encodeURIComponent(`kubernetes.io/service-name=${service}`)}`)).items;
  return Object.fromEntries(slices.flatMap((slice: any) => (slice.endpoints ?? []).map((endpoint: any) => [endpoint.targetRef?.name, endpoint.conditions?.ready !== false])));
}

function deployment(name: string, replicas: number): Manifest {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0', ports: [{ containerPort: 8080 }] }] } },
    },
  };
}

function service(name: string): Manifest {
  return { apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { selector: { app: name }, ports: [{ port: 80, targetPort: 8080 }] } };
}

/** The Deployment's pods once `count` are Ready, with the gate's condition True and listed ready in the Service's EndpointSlice. */
async function readyPods(namespace: string, app: string, count: number, kubelet: SimulatedKubelet): Promise<any[]> {
  let last = '';
  return until(`${count} Ready pods of ${namespace}/${app} in its EndpointSlice`, 90_000, async () => {
    const pods = await podsOf(namespace, app);
    const endpoints = await endpointsOf(namespace, app);
    last = JSON.stringify({ endpoints, pods: pods.map((pod) => [pod.metadata.name, (pod.status.conditions ?? []).map((c: any) => `${c.type}=${c.status}`)]), kubelet: kubelet.error });
    const ready = pods.filter((pod) => (pod.status.conditions ?? []).some((c: any) => c.type === 'Ready' && c.status === 'True') && endpoints[pod.metadata.name] === true);
    return pods.length === count && ready.length === count ? pods : undefined;
  }).catch((error) => {
    throw new Error(`${(error as Error).message}; last: ${last}`);
  });
}

test('the apiserver: a new pod\'s status is reset at CREATE, readinessGates cannot be added to a pod, and the guarded image patch is applied whole or refused whole', { skip }, async () => {
  const ns = 'e2e-in-place-api';
  await createNamespace(ns);
  // 1. Status given at CREATE is dropped: no webhook answer at CREATE can set the gate's condition.
  const created = await plane!.ok('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'gated' },
    spec: { containers: [{ name: 'app', image: 'app:1' }], readinessGates: [{ conditionType: GATE }] },
    status: { conditions: [{ type: GATE, status: 'True' }] },
  });
  assert.deepEqual(created.status.conditions ?? [], [], `a new pod's status as stored: ${JSON.stringify(created.status)}`);

  // 2. A readiness gate cannot be added later: only the images (and a few scheduling fields) of a pod change.
  const bare = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'plain', namespace: ns, labels: { app: 'plain' } }, spec: { containers: [{ name: 'app', image: 'registry.example/app:1.0' }] } };
  const plainA = resolveInjectorConfig({ annotationPrefix: PREFIX, injections: [{ ...A[0], readinessGate: false }] });
  const storedPlain = await plane!.ok('POST', `/api/v1/namespaces/${ns}/pods`, applyPatch(structuredClone(bare), decodePatch(evaluate(createRequestFor(bare, ns, 'u'), plainA).response.patch), true, false).newDocument);
  const addGate = await plane!.request('PATCH', `/api/v1/namespaces/${ns}/pods/plain`, [{ op: 'add', path: '/spec/readinessGates', value: [{ conditionType: GATE }] }], 'application/json-patch+json');
  assert.equal(addGate.status, 422, JSON.stringify(addGate.body));
  assert.match(addGate.body.message, /pod updates may not change fields other than/);
  console.log(`adding a readiness gate to a pod: ${addGate.status} ${addGate.body.message.slice(0, 160)}...`);

  // 3. The CLI's patch, as it builds it, against the stored pod: a stale resourceVersion refuses it whole.
  const plainB = { config: resolveInjectorConfig({ annotationPrefix: PREFIX, injections: [{ ...B[0], readinessGate: false }] }), description: 'B' };
  const [podPlan] = inPlacePlan({ pods: [storedPlain], namespaceLabels: new Map(), owners: new Map() }, plainB, { nativeSidecars: 'restart', includeUnknown: false, requireReadinessGate: false }).workloads[0].inPlace;
  const operations = inPlacePatch(storedPlain, podPlan, PREFIX);
  const labelled = await plane!.ok('PATCH', `/api/v1/namespaces/${ns}/pods/plain`, { metadata: { labels: { touched: 'yes' } } }, 'application/merge-patch+json');
  assert.notEqual(labelled.metadata.resourceVersion, storedPlain.metadata.resourceVersion);
  const stale = await plane!.request('PATCH', `/api/v1/namespaces/${ns}/pods/plain`, operations, 'application/json-patch+json');
  console.log(`the in-place patch on a stale resourceVersion: ${stale.status} ${JSON.stringify(stale.body)}`);
  // A failed test is a bare 422 (reason Invalid, no details): the CLI reads the pod again and finds a new resourceVersion.
  assert.deepEqual([stale.status, stale.body.reason, stale.body.message], [422, 'Invalid', 'the server rejected our request due to an error in our request'], JSON.stringify(stale.body));
  const unchanged = await plane!.ok('GET', `/api/v1/namespaces/${ns}/pods/plain`);
  assert.equal(unchanged.spec.containers[1].image, 'envoyproxy/envoy:v1.31.0', 'nothing of the refused patch was applied');
  assert.equal(unchanged.metadata.annotations[KEYS.previousImages], undefined);
  const fresh = inPlacePatch(unchanged, podPlan, PREFIX);
  const applied = await plane!.ok('PATCH', `/api/v1/namespaces/${ns}/pods/plain`, fresh, 'application/json-patch+json');
  assert.equal(applied.spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
  assert.equal(applied.metadata.annotations[KEYS.hashes], `envoy=${injectionHash(plainB.config.injections[0])}`);
  assert.deepEqual(JSON.parse(applied.metadata.annotations[KEYS.previousImages]), { hashes: unchanged.metadata.annotations[KEYS.hashes], images: { envoy: 'envoyproxy/envoy:v1.31.0' } });
  assert.equal(applied.metadata.uid, storedPlain.metadata.uid);
});

function decodePatch(patch: string | undefined): Operation[] {
  return patch ? JSON.parse(Buffer.from(patch, 'base64').toString('utf8')) : [];
}

/** What `cdk8s synth` writes for `injections` on `backend`, selecting namespaces labelled BACKEND_LABEL=<backend>. */
function synthesized(injections: Injection[], backend: 'webhook' | 'admissionPolicy'): { manifests: Manifest[]; yamlText: string } {
  return synthChart({
    injections,
    backend,
    ...(backend === 'admissionPolicy' ? { admissionPolicyApiVersion: policyApiVersion } : {}),
    namespaceSelector: { matchLabels: { [BACKEND_LABEL]: backend } },
    podSecurity: 'privileged',
  });
}

test('webhook backend: the gate and its condition, then rollout --in-place: canary, continue, status, undo', { skip }, async () => {
  const ns = 'e2e-in-place-webhook';
  const name = 'e2e-in-place';
  const certificate = { caCertificate: plane!.pki.caCertificate, certificate: plane!.pki.serving.certificate, privateKey: plane!.pki.serving.privateKey };
  const configOf = (manifests: Manifest[]): string => manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json'])!.data['config.json'];
  const served = (manifests: Manifest[], port: number) => {
    const configuration = findManifest(manifests, 'MutatingWebhookConfiguration');
    assert.deepEqual(configuration.webhooks.map((w: any) => w.name.split('.')[0]), ['inject', 'sidecars-ready']);
    return {
      ...configuration,
      metadata: { name },
      webhooks: configuration.webhooks.map((entry: any) => ({ ...entry, clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(plane!.pki.caCertificate).toString('base64') } })),
    };
  };
  const a = synthesized(A, 'webhook');
  const b = synthesized(B, 'webhook');
  const distB = path.join(dir, 'dist-webhook');
  fs.mkdirSync(distB);
  fs.writeFileSync(path.join(distB, 'injector.k8s.yaml'), b.yamlText);
  const source = ['--from', distB];

  await createNamespace(ns, 'webhook');
  const webhookA = await startInProcess(configOf(a.manifests), certificate);
  webhooks.push(webhookA);
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations', served(a.manifests, webhookA.port));
  const kubelet = startKubelet(ns);
  await plane!.ok('POST', `/api/v1/namespaces/${ns}/services`, service('web'));
  await plane!.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deployment('web', 3));
  const before = await readyPods(ns, 'web', 3, kubelet);
  for (const pod of before) {
    assert.deepEqual(pod.spec.readinessGates, [{ conditionType: GATE }], 'the gate, added at CREATE');
    const condition = pod.status.conditions.find((c: any) => c.type === GATE);
    assert.deepEqual([condition?.status, condition?.reason], ['True', 'SidecarsNotHeld'], `${pod.metadata.name}: the condition, added by the webhook on the kubelet's first status write`);
  }

  // Config B: the webhook restarts with it.
  const webhookB = await startInProcess(configOf(b.manifests), certificate);
  webhooks.push(webhookB);
  const stored = await plane!.ok('GET', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`);
  await plane!.ok('PUT', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${name}`, { ...served(b.manifests, webhookB.port), metadata: { name, resourceVersion: stored.metadata.resourceVersion } });
  await webhookA.stop();
  webhooks.splice(webhooks.indexOf(webhookA), 1);

  const outdated = await cli(['status', ...source, '-n', ns]);
  assert.equal(outdated.status, 3, describeRun(outdated));
  const dryRun = await cli(['rollout', '--in-place', ...source, '-n', ns, '--dry-run']);
  console.log(`rollout --in-place --dry-run:\n${dryRun.stdout}${dryRun.stderr}`);
  assert.equal(dryRun.status, 0, describeRun(dryRun));
  assert.match(dryRun.stdout, /plan: upgrade 3 pods in place \(1 at a time per workload, 1 workload at a time\), restart 0 workloads\n  Deployment e2e-in-place-webhook\/web: in place, 3 pods\n/);
  assert.equal([...dryRun.stdout.matchAll(/envoy envoyproxy\/envoy:v1\.31\.0 -> envoyproxy\/envoy:v1\.31\.1 \[readiness gate sidecar-injector\.io\/sidecars-ready: out of its Services first\]/g)].length, 3, dryRun.stdout);

  // Watch the EndpointSlice while the CLI runs: each pod must be listed not ready before its image changes.
  const notReadyAt = new Map<string, number>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      const endpoints = await endpointsOf(ns, 'web').catch(() => ({}) as Record<string, boolean>);
      for (const [pod, ready] of Object.entries(endpoints)) if (!ready && !notReadyAt.has(pod)) notReadyAt.set(pod, Date.now());
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  const canary = await cli(['rollout', '--in-place', ...source, '-n', ns, '--canary', '1', '--drain-grace', '0s', '--timeout', '90s']);
  console.log(`rollout --in-place --canary 1:\n${canary.stdout}${canary.stderr}`);
  assert.equal(canary.status, 0, describeRun(canary));
  assert.match(canary.stdout, /canary: 1 pod upgraded; 2 pods and 0 workload restarts left/);
  const rest = await cli(['rollout', '--in-place', ...source, '-n', ns, '--continue', '--drain-grace', '0s', '--timeout', '90s']);
  console.log(`rollout --in-place --continue:\n${rest.stdout}${rest.stderr}`);
  assert.equal(rest.status, 0, describeRun(rest));
  assert.match(rest.stdout, /upgraded in place: 2 pods\n/);
  watching = false;
  await watcher;

  const afterPods = await readyPods(ns, 'web', 3, kubelet);
  const byUid = new Map(before.map((pod) => [pod.metadata.uid, pod]));
  for (const pod of afterPods) {
    const was = byUid.get(pod.metadata.uid);
    assert.ok(was, `${pod.metadata.name}: the same pod (uid ${pod.metadata.uid})`);
    assert.equal(pod.spec.containers[1].image, 'envoyproxy/envoy:v1.31.1');
    const app = (p: any) => p.status.containerStatuses.find((c: any) => c.name === 'app');
    const proxy = (p: any) => p.status.containerStatuses.find((c: any) => c.name === 'envoy');
    assert.deepEqual([app(pod).containerID, app(pod).restartCount], [app(was).containerID, 0], `${pod.metadata.name}: the app container kept running`);
    assert.equal(proxy(pod).restartCount, 1, `${pod.metadata.name}: envoy restarted once`);
    assert.equal(pod.status.conditions.find((c: any) => c.type === GATE).status, 'True');
    const stoppedAt = kubelet.events.find((event) => event.pod === pod.metadata.name && event.what === 'envoy stopped for envoyproxy/envoy:v1.31.1')?.at;
    assert.ok(stoppedAt !== undefined, `${pod.metadata.name}: the kubelet saw the new image`);
    assert.ok((notReadyAt.get(pod.metadata.name) ?? Infinity) <= stoppedAt, `${pod.metadata.name}: out of the EndpointSlice at ${notReadyAt.get(pod.metadata.name)}, before envoy stopped at ${stoppedAt}`);
  }
  const upToDate = await cli(['status', ...source, '-n', ns]);
  console.log(`status after rollout --in-place:\n${upToDate.stdout}`);
  assert.equal(upToDate.status, 0, describeRun(upToDate));
  const template = await plane!.ok('GET', `/apis/apps/v1/namespaces/${ns}/deployments/web`);
  assert.equal(template.metadata.generation, 1, 'the Deployment was not touched');

  const undo = await cli(['rollout', '--in-place', '--undo', ...source, '-n', ns, '--drain-grace', '0s', '--timeout', '90s']);
  console.log(`rollout --in-place --undo:\n${undo.stdout}${undo.stderr}`);
  assert.equal(undo.status, 0, describeRun(undo));
  assert.deepEqual((await readyPods(ns, 'web', 3, kubelet)).map((pod) => pod.spec.containers[1].image), Array(3).fill('envoyproxy/envoy:v1.31.0'));
  assert.equal((await cli(['status', ...source, '-n', ns])).status, 3, 'outdated again');
});

test('admission-policy backend: the same gate at CREATE and condition on the first status write', { skip }, async () => {
  const ns = 'e2e-in-place-policy';
  const objects = synthesized(A, 'admissionPolicy').manifests.filter((m) => m.kind.startsWith('MutatingAdmissionPolicy'));
  assert.ok(objects.some((m) => m.metadata.name.endsWith('.pod-status')), 'the pod-status policy is synthesized');
  const base = `/apis/admissionregistration.k8s.io/${policyApiVersion}`;
  for (const object of objects) await plane!.ok('POST', `${base}/${object.kind === 'MutatingAdmissionPolicy' ? 'mutatingadmissionpolicies' : 'mutatingadmissionpolicybindings'}`, object);
  await createNamespace(ns, 'admissionPolicy');
  // Policies take effect once the apiserver has loaded them: a dry-run pod shows when.
  await until('the policies in force', 60_000, async () => {
    const probe = await plane!.request('POST', `/api/v1/namespaces/${ns}/pods?dryRun=All`, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'probe' }, spec: { containers: [{ name: 'app', image: 'app:1' }] } });
    return probe.body?.spec?.readinessGates?.[0]?.conditionType === GATE ? true : undefined;
  });
  const kubelet = startKubelet(ns);
  await plane!.ok('POST', `/api/v1/namespaces/${ns}/services`, service('web'));
  await plane!.ok('POST', `/apis/apps/v1/namespaces/${ns}/deployments`, deployment('web', 1));
  const [pod] = await readyPods(ns, 'web', 1, kubelet);
  assert.deepEqual(pod.spec.readinessGates, [{ conditionType: GATE }]);
  const condition = pod.status.conditions.find((c: any) => c.type === GATE);
  assert.deepEqual([condition?.status, condition?.reason, condition?.message], ['True', 'SidecarsNotHeld', 'no in-place sidecar upgrade holds this pod out of its Services']);
});
