// Live reload of what the kubelet mounts (the config ConfigMap, the TLS Secret), startup without a
// valid config, and the bundled process's life cycle: start, SIGTERM, bad environment.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as tls from 'node:tls';
import { Injection, InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { RUNTIME_ENV } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import {
  BundledWebhook,
  HttpsResult,
  InProcessWebhook,
  MountedDirs,
  TEST_SERVER_NAME,
  makeMountedDirs,
  postAdmission,
  opsRequest,
  startBundled,
  startInProcess,
} from '../support/webhook-harness';
import { applyResponse, loadReview, podOf } from '../support/recorded-reviews';

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
/** The renewed certificate: a new CA and key, as a rotation brings them. */
const renewed = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const DEFAULT_ENVOY_IMAGE = 'envoyproxy/envoy:v1.20.3';
const RENAMED_ENVOY_IMAGE = 'envoyproxy/envoy:v1.31.0';
const ENVOY = DEFAULT_INJECTIONS.find((injection) => injection.name === 'envoy')!;
const RENAMED_ENVOY: Injection = { ...ENVOY, containers: [{ ...ENVOY.containers![0], image: RENAMED_ENVOY_IMAGE }] };
/** How long a written change may take to be served (the watcher debounces by 100 ms), by the
 * server's own clock: from the write to its log line saying it reloaded. */
const RELOAD_WITHIN_MS = 2_000;
/** How long the probes below wait for what they look for: far past it, for a loaded machine. */
const WAIT_MS = 30_000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Probes until `done` holds, failing with the last observation after `timeoutMs`. */
async function eventually<T>(what: string, probe: () => Promise<T>, done: (value: T) => boolean, timeoutMs = WAIT_MS): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() - started > timeoutMs) assert.fail(`expected ${what} within ${timeoutMs} ms; last saw ${JSON.stringify(value)}`);
    await sleep(50);
  }
}

interface Readiness {
  readonly status: number;
  readonly ready?: boolean;
  readonly config?: string;
  readonly configError?: string;
}

/** How long after `writtenAt` (Date.now()) the in-process server logged `msg`, by its own clock. */
function reloadedAfterMs(webhook: InProcessWebhook, msg: string, writtenAt: number): number {
  const line = webhook.logs.map((text) => JSON.parse(text)).find((entry) => entry.msg === msg && Date.parse(entry.time) >= writtenAt);
  assert.ok(line, `the server logged no "${msg}" after the write; its lines:\n${webhook.logs.slice(-5).join('')}`);
  return Date.parse(line.time) - writtenAt;
}

async function readiness(opsPort: number): Promise<Readiness> {
  const result = await opsRequest(opsPort, '/readyz');
  return { status: result.status, ...result.json() };
}

async function scrapeMetrics(opsPort: number): Promise<string> {
  const result = await opsRequest(opsPort, '/metrics');
  assert.equal(result.status, 200, `expected /metrics 200, got ${result.status}`);
  return result.text;
}

/** The value of one series (`name{labels}`) in Prometheus text; 0 when it has not been counted yet. */
function sample(metrics: string, series: string): number {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(`${series} `));
  return line === undefined ? 0 : Number(line.slice(series.length + 1));
}

const CONFIG_FAILURES = 'sidecar_injector_reloads_total{what="config",result="failure"}';
const LAST_RELOAD_OK = 'sidecar_injector_config_last_reload_successful';

/** The image of the envoy container injected into the recorded pod `sleep`, or undefined. */
async function injectedEnvoyImage(port: number, ca: string): Promise<string | undefined> {
  const review = loadReview('pod-create-sleep');
  const result = await postAdmission(port, review, { ca });
  assert.equal(result.status, 200, `expected HTTP 200 for the recorded pod, got ${result.status}: ${result.text}`);
  const pod = podOf(applyResponse(review.request.object, result.json().response));
  return pod.spec.containers.find((container: { name: string }) => container.name === 'envoy')?.image;
}

/** Resolves with the protocol when a client trusting only `ca` completes a handshake; rejects otherwise. */
function handshake(port: number, ca: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port, servername: TEST_SERVER_NAME, ca }, () => {
      const protocol = socket.getProtocol() ?? 'unknown';
      socket.end();
      resolve(protocol);
    });
    socket.on('error', reject);
  });
}

/** 'ok', or the verification error a client trusting only `ca` gets. */
const trustOutcome = (port: number, ca: string) => handshake(port, ca).then(() => 'ok', (error: NodeJS.ErrnoException) => `${error.code}: ${error.message}`);

/** Error log lines (parsed) written since index `from`. */
function errorLines(logs: string[], from = 0): Array<Record<string, unknown>> {
  return logs.slice(from).map((line) => JSON.parse(line)).filter((entry) => entry.level === 'error');
}

function assertRejected(result: HttpsResult, status: number, message: RegExp): void {
  assert.equal(result.status, status, `expected HTTP ${status} (${message}), got ${result.status}: ${result.text}`);
  assert.match(String(result.json().error?.message), message, `expected the error message to say ${message}, got ${result.text}`);
}

describe('reloading the mounted config', () => {
  let webhook: InProcessWebhook;
  const ca = certificate.caCertificate;

  before(async () => {
    webhook = await startInProcess(CONFIG, certificate);
  });
  after(async () => {
    await webhook?.stop();
  });

  test('serves a newly written valid config within 2 s', async () => {
    assert.equal(await injectedEnvoyImage(webhook.port, ca), DEFAULT_ENVOY_IMAGE, 'before the change, the default envoy image is injected');
    const writtenAt = Date.now();
    webhook.dirs.writeConfig({ injections: [RENAMED_ENVOY] });
    await eventually('the new envoy image to be injected', () => injectedEnvoyImage(webhook.port, ca), (image) => image === RENAMED_ENVOY_IMAGE);
    const afterMs = reloadedAfterMs(webhook, 'config reloaded', writtenAt);
    assert.ok(afterMs <= RELOAD_WITHIN_MS, `the server reloaded the config ${afterMs} ms after the write, by its own log`);
    const ready = await readiness(webhook.opsPort);
    assert.deepEqual({ status: ready.status, config: ready.config }, { status: 200, config: 'current' }, `expected a current config, got ${JSON.stringify(ready)}`);
  });

  test('keeps serving the last good config when the new one is not JSON, and reports it stale', async () => {
    const failuresBefore = sample(await scrapeMetrics(webhook.opsPort), CONFIG_FAILURES);
    const logsFrom = webhook.logs.length;
    webhook.dirs.writeConfig('{ "injections": [');
    const ready = await eventually('/readyz to report the config stale', () => readiness(webhook.opsPort), (r) => r.config === 'stale');
    assert.deepEqual({ status: ready.status, ready: ready.ready }, { status: 200, ready: true }, `a bad update must not make the pod unready; got ${JSON.stringify(ready)}`);
    assert.match(String(ready.configError), /not JSON/, `expected the configError to say the file is not JSON, got ${JSON.stringify(ready.configError)}`);

    const metrics = await scrapeMetrics(webhook.opsPort);
    assert.equal(sample(metrics, LAST_RELOAD_OK), 0, `expected ${LAST_RELOAD_OK} 0 after a failed reload, got ${sample(metrics, LAST_RELOAD_OK)}`);
    assert.equal(sample(metrics, CONFIG_FAILURES), failuresBefore + 1, `expected ${CONFIG_FAILURES} to grow by 1 from ${failuresBefore}, got ${sample(metrics, CONFIG_FAILURES)}`);
    const errors = errorLines(webhook.logs, logsFrom);
    assert.ok(errors.some((entry) => /not JSON/.test(String(entry.error))), `expected an error log line about the invalid config, got ${JSON.stringify(errors)}`);
    assert.equal(await injectedEnvoyImage(webhook.port, ca), RENAMED_ENVOY_IMAGE, 'expected the last good config (renamed envoy image) to keep serving');
  });

  test('keeps serving the last good config when the new one names an injection twice', async () => {
    const failuresBefore = sample(await scrapeMetrics(webhook.opsPort), CONFIG_FAILURES);
    const logsFrom = webhook.logs.length;
    webhook.dirs.writeConfig({ injections: [RENAMED_ENVOY, { ...ENVOY }] });
    const ready = await eventually('/readyz to report the duplicate name', () => readiness(webhook.opsPort), (r) => /duplicate injection name "envoy"/.test(String(r.configError)));
    assert.deepEqual(
      { status: ready.status, ready: ready.ready, config: ready.config },
      { status: 200, ready: true, config: 'stale' },
      `expected ready with a stale config, got ${JSON.stringify(ready)}`,
    );
    const metrics = await scrapeMetrics(webhook.opsPort);
    assert.equal(sample(metrics, LAST_RELOAD_OK), 0, `expected ${LAST_RELOAD_OK} 0, got ${sample(metrics, LAST_RELOAD_OK)}`);
    assert.equal(sample(metrics, CONFIG_FAILURES), failuresBefore + 1, `expected ${CONFIG_FAILURES} to grow by 1 from ${failuresBefore}, got ${sample(metrics, CONFIG_FAILURES)}`);
    const errors = errorLines(webhook.logs, logsFrom);
    assert.ok(errors.some((entry) => /duplicate injection name/.test(String(entry.error))), `expected an error log line naming the duplicate, got ${JSON.stringify(errors)}`);
    assert.equal(await injectedEnvoyImage(webhook.port, ca), RENAMED_ENVOY_IMAGE, 'expected the last good config to keep serving');
  });

  test('reports the config current again once a good config is written', async () => {
    webhook.dirs.writeConfig(CONFIG);
    const ready = await eventually('/readyz to report the config current', () => readiness(webhook.opsPort), (r) => r.config === 'current');
    assert.deepEqual(
      { status: ready.status, ready: ready.ready, configError: ready.configError },
      { status: 200, ready: true, configError: undefined },
      `expected ready with no configError, got ${JSON.stringify(ready)}`,
    );
    const metrics = await scrapeMetrics(webhook.opsPort);
    assert.equal(sample(metrics, LAST_RELOAD_OK), 1, `expected ${LAST_RELOAD_OK} back at 1, got ${sample(metrics, LAST_RELOAD_OK)}`);
    assert.equal(await injectedEnvoyImage(webhook.port, ca), DEFAULT_ENVOY_IMAGE, 'expected the newly written config (default envoy image) to serve');
  });
});

describe('reloading the mounted certificate', () => {
  let webhook: InProcessWebhook;

  before(async () => {
    webhook = await startInProcess(CONFIG, certificate);
  });
  after(async () => {
    await webhook?.stop();
  });

  test('serves a newly written certificate to new connections within 2 s, and stops serving the old one', async () => {
    assert.equal(await trustOutcome(webhook.port, certificate.caCertificate), 'ok', 'before the rotation, the old CA is trusted');
    assert.notEqual(await trustOutcome(webhook.port, renewed.caCertificate), 'ok', 'before the rotation, the new CA is not trusted');

    const writtenAt = Date.now();
    webhook.dirs.writeCertificate(renewed);
    await eventually('a client trusting only the new CA to connect', () => trustOutcome(webhook.port, renewed.caCertificate), (outcome) => outcome === 'ok');
    const afterMs = reloadedAfterMs(webhook, 'certificate reloaded', writtenAt);
    assert.ok(afterMs <= RELOAD_WITHIN_MS, `the server reloaded the certificate ${afterMs} ms after the write, by its own log`);
    const old = await trustOutcome(webhook.port, certificate.caCertificate);
    assert.notEqual(old, 'ok', 'expected a client trusting only the old CA to be refused after the rotation');

    const review = loadReview('pod-create-sleep');
    const result = await postAdmission(webhook.port, review, { ca: renewed.caCertificate });
    assert.equal(result.status, 200, `expected /mutate to answer over the new certificate, got ${result.status}: ${result.text}`);
    const metrics = await scrapeMetrics(webhook.opsPort);
    const reloads = sample(metrics, 'sidecar_injector_reloads_total{what="certificate",result="success"}');
    assert.equal(reloads, 1, `expected one successful certificate reload counted, got ${reloads}`);
  });
});

describe('starting with an invalid config', () => {
  let webhook: InProcessWebhook;
  const ca = certificate.caCertificate;

  before(async () => {
    webhook = await startInProcess('{ "injections": [', certificate);
  });
  after(async () => {
    await webhook?.stop();
  });

  test('is not ready and answers /mutate with 503 while no valid config is loaded', async () => {
    const ready = await readiness(webhook.opsPort);
    assert.deepEqual(
      { status: ready.status, ready: ready.ready, config: ready.config },
      { status: 503, ready: false, config: 'missing' },
      `expected /readyz 503 with config missing, got ${JSON.stringify(ready)}`,
    );
    const review = loadReview('pod-create-sleep');
    const result = await postAdmission(webhook.port, review, { ca });
    assertRejected(result, 503, /no valid injector config/);
    assert.equal(result.json().error?.uid, review.request.uid, `expected the request uid echoed in the error, got ${result.text}`);
  });

  test('becomes ready and injects once a valid config is written', async () => {
    webhook.dirs.writeConfig(CONFIG);
    const ready = await eventually('/readyz to become ready', () => readiness(webhook.opsPort), (r) => r.status === 200);
    assert.deepEqual({ ready: ready.ready, config: ready.config }, { ready: true, config: 'current' }, `expected ready with a current config, got ${JSON.stringify(ready)}`);
    assert.equal(await injectedEnvoyImage(webhook.port, ca), DEFAULT_ENVOY_IMAGE, 'expected envoy injected with the config just written');
    const gauge = sample(await scrapeMetrics(webhook.opsPort), LAST_RELOAD_OK);
    assert.equal(gauge, 1, `expected ${LAST_RELOAD_OK} 1 once the config loads, got ${gauge}`);
  });
});

describe('the bundled server process', () => {
  let dirs: MountedDirs;
  let bundled: BundledWebhook | undefined;
  const envFor = (overrides: Record<string, string> = {}) => ({
    [RUNTIME_ENV.tlsDir]: dirs.tlsDir,
    [RUNTIME_ENV.configDir]: dirs.configDir,
    [RUNTIME_ENV.listenPort]: '0',
    ...overrides,
  });

  before(() => {
    dirs = makeMountedDirs(CONFIG, certificate);
  });
  after(async () => {
    await bundled?.stop('SIGKILL');
    dirs?.cleanup();
  });

  test('exits 0 on SIGTERM and logs that it shut down', async () => {
    bundled = await startBundled(envFor());
    // 'exit' can come before the last stdout lines are read; 'close' comes after them.
    const closed = new Promise<void>((resolve) => bundled!.child.once('close', () => resolve()));
    const ready = await readiness(bundled.opsPort);
    assert.equal(ready.status, 200, `expected the bundled server ready before stopping it, got ${JSON.stringify(ready)}`);
    const code = await bundled.stop('SIGTERM');
    await closed;
    assert.equal(code, 0, `expected exit code 0 after SIGTERM, got ${code}; logs:\n${bundled.logs.join('')}`);
    assert.ok(
      bundled.logs.some((line) => line.includes('"msg":"shut down"')),
      `expected a "shut down" log line, got:\n${bundled.logs.join('')}`,
    );
  });

  test(`exits 1 naming ${RUNTIME_ENV.listenPort} when it is not a number`, async () => {
    await assert.rejects(
      startBundled(envFor({ [RUNTIME_ENV.listenPort]: 'abc' })),
      (error: Error) => {
        assert.match(error.message, /exited with 1 before listening/, `expected exit code 1, got: ${error.message}`);
        assert.match(error.message, new RegExp(`${RUNTIME_ENV.listenPort} must be a whole number.*abc`), `expected a message naming ${RUNTIME_ENV.listenPort}, got: ${error.message}`);
        return true;
      },
    );
  });
});
