// The reconciler as a process (startReconciler) over its real HTTPS client: it takes the Lease, passes
// over the cluster, serves /healthz, /readyz and /metrics (labels are fixed words, never cluster
// content), and gives the Lease up when stopped. Waits on its log lines, never on time.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { RECONCILER_BUNDLE_FILES, RECONCILER_BUNDLE_LOADER, SERVER_BUNDLE_DIR_ENV } from '../../charts/webhook-server';
import { createLogger } from '../../webhook/server/logger';
import { HttpsKubeApi } from '../../webhook/kube-client/kube-api';
import { startReconciler } from '../../webhook/reconciler/reconciler-process';
import { EventRecorder, SENT_EVENTS_MAX_BYTES } from '../../webhook/reconciler/event-recorder';
import { LeaderLease } from '../../webhook/reconciler/lease';
import { serveOverHttps } from '../support/fake-kube';
import { REPO_ROOT } from '../support/markdown-docs';
import { APP_SPEC, NAMESPACE, TestClock, reconcilerHarness, setWebhookReady } from '../support/reconciler-harness';
import { makeTempDir } from '../support/synth-helpers';

function get(port: number, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, path }, (res) => {
      let body = '';
      res.on('data', (chunk) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}

describe('the reconciler process', () => {
  test('takes the Lease, passes, reports metrics with fixed labels, and gives the Lease up on stop', async () => {
    const { kube, settings } = reconcilerHarness({ missing: 'report' });
    setWebhookReady(kube, false);
    kube.deployment('apps', 'web', 3, APP_SPEC);
    setWebhookReady(kube, true);
    const served = await serveOverHttps(kube);
    const api = new HttpsKubeApi(served.connection);
    const lines: string[] = [];
    let passed!: () => void;
    const firstPass = new Promise<void>((resolve) => (passed = resolve));
    const logger = createLogger('info', (text) => {
      lines.push(...text.trim().split('\n'));
      if (text.includes('"pass done"')) passed();
    });
    const running = await startReconciler({ api, settings, namespace: NAMESPACE, identity: 'reconciler-0', logger, opsPort: 0 });
    try {
      await firstPass;
      assert.deepEqual(await get(running.opsPort, '/healthz'), { status: 200, body: 'ok' });
      assert.equal((await get(running.opsPort, '/readyz')).status, 200);
      const metrics = (await get(running.opsPort, '/metrics')).body;
      assert.match(metrics, /^sidecar_injector_reconciler_leader 1$/m);
      assert.match(metrics, /^sidecar_injector_reconciler_pods\{state="stale"\} 3$/m);
      assert.match(metrics, /^sidecar_injector_reconciler_pods_missing_injection 3$/m, 'the three pods admitted while the injector was not ready have no sidecars');
      assert.match(metrics, /^sidecar_injector_reconciler_passes_total\{result="done"\} [1-9]/m);
      const labelValues = [...metrics.matchAll(/^sidecar_injector_reconciler_\w+\{([^}]*)\}/gm)].flatMap((match) => match[1].split(',').map((pair) => pair.split('=')[1]));
      assert.ok(labelValues.every((value) => /^"[A-Za-z0-9.+-]+"$/.test(value)), `label values: ${[...new Set(labelValues)].join(' ')}`);
      assert.ok(!metrics.includes('web'), 'no workload name in the metrics');
      const held = kube.get('coordination.k8s.io', 'leases', NAMESPACE, settings.leaseName);
      assert.equal(held.spec.holderIdentity, 'reconciler-0');
      assert.equal(held.spec.leaseDurationSeconds, 15);
      assert.match(held.spec.renewTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, 'a MicroTime');
      // After the full list, its pod watch runs over the same HTTPS client (a condition, not a time).
      while (kube.podWatches === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    } finally {
      await running.stop();
      api.close();
      await served.stop();
    }
    while (kube.podWatches > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    assert.ok(kube.requests.some((request) => request.verb === 'watch'));
    assert.equal(kube.get('coordination.k8s.io', 'leases', NAMESPACE, settings.leaseName).spec.holderIdentity, '', 'given up for the other replica');
    assert.ok(lines.some((line) => line.includes('"holds the Lease: acting"')));
    // What the first pass listed and cost, in its own line: an operator reads a pass's price there.
    const done = JSON.parse(lines.find((line) => line.includes('"pass done"'))!);
    assert.equal(done.listed, 'all', `the first pass lists every pod: ${JSON.stringify(done)}`);
    assert.equal(done.pods, 3);
    for (const field of ['seconds', 'cpuSeconds']) assert.ok(typeof done[field] === 'number' && done[field] >= 0, `${field} in ${JSON.stringify(done)}`);
    assert.deepEqual(kube.forbidden, []);
  });
});

const LEASE = 'sidecar-injector-reconciler';

describe('the Lease and the Events table', () => {
  test('a replica that loses a write race does not act; one whose renewals fail stops acting within the duration', async () => {
    const { kube } = reconcilerHarness();
    const clock = new TestClock();
    const a = new LeaderLease(kube, clock, { namespace: NAMESPACE, name: LEASE, identity: 'a', durationSeconds: 15 });
    const b = new LeaderLease(kube, clock, { namespace: NAMESPACE, name: LEASE, identity: 'b', durationSeconds: 15 });
    assert.equal(await a.tryAcquireOrRenew(), true);
    assert.equal(await b.tryAcquireOrRenew(), false);
    // b has watched the same record for a whole duration; a renews at the last moment and wins the race.
    clock.advance(15_000);
    const stale = kube.get('coordination.k8s.io', 'leases', NAMESPACE, LEASE);
    const original = kube.request.bind(kube);
    let raced = false;
    kube.request = async (method, path, request) => {
      if (method === 'PUT' && !raced && request?.body && (request.body as any).spec?.holderIdentity === 'b') {
        raced = true;
        await a.tryAcquireOrRenew();
      }
      return original(method, path, request);
    };
    assert.equal(await b.tryAcquireOrRenew(), false, 'its write carried a stale resourceVersion: 409');
    assert.ok(raced);
    assert.notEqual(kube.get('coordination.k8s.io', 'leases', NAMESPACE, LEASE).metadata.resourceVersion, stale.metadata.resourceVersion);
    assert.equal(a.held(), true);
    kube.request = original;
    clock.advance(14_500);
    assert.equal(a.held(), false, 'no renewal for a duration less a second: a stops before b may start');
  });

  test('the sent-Events table stays within its byte bound however many objects are named', async () => {
    const { kube } = reconcilerHarness();
    const clock = new TestClock();
    const recorder = new EventRecorder(kube, clock, 'reconciler-0');
    const name = 'x'.repeat(240);
    for (let index = 0; index < 9000; index++) {
      await recorder.record({ apiVersion: 'v1', kind: 'Pod', namespace: 'apps', name: `${name}-${index}` }, 'Warning', 'NotRepaired', 'm'.repeat(200));
      assert.ok(recorder.size.bytes <= SENT_EVENTS_MAX_BYTES);
    }
    assert.ok(recorder.size.entries < 9000, `${recorder.size.entries} entries kept`);
    assert.ok(recorder.size.bytes > SENT_EVENTS_MAX_BYTES * 0.9, 'it fills up to the bound, not far below it');
    // The same Event again within the window is not written again.
    const before = kube.list('', 'events', 'apps').length;
    assert.equal(await recorder.record({ apiVersion: 'v1', kind: 'Pod', namespace: 'apps', name: `${name}-8999` }, 'Warning', 'NotRepaired', 'm'.repeat(200)), false);
    assert.equal(kube.list('', 'events', 'apps').length, before);
  });
});

describe('the bundled reconciler, as its Deployment starts it', () => {
  test('the image-free loader runs reconciler.js from the ConfigMap: bad settings are refused naming the prop; outside a cluster it says so', async () => {
    const code = makeTempDir('reconciler-code');
    const settingsDir = makeTempDir('reconciler-settings');
    fs.writeFileSync(path.join(code, RECONCILER_BUNDLE_FILES.bundle), zlib.brotliCompressSync(fs.readFileSync(path.join(REPO_ROOT, 'build/webhook/reconciler.js'))));
    const run = () =>
      spawnSync(process.execPath, ['-e', RECONCILER_BUNDLE_LOADER], {
        env: { PATH: process.env.PATH, [SERVER_BUNDLE_DIR_ENV]: code, RECONCILER_SETTINGS_DIR: settingsDir, POD_NAME: 'r-0', POD_NAMESPACE: NAMESPACE },
        encoding: 'utf8',
        timeout: 30_000,
      });
    const { settings } = reconcilerHarness();
    fs.writeFileSync(path.join(settingsDir, 'reconciler.json'), JSON.stringify({ ...settings, repairsPerMinute: 0 }));
    const bad = run();
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /reconciler\.json is invalid:\n  reconciler\.repairsPerMinute: must be a whole number from 1 to 60, got 0/);
    fs.writeFileSync(path.join(settingsDir, 'reconciler.json'), JSON.stringify(settings));
    const outside = run();
    assert.equal(outside.status, 1);
    assert.equal(outside.stderr, 'sidecar-injector reconciler: the reconciler runs in the cluster only: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set\n');
  });
});
