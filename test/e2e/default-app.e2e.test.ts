// npm run e2e: the default app's output as a cluster meets it, on a real kube-apiserver (envtest style),
// with Pod Security admission on (it is one of the apiserver's default admission plugins).
//
// 1. Every object `npm run synth` writes is created as it is, with strict field validation.
// 2. The webhook's own pod passes Pod Security "restricted" in its namespace, which enforces it.
// 3. The webhook runs on 127.0.0.1 with the synthesized config.json; the synthesized webhook
//    configuration is registered as it is but for a URL clientConfig (no Service endpoints here) and
//    failurePolicy Fail (an error must fail the test, not skip an injection). Pods and Deployments are
//    then created with dryRun=All in a namespace that enforces "restricted": the apiserver must admit
//    them injected, keep a Guaranteed pod Guaranteed (its own qosClass), and put Envoy among a Job pod's
//    init containers as a native sidecar.
// 4. The control: seed 000's plain Envoy (no securityContext), injected the same way into the same
//    kind of namespace, is rejected by Pod Security admission, while the pod alone is admitted.
// 5. The default app synthesized policy-only (INJECTOR_BACKEND=admissionPolicy, in the version the
//    apiserver serves), created as synthesized, injects the same pods in a namespace enforcing
//    restricted, and keeps a Guaranteed pod Guaranteed (the apiserver's status.qosClass).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import type { AdmissionPolicyApiVersion } from '../../charts/admission-policy';
import { Injection, resolveInjectorConfig } from '../../webhook/config';
import { Manifest, describeManifest, findManifest, synthDefaultAppToTemp } from '../support/synth-helpers';
import { InProcessWebhook, startInProcess } from '../support/webhook-harness';
import { ControlPlane, binaryVersion, findBinaries } from './support/control-plane';
import { startPolicyServingPlane } from './support/policy-plane';
import { locallyServed } from './support/local-webhook';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (default app) ${skip}`);

const PREFIX = 'sidecar-injector.io';
const SEED_000_LABEL = 'e2e.sidecar-injector.io/seed-000';
const NAMESPACES = {
  /** Selected by the synthesized webhook configuration; enforces restricted. */
  injected: 'e2e-apps-restricted',
  /** Selected by seed 000's plain-Envoy webhook only; enforces restricted. */
  seed000: 'e2e-seed000-restricted',
  /** Selected by neither; enforces restricted. */
  plain: 'e2e-plain-restricted',
  /** Selected by the admission policies' bindings only; enforces restricted. */
  policy: 'e2e-policy-restricted',
} as const;
const ENFORCE_RESTRICTED = { 'pod-security.kubernetes.io/enforce': 'restricted', 'pod-security.kubernetes.io/enforce-version': 'latest' };

/** Seed 000's injection as its README has it: Envoy, always, nothing else. */
const SEED_000: Injection[] = [{ name: 'envoy', trigger: { type: 'always' }, containers: [{ name: 'envoy', image: 'envoyproxy/envoy:v1.20.3' }] }];

let plane: ControlPlane | undefined;
let webhook: InProcessWebhook | undefined;
let seed000Webhook: InProcessWebhook | undefined;
let policyApiVersion: AdmissionPolicyApiVersion = 'v1alpha1';
const manifests: Manifest[] = [];

/** Resource paths by apiVersion and kind, from the apiserver's discovery documents. */
const discovered = new Map<string, { plural: string; namespaced: boolean }>();
async function collectionPath(object: Manifest): Promise<string> {
  const apiVersion: string = object.apiVersion;
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const key = `${apiVersion}/${object.kind}`;
  if (!discovered.has(key)) {
    const list = await plane!.ok('GET', base);
    for (const resource of list.resources) {
      if (!resource.name.includes('/')) discovered.set(`${apiVersion}/${resource.kind}`, { plural: resource.name, namespaced: resource.namespaced });
    }
  }
  const resource = discovered.get(key);
  if (!resource) throw new Error(`the apiserver serves no ${key}`);
  return resource.namespaced ? `${base}/namespaces/${object.metadata.namespace ?? 'default'}/${resource.plural}` : `${base}/${resource.plural}`;
}

async function dryRunCreate(namespace: string, object: Manifest) {
  const placed = { ...object, metadata: { ...object.metadata, namespace } };
  return plane!.request('POST', `${await collectionPath(placed)}?dryRun=All&fieldValidation=Strict`, placed);
}

/** An app pod that passes "restricted" on its own. */
function restrictedPod(name: string, metadata: Record<string, unknown> = {}, resources?: Record<string, unknown>): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, ...metadata },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [
        {
          name: 'my-container',
          image: 'registry.example/app:1.0',
          securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
          ...(resources ? { resources } : {}),
        },
      ],
    },
  };
}

const containerNames = (spec: any, field: 'containers' | 'initContainers') => (spec?.[field] ?? []).map((c: any) => c.name);
const describe = (response: { status: number; body: any }) => `${response.status} ${response.body?.message ?? JSON.stringify(response.body).slice(0, 500)}`;

/** Waits until pods created in `namespace` come back injected (the apiserver loads webhook configurations asynchronously). */
async function waitUntilInjecting(namespace: string): Promise<void> {
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const response = await dryRunCreate(namespace, restrictedPod('e2e-probe'));
    if (response.status === 201 && response.body.metadata?.annotations?.[`${PREFIX}/status`]?.includes('envoy')) return;
    // Seed 000's injection is rejected by Pod Security once the webhook is called: that is also a sign.
    if (response.status === 403 && /envoy/.test(response.body?.message ?? '')) return;
    last = describe(response);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`namespace ${namespace}: no injection within 60 s (last: ${last})`);
}

/** Creates every object as it is, with strict field validation; the ones the apiserver refused, with why. */
async function createAsSynthesized(objects: readonly Manifest[]): Promise<string[]> {
  const failures: string[] = [];
  for (const object of objects) {
    const response = await plane!.request('POST', `${await collectionPath(object)}?fieldValidation=Strict`, object);
    if (response.status !== 201) failures.push(`${describeManifest(object)}: ${describe(response)}`);
  }
  return failures;
}

/** The webhook on 127.0.0.1 with `config`, serving the control plane's certificate. */
function startLocalWebhook(config: Parameters<typeof startInProcess>[0]): Promise<InProcessWebhook> {
  return startInProcess(config, { caCertificate: plane!.pki.caCertificate, certificate: plane!.pki.serving.certificate, privateKey: plane!.pki.serving.privateKey });
}

/**
 * In `namespace` (enforcing restricted): a pod that meets every pod injection of the default app at
 * once (Envoy always, nginx by annotation, the probe merge by label) is admitted with all of them, and
 * a Job's pod gets Envoy as a native sidecar, so the Job can complete.
 */
async function assertSeedPodsInjected(namespace: string): Promise<void> {
  const app = restrictedPod('everything', { labels: { app: 'myApp' }, annotations: { 'sidecar-injector-webhook.morven.me/inject': 'true' } });
  app.spec.containers[0].readinessProbe = { httpGet: { path: '/healthz', port: 8080 } };
  const everything = await dryRunCreate(namespace, app);
  assert.equal(everything.status, 201, describe(everything));
  assert.deepEqual(containerNames(everything.body.spec, 'containers'), ['my-container', 'envoy', 'sidecar-nginx']);
  assert.equal(everything.body.spec.containers[0].readinessProbe?.initialDelaySeconds, 10);
  assert.equal(everything.body.spec.containers[0].readinessProbe?.httpGet?.path, '/healthz');

  const jobOwner = { apiVersion: 'batch/v1', kind: 'Job', name: 'batch', uid: '6f0c7a52-0a6e-4c35-9a5e-3d4f1f0e2b11', controller: true };
  const jobPod = await dryRunCreate(namespace, restrictedPod('batch-x7k2p', { ownerReferences: [jobOwner] }));
  assert.equal(jobPod.status, 201, describe(jobPod));
  assert.deepEqual(containerNames(jobPod.body.spec, 'containers'), ['my-container']);
  assert.equal(jobPod.body.spec.initContainers?.find((c: any) => c.name === 'envoy')?.restartPolicy, 'Always');
}

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  manifests.push(...synthDefaultAppToTemp().manifests);
  let version: string;
  ({ plane, version, policyApiVersion } = await startPolicyServingPlane(bins));
  console.log(`kube-apiserver ${version}; etcd ${binaryVersion(bins.etcd)}; policies as admissionregistration.k8s.io/${policyApiVersion}`);
});

after(async () => {
  await webhook?.stop();
  await seed000Webhook?.stop();
  await plane?.stop();
});

test('every object the default app synthesizes is created as it is, with strict field validation', { skip }, async () => {
  assert.deepEqual(await createAsSynthesized(manifests), []);
  assert.ok(manifests.length >= 9, `expected the whole default app, got ${manifests.map(describeManifest).join(', ')}`);
});

test("the webhook's own pod passes Pod Security restricted in its namespace, which enforces it", { skip }, async () => {
  const deployment = findManifest(manifests, 'Deployment');
  const namespace = deployment.metadata.namespace;
  const stored = await plane!.ok('GET', `/api/v1/namespaces/${namespace}`);
  assert.equal(stored.metadata.labels['pod-security.kubernetes.io/enforce'], 'restricted');
  const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'webhook-pod', labels: deployment.spec.template.metadata?.labels }, spec: deployment.spec.template.spec };
  const admitted = await dryRunCreate(namespace, pod);
  assert.equal(admitted.status, 201, describe(admitted));
  // The control: the same pod with its containers' securityContext taken off is refused there.
  const weakened = structuredClone(pod);
  for (const container of weakened.spec.containers) delete container.securityContext;
  const refused = await dryRunCreate(namespace, weakened);
  assert.equal(refused.status, 403, describe(refused));
  assert.match(refused.body.message, /violates PodSecurity "restricted:latest"/);
});

test('injected through the apiserver: pods and Deployments in a namespace enforcing restricted are admitted with their sidecars', { skip }, async () => {
  const configMap = manifests.find((m) => m.kind === 'ConfigMap' && m.data?.['config.json']);
  assert.ok(configMap, 'no ConfigMap with config.json in the synthesized output');
  webhook = await startLocalWebhook(configMap.data['config.json']);
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  // The Service has no endpoints here: the copy registered above (created in the first test) would
  // only add a timeout to every call.
  await plane!.ok('DELETE', `/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/${synthesized.metadata.name}`);
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', locallyServed(synthesized, 'e2e-default-app', webhook.port, plane!.pki.caCertificate));
  const injectionLabels = synthesized.webhooks[0].namespaceSelector.matchLabels;
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.injected, labels: { ...injectionLabels, ...ENFORCE_RESTRICTED } } });
  await waitUntilInjecting(NAMESPACES.injected);

  await assertSeedPodsInjected(NAMESPACES.injected);

  // A Guaranteed pod stays Guaranteed, as the apiserver itself classifies it.
  const exact = { cpu: '500m', memory: '256Mi' };
  const guaranteed = await dryRunCreate(NAMESPACES.injected, restrictedPod('guaranteed', {}, { requests: exact, limits: exact }));
  assert.equal(guaranteed.status, 201, describe(guaranteed));
  assert.deepEqual(containerNames(guaranteed.body.spec, 'containers'), ['my-container', 'envoy']);
  assert.equal(guaranteed.body.status?.qosClass, 'Guaranteed');

  // A Deployment's template gets wait-for-it (it targets Deployments only); Envoy targets pods (the
  // default), so a pod made from the stored template gets it then, and is admitted in the same namespace.
  const deployment = await dryRunCreate(NAMESPACES.injected, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: 'web', annotations: { 'com.foreach/wait-for-it': 'db:5432' } },
    spec: { selector: { matchLabels: { app: 'web' } }, template: { metadata: { labels: { app: 'web' } }, spec: restrictedPod('unused').spec } },
  });
  assert.equal(deployment.status, 201, describe(deployment));
  const storedTemplate = deployment.body.spec.template;
  assert.deepEqual(containerNames(storedTemplate.spec, 'initContainers'), ['wait-for-it']);
  assert.deepEqual(containerNames(storedTemplate.spec, 'containers'), ['my-container']);
  const fromTemplate = await dryRunCreate(NAMESPACES.injected, { apiVersion: 'v1', kind: 'Pod', metadata: { ...storedTemplate.metadata, name: 'web-abc12' }, spec: storedTemplate.spec });
  assert.equal(fromTemplate.status, 201, describe(fromTemplate));
  assert.deepEqual(containerNames(fromTemplate.body.spec, 'initContainers'), ['wait-for-it']);
  assert.deepEqual(containerNames(fromTemplate.body.spec, 'containers'), ['my-container', 'envoy']);

  // The injected pod created again (as a reinvocation or a re-apply sees it) comes back unchanged.
  const { uid: _uid, creationTimestamp: _created, resourceVersion: _version, ...metadata } = fromTemplate.body.metadata;
  const again = await dryRunCreate(NAMESPACES.injected, { apiVersion: 'v1', kind: 'Pod', metadata, spec: fromTemplate.body.spec });
  assert.equal(again.status, 201, describe(again));
  assert.deepEqual(again.body.spec, fromTemplate.body.spec);
  assert.deepEqual(again.body.metadata.annotations, fromTemplate.body.metadata.annotations);
});

test("the control: seed 000's plain Envoy makes Pod Security admission refuse the same pod, which alone is admitted", { skip }, async () => {
  seed000Webhook = await startLocalWebhook(resolveInjectorConfig({ annotationPrefix: PREFIX, injections: SEED_000 }));
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  await plane!.ok(
    'POST',
    '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict',
    locallyServed(synthesized, 'e2e-seed-000', seed000Webhook.port, plane!.pki.caCertificate, { matchLabels: { [SEED_000_LABEL]: 'true' } }),
  );
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.seed000, labels: { [SEED_000_LABEL]: 'true', ...ENFORCE_RESTRICTED } } });
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.plain, labels: ENFORCE_RESTRICTED } });
  await waitUntilInjecting(NAMESPACES.seed000);

  const alone = await dryRunCreate(NAMESPACES.plain, restrictedPod('app'));
  assert.equal(alone.status, 201, describe(alone));
  assert.equal(alone.body.metadata.annotations?.[`${PREFIX}/status`], undefined);

  const injected = await dryRunCreate(NAMESPACES.seed000, restrictedPod('app'));
  assert.equal(injected.status, 403, describe(injected));
  assert.match(injected.body.message, /violates PodSecurity "restricted:latest"/);
  assert.match(injected.body.message, /container "envoy"/);
});

test('the default app synthesized policy-only (INJECTOR_BACKEND=admissionPolicy), created as synthesized, injects the same pods under restricted, a Guaranteed pod staying Guaranteed', { skip }, async () => {
  // The whole default app, qos 'preserve-guaranteed' included, as `npm run synth` writes it with the policy backend.
  assert.ok(DEFAULT_INJECTIONS.some((injection) => injection.qos === 'preserve-guaranteed'));
  const policyApp = synthDefaultAppToTemp(undefined, undefined, { backend: 'admissionPolicy', admissionPolicyApiVersion: policyApiVersion }).manifests;
  assert.ok(policyApp.some((object) => object.kind === 'MutatingAdmissionPolicy'), `no policies in ${policyApp.map(describeManifest).join(', ')}`);
  assert.ok(!policyApp.some((object) => object.kind === 'Deployment' || object.kind === 'MutatingWebhookConfiguration'), 'the policy backend makes no webhook objects');
  // Policy-only from here: the webhook registered above selects the same namespace labels.
  await plane!.ok('DELETE', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/e2e-default-app');
  // The monitoring's ConfigMaps have the same names under either backend: the webhook app's go first.
  for (const object of policyApp.filter((candidate) => candidate.kind === 'ConfigMap')) {
    await plane!.request('DELETE', `/api/v1/namespaces/${object.metadata.namespace}/configmaps/${object.metadata.name}`);
  }
  assert.deepEqual(await createAsSynthesized(policyApp.filter((object) => object.kind !== 'Namespace' || object.metadata.name !== 'sidecar-injector')), []);
  const injectionLabels = policyApp.find((object) => object.kind === 'MutatingAdmissionPolicyBinding')!.spec.matchResources.namespaceSelector.matchLabels;
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.policy, labels: { ...injectionLabels, ...ENFORCE_RESTRICTED } } });
  await waitUntilInjecting(NAMESPACES.policy);

  await assertSeedPodsInjected(NAMESPACES.policy);

  // A Guaranteed pod stays Guaranteed under the policies, by the apiserver's own status.qosClass; Envoy
  // gets limits at its requests, as the webhook gives it.
  const exact = { cpu: '500m', memory: '256Mi' };
  const guaranteed = await dryRunCreate(NAMESPACES.policy, restrictedPod('guaranteed', {}, { requests: exact, limits: exact }));
  assert.equal(guaranteed.status, 201, describe(guaranteed));
  assert.deepEqual(containerNames(guaranteed.body.spec, 'containers'), ['my-container', 'envoy']);
  assert.equal(guaranteed.body.status?.qosClass, 'Guaranteed', `stored: ${JSON.stringify(guaranteed.body.spec.containers.map((c: any) => c.resources))}`);
  assert.deepEqual(guaranteed.body.spec.containers[1].resources.limits, guaranteed.body.spec.containers[1].resources.requests);
  // The control: a Burstable pod keeps Envoy's limits as configured, and stays Burstable.
  const burstable = await dryRunCreate(NAMESPACES.policy, restrictedPod('burstable', {}, { requests: { cpu: '250m', memory: '256Mi' }, limits: exact }));
  assert.equal(burstable.status, 201, describe(burstable));
  assert.equal(burstable.body.status?.qosClass, 'Burstable');
  assert.notDeepEqual(burstable.body.spec.containers[1].resources.limits, burstable.body.spec.containers[1].resources.requests);
});
