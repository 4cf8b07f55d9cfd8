// The webhook with overrides that read namespace defaults (issue 39), in-process over TLS, reading
// namespaces from a fake apiserver: /readyz waits for the first list, a namespace's value reaches the
// next admission in it (a repeated review included: its kept answer is dropped), a bad value is named
// in the warning and counted by annotation and reason, and without an apiserver the answer warns.
import assert from 'node:assert/strict';
import { after, describe, test } from 'node:test';
import { type InjectorConfig } from '../../webhook/config';
import { FakeApiserver } from '../support/fake-apiserver';
import { envoyWithOverrides } from '../support/override-fixtures';
import { InProcessWebhook, opsRequest, postAdmission, startInProcess, until } from '../support/webhook-harness';
import { asUnnamed, decodePatch, loadReview } from '../support/recorded-reviews';
import { testCertificate } from '../support/test-certificate';

const CONFIG: InjectorConfig = { injections: [envoyWithOverrides()] };

/** The recorded pod review as a ReplicaSet's pod, in namespace `shop`, with `annotations` on the pod and `uid`. */
function review(uid: string, annotations: Record<string, string> = {}): string {
  // Unnamed, as a ReplicaSet's pod: its reviews repeat but for the uid.
  const recorded = asUnnamed(loadReview('pod-create-sleep'));
  recorded.request.uid = uid;
  recorded.request.namespace = 'shop';
  recorded.request.object.metadata.namespace = 'shop';
  recorded.request.object.metadata.annotations = { ...recorded.request.object.metadata.annotations, ...annotations };
  return JSON.stringify(recorded);
}

async function envoyResources(webhook: InProcessWebhook, body: string) {
  const answer = (await postAdmission(webhook.port, body, { ca: testCertificate().caCertificate })).json().response;
  // The pod has containers: envoy is added as `/spec/containers/-`.
  const added = decodePatch(answer).find((op: any) => op.op === 'add' && op.path === '/spec/containers/-' && op.value?.name === 'envoy') as any;
  return { resources: added?.value?.resources, warnings: answer.warnings ?? [] };
}

/** Waits, with the harness's probe, until `check` holds. */
const waitFor = (what: string, check: () => boolean | Promise<boolean>) => until(what, 20_000, async () => ((await check()) ? true : undefined));

describe('namespace defaults in the webhook', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  test("ready once the namespaces are listed; the namespace's value, then its change, reach the next admission, a repeat included", async () => {
    const apiserver = new FakeApiserver();
    apiserver.namespaces.set('shop', { 'envoy.example.com/memory-request': '256Mi' });
    const connection = await apiserver.start();
    const webhook = await startInProcess(CONFIG, testCertificate(), { apiserver: connection, namespaceSyncWaitMs: 60_000 });
    cleanups.push(() => apiserver.stop(), () => webhook.stop());
    await waitFor('ready', async () => (await opsRequest(webhook.opsPort, '/readyz')).status === 200);
    assert.equal(webhook.server.namespaces.size.synced, true, 'not ready before the list');

    const first = await envoyResources(webhook, review('uid-1', { 'envoy.example.com/cpu-request': '250m' }));
    assert.deepEqual(first.resources, { requests: { cpu: '250m', memory: '256Mi' }, limits: { cpu: '1', memory: '512Mi' } });
    assert.deepEqual(first.warnings, []);
    // The same review again: answered from the first answer.
    await envoyResources(webhook, review('uid-2', { 'envoy.example.com/cpu-request': '250m' }));
    assert.equal(webhook.server.metrics.repeatedReviews, 1);

    const generation = webhook.server.namespaces.generation;
    await waitFor('a watch open', () => apiserver.watchers.size === 1);
    apiserver.set('shop', { 'envoy.example.com/memory-request': '300Mi' });
    await waitFor('the change seen', () => webhook.server.namespaces.generation !== generation);
    const after = await envoyResources(webhook, review('uid-3', { 'envoy.example.com/cpu-request': '250m' }));
    assert.deepEqual(after.resources, { requests: { cpu: '250m', memory: '300Mi' }, limits: { cpu: '1', memory: '512Mi' } }, 'not the answer kept under the old namespace value');
    assert.equal(webhook.server.metrics.repeatedReviews, 1);

    const bad = await envoyResources(webhook, review('uid-4', { 'envoy.example.com/cpu-request': '5' }));
    assert.deepEqual(bad.resources, { requests: { cpu: '100m', memory: '300Mi' }, limits: { cpu: '1', memory: '512Mi' } });
    assert.deepEqual(bad.warnings, ['annotation envoy.example.com/cpu-request ignored (injection "envoy"): "5" is above the maximum 2; envoy keeps resources.requests.cpu 100m as configured']);
    const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
    assert.match(metrics, /sidecar_injector_override_values_ignored_total\{injection="envoy",annotation="envoy.example.com\/cpu-request",reason="out-of-bounds"\} 1/);
    assert.match(metrics, /sidecar_injector_namespace_defaults_entries 1/);
    assert.match(metrics, /sidecar_injector_namespace_defaults_synced 1/);
  });

  test('without an apiserver to read namespaces from, the pod is injected with the configured values and the answer says why', async () => {
    const webhook = await startInProcess(CONFIG, testCertificate(), { namespaceSyncWaitMs: 0 });
    cleanups.push(() => webhook.stop());
    await waitFor('ready', async () => (await opsRequest(webhook.opsPort, '/readyz')).status === 200);
    const answer = await envoyResources(webhook, review('uid-1'));
    assert.deepEqual(answer.resources, { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '1', memory: '512Mi' } });
    assert.deepEqual(answer.warnings, ['namespace shop defaults for overrides not applied: the webhook has not listed the namespaces yet']);
    const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
    assert.match(metrics, /sidecar_injector_override_values_ignored_total\{injection="envoy",annotation="\(namespace\)",reason="namespace-unknown"\} 1/);
  });
});
