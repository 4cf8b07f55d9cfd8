// The webhook serving revisions side by side (issue 37), in-process over TLS: each webhook entry's path
// answers with its revision; a repeated review is kept per path; an unserved label is warned about; a
// revision the loaded config lacks, or a path no entry calls, is answered and never crashes the server.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InProcessWebhook, httpsRequest, opsRequest, startInProcess } from '../support/webhook-harness';
import { decodePatch, loadReview } from '../support/recorded-reviews';
import { testCertificate } from '../support/test-certificate';
import { ENVOY_V1, ENVOY_V2, revisionedConfig } from '../support/revision-fixtures';
import { admissionRoute } from '../../webhook/config';

const body = (uid: string) => {
  const review = loadReview('pod-create-sleep');
  review.request.uid = uid;
  return JSON.stringify(review);
};

describe('revisions in the webhook', () => {
  let webhook: InProcessWebhook;
  before(async () => {
    webhook = await startInProcess(revisionedConfig(), testCertificate());
  });
  after(() => webhook.stop());
  const post = (path: string, text: string) => httpsRequest(webhook.port, path, text, { ca: testCertificate().caCertificate });
  const envoyImage = (answer: any) => (decodePatch(answer).find((op: any) => op.path === '/spec/containers/-' && op.value?.name === 'envoy') as any)?.value?.image;

  test('each revision path answers with its own revision, the same review twice included', async () => {
    // The same body, so the second of each pair is a repeat: kept per path, never crossed.
    for (let round = 0; round < 2; round++) {
      const r1 = (await post('/mutate/revisions/r1', body('a'))).json().response;
      const r2 = (await post('/mutate/revisions/r2', body('a'))).json().response;
      assert.equal(envoyImage(r1), ENVOY_V1);
      assert.equal(envoyImage(r2), ENVOY_V2);
      assert.ok(decodePatch(r2).some((op: any) => JSON.stringify(op).includes('"sidecar-injector.io/revision":"r2"') || (op.path === '/metadata/annotations/sidecar-injector.io~1revision' && op.value === 'r2')));
    }
    // /mutate is the config as loaded: with revisions its own injections are empty.
    const plain = (await post('/mutate', body('b'))).json().response;
    assert.equal(plain.allowed, true);
    assert.equal(plain.patch, undefined);
  });

  test('unserved labels and a revision the config lacks are admitted with a warning', async () => {
    const unserved = (await post('/mutate/unserved/namespace', body('c'))).json().response;
    assert.equal(unserved.allowed, true);
    assert.match(unserved.warnings[0], /is labelled sidecar-injector\.io\/rev with no revision or tag this injector serves/);
    const missing = (await post('/mutate/revisions/r9', body('d'))).json().response;
    assert.match(missing.warnings[0], /revision "r9" reached a replica whose loaded config does not have it/);
    for (const path of ['/mutate/revisions/R1', '/mutate/revisions/', '/mutate/unserved/cluster', '/mutate/revisions/r1/x']) {
      const answer = await post(path, body('e'));
      assert.equal(answer.status, 404, path);
    }
    // Still serving.
    assert.equal(envoyImage((await post('/mutate/revisions/r2', body('f'))).json().response), ENVOY_V2);
  });

  test('each unserved answer is counted by who chose, never by the label the request carries', async () => {
    const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
    assert.match(metrics, /^sidecar_injector_unserved_revision_total\{chooser="namespace"\} 1$/m);
    assert.match(metrics, /^sidecar_injector_unserved_revision_total\{chooser="missing-revision"\} 1$/m);
    assert.doesNotMatch(metrics, /chooser="r9"/);
  });

  test('under unservedRevision refuse the answer is a 403 refusal with the message', async () => {
    const refusing = await startInProcess({ ...revisionedConfig(), unservedRevision: 'refuse' }, testCertificate());
    try {
      const review = loadReview('pod-create-sleep');
      review.request.object.metadata.labels = { 'sidecar-injector.io/rev': 'canery' };
      const answer = (await httpsRequest(refusing.port, '/mutate/unserved/workload', JSON.stringify(review), { ca: testCertificate().caCertificate })).json().response;
      assert.equal(answer.allowed, false);
      assert.equal(answer.status.code, 403);
      assert.match(answer.status.message, /^label sidecar-injector\.io\/rev="canery" names no revision or tag this injector serves \(served: r1, r2, stable, canary\): refused$/);
      assert.match((await opsRequest(refusing.opsPort, '/metrics')).text, /^sidecar_injector_unserved_revision_total\{chooser="workload"\} 1$/m);
    } finally {
      await refusing.stop();
    }
  });

  test('routes are read from the path alone, the query ignored', () => {
    assert.equal(admissionRoute('/mutate?timeout=5s'), '');
    assert.equal(admissionRoute('/mutate/revisions/r2?timeout=5s'), 'revision:r2');
    assert.equal(admissionRoute('/mutate/unserved/workload'), 'unserved:workload');
    assert.equal(admissionRoute('/mutate/revisions/' + 'a'.repeat(41)), undefined);
    assert.equal(admissionRoute('/mutatex'), undefined);
  });
});
