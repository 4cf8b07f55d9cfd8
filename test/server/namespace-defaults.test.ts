// Namespace defaults for overrides (issue 39): the table the webhook keeps of the annotation values
// that `fromNamespace` overrides read, and the list and watch that fill it, against a fake apiserver
// over TLS that answers as kube-apiserver does (paged lists, a watch stream of JSON lines, 410 for an
// expired resourceVersion). The tests wait on the table's own changes, never on a fixed time.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, describe, test } from 'node:test';
import { NamespaceDefaultsTable } from '../../webhook/server/namespace-defaults';
import { NamespaceWatch } from '../../webhook/server/namespace-watch';
import { FakeApiserver } from '../support/fake-apiserver';
import { until } from '../support/webhook-harness';

const KEYS = new Set(['envoy.example.com/memory-request', 'envoy.example.com/log-level']);

describe('the table', () => {
  test('keeps only the offered keys; unknown before the first list, empty for a namespace without them after it', () => {
    const table = new NamespaceDefaultsTable();
    table.setKeys(KEYS);
    assert.deepEqual(table.lookup('shop'), { unknown: 'the webhook has not listed the namespaces yet' });
    table.replaceAll([{ name: 'shop', annotations: { 'envoy.example.com/memory-request': '256Mi', other: 'x'.repeat(1000) } }, { name: 'plain', annotations: { other: 'y' } }]);
    assert.deepEqual({ ...(table.lookup('shop') as any).annotations }, { 'envoy.example.com/memory-request': '256Mi' });
    assert.deepEqual({ ...(table.lookup('plain') as any).annotations }, {});
    assert.deepEqual(table.size.entries, 1, 'a namespace without offered keys takes no entry');
  });

  test('a value longer than any override accepts is kept cut, so the engine still refuses it', () => {
    const table = new NamespaceDefaultsTable();
    table.setKeys(KEYS);
    table.replaceAll([{ name: 'shop', annotations: { 'envoy.example.com/log-level': 'z'.repeat(100_000) } }]);
    assert.equal((table.lookup('shop') as any).annotations['envoy.example.com/log-level'].length, 65);
  });

  test('bounded in entries and bytes, checked before inserting: past a bound, misses are unknown, not empty', () => {
    const table = new NamespaceDefaultsTable({ maxEntries: 3, maxBytes: 100_000 });
    table.setKeys(KEYS);
    table.replaceAll(Array.from({ length: 5 }, (_, i) => ({ name: `ns-${i}`, annotations: { 'envoy.example.com/log-level': 'debug' } })));
    assert.deepEqual([table.size.entries, table.size.overflowed], [3, 2]);
    assert.ok('annotations' in table.lookup('ns-0'));
    assert.match((table.lookup('ns-4') as any).unknown, /table is full \(2 namespaces not kept\)/);
    const bytes = new NamespaceDefaultsTable({ maxEntries: 1000, maxBytes: 1000 });
    bytes.setKeys(KEYS);
    bytes.replaceAll(Array.from({ length: 100 }, (_, i) => ({ name: `ns-${i}`, annotations: { 'envoy.example.com/log-level': 'debug' } })));
    assert.ok(bytes.size.bytes <= 1000, `${bytes.size.bytes} bytes held`);
    assert.ok(bytes.size.overflowed > 0);
  });

  test('the generation moves only when what the engine is told changes', () => {
    const table = new NamespaceDefaultsTable();
    table.setKeys(KEYS);
    table.replaceAll([{ name: 'shop', annotations: { 'envoy.example.com/log-level': 'debug' } }]);
    const at = table.generation;
    table.upsert('shop', { 'envoy.example.com/log-level': 'debug', unrelated: 'changed' });
    table.upsert('other', { unrelated: 'x' });
    assert.equal(table.generation, at, 'no offered value changed');
    table.upsert('shop', { 'envoy.example.com/log-level': 'warn' });
    assert.equal(table.generation, at + 1);
    table.delete('shop');
    assert.equal(table.generation, at + 2);
    assert.deepEqual({ ...(table.lookup('shop') as any).annotations }, {});
  });

  test('a relist that finds the same values keeps the generation; one that finds any change moves it', () => {
    const table = new NamespaceDefaultsTable();
    table.setKeys(KEYS);
    const list = [
      { name: 'shop', annotations: { 'envoy.example.com/log-level': 'debug' } },
      { name: 'plain', annotations: { unrelated: 'x' } },
    ];
    table.replaceAll(list);
    const at = table.generation;
    table.replaceAll([...list].reverse().map((item) => ({ ...item, annotations: { ...item.annotations, unrelated: 'changed' } })));
    assert.equal(table.generation, at, 'the same offered values, listed again');
    table.replaceAll([{ name: 'shop', annotations: { 'envoy.example.com/log-level': 'warn' } }]);
    assert.equal(table.generation, at + 1, 'a value changed');
    table.replaceAll([{ name: 'shop', annotations: { 'envoy.example.com/log-level': 'warn' } }, { name: 'cart', annotations: { 'envoy.example.com/log-level': 'warn' } }]);
    assert.equal(table.generation, at + 2, 'a namespace added');
    table.replaceAll([{ name: 'cart', annotations: { 'envoy.example.com/log-level': 'warn' } }]);
    assert.equal(table.generation, at + 3, 'a namespace gone');
    table.clear();
    table.replaceAll([{ name: 'cart', annotations: { 'envoy.example.com/log-level': 'warn' } }]);
    assert.equal(table.generation, at + 5, 'cleared, then listed: unknown in between');
  });
});

/** Waits, with the harness's probe, until `check` holds; the watch's failures are named if it never does. */
const waitFor = (what: string, check: () => boolean, seen: { failures: string[] }) =>
  until(`${what} (watch failures: ${seen.failures.join(' | ') || 'none'})`, 20_000, async () => (check() ? true : undefined));

describe('the list and watch, against an apiserver over TLS', () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  after(async () => {
    for (const cleanup of cleanups.reverse()) await cleanup();
  });

  /** An apiserver (its namespaces set by `populate`), a table of KEYS, and the watch between them, started. */
  async function watching(populate: (apiserver: FakeApiserver) => void = () => undefined, beforeStart: (connection: { tokenFile: string }) => void = () => undefined): Promise<{ apiserver: FakeApiserver; connection: { tokenFile: string }; table: NamespaceDefaultsTable; seen: { failures: string[]; synced: number[] } }> {
    const apiserver = new FakeApiserver();
    populate(apiserver);
    const connection = await apiserver.start();
    const table = new NamespaceDefaultsTable();
    table.setKeys(KEYS);
    const seen = { failures: [] as string[], synced: [] as number[] };
    beforeStart(connection);
    const watch = new NamespaceWatch(connection, table, { synced: (n) => seen.synced.push(n), failed: (message) => seen.failures.push(message) }, { minBackoffMs: 10, maxBackoffMs: 50 });
    cleanups.push(() => apiserver.stop(), () => watch.stop());
    watch.start();
    return { apiserver, connection, table, seen };
  }

  test('a paged list, then ADDED, MODIFIED and DELETED from the watch; a watch closed by the apiserver is watched again from where it was', async () => {
    const { apiserver, table, seen } = await watching((apiserver) => {
      for (let i = 0; i < 1203; i++) apiserver.namespaces.set(`ns-${String(i).padStart(4, '0')}`, i % 100 === 0 ? { 'envoy.example.com/log-level': 'debug' } : {});
    });
    await waitFor('the first list', () => table.size.synced, seen);
    assert.deepEqual(seen.synced, [1203]);
    assert.equal(apiserver.requests.filter((r) => r.includes('limit=100')).length, 13, 'thirteen pages of 100');
    assert.equal(table.size.entries, 13);
    await waitFor('a watch open', () => apiserver.watchers.size === 1, seen);
    apiserver.set('shop', { 'envoy.example.com/memory-request': '256Mi' });
    await waitFor('shop added', () => (table.lookup('shop') as any).annotations?.['envoy.example.com/memory-request'] === '256Mi', seen);
    apiserver.set('shop', { 'envoy.example.com/memory-request': '300Mi' });
    await waitFor('shop modified', () => (table.lookup('shop') as any).annotations?.['envoy.example.com/memory-request'] === '300Mi', seen);
    const watchesBefore = apiserver.requests.filter((r) => r.includes('watch=1')).length;
    apiserver.closeWatches();
    await waitFor('watched again', () => apiserver.requests.filter((r) => r.includes('watch=1')).length > watchesBefore && apiserver.watchers.size === 1, seen);
    assert.match(apiserver.requests.at(-1)!, new RegExp(`resourceVersion=${apiserver.version}`), 'from the last version seen, not a new list');
    apiserver.remove('shop');
    await waitFor('shop deleted', () => Object.keys((table.lookup('shop') as any).annotations).length === 0, seen);
    assert.equal(seen.synced.length, 1, 'listed once');
    assert.ok(apiserver.requests.every((r) => r.startsWith('Bearer test-token ')), 'every request carries the token');
    // Only the verbs of the ClusterRole the construct makes (NAMESPACE_READER_RULES): list and watch namespaces.
    for (const request of apiserver.requests) assert.match(request, /^Bearer test-token \/api\/v1\/namespaces\?(limit=\d+(&continue=\d+)?|watch=1&.*)$/, request);
    assert.ok(apiserver.methods.every((method) => method === 'GET'), apiserver.methods.join());
  });

  test('an expired resourceVersion (410) lists again; a refused request backs off and is tried again', async () => {
    const { apiserver, connection, table, seen } = await watching((apiserver) => {
      apiserver.namespaces.set('shop', { 'envoy.example.com/log-level': 'warn' });
    }, (connection) => {
      // The token is wrong at first: 401, retried.
      fs.writeFileSync(connection.tokenFile, 'wrong\n');
    });
    await waitFor('a failure reported', () => seen.failures.length > 0, seen);
    assert.match(seen.failures[0], /HTTP 401/);
    assert.deepEqual(table.lookup('shop'), { unknown: 'the webhook has not listed the namespaces yet' });
    fs.writeFileSync(connection.tokenFile, 'test-token\n');
    await waitFor('listed once the token is good (read again on each request)', () => table.size.synced, seen);
    await waitFor('a watch open', () => apiserver.watchers.size === 1, seen);
    apiserver.expiredBelow = Number.MAX_SAFE_INTEGER;
    apiserver.closeWatches();
    await waitFor('a 410 answered', () => apiserver.requests.filter((r) => r.includes('watch=1')).length >= 2, seen);
    apiserver.expiredBelow = 0;
    await waitFor('listed again after the 410', () => seen.synced.length >= 2, seen);
  });

  test('a list page over 4 MiB is listed again in pages a quarter the size, down to one namespace a page', async () => {
    const { apiserver, table, seen } = await watching((apiserver) => {
      // 40 namespaces of 200 KiB of other annotations each: 100 a page would be 8 MiB.
      for (let i = 0; i < 40; i++) apiserver.namespaces.set(`ns-${i}`, { other: 'x'.repeat(200 * 1024), ...(i === 7 ? { 'envoy.example.com/log-level': 'warn' } : {}) });
    });
    await waitFor('listed', () => table.size.synced, seen);
    assert.deepEqual(seen.failures, [], 'a smaller page is no failure');
    assert.deepEqual(seen.synced, [40]);
    assert.ok(apiserver.requests.some((r: string) => r.includes('limit=25')), apiserver.requests.join('\n'));
    assert.deepEqual({ ...(table.lookup('ns-7') as any).annotations }, { 'envoy.example.com/log-level': 'warn' });
  });

  test('a watch line longer than any object is a broken stream: cut, and listed again', async () => {
    const { apiserver, seen } = await watching();
    await waitFor('a watch open', () => apiserver.watchers.size === 1, seen);
    const chunk = 'x'.repeat(1024 * 1024);
    for (const watcher of apiserver.watchers) for (let i = 0; i < 4; i++) watcher.write(chunk);
    await waitFor('the stream cut', () => seen.failures.some((f: string) => /a line over 3145728 bytes/.test(f)), seen);
    await waitFor('listed again', () => seen.synced.length >= 2, seen);
  });
});
