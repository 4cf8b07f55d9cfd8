// npm run e2e: pods that set pod-level resources (`spec.resources`, KEP-2837, on by default from
// Kubernetes 1.34) in a namespace the default app injects, through both backends, on a real
// kube-apiserver (envtest style). The Kubernetes website's pod-level-resources example and its variants
// (requests only, limits only, a native sidecar of its own, the nginx sidecar requested too) must be
// admitted injected; the stored spec.resources is the one the engine predicts (by value: the apiserver
// keeps quantities in canonical form) and valid by the apiserver's rules (test/support/pod-level-resources.ts);
// each is printed. On 1.32 and 1.33, where the feature is alpha and off (the website's pod was admitted
// there only because the apiserver dropped spec.resources), the apiserver runs with its gate on, as a
// cluster trying it early does.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { type InjectorConfig, type ResolvedInjectorConfig, parseQuantity, resolveInjectorConfig } from '../../webhook/config';
import { evaluate } from '../../webhook/engine';
import { Manifest, findManifest, synthDefaultAppToTemp } from '../support/synth-helpers';
import { InProcessWebhook, startInProcess } from '../support/webhook-harness';
import { admittedSpec, podLevelViolations, websitePod } from '../support/pod-level-resources';
import { applyResponse, loadReview } from '../support/recorded-reviews';
import { ControlPlane, binaryVersion, findBinaries } from './support/control-plane';
import { startPolicyServingPlane } from './support/policy-plane';
import { locallyServed } from './support/local-webhook';

type Json = Record<string, any>;

const binaries = findBinaries();
const minor = typeof binaries === 'string' ? 0 : Number(/v1\.(\d+)/.exec(binaryVersion(binaries.kubeApiserver))?.[1] ?? 0);
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (pod-level resources) ${skip}`);
const featureGates = minor < 34 ? ['PodLevelResources=true'] : [];

const NAMESPACES = { webhook: 'e2e-pod-level-webhook', share: 'e2e-pod-level-share', policy: 'e2e-pod-level-policy' } as const;
const NGINX_REQUESTED = { 'sidecar-injector-webhook.morven.me/inject': 'true' };

/** The website's pod, named, with `resources`, init containers and annotations as given. */
function variant(name: string, resources: Json, initContainers?: Json[], annotations: Record<string, string> = {}): Manifest {
  return websitePod(resources, initContainers, { name, annotations }) as Manifest;
}

const WEBSITE = { limits: { cpu: '1', memory: '200Mi' }, requests: { cpu: '1', memory: '100Mi' } };
const VARIANTS: [what: string, pod: () => Manifest][] = [
  ["the website's pod-level-resources pod", () => variant('pod-resources-demo', WEBSITE)],
  ['requests only', () => variant('requests-only', { requests: WEBSITE.requests })],
  ['limits only', () => variant('limits-only', { limits: WEBSITE.limits })],
  ['a native sidecar of its own (aggregate 320Mi against 256Mi before)', () =>
    variant('own-native-sidecar', { requests: { cpu: '1', memory: '256Mi' }, limits: { cpu: '1', memory: '256Mi' } }, [
      { name: 'log-shipper', image: 'busybox', command: ['sleep', 'inf'], restartPolicy: 'Always', resources: { requests: { memory: '64Mi' }, limits: { memory: '128Mi' } } },
    ])],
  ['the nginx sidecar requested too (aggregate 210Mi before)', () => variant('nginx-requested', WEBSITE, undefined, NGINX_REQUESTED)],
];

let plane: ControlPlane | undefined;
let webhook: InProcessWebhook | undefined;
let shareWebhook: InProcessWebhook | undefined;
let policyApiVersion: AdmissionPolicyApiVersion = 'v1';
let manifests: Manifest[] = [];

const describeResponse = (response: { status: number; body: any }) => `${response.status} ${response.body?.message ?? JSON.stringify(response.body).slice(0, 500)}`;

function dryRunCreate(namespace: string, pod: Manifest) {
  return plane!.request('POST', `/api/v1/namespaces/${namespace}/pods?dryRun=All&fieldValidation=Strict`, { ...pod, metadata: { ...pod.metadata, namespace } });
}

/** Waits until a plain pod created in `namespace` comes back with Envoy (the apiserver loads webhook configurations and policies asynchronously). */
async function waitUntilInjecting(namespace: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const response = await dryRunCreate(namespace, { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'e2e-probe' }, spec: { containers: [{ name: 'app', image: 'busybox' }] } });
    if (response.status === 201 && response.body.spec.containers.some((c: Json) => c.name === 'envoy')) return;
    last = describeResponse(response);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`namespace ${namespace}: no injection within 60 s (last: ${last})`);
}

/** `spec.resources` by value: quantities as nano-units, so "228Mi" and "239075328" are the same. */
function byValue(resources: Json | undefined): Json {
  const out: Json = {};
  for (const field of ['requests', 'limits']) {
    if (!resources?.[field]) continue;
    out[field] = Object.fromEntries(Object.entries(resources[field]).map(([name, value]) => [name, String(parseQuantity(value))]));
  }
  return out;
}

/** The pod's spec as the engine predicts the apiserver stores it with `config`. */
function predicted(pod: Manifest, config: ResolvedInjectorConfig): Json {
  const request = structuredClone(loadReview('pod-create-sleep').request);
  return admittedSpec(pod.spec, minor >= 37 ? '1.37' : '1.36', (spec) => {
    const object = { ...pod, spec };
    return (applyResponse(object, evaluate({ ...request, object, name: pod.metadata.name }, config).response) as Json).spec;
  }).spec;
}

/** Every variant created in `namespace`: admitted, injected, its spec.resources the predicted one, valid; printed. */
async function assertVariantsAdmitted(namespace: string, backend: string, config: ResolvedInjectorConfig): Promise<void> {
  for (const [what, make] of VARIANTS) {
    const pod = make();
    const response = await dryRunCreate(namespace, pod);
    assert.equal(response.status, 201, `${backend}, ${what}: ${describeResponse(response)}`);
    const stored = response.body.spec;
    const names = [...stored.containers, ...(stored.initContainers ?? [])].map((c: Json) => c.name);
    assert.ok(names.includes('envoy'), `${backend}, ${what}: not injected: ${names.join(', ')}`);
    if (pod.metadata.annotations?.['sidecar-injector-webhook.morven.me/inject']) assert.ok(names.includes('sidecar-nginx'), `${backend}, ${what}: no nginx sidecar: ${names.join(', ')}`);
    assert.deepEqual(podLevelViolations(stored), [], `${backend}, ${what}: the stored pod breaks the pod-level rules`);
    assert.deepEqual(byValue(stored.resources), byValue(predicted(pod, config).resources), `${backend}, ${what}: stored spec.resources (actual) against the engine's prediction (expected)`);
    console.log(`${backend}, ${what}: admitted with [${names.join(', ')}], spec.resources ${JSON.stringify(stored.resources)}`);
  }
}

/** The config the default app synthesizes (the policies are made from the same). */
function synthesizedConfig(): ResolvedInjectorConfig {
  const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']);
  assert.ok(configMap, 'no ConfigMap with config.json in the synthesized output');
  return resolveInjectorConfig(JSON.parse(configMap.data['config.json']) as InjectorConfig);
}

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  let version: string;
  ({ plane, version, policyApiVersion } = await startPolicyServingPlane(bins, { featureGates }));
  console.log(`kube-apiserver ${version}${featureGates.length ? ` (--feature-gates ${featureGates.join(',')})` : ''}; etcd ${binaryVersion(bins.etcd)}; policies as admissionregistration.k8s.io/${policyApiVersion}`);
  manifests = synthDefaultAppToTemp().manifests;
});

after(async () => {
  await webhook?.stop();
  await shareWebhook?.stop();
  await plane?.stop();
});

test('through the webhook (podResources "add", the default): the website\'s pod and its variants are admitted with their sidecars, spec.resources raised', { skip }, async () => {
  const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']);
  assert.ok(configMap, 'no ConfigMap with config.json in the synthesized output');
  webhook = await startInProcess(configMap.data['config.json'], { caCertificate: plane!.pki.caCertificate, certificate: plane!.pki.serving.certificate, privateKey: plane!.pki.serving.privateKey });
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  const labels = synthesized.webhooks[0].namespaceSelector.matchLabels;
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', locallyServed(synthesized, 'e2e-pod-level-add', webhook.port, plane!.pki.caCertificate, { matchLabels: { ...labels, 'e2e.sidecar-injector.io/pod-level': 'add' } }));
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.webhook, labels: { ...labels, 'e2e.sidecar-injector.io/pod-level': 'add' } } });
  await waitUntilInjecting(NAMESPACES.webhook);
  await assertVariantsAdmitted(NAMESPACES.webhook, 'webhook', synthesizedConfig());
});

test('through the webhook with podResources "share": the same pods are admitted, spec.resources as written, the sidecars inside it', { skip }, async () => {
  const synthesizedJson = JSON.parse(manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json'])!.data['config.json']) as InjectorConfig;
  const config = resolveInjectorConfig({ ...synthesizedJson, injections: synthesizedJson.injections.map((injection) => (injection.containers?.length ? { ...injection, podResources: 'share' as const } : injection)) });
  shareWebhook = await startInProcess(config, { caCertificate: plane!.pki.caCertificate, certificate: plane!.pki.serving.certificate, privateKey: plane!.pki.serving.privateKey });
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  const selector = { matchLabels: { 'e2e.sidecar-injector.io/pod-level': 'share' } };
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', locallyServed(synthesized, 'e2e-pod-level-share', shareWebhook.port, plane!.pki.caCertificate, selector));
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.share, labels: selector.matchLabels } });
  await waitUntilInjecting(NAMESPACES.share);
  await assertVariantsAdmitted(NAMESPACES.share, 'webhook (share)', config);
  const website = await dryRunCreate(NAMESPACES.share, VARIANTS[0][1]());
  assert.deepEqual(website.body.spec.resources, WEBSITE, 'share keeps the pod\'s own figures');
});

test('through the policies (INJECTOR_BACKEND=admissionPolicy): the same pods are admitted with their sidecars, spec.resources as the webhook makes it', { skip }, async () => {
  // Policy-only from here: the webhook configurations above select other namespaces.
  const policyApp = synthDefaultAppToTemp(undefined, undefined, { backend: 'admissionPolicy', admissionPolicyApiVersion: policyApiVersion }).manifests;
  const policies = policyApp.filter((object) => /^(Mutating|Validating)AdmissionPolicy(Binding)?$/.test(object.kind));
  assert.ok(policies.some((object) => object.kind === 'MutatingAdmissionPolicy'), 'no policies synthesized');
  for (const object of policies) {
    const plural = `${object.kind.toLowerCase()}s`.replace(/ys$/, 'ies');
    await plane!.ok('POST', `/apis/${object.apiVersion}/${plural}?fieldValidation=Strict`, object);
  }
  const labels = policies.find((object) => object.kind === 'MutatingAdmissionPolicyBinding')!.spec.matchResources.namespaceSelector.matchLabels;
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.policy, labels } });
  await waitUntilInjecting(NAMESPACES.policy);
  await assertVariantsAdmitted(NAMESPACES.policy, 'policies', synthesizedConfig());
});
