// npm run e2e: reviews that repeat but for their uid, as a real kube-apiserver writes them. Pods made
// from one manifest with a generateName (what a ReplicaSet's controller sends) reach the bundled
// webhook byte for byte alike but for request.uid; the webhook answers all but the first from the
// first one's answer (webhook/server/repeated-reviews.ts). The apiserver refuses an answer whose uid is
// not its request's, so every pod admitted with its sidecar shows each repeat got its own uid; the
// webhook's counter shows they were answered as repeats, i.e. that the apiserver's encoding is the one
// the webhook looks for. A pod that differs in one label is evaluated on its own.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { Manifest, findManifest } from '../support/synth-helpers';
import { BundledWebhook, opsRequest } from '../support/webhook-harness';
import { ControlPlane, findBinaries } from './support/control-plane';
import { locallyServed, startDefaultAppBesidePlane } from './support/local-webhook';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (repeated reviews) ${skip}`);

const NAMESPACE = 'e2e-repeated';
const REPLICAS = 12;

let plane: ControlPlane | undefined;
let webhook: BundledWebhook | undefined;
let manifests: Manifest[] = [];
let stopAll: (() => Promise<void>) | undefined;

function replica(labels: Record<string, string>): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'web-7d9f8b-', labels },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'app', image: 'registry.example/app:1.0', securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
    },
  };
}

async function repeatedCount(): Promise<number> {
  const metrics = await opsRequest(webhook!.opsPort, '/metrics');
  assert.equal(metrics.status, 200);
  const value = /^sidecar_injector_repeated_reviews_total (\d+)$/m.exec(metrics.text)?.[1];
  assert.ok(value !== undefined, 'the counter is served');
  return Number(value);
}

before(async () => {
  if (skip) return;
  ({ plane, webhook, manifests, stop: stopAll } = await startDefaultAppBesidePlane(binaries as Exclude<typeof binaries, string>, 'repeated'));
});

after(async () => {
  await stopAll?.();
});

test(`${REPLICAS} pods from one generateName manifest through the apiserver: all but the first answered as repeats, each injected and accepted with its own uid`, { skip }, async () => {
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  const configuration = locallyServed(synthesized, 'e2e-repeated', webhook!.port, plane!.pki.caCertificate);
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', configuration);
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE, labels: synthesized.webhooks[0].namespaceSelector.matchLabels } });
  const create = (manifest: Manifest) => plane!.request('POST', `/api/v1/namespaces/${NAMESPACE}/pods?fieldValidation=Strict`, manifest);
  const injected = (response: { status: number; body: any }) => response.status === 201 && response.body.spec.containers.some((c: any) => c.name === 'envoy');
  // The apiserver loads webhook configurations asynchronously: wait for a first injection.
  const deadline = Date.now() + 60_000;
  const labels = { app: 'web', 'pod-template-hash': '7d9f8b' };
  while (!injected(await create(replica({ ...labels, warmup: 'yes' })))) {
    assert.ok(Date.now() < deadline, 'no injection within 60 s of registering the webhook');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }

  const before = await repeatedCount();
  const names = new Set<string>();
  // Which creates were answered as repeats, in order (1 each), so a miss says which replica it was.
  const repeatedAt: number[] = [];
  let counted = before;
  for (let i = 0; i < REPLICAS; i++) {
    const response = await create(replica(labels));
    assert.ok(injected(response), `replica ${i}: ${response.status} ${JSON.stringify(response.body?.message ?? response.body?.spec?.containers?.map((c: any) => c.name))}`);
    names.add(response.body.metadata.name);
    const now = await repeatedCount();
    repeatedAt.push(now - counted);
    counted = now;
  }
  assert.equal(names.size, REPLICAS, 'each pod got a name of its own');
  const repeats = (await repeatedCount()) - before;
  // The webhook's log lines other than admissions (a config reload, a namespace list) say what started its kept answers over.
  const otherLines = webhook!.logs.filter((line) => !line.includes('"msg":"admission"')).slice(-20);
  assert.equal(repeats, REPLICAS - 1, `every replica after the first was answered as a repeat (repeats counted after each create: ${repeatedAt.join(' ')}); the webhook's other log lines:\n${otherLines.join('\n')}`);

  const other = await create(replica({ ...labels, 'pod-template-hash': '5c6d7e' }));
  assert.ok(injected(other));
  assert.equal((await repeatedCount()) - before, REPLICAS - 1, 'a pod with another label was not a repeat');
});
