// The memory budget, end to end: the bundled server started with the environment the synthesized
// Deployment gives its container (downward-API memory limit, NODE_OPTIONS heap limit), flooded with
// large AdmissionReviews while ordinary ones keep coming and the kubelet keeps probing.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { RUNTIME_ENV, memoryQuantityBytes, memorySizing } from '../../webhook/config';
import { loadReview } from '../support/recorded-reviews';
import { findManifest, makeTempDir, synthChart, synthDefaultAppToTemp } from '../support/synth-helpers';
import { BundledWebhook, HttpsResult, deployedEnvironment, downwardResourceValue, opsRequest, startBundled } from '../support/webhook-harness';
import { reviewOfSize } from '../bench/reviews';
import { assertValidManifest } from '../support/openapi-validator';

const MiB = 1024 * 1024;
const LARGE_COUNT = 20;
const LARGE_BYTES = Math.round(6.9 * MiB);
const SMALL_COUNT = 1000;
const SMALL_CONCURRENCY = 20;
/** Peak RSS must stay this far under the container's memory limit. */
const REQUIRED_MARGIN_BYTES = 16 * MiB;

function vmHwmBytes(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = /^VmHWM:\s+(\d+) kB/m.exec(status)?.[1];
  assert.ok(kb, `no VmHWM in /proc/${pid}/status`);
  return Number(kb) * 1024;
}

/** A POST over `agent` that keeps the answer even when the server stops reading the body first. */
function post(port: number, body: Buffer, ca: string, servername: string, agent: https.Agent): Promise<HttpsResult> {
  return new Promise((resolve, reject) => {
    let responded = false;
    const req = https.request(
      {
        host: '127.0.0.1',
        port,
        path: '/mutate?timeout=10s',
        method: 'POST',
        ca,
        servername,
        agent,
        headers: { 'Content-Type': 'application/json', 'Content-Length': String(body.length) },
      },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        const finish = () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text) });
        };
        res.on('end', finish);
        res.on('aborted', finish);
        res.on('error', finish);
      },
    );
    req.on('error', (error) => {
      if (!responded) reject(new Error(`no answer: ${(error as NodeJS.ErrnoException).code ?? ''} ${error.message}`));
    });
    req.end(body);
  });
}

function sample(metrics: string, series: string): number | undefined {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('the bundled webhook, started with the synthesized Deployment\'s environment, under a flood of 6.9 MiB reviews', () => {
  let webhook: BundledWebhook;
  let env: Record<string, string>;
  let limitBytes: number;
  let ca: string;
  let servername: string;
  let livenessTimeoutMs: number;

  before(async () => {
    const synthesized = synthDefaultAppToTemp();
    const deployed = deployedEnvironment(synthesized.manifests, path.join(makeTempDir('memory-mounts')));
    env = deployed.env;
    ca = deployed.caBundle;
    servername = deployed.serverName;
    const limit = deployed.container.resources?.limits?.memory;
    assert.ok(limit, `expected the Deployment's container to set limits.memory, got resources ${JSON.stringify(deployed.container.resources)}`);
    limitBytes = memoryQuantityBytes(String(limit))!;
    livenessTimeoutMs = (deployed.container.livenessProbe?.timeoutSeconds ?? 1) * 1000;
    webhook = await startBundled({ ...env, [RUNTIME_ENV.listenPort]: '0', [RUNTIME_ENV.opsPort]: '0' });
  });

  after(async () => {
    await webhook?.stop('SIGKILL');
  });

  test('the Deployment passes the memory limit and a V8 heap limit derived from it, and the server agrees', () => {
    assert.equal(env[RUNTIME_ENV.memoryLimitBytes], String(limitBytes), `expected ${RUNTIME_ENV.memoryLimitBytes} from the downward API to be limits.memory in bytes`);
    const sizing = memorySizing(limitBytes);
    assert.match(env.NODE_OPTIONS ?? '', new RegExp(`--max-old-space-size=${sizing.heapLimitMiB}\\b`), `expected NODE_OPTIONS to carry --max-old-space-size=${sizing.heapLimitMiB}`);
    assert.match(env.NODE_OPTIONS ?? '', new RegExp(`--max-semi-space-size=${sizing.semiSpaceMiB}\\b`), `expected NODE_OPTIONS to carry --max-semi-space-size=${sizing.semiSpaceMiB}`);
    const memoryLine = webhook.logs.map((line) => { try { return JSON.parse(line); } catch { return undefined; } }).find((entry) => entry?.msg === 'memory');
    assert.ok(memoryLine, `expected a "memory" log line at start; logs:\n${webhook.logs.join('')}`);
    assert.equal(memoryLine.limitBytes, limitBytes, 'the server sized itself from the limit the Deployment passes');
    assert.equal(memoryLine.budgetBytes, sizing.budgetBytes);
    assert.ok(memoryLine.heapLimitBytes < limitBytes, `V8's heap limit (${memoryLine.heapLimitBytes} bytes) must be under the memory limit (${limitBytes}): NODE_OPTIONS did not reach node`);
  });

  test(`${LARGE_COUNT} concurrent 6.9 MiB reviews and ${SMALL_COUNT} small ones: no crash, VmHWM under the limit, 429 past the budget, every small one 200, liveness passing`, async () => {
    const large = reviewOfSize(LARGE_BYTES).body;
    const largeAgent = new https.Agent({ keepAlive: true, maxSockets: LARGE_COUNT, ca, servername });
    const smallAgent = new https.Agent({ keepAlive: true, maxSockets: SMALL_CONCURRENCY, ca, servername });
    // The kubelet, in its own process as it is in a cluster: a new connection per probe, every 100 ms
    // here (every 10 s in the Deployment), each with the probe's timeout.
    const prober = spawn(
      process.execPath,
      [
        '-e',
        `const http = require('node:http');
        const [port, timeout] = [Number(process.argv[1]), Number(process.argv[2])];
        let stopping = false;
        process.stdin.on('data', () => (stopping = true)).on('end', () => (stopping = true));
        (async () => {
          while (!stopping) {
            const started = performance.now();
            const status = await new Promise((resolve) => {
              const req = http.get({ host: '127.0.0.1', port, path: '/healthz', agent: false, timeout }, (res) => { res.resume(); res.on('end', () => resolve(res.statusCode)); });
              req.on('timeout', () => req.destroy(new Error('timeout')));
              req.on('error', () => resolve(0));
            });
            process.stdout.write(JSON.stringify({ status, ms: performance.now() - started }) + '\\n');
            await new Promise((resolve) => setTimeout(resolve, 100));
          }
        })();`,
        String(webhook.opsPort),
        String(livenessTimeoutMs),
      ],
      { env: { PATH: process.env.PATH ?? '' }, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    let probeOutput = '';
    prober.stdout!.on('data', (chunk: Buffer) => (probeOutput += chunk.toString('utf8')));
    const proberExited = new Promise((resolve) => prober.on('exit', resolve));
    const stopProber = async () => {
      prober.stdin!.end();
      await proberExited;
      return probeOutput.split('\n').filter(Boolean).map((line) => JSON.parse(line) as { status: number; ms: number });
    };
    try {
      const largeAnswers = Promise.all(Array.from({ length: LARGE_COUNT }, () => post(webhook.port, large, ca, servername, largeAgent)));
      // The small ones start while the large ones are still being sent.
      const smallStatuses: { uid: string; result: HttpsResult }[] = [];
      let next = 0;
      const smallWorkers = Array.from({ length: SMALL_CONCURRENCY }, async () => {
        while (next < SMALL_COUNT) {
          const review = loadReview('pod-create-sleep');
          review.request.uid = `small-${next++}`;
          smallStatuses.push({ uid: review.request.uid, result: await post(webhook.port, Buffer.from(JSON.stringify(review)), ca, servername, smallAgent) });
        }
      });
      const largeResults = await largeAnswers;
      await Promise.all(smallWorkers);
      const probes = await stopProber();

      assert.equal(webhook.child.exitCode, null, `the server exited (code ${webhook.child.exitCode}, signal ${webhook.child.signalCode}); logs:\n${webhook.logs.slice(-20).join('')}`);
      const peak = vmHwmBytes(webhook.child.pid!);
      const margin = limitBytes - peak;
      const shed = largeResults.filter((result) => result.status === 429);
      const admitted = largeResults.filter((result) => result.status === 200);
      const statuses = largeResults.map((result) => result.status).join(', ');
      console.log(
        `# peak RSS (VmHWM) ${(peak / MiB).toFixed(1)} MiB of a ${(limitBytes / MiB).toFixed(0)} MiB limit (margin ${(margin / MiB).toFixed(1)} MiB, required ${REQUIRED_MARGIN_BYTES / MiB} MiB); ` +
          `large: ${admitted.length} answered 200, ${shed.length} shed with 429; small: ${smallStatuses.filter((s) => s.result.status === 200).length}/${SMALL_COUNT} 200; ` +
          `${probes.length} liveness probes, slowest ${Math.max(...probes.map((p) => p.ms)).toFixed(0)} ms`,
      );
      assert.ok(
        margin >= REQUIRED_MARGIN_BYTES,
        `expected peak RSS at least ${REQUIRED_MARGIN_BYTES / MiB} MiB under the container's memory limit of ${(limitBytes / MiB).toFixed(0)} MiB (the kubelet OOM-kills past it), got VmHWM ${(peak / MiB).toFixed(1)} MiB`,
      );
      assert.equal(admitted.length + shed.length, LARGE_COUNT, `expected every large review answered 200 or 429, got statuses ${statuses}`);
      const sizing = memorySizing(limitBytes);
      const fitAtOnce = Math.floor(sizing.largeBodyBytes / large.length);
      assert.ok(shed.length >= 1, `expected the large reviews beyond the budget (${fitAtOnce} of ${large.length} bytes fit at once) to get 429, got statuses ${statuses}`);
      for (const result of shed) {
        assert.equal(result.headers['retry-after'], '1', 'a shed request carries Retry-After');
        const error = result.json().error;
        assert.equal(error?.code, 429);
        assert.match(String(error?.message), /memory budget of \d+ bytes/, `expected the 429 message to name the memory budget, got ${JSON.stringify(error?.message)}`);
      }
      const notOk = smallStatuses.filter((s) => s.result.status !== 200 || s.result.json().response?.uid !== s.uid);
      assert.equal(smallStatuses.length, SMALL_COUNT);
      assert.deepEqual(
        notOk.slice(0, 5).map((s) => `${s.uid}: HTTP ${s.result.status} ${s.result.text.slice(0, 200)}`),
        [],
        `expected every small review answered 200 with its uid; ${notOk.length} were not`,
      );
      const failedProbes = probes.filter((probe) => probe.status !== 200 || probe.ms > livenessTimeoutMs);
      assert.ok(probes.length > 0, 'the prober ran');
      assert.deepEqual(failedProbes, [], `expected every /healthz probe answered 200 within the liveness probe's ${livenessTimeoutMs} ms`);

      const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
      assert.equal(sample(metrics, 'sidecar_injector_admission_requests_total{outcome="shed"}'), shed.length, 'every 429 is counted as shed in /metrics');
      const budget = sample(metrics, 'sidecar_injector_memory_budget_bytes');
      const peakHeld = sample(metrics, 'sidecar_injector_memory_budget_peak_held_bytes');
      assert.equal(budget, sizing.budgetBytes);
      assert.ok(peakHeld !== undefined && peakHeld <= budget! && peakHeld >= large.length, `expected the peak of bytes held within the budget of ${budget}, got ${peakHeld}`);
      assert.equal(sample(metrics, 'sidecar_injector_memory_budget_held_bytes'), 0, 'every request gave its bytes back');
      for (const series of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
        assert.ok((sample(metrics, series) ?? -1) >= 0, `expected ${series} in /metrics`);
      }
      assert.match(metrics, /^nodejs_gc_duration_seconds_count\{kind="(major|minor)"\} \d+/m, 'expected GC durations in /metrics');
    } finally {
      if (prober.exitCode === null) prober.kill('SIGKILL');
      largeAgent.destroy();
      smallAgent.destroy();
    }
  });
});

describe('the bundled webhook while nobody reads its stdout (a container runtime that fell behind)', () => {
  const ADMISSIONS = 6000;
  const CONCURRENCY = 20;
  const DROPPED_REPORT = 'log lines dropped: stdout was not read fast enough';
  /** Far more than the admissions take (a few seconds): past it the server is waiting for its reader. */
  const STALL_LIMIT_MS = 45_000;

  test(`${ADMISSIONS} admissions are all answered while stdout is not read; afterwards each one's log line has arrived or is counted as dropped`, { timeout: 90_000 }, async () => {
    const synthesized = synthDefaultAppToTemp();
    const deployed = deployedEnvironment(synthesized.manifests, path.join(makeTempDir('stdout-mounts')));
    const webhook = await startBundled({ ...deployed.env, [RUNTIME_ENV.listenPort]: '0', [RUNTIME_ENV.opsPort]: '0' });
    const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY, ca: deployed.caBundle, servername: deployed.serverName });
    try {
      // The server's stdout is a socket to this process: not reading it fills it, as a stalled
      // runtime fills a container's log pipe. A server that waited for it would stop answering here.
      webhook.child.stdout!.pause();
      const logsBefore = webhook.logs.length;
      const failures: string[] = [];
      let next = 0;
      let answered = 0;
      const sending = Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < ADMISSIONS) {
            const review = loadReview('pod-create-sleep');
            review.request.uid = `unread-stdout-${next++}`;
            const result = await post(webhook.port, Buffer.from(JSON.stringify(review)), deployed.caBundle, deployed.serverName, agent);
            answered++;
            if (result.status !== 200 || result.json().response?.uid !== review.request.uid) failures.push(`${review.request.uid}: HTTP ${result.status} ${result.text.slice(0, 200)}`);
          }
        }),
      );
      let timer: NodeJS.Timeout | undefined;
      const stalled = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`admissions stopped being answered while stdout was not read: ${answered} of ${ADMISSIONS} answered in ${STALL_LIMIT_MS / 1000} s`)), STALL_LIMIT_MS);
      });
      await Promise.race([sending, stalled]).finally(() => clearTimeout(timer));
      assert.deepEqual(failures.slice(0, 5), [], `expected every admission answered 200 with its uid while stdout was not read; ${failures.length} were not`);
      const dropped = sample((await opsRequest(webhook.opsPort, '/metrics')).text, 'sidecar_injector_log_lines_dropped_total');
      assert.ok(dropped !== undefined && dropped > 0, `expected sidecar_injector_log_lines_dropped_total > 0 after ${ADMISSIONS} lines (~2 MB) into a full stdout; got ${dropped}`);

      webhook.child.stdout!.resume();
      const entries = () => webhook.logs.slice(logsBefore).flatMap((line) => { try { return [JSON.parse(line)]; } catch { return []; } });
      const deadline = performance.now() + 10_000;
      while (!entries().some((entry) => entry.msg === DROPPED_REPORT) && performance.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      const received = entries();
      const admissionLines = received.filter((entry) => entry.msg === 'admission' && String(entry.uid).startsWith('unread-stdout-'));
      const reports = received.filter((entry) => entry.msg === DROPPED_REPORT);
      assert.ok(reports.length > 0, `expected a warn line "${DROPPED_REPORT}" once stdout was read again; the last lines:\n${webhook.logs.slice(-5).join('')}`);
      assert.equal(admissionLines.length + dropped, ADMISSIONS, `${admissionLines.length} admission lines received + ${dropped} dropped should be the ${ADMISSIONS} admissions answered`);
      assert.equal(reports.reduce((sum, entry) => sum + entry.dropped, 0), dropped, 'the warn lines account for every dropped line');
      const torn = webhook.logs.slice(logsBefore).filter((line) => { try { JSON.parse(line); return false; } catch { return true; } });
      assert.deepEqual(torn.slice(0, 3), [], 'log lines that are not JSON (torn by a partial write)');
    } finally {
      agent.destroy();
      await webhook.stop('SIGKILL');
    }
  });
});

describe('the Deployment and NetworkPolicy follow the memory and source props', () => {
  test('a 512Mi limit gives NODE_OPTIONS --max-old-space-size=256 --max-semi-space-size=16, 1,024 connections and an 88 MiB budget', () => {
    const { manifests } = synthChart({ resources: { limits: { memory: '512Mi' } } });
    const container = findManifest(manifests, 'Deployment').spec.template.spec.containers[0];
    const env = Object.fromEntries(container.env.map((variable: any) => [variable.name, variable.value ?? downwardResourceValue(container, variable)]));
    assert.equal(env.NODE_OPTIONS, '--max-old-space-size=256 --max-semi-space-size=16', `expected half of 512 MiB as V8's heap limit and 512 / 24 capped at 16 as its semi-space, got NODE_OPTIONS ${JSON.stringify(env.NODE_OPTIONS)}`);
    assert.equal(env[RUNTIME_ENV.memoryLimitBytes], String(512 * MiB));
    // (512 MiB - 96 MiB reserved - 1,024 connections of 64 KiB) / 4 bytes per body byte.
    const sizing = memorySizing(Number(env[RUNTIME_ENV.memoryLimitBytes]));
    assert.equal(sizing.maxConnections, 1024);
    assert.equal(sizing.budgetBytes, 88 * MiB);
  });

  test('a memory limit under 128Mi or not a quantity fails synth naming resources.limits.memory', () => {
    assert.throws(() => synthChart({ resources: { limits: { memory: '100Mi' } } }), /resources\.limits\.memory: "100Mi" must be at least 128Mi/);
    assert.throws(() => synthChart({ resources: { limits: { memory: 'lots' } } }), /resources\.limits\.memory: "lots" is not a Kubernetes memory quantity/);
  });

  test('apiServerCidrs restricts the NetworkPolicy ingress to those sources on the webhook port; a bad CIDR fails synth', () => {
    const { manifests } = synthChart({ apiServerCidrs: ['10.0.0.0/24', 'fd00::/64'] });
    const policy = findManifest(manifests, 'NetworkPolicy');
    assertValidManifest(policy);
    assert.deepEqual(policy.spec.ingress, [{ from: [{ ipBlock: { cidr: '10.0.0.0/24' } }, { ipBlock: { cidr: 'fd00::/64' } }], ports: [{ protocol: 'TCP', port: 8443 }] }]);
    const open = findManifest(synthChart().manifests, 'NetworkPolicy');
    assert.equal(open.spec.ingress[0].from, undefined, 'without the prop the port stays open to every source');
    assert.throws(() => synthChart({ apiServerCidrs: ['10.0.0.0/33'] }), /apiServerCidrs\[0\]: "10\.0\.0\.0\/33" is not a CIDR/);
  });

  test('probes go to the ops port over plain HTTP, which the NetworkPolicy opens only to metricsSourceCidrs', () => {
    const { manifests } = synthChart({ opsPort: 9090, metricsSourceCidrs: ['10.8.0.0/16'] });
    const deployment = findManifest(manifests, 'Deployment');
    assertValidManifest(deployment);
    const container = deployment.spec.template.spec.containers[0];
    assert.deepEqual(container.ports, [
      { name: 'https', containerPort: 8443, protocol: 'TCP' },
      { name: 'ops', containerPort: 9090, protocol: 'TCP' },
    ]);
    assert.equal(container.env.find((variable: any) => variable.name === RUNTIME_ENV.opsPort)?.value, '9090');
    for (const probe of [container.livenessProbe, container.readinessProbe]) assert.deepEqual({ port: probe.httpGet.port, scheme: probe.httpGet.scheme }, { port: 'ops', scheme: 'HTTP' });
    const policy = findManifest(manifests, 'NetworkPolicy');
    assertValidManifest(policy);
    assert.deepEqual(policy.spec.ingress[1], { from: [{ ipBlock: { cidr: '10.8.0.0/16' } }], ports: [{ protocol: 'TCP', port: 9090 }] });
    const closed = findManifest(synthChart().manifests, 'NetworkPolicy');
    assert.equal(closed.spec.ingress.length, 1, `without metricsSourceCidrs only the webhook port is open to pods (the node reaches the ops port regardless), got ${JSON.stringify(closed.spec.ingress)}`);
    assert.throws(() => synthChart({ opsPort: 8443 }), /opsPort: must differ from port \(8443\)/);
    assert.throws(() => synthChart({ metricsSourceCidrs: ['nope'] }), /metricsSourceCidrs\[0\]: "nope" is not a CIDR/);
  });
});
