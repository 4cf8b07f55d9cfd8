// npm run e2e: the MutatingAdmissionPolicy backend against a real kube-apiserver (envtest style).
//
// etcd and kube-apiserver run on 127.0.0.1 from KUBEBUILDER_ASSETS (or ETCD / KUBE_APISERVER), with
// the MutatingAdmissionPolicy feature gate and the runtime config of the API version the apiserver's
// release serves. The synthesized policies and bindings are applied to namespace e2e-policy; the webhook
// (this repository's server, on 127.0.0.1 with a URL clientConfig) to namespace e2e-webhook. Every
// recorded AdmissionReview's object, and each trigger scenario of it, is created with dryRun=All in both
// namespaces: the objects the apiserver would store must be the same. Then the admission latency of
// each backend is measured through the apiserver, against a namespace neither touches.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { App, Chart, Testing } from 'cdk8s';
import { resolveInjectorConfig } from '../../webhook/config';
import { AdmissionPolicyApiVersion, InjectionAdmissionPolicies } from '../../charts/admission-policy';
import { POLICY_TEST_INJECTIONS, TEST_ANNOTATION_PREFIX, triggerVariants } from '../support/admission-policy-config';
import { loadReview, podOf, reviewNames } from '../support/recorded-reviews';
import { InProcessWebhook, startInProcess } from '../support/webhook-harness';
import { ControlPlane, binaryVersion, findBinaries, policyApiVersionFor, policyApiserverFlags } from './support/control-plane';
import { podCreatePolicy } from './support/policy-plane';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e ${skip}`);

const NAMESPACES = { policy: 'e2e-policy', webhook: 'e2e-webhook', baseline: 'e2e-baseline' } as const;
const BACKEND_LABEL = 'e2e.sidecar-injector.io/backend';
// E2E_INJECTIONS=envoy,nginx-sidecar,debug: only these test injections, for the latency of a smaller
// config (the parity checks, which need every injection, are then left out, saying so).
const ONLY = process.env.E2E_INJECTIONS ? process.env.E2E_INJECTIONS.split(',') : undefined;
const onlySome = ONLY ? `E2E_INJECTIONS=${ONLY.join(',')}: the parity checks need every test injection` : false;
const config = resolveInjectorConfig({ annotationPrefix: TEST_ANNOTATION_PREFIX, injections: POLICY_TEST_INJECTIONS.filter((injection) => !ONLY || ONLY.includes(injection.name)) });

let plane: ControlPlane | undefined;
let webhook: InProcessWebhook | undefined;
let apiVersion: AdmissionPolicyApiVersion = 'v1alpha1';
let versionLine = '';

const RESOURCE_PATH: Record<string, string> = {
  Pod: '/api/v1/namespaces/NS/pods',
  Deployment: '/apis/apps/v1/namespaces/NS/deployments',
  StatefulSet: '/apis/apps/v1/namespaces/NS/statefulsets',
  DaemonSet: '/apis/apps/v1/namespaces/NS/daemonsets',
  ReplicaSet: '/apis/apps/v1/namespaces/NS/replicasets',
  Job: '/apis/batch/v1/namespaces/NS/jobs',
  CronJob: '/apis/batch/v1/namespaces/NS/cronjobs',
};

/** A recorded object made fit to create again: no server-set metadata, no status. */
function creatable(object: any): any {
  const copy = structuredClone(object);
  for (const field of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generation', 'namespace', 'selfLink']) delete copy.metadata[field];
  delete copy.status;
  return copy;
}

/**
 * What must match between the two backends: everything but the fields the server sets per object,
 * with the namespace's name (which {{namespace}} renders) written as <namespace>.
 */
function comparable(stored: any, namespace: string): any {
  const replace = (text: string, value: string | undefined, placeholder: string) => (value ? text.split(JSON.stringify(value).slice(1, -1)).join(placeholder) : text);
  // A Job's selector labels carry its uid.
  const copy = JSON.parse(replace(replace(JSON.stringify(stored), namespace, '<namespace>'), stored.metadata?.uid, '<uid>'));
  for (const field of ['uid', 'resourceVersion', 'creationTimestamp', 'managedFields', 'generation', 'namespace']) delete copy.metadata[field];
  if (copy.metadata.generateName) delete copy.metadata.name;
  return copy;
}

async function dryRunCreate(namespace: string, object: any) {
  const resourcePath = RESOURCE_PATH[object.kind].replace('NS', namespace);
  return plane!.request('POST', `${resourcePath}?dryRun=All&fieldValidation=Strict`, { ...object, metadata: { ...object.metadata, namespace } });
}

function policyObjects(): any[] {
  // Not Testing.app(): it makes a temp outdir that nothing removes; toJson() writes nothing.
  const chart = new Chart(new App({ outdir: path.join(os.tmpdir(), 'sidecar-injector-never-written') }), 'e2e');
  const policies = new InjectionAdmissionPolicies(chart, 'policies', {
    apiVersion,
    namePrefix: 'e2e',
    config: () => config,
    // Fail, not the default Ignore: a CEL error must fail the test, not skip an injection quietly.
    failurePolicy: 'Fail',
    namespaceSelector: { matchLabels: { [BACKEND_LABEL]: 'policy' } },
    objectSelector: { matchExpressions: [{ key: `${TEST_ANNOTATION_PREFIX}/webhook`, operator: 'DoesNotExist' }] },
  });
  for (const injection of config.injections) policies.addInjection(injection);
  return Testing.synth(chart);
}

function webhookConfiguration(port: number): any {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name: 'e2e-sidecar-injector' },
    webhooks: [
      {
        name: 'inject.e2e.sidecar-injector.io',
        clientConfig: { url: `https://127.0.0.1:${port}/mutate`, caBundle: Buffer.from(plane!.pki.caCertificate).toString('base64') },
        rules: [
          { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'], scope: 'Namespaced' },
          { apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments', 'statefulsets', 'daemonsets', 'replicasets'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
          { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs', 'cronjobs'], operations: ['CREATE', 'UPDATE'], scope: 'Namespaced' },
        ],
        namespaceSelector: { matchLabels: { [BACKEND_LABEL]: 'webhook' } },
        objectSelector: { matchExpressions: [{ key: `${TEST_ANNOTATION_PREFIX}/webhook`, operator: 'DoesNotExist' }] },
        sideEffects: 'None',
        admissionReviewVersions: ['v1', 'v1beta1'],
        timeoutSeconds: 10,
        failurePolicy: 'Fail',
        reinvocationPolicy: 'IfNeeded',
        matchPolicy: 'Equivalent',
      },
    ],
  };
}

const PROBE = 'e2e.sidecar-injector.io/probe';
const READY = 'e2e.sidecar-injector.io/ready';

/**
 * A policy created after all the others that marks only probe pods. The apiserver loads policies
 * asynchronously, in the order they were created; once this one acts, every other one is loaded. Its
 * binding selects the probe by label, so the apiserver does not call it for any other pod (a match
 * condition would cost a conversion of each pod for CEL, charged to the policies' latency below).
 */
function readinessPolicy(): any[] {
  const expression = `[JSONPatch{op: "add", path: "/metadata/annotations/${READY.replace('/', '~1')}", value: "true"}]`;
  return podCreatePolicy('zz-e2e-ready', apiVersion, expression, 'Fail', {
    namespaceSelector: { matchLabels: { [BACKEND_LABEL]: 'policy' } },
    objectSelector: { matchLabels: { [PROBE]: 'true' } },
  });
}

/** Waits until a created object shows that `namespace`'s backend is active (informers are asynchronous). */
async function waitUntilInjecting(namespace: string, readyMarker: boolean): Promise<void> {
  const probe = creatable(loadReview('pod-create-sleep').request.object);
  probe.metadata.labels = { ...probe.metadata.labels, [PROBE]: 'true' };
  const deadline = Date.now() + 60_000;
  let last = '';
  while (Date.now() < deadline) {
    const response = await dryRunCreate(namespace, probe);
    const annotations = response.body?.metadata?.annotations ?? {};
    const status = annotations[`${TEST_ANNOTATION_PREFIX}/status`];
    if (response.status === 201 && typeof status === 'string' && status.includes('envoy') && (!readyMarker || annotations[READY] === 'true')) return;
    last = `${response.status} ${JSON.stringify(response.body?.metadata?.annotations ?? response.body?.message)}`;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(`namespace ${namespace}: no injection within 60 s (last: ${last})`);
}

before(async () => {
  if (skip) return;
  const bins = binaries as Exclude<typeof binaries, string>;
  versionLine = binaryVersion(bins.kubeApiserver);
  apiVersion = (process.env.E2E_POLICY_API_VERSION as AdmissionPolicyApiVersion | undefined) ?? policyApiVersionFor(versionLine);
  plane = await ControlPlane.start(bins, {
    apiserverFlags: policyApiserverFlags(apiVersion),
  });
  const server = await plane.ok('GET', '/version');
  versionLine = `${versionLine} (/version: ${server.gitVersion}, ${server.platform})`;
  console.log(`kube-apiserver ${versionLine}; policies emitted as admissionregistration.k8s.io/${apiVersion}`);
  webhook = await startInProcess(config, { caCertificate: plane.pki.caCertificate, certificate: plane.pki.serving.certificate, privateKey: plane.pki.serving.privateKey });
  for (const [backend, name] of Object.entries(NAMESPACES)) {
    await plane.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [BACKEND_LABEL]: backend } } });
  }
  for (const object of [...policyObjects(), ...readinessPolicy()]) {
    // Each at its own version: the override warnings' ValidatingAdmissionPolicies are v1 whatever the mutating ones are.
    const plural = object.kind.toLowerCase().replace(/policy$/, 'policie') + 's';
    await plane.ok('POST', `/apis/${object.apiVersion}/${plural}?fieldValidation=Strict`, object);
  }
  await plane.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', webhookConfiguration(webhook.port));
  await waitUntilInjecting(NAMESPACES.policy, true);
  await waitUntilInjecting(NAMESPACES.webhook, false);
});

after(async () => {
  await webhook?.stop();
  await plane?.stop();
});

const injectedSeen = new Set<string>();

for (const name of reviewNames()) {
  test(`${name}: the apiserver stores the same object under the policies as under the webhook, in every trigger scenario`, { skip: skip || onlySome }, async () => {
    const request = loadReview(name).request;
    if (!request.object) return;
    for (const [label, variant] of triggerVariants(request.object)) {
      const object = creatable(variant);
      const [policy, hook] = await Promise.all([dryRunCreate(NAMESPACES.policy, object), dryRunCreate(NAMESPACES.webhook, object)]);
      assert.equal(hook.status, 201, `${name} (${label}) through the webhook: ${JSON.stringify(hook.body?.message ?? hook.body)}`);
      assert.equal(policy.status, 201, `${name} (${label}) through the policies: ${JSON.stringify(policy.body?.message ?? policy.body)}`);
      assert.deepEqual(
        comparable(policy.body, NAMESPACES.policy),
        comparable(hook.body, NAMESPACES.webhook),
        `${name} (${label}): stored under the policies (actual) vs under the webhook (expected)`,
      );
      const status = podOf(policy.body).metadata?.annotations?.[`${TEST_ANNOTATION_PREFIX}/status`];
      for (const injected of status?.split(',') ?? []) injectedSeen.add(injected);
    }
  });
}

test('every test injection was injected by the apiserver somewhere above', { skip: skip || onlySome }, () => {
  assert.deepEqual([...injectedSeen].sort(), config.injections.map((injection) => injection.name).sort());
});

test('admission latency through the apiserver: policies vs webhook vs neither', { skip }, async () => {
  const object = creatable(loadReview('pod-create-sleep').request.object);
  object.metadata.annotations = { ...object.metadata.annotations, [`${TEST_ANNOTATION_PREFIX}/inject`]: 'debug', 'sidecar-injector-webhook.morven.me/inject': 'true' };
  // The same pod opted out: each backend looks at it and injects nothing (the pod policy's mutation
  // runs and adds nothing; the webhook is called and answers with no patch).
  const optedOut = { ...object, metadata: { ...object.metadata, annotations: { ...object.metadata.annotations, [`${TEST_ANNOTATION_PREFIX}/inject`]: 'false' } } };
  const rounds = Number(process.env.E2E_LATENCY_ROUNDS ?? 60);
  const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))];
  // The same unnamed pod (a generateName) again and again is what a ReplicaSet's controller sends (its
  // pods alike but for the uid), and the webhook answers such repeats from the first answer
  // (webhook/server/repeated-reviews.ts); a pod named anew each time is one the webhook parses and
  // evaluates, as every first-seen pod (a named object's review is never looked up).
  const named = (pod: typeof object, round: number) => ({ ...pod, metadata: { ...pod.metadata, name: `${pod.metadata.name}-${round}` } });
  const { name: podName, ...unnamedMetadata } = object.metadata;
  const replicaSetPod = { ...object, metadata: { generateName: `${podName}-`, ...unnamedMetadata } };
  const variants = [
    ["injected (envoy, nginx-sidecar, debug, debug-chained), a ReplicaSet's pods (generateName)", (_round: number) => replicaSetPod],
    ['injected, named anew each time (no repeats)', (round: number) => named(object, round)],
    ['opted out (nothing injected)', (_round: number) => optedOut],
  ] as const;
  for (const [label, podFor] of variants) {
    const samples: Record<string, number[]> = { policy: [], webhook: [], baseline: [] };
    for (let round = 0; round < rounds + 10; round++) {
      const pod = podFor(round);
      for (const backend of ['policy', 'webhook', 'baseline'] as const) {
        const response = await dryRunCreate(NAMESPACES[backend], pod);
        assert.equal(response.status, 201);
        if (round >= 10) samples[backend].push(response.milliseconds); // the first 10 warm connections and caches
      }
    }
    const rows = Object.entries(samples).map(([backend, values]) => ({ backend, p50: quantile(values, 0.5), p90: quantile(values, 0.9) }));
    const base = rows.find((row) => row.backend === 'baseline')!;
    console.log(`admission latency, pod ${label}, ${rounds} sequential dryRun pod creates each (kube-apiserver ${versionLine}):`);
    console.log('| backend | p50 ms | p90 ms | p50 over baseline ms |');
    console.log('| --- | --- | --- | --- |');
    for (const row of rows) console.log(`| ${row.backend} | ${row.p50.toFixed(2)} | ${row.p90.toFixed(2)} | ${(row.p50 - base.p50).toFixed(2)} |`);
  }

  // E2E_PPROF_DIR: the apiserver's CPU profile while it admits the same pod through one backend only,
  // for `go tool pprof -top <dir>/policy.pprof` (where the policies' time goes) against webhook.pprof.
  const profileDir = process.env.E2E_PPROF_DIR;
  if (!profileDir) return;
  const seconds = Number(process.env.E2E_PPROF_SECONDS ?? 15);
  fs.mkdirSync(profileDir, { recursive: true });
  for (const backend of ['policy', 'webhook', 'baseline'] as const) {
    let stop = false;
    let count = 0;
    const load = (async () => {
      while (!stop) {
        assert.equal((await dryRunCreate(NAMESPACES[backend], object)).status, 201);
        count++;
      }
    })();
    const profile = await plane!.bytes(`/debug/pprof/profile?seconds=${seconds}`);
    stop = true;
    await load;
    fs.writeFileSync(path.join(profileDir, `${backend}.pprof`), profile);
    console.log(`${backend}: ${count} sequential dryRun pod creates in the ${seconds} s CPU profile ${path.join(profileDir, `${backend}.pprof`)}`);
  }
});
