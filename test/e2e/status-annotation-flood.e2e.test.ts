// npm run e2e: issue 20's attack through a real kube-apiserver. Any user allowed to create pods could
// kill the webhook with dry-run creates carrying a unique 200 KB status annotation each (the patch
// encoder kept a node per value: dead after 367, and the pods after it admitted without sidecars).
// Here the bundled webhook, started with the synthesized Deployment's environment (192Mi limit,
// NODE_OPTIONS), takes 1,000 such creates through the apiserver: every pod comes back injected, the
// process is alive, and its RSS is flat.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { RUNTIME_ENV } from '../../webhook/config';
import { Manifest, findManifest } from '../support/synth-helpers';
import { BundledWebhook, opsRequest } from '../support/webhook-harness';
import { ControlPlane, findBinaries } from './support/control-plane';
import { locallyServed, startDefaultAppBesidePlane } from './support/local-webhook';

const binaries = findBinaries();
const skip = typeof binaries === 'string' ? binaries : false;
if (skip) console.log(`npm run e2e (status annotation flood) ${skip}`);

const STATUS = 'sidecar-injector.io/status';
const NAMESPACE = 'e2e-status-flood';
const CREATES = 1000;
const VALUE_BYTES = 200_000;
const CONCURRENCY = 8;
/** RSS may move by this much from before the flood to after it (V8's heap settles in steps of a few MiB). */
const RSS_BOUND_BYTES = 24 * 1024 * 1024;
const MiB = 1024 * 1024;

let plane: ControlPlane | undefined;
let webhook: BundledWebhook | undefined;
let manifests: Manifest[] = [];
let stopAll: (() => Promise<void>) | undefined;

/** The process's RSS; NaN once it has exited. */
function rssBytes(pid: number): number {
  try {
    return Number(/^VmRSS:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;
  } catch {
    return NaN;
  }
}

/** A pod that passes "restricted", with a status annotation of `VALUE_BYTES` naming no injection, unique by `index`. */
function floodPod(index: number): Manifest {
  const value = Buffer.alloc(VALUE_BYTES, 'x');
  value.write(`flood${index}-`, 0, 'latin1');
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: `flood-${index}`, annotations: { [STATUS]: value.toString('latin1') } },
    spec: {
      securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      containers: [{ name: 'app', image: 'registry.example/app:1.0', securityContext: { runAsUser: 1000, allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } } }],
    },
  };
}

before(async () => {
  if (skip) return;
  let env: Record<string, string>;
  ({ plane, webhook, manifests, env, stop: stopAll } = await startDefaultAppBesidePlane(binaries as Exclude<typeof binaries, string>, 'status-flood'));
  console.log(`webhook (bundle, pid ${webhook.child.pid}) with NODE_OPTIONS=${env.NODE_OPTIONS} ${RUNTIME_ENV.memoryLimitBytes}=${env[RUNTIME_ENV.memoryLimitBytes]}`);
});

after(async () => {
  await stopAll?.();
});

test(`${CREATES} dry-run pod creates through the apiserver, each with a unique ${VALUE_BYTES / 1000} KB ${STATUS}, are all injected and leave the webhook's RSS flat`, { skip }, async () => {
  const synthesized = findManifest(manifests, 'MutatingWebhookConfiguration');
  const configuration = locallyServed(synthesized, 'e2e-status-flood', webhook!.port, plane!.pki.caCertificate);
  await plane!.ok('POST', '/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldValidation=Strict', configuration);
  await plane!.ok('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE, labels: synthesized.webhooks[0].namespaceSelector.matchLabels } });

  const create = (index: number) => plane!.request('POST', `/api/v1/namespaces/${NAMESPACE}/pods?dryRun=All&fieldValidation=Strict`, floodPod(index));
  const injected = (response: { status: number; body: any }) =>
    response.status === 201 && response.body.spec.containers.some((c: any) => c.name === 'envoy') && String(response.body.metadata.annotations[STATUS]).endsWith(',envoy');
  // The apiserver loads webhook configurations asynchronously; the same pods warm the webhook up.
  const deadline = Date.now() + 60_000;
  while (!injected(await create(-1))) {
    assert.ok(Date.now() < deadline, 'no injection within 60 s of registering the webhook');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  for (let i = 0; i < 50; i++) assert.ok(injected(await create(-2 - i)), 'warm-up pods are injected');

  const pid = webhook!.child.pid!;
  const before = rssBytes(pid);
  const failures: string[] = [];
  let next = 0;
  let peak = before;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < CREATES) {
        const index = next++;
        const response = await create(index);
        if (!injected(response)) failures.push(`pod ${index}: ${response.status} ${response.body?.message ?? ''} containers ${JSON.stringify(response.body?.spec?.containers?.map((c: any) => c.name))}`.slice(0, 300));
        if (index % 100 === 0) peak = Math.max(peak, rssBytes(pid) || 0);
      }
    }),
  );
  const afterRss = rssBytes(pid);
  console.log(`webhook RSS before ${(before / MiB).toFixed(1)} MiB, after ${CREATES} creates ${(afterRss / MiB).toFixed(1)} MiB (peak sampled ${(Math.max(peak, afterRss) / MiB).toFixed(1)} MiB); ${CREATES - failures.length} of ${CREATES} injected`);
  const { exitCode, signalCode } = webhook!.child;
  assert.ok(exitCode === null && signalCode === null, `the webhook process died (exit code ${exitCode}, signal ${signalCode}) after ${CREATES - failures.length} injected pods`);
  assert.deepEqual(failures.slice(0, 5), [], `expected every pod admitted with envoy injected; ${failures.length} were not`);
  const health = await opsRequest(webhook!.opsPort, '/healthz').catch((error) => ({ status: 0, text: String(error) }));
  assert.equal(health.status, 200, `the webhook answers /healthz: ${JSON.stringify(health).slice(0, 200)}`);
  assert.ok(afterRss - before < RSS_BOUND_BYTES, `webhook RSS grew from ${(before / MiB).toFixed(1)} to ${(afterRss / MiB).toFixed(1)} MiB, more than ${RSS_BOUND_BYTES / MiB} MiB`);
});
