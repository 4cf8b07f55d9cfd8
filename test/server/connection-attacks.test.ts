// Nobody who reaches the webhook port can hold it (issue 20): each attack of `npm run attack`, scaled
// down to 600 connections (over the 512 at which the server used to refuse every new connection, and
// over the 384 the default 192Mi limit gives now), against the bundled server in its own process.
// While each is held, the kubelet's probe (a fresh connection to the ops port) and an admission on a
// fresh connection, like an apiserver's new one, are answered. The attackers connect from addresses
// of their own (other pods: 127.0.0.2, ten for the mix), the probes and admissions from 127.0.0.1.
// The only timings are deadlines that define the behaviour: the apiserver's 10 s at most per
// admission, the probe's timeout.

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { InjectorConfig, generateWebhookCertificate } from '../../charts';
import { RUNTIME_ENV, RUNTIME_DEFAULTS, memorySizing } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { ATTACK_DESCRIPTIONS, ATTACK_KINDS, AttackKind, attackerAddresses, startAttack } from '../bench/attacks';
import { loadReview } from '../support/recorded-reviews';
import { BundledWebhook, MountedDirs, TEST_SERVER_NAME, makeMountedDirs, opsRequest, postAdmission, startBundled, until } from '../support/webhook-harness';

const sample = (metrics: string, series: string): number | undefined => {
  const line = metrics.split('\n').find((candidate) => candidate.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

const certificate = generateWebhookCertificate({ serviceName: 'sidecar-injector', namespace: 'sidecar-injector' });
const CONFIG: InjectorConfig = { injections: DEFAULT_INJECTIONS };
const REVIEW = loadReview('pod-create-sleep');
const ATTACKERS = 600;
const ROUNDS = 4;
/** The kubelet's default probe timeout is 1 s; the Deployment sets 2 s. Generous here, for a loaded machine. */
const PROBE_DEADLINE_MS = 5_000;
/** The most an apiserver waits for a webhook (timeoutSeconds may be at most 30; the default app sets 5). */
const ADMISSION_DEADLINE_MS = 10_000;
const MAX_CONNECTIONS = memorySizing(RUNTIME_DEFAULTS.memoryLimitBytes).maxConnections;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
    }),
  ]);
}

describe('the bundled webhook while 600 attacker connections try to hold it', () => {
  let webhook: BundledWebhook;
  let dirs: MountedDirs;
  before(async () => {
    dirs = makeMountedDirs(CONFIG, certificate);
    webhook = await startBundled({ [RUNTIME_ENV.tlsDir]: dirs.tlsDir, [RUNTIME_ENV.configDir]: dirs.configDir, [RUNTIME_ENV.logLevel]: 'info' });
  });
  after(async () => {
    await webhook?.stop('SIGKILL');
    dirs?.cleanup();
  });

  const expectations: Record<AttackKind, (stats: ReturnType<typeof startAttack>['stats']) => void> = {
    // Past the cap, one source's new connections are closed before their handshake (failed, to the
    // attacker), and each admission's connection evicts one of that source's.
    'silent-tls': (stats) =>
      assert.ok(
        stats.failed + stats.closedByServer >= ATTACKERS - MAX_CONNECTIONS,
        `at the cap of ${MAX_CONNECTIONS} the silent connections are refused before their handshake or make room: ${JSON.stringify(stats)}`,
      ),
    'slow-body': (stats) => assert.ok(stats.got408 > 0, `bodies slower than the minimum rate are cut with 408: ${JSON.stringify(stats)}`),
    'slow-headers': () => undefined,
    'slow-large-body': (stats) => assert.ok(stats.closedByServer > 0, `7 MiB bodies at 512 bytes/s are cut: ${JSON.stringify(stats)}`),
    'no-client-hello': (stats) => assert.ok(stats.closedByServer >= ATTACKERS - MAX_CONNECTIONS, `connections without a ClientHello make room: ${JSON.stringify(stats)}`),
    // One source over its share: once the table is full its new connections are closed at accept,
    // before their handshake, so the handshakes it gets are about the cap's worth, not one per reconnect.
    reconnect: (stats) =>
      assert.ok(
        stats.reconnects >= ATTACKERS && stats.handshaken <= MAX_CONNECTIONS + ROUNDS * 4,
        `the attacker's source got at most ${MAX_CONNECTIONS + ROUNDS * 4} handshakes (the cap, and one per admission that made room), and its ` +
          `reconnects were closed before theirs: ${JSON.stringify(stats)}`,
      ),
    mix: (stats) => assert.ok(stats.reconnects > 0, `the attackers were cut and came back: ${JSON.stringify(stats)}`),
  };

  for (const kind of ATTACK_KINDS) {
    test(`${ATTACK_DESCRIPTIONS[kind]}: probes and admissions on fresh connections are answered`, async (t) => {
      const attack = startAttack(kind, {
        port: webhook.port,
        connections: ATTACKERS,
        servername: TEST_SERVER_NAME,
        maxReconnectsEach: 20,
        localAddresses: attackerAddresses(kind),
      });
      const failures: string[] = [];
      try {
        await within(attack.opened, 60_000, 'opening the attackers');
        for (let round = 0; round < ROUNDS; round++) {
          await sleep(500);
          try {
            const probe = await opsRequest(webhook.opsPort, '/healthz', PROBE_DEADLINE_MS);
            if (probe.status !== 200) failures.push(`probe ${round}: ${probe.status} ${probe.text}`);
          } catch (error) {
            failures.push(`probe ${round}: ${(error as Error).message}`);
          }
          try {
            const answer = await within(postAdmission(webhook.port, REVIEW, { ca: certificate.caCertificate }), ADMISSION_DEADLINE_MS, `admission ${round}`);
            if (answer.status !== 200) failures.push(`admission ${round}: ${answer.status} ${answer.text.slice(0, 200)}`);
          } catch (error) {
            failures.push(`admission ${round}: ${(error as Error).message}`);
          }
        }
      } finally {
        await attack.stop();
      }
      t.diagnostic(`attackers: ${JSON.stringify(attack.stats)}`);
      assert.deepEqual(failures, [], `probes and admissions that failed while ${ATTACKERS} attacker connections were held`);
      expectations[kind](attack.stats);
      // Every cut, eviction and abort gives its body's bytes back to the memory budget (a slow body
      // cut with 408 once kept them, and after enough of them every admission was shed with 429).
      const held = await until('the memory budget to be given back', 5000, async () => {
        const value = sample((await opsRequest(webhook.opsPort, '/metrics')).text, 'sidecar_injector_memory_budget_held_bytes');
        return value === 0 ? value : undefined;
      }).catch((error: Error) => error.message);
      assert.equal(held, 0, 'request body bytes still held once the attackers are gone');
      if (kind === 'silent-tls') {
        const metrics = (await opsRequest(webhook.opsPort, '/metrics')).text;
        const closed = (reason: string) => Number(new RegExp(`^sidecar_injector_connections_closed_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? -1);
        const counted = { evicted: closed('evicted'), over_share: closed('over_share') };
        assert.ok(
          counted.evicted > 0 && counted.over_share > 0 && counted.evicted + counted.over_share >= ATTACKERS - MAX_CONNECTIONS,
          `connections closed at the cap, counted in /metrics: expected evictions (for the admissions) and closes at accept, at least ${ATTACKERS - MAX_CONNECTIONS} in all, got ${JSON.stringify(counted)}`,
        );
      }
    });
  }
});
