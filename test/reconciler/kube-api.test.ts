// The reconciler's own apiserver client over real TLS: the token read again on every request, errors
// kept as the apiserver's Status, every answer bounded (a list asks again in smaller pages; a single
// object past the bound is cut) and every request given a deadline.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { HttpsKubeApi, KubeApiError, ResponseTooLarge, isNotFound, listPages } from '../../webhook/reconciler/kube-api';
import { FakeKube, serveOverHttps } from '../support/fake-kube';
import { APP_SPEC } from '../support/reconciler-harness';

const clients: HttpsKubeApi[] = [];
after(() => clients.forEach((client) => client.close()));

function filledKube(pods: number): FakeKube {
  const kube = new FakeKube(() => {
    throw new Error('no injector in these tests');
  });
  kube.injectorUp = false;
  kube.namespace('apps');
  for (let index = 0; index < pods; index++) kube.admitPod({ apiVersion: 'v1', kind: 'Pod', metadata: { name: `pod-${String(index).padStart(3, '0')}`, namespace: 'apps' }, spec: APP_SPEC });
  return kube;
}

describe('HttpsKubeApi', () => {
  test('reads and writes over TLS with the service-account token, read again on every request', async () => {
    const kube = filledKube(1);
    const served = await serveOverHttps(kube);
    try {
      const api = new HttpsKubeApi(served.connection);
      clients.push(api);
      const namespace = await api.request('GET', '/api/v1/namespaces/apps');
      assert.equal(namespace.metadata.name, 'apps');
      fs.writeFileSync(served.connection.tokenFile, 'rotated-token\n');
      await assert.rejects(api.request('GET', '/api/v1/namespaces/apps'), (error: unknown) => error instanceof KubeApiError && error.status === 401);
      assert.deepEqual(served.tokens, ['Bearer reconciler-token', 'Bearer rotated-token'], 'the kubelet rotates the token: it is read per request');
      fs.writeFileSync(served.connection.tokenFile, 'reconciler-token\n');
      const missing = await api.request('GET', '/api/v1/namespaces/nowhere').catch((error) => error);
      assert.ok(isNotFound(missing));
      assert.match(missing.message, /^GET \/api\/v1\/namespaces\/nowhere: 404 NotFound: /);
      const patched = await api.request('PATCH', '/api/v1/namespaces/apps', { body: { metadata: { labels: { team: 'a' } } } });
      assert.equal(patched.metadata.labels.team, 'a');
    } finally {
      await served.stop();
    }
  });

  test('a list page past the bound is asked for again a quarter the size; one object past it is cut', async () => {
    const kube = filledKube(40);
    const served = await serveOverHttps(kube);
    try {
      const onePod = JSON.stringify(kube.list('', 'pods', 'apps')[0]).length;
      // Room for about ten pods per answer: the first page (250) is refused, then 62, then 15, then 3.
      const api = new HttpsKubeApi(served.connection, { maxResponseBytes: onePod * 10 });
      clients.push(api);
      const names: string[] = [];
      const pages: number[] = [];
      await listPages(api, '/api/v1/pods', (items) => {
        pages.push(items.length);
        names.push(...items.map((item) => item.metadata.name));
      });
      assert.equal(names.length, 40);
      assert.deepEqual(names, [...names].sort());
      assert.ok(pages.every((size) => size <= 10), `pages of ${pages.join(', ')}`);
      const tiny = new HttpsKubeApi(served.connection, { maxResponseBytes: 100 });
      clients.push(tiny);
      await assert.rejects(tiny.request('GET', '/api/v1/namespaces/apps/pods/pod-000'), ResponseTooLarge);
    } finally {
      await served.stop();
    }
  });

  test('an apiserver that does not answer is given up on at the deadline', async () => {
    const served = await serveOverHttps(filledKube(0), { delayMs: 2000 });
    try {
      const api = new HttpsKubeApi(served.connection, { timeoutMs: 100 });
      clients.push(api);
      await assert.rejects(api.request('GET', '/api/v1/namespaces/apps'), /no answer in 0.1 s/);
    } finally {
      await served.stop();
    }
  });
});
