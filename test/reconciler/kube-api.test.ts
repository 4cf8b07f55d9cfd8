// The reconciler's own apiserver client over real TLS: the token read again on every request, errors
// kept as the apiserver's Status, every answer bounded (a list asks again in smaller pages; a single
// object past the bound is cut) and every request given a deadline.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { HttpsKubeApi, KubeApiError, MAX_WATCH_LINE_BYTES, ResponseTooLarge, isNotFound, listPages } from '../../webhook/kube-client/kube-api';
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

describe('HttpsKubeApi.watch', () => {
  const emptyKube = () =>
    new FakeKube(() => {
      throw new Error('no injector in these tests');
    });

  test('reads events line by line across chunks, metadata only, until the apiserver ends it; a 410 (status or ERROR event) is gone', async () => {
    const seen: { accept?: string; query?: string } = {};
    let mode: 'events' | 'gone-status' | 'gone-event' = 'events';
    const served = await serveOverHttps(emptyKube(), {
      raw: (url, req, res) => {
        if (url.searchParams.get('watch') !== '1') return false;
        seen.accept = String(req.headers.accept);
        seen.query = url.search;
        if (mode === 'gone-status') return void res.writeHead(410).end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired' })), true;
        res.writeHead(200, { 'content-type': 'application/json' });
        if (mode === 'gone-event') return void res.end(JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version' } }) + '\n'), true;
        const lines = [
          { type: 'ADDED', object: { metadata: { name: 'a', namespace: 'apps', resourceVersion: '11' } } },
          { type: 'BOOKMARK', object: { metadata: { resourceVersion: '12' } } },
          { type: 'DELETED', object: { metadata: { name: 'b', namespace: 'shop', resourceVersion: '13' } } },
        ].map((event) => JSON.stringify(event) + '\n').join('');
        // Split mid-line: the client must join the pieces.
        res.write(lines.slice(0, 30));
        setImmediate(() => {
          res.write(lines.slice(30, 100));
          setImmediate(() => res.end(lines.slice(100)));
        });
        return true;
      },
    });
    try {
      const api = new HttpsKubeApi(served.connection);
      clients.push(api);
      const events: string[] = [];
      const outcome = await api.watch('/api/v1/pods', { resourceVersion: '10', allowWatchBookmarks: 'true' }, (event) => events.push(`${event.type} ${event.object.metadata?.namespace ?? '-'} ${event.object.metadata?.resourceVersion}`), new AbortController().signal);
      assert.equal(outcome, 'ended');
      assert.deepEqual(events, ['ADDED apps 11', 'BOOKMARK - 12', 'DELETED shop 13']);
      assert.match(seen.accept!, /as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1/, 'metadata only');
      assert.match(seen.query!, /watch=1/);
      assert.match(seen.query!, /resourceVersion=10/);
      mode = 'gone-status';
      assert.equal(await api.watch('/api/v1/pods', { resourceVersion: '1' }, () => assert.fail('no event'), new AbortController().signal), 'gone');
      mode = 'gone-event';
      assert.equal(await api.watch('/api/v1/pods', { resourceVersion: '1' }, () => assert.fail('no event'), new AbortController().signal), 'gone');
    } finally {
      await served.stop();
    }
  });

  test('a line past the bound, or one that is not JSON, fails the watch; an abort ends it at once', async () => {
    let mode: 'long' | 'garbage' | 'hang' = 'long';
    const served = await serveOverHttps(emptyKube(), {
      raw: (url, _req, res) => {
        if (url.searchParams.get('watch') !== '1') return false;
        res.writeHead(200, { 'content-type': 'application/json' });
        if (mode === 'garbage') res.end('{"type": "ADDED", nope\n');
        else if (mode === 'long') {
          const piece = Buffer.alloc(512 * 1024, 0x61);
          let sent = 0;
          const more = () => {
            if (res.destroyed || sent > MAX_WATCH_LINE_BYTES + piece.length) return void res.end();
            sent += piece.length;
            if (res.write(piece)) setImmediate(more);
            else res.once('drain', more);
          };
          more();
        } else res.write(JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '5' } } }) + '\n');
        return true;
      },
    });
    try {
      const api = new HttpsKubeApi(served.connection);
      clients.push(api);
      await assert.rejects(api.watch('/api/v1/pods', { resourceVersion: '1' }, () => undefined, new AbortController().signal), ResponseTooLarge);
      mode = 'garbage';
      await assert.rejects(api.watch('/api/v1/pods', { resourceVersion: '1' }, () => undefined, new AbortController().signal), /not JSON/);
      mode = 'hang';
      const abort = new AbortController();
      const watching = api.watch('/api/v1/pods', { resourceVersion: '1' }, () => abort.abort(), abort.signal);
      assert.equal(await watching, 'ended', 'aborted after its first event');
    } finally {
      await served.stop();
    }
  });
});
