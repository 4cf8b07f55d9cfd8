// Nobody who reaches the webhook port can hold it (issues 20 and 30): each attack of `npm run attack`,
// scaled down to 600 connections (over the 512 at which the server used to refuse every new
// connection, and over the 384 the default 192Mi limit gives now), against the bundled server in its
// own process, twice: the attackers from addresses of their own (other pods: 127.0.0.2, ten for the
// mix), then from the apiserver's own address, 127.0.0.1, which the probes and admissions come from
// too (a hostNetwork pod on a control-plane node, a node-local proxy, SNAT). While each is held, the
// kubelet's probe (a fresh connection to the ops port) and admissions are answered: on fresh
// connections, as an apiserver dials them; and where the attackers share its address and reconnect as
// fast as they are cut ((f), (g)), on the apiserver's pooled connection, opened before the attack.
// There nothing tells the apiserver's new connection from the attackers' before its RSA handshake, of
// which the address gets a few a second (DISPLACEMENTS), so what must hold is that the attackers on
// its address never displace its pooled connection.
// The only timings are deadlines that define the behaviour: the apiserver's 10 s at most per
// admission, the probe's timeout; and the pause between rounds, which gives a shared address the
// displacement a fresh admission needs (DISPLACEMENTS.perSecond).

import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import * as https from 'node:https';
import { performance } from 'node:perf_hooks';
import { InjectorConfig, generateWebhookCertificate } from '../../charts/engine';
import { RUNTIME_ENV, RUNTIME_DEFAULTS, memorySizing } from '../../webhook/config';
import { DEFAULT_INJECTIONS } from '../../app/default-injections';
import { DISPLACEMENTS } from '../../webhook/server/webhook-server';
import { ATTACK_DESCRIPTIONS, ATTACK_KINDS, AttackKind, AttackStats, attackerAddresses, startAttack } from '../bench/attacks';
import { loadReview } from '../support/recorded-reviews';
import { BundledWebhook, HttpsResult, MountedDirs, TEST_SERVER_NAME, keepAliveAgent, makeMountedDirs, opsRequest, postAdmission, startBundled, until, within } from '../support/webhook-harness';

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
/** Between rounds: at least two displacements' worth for a shared address (one per fresh admission). */
const ROUND_PAUSE_MS = Math.max(500, 2000 / DISPLACEMENTS.perSecond);
const CLOSE_REASONS = ['evicted', 'displaced', 'over_share', 'silent', 'slow_body', 'reset_flood'] as const;
type Closed = Record<(typeof CLOSE_REASONS)[number], number>;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Connections the server has closed, by reason, from its /metrics. */
/** Connections in the webhook's table now (`sidecar_injector_connections_open`). */
function openConnections(metrics: string): number {
  return Number(/^sidecar_injector_connections_open (\d+)/m.exec(metrics)?.[1] ?? 0);
}

async function closedByServer(opsPort: number): Promise<Closed> {
  const metrics = (await opsRequest(opsPort, '/metrics')).text;
  const closed = (reason: string) => Number(new RegExp(`^sidecar_injector_connections_closed_total\\{reason="${reason}"\\} (\\d+)`, 'm').exec(metrics)?.[1] ?? 0);
  return Object.fromEntries(CLOSE_REASONS.map((reason) => [reason, closed(reason)])) as Closed;
}

/** An admission on `agent`'s pooled connection, and which local port that connection has. */
function pooledAdmission(port: number, agent: https.Agent): Promise<HttpsResult & { localPort: number | undefined }> {
  const body = JSON.stringify(REVIEW);
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/mutate', method: 'POST', agent, headers: { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json: () => JSON.parse(text), localPort: res.socket?.localPort });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
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

  /** What the attack ran into, for the expectations. */
  interface Outcome {
    readonly stats: AttackStats;
    /** Connections the server closed meanwhile, by reason. */
    readonly closed: Closed;
    /** From the attack's start to its stop, on this process's clock (the server's is the same). */
    readonly seconds: number;
    readonly shared: boolean;
  }
  /** Handshakes a source that only reconnects can get: the cap's worth, one per admission whose
   * connection made room (and its attacker's reconnect), and its displacements' bucket. */
  const handshakeBound = (seconds: number) => MAX_CONNECTIONS + ROUNDS * 4 + DISPLACEMENTS.burst + Math.ceil(DISPLACEMENTS.perSecond * seconds);
  const expectations: Record<AttackKind, (outcome: Outcome) => void> = {
    // Past the cap, the attackers' source is over its share: its new connections displace its own
    // older ones while its bucket lasts and are closed before their handshake past that (failed, to
    // the attacker); each admission's connection makes room, from another source by eviction, from
    // the attackers' own (shared) by displacement.
    'silent-tls': ({ stats, closed, shared }) => {
      assert.ok(
        stats.failed + stats.closedByServer >= ATTACKERS - MAX_CONNECTIONS,
        `at the cap of ${MAX_CONNECTIONS} the silent connections are refused before their handshake or make room: ${JSON.stringify(stats)}`,
      );
      // The first admission finds the table full (the attackers do not reconnect here, so later ones
      // find the room it left): from another source it evicts one, from theirs it displaces one.
      const madeRoom = shared ? closed.displaced > 0 && closed.evicted === 0 : closed.evicted > 0;
      assert.ok(
        closed.over_share > 0 && madeRoom && closed.evicted + closed.displaced + closed.over_share >= ATTACKERS - MAX_CONNECTIONS,
        `connections closed at the cap, counted in /metrics: expected closes at accept, the admission's connection making room ` +
          `(${shared ? 'displaced, none evicted' : 'evicted'}), at least ${ATTACKERS - MAX_CONNECTIONS} in all; got ${JSON.stringify(closed)}`,
      );
    },
    'slow-body': ({ stats }) => assert.ok(stats.got408 > 0, `bodies slower than the minimum rate are cut with 408: ${JSON.stringify(stats)}`),
    'slow-headers': () => undefined,
    'slow-large-body': ({ stats }) => assert.ok(stats.closedByServer > 0, `7 MiB bodies at 512 bytes/s are cut: ${JSON.stringify(stats)}`),
    'no-client-hello': ({ stats }) => assert.ok(stats.closedByServer >= ATTACKERS - MAX_CONNECTIONS, `connections without a ClientHello make room: ${JSON.stringify(stats)}`),
    // One source over its share: once the table is full its new connections are closed at accept,
    // before their handshake, past its few displacements a second, so the handshakes it gets are
    // about the cap's worth, not one per reconnect.
    reconnect: ({ stats, seconds }) =>
      assert.ok(
        stats.reconnects >= ATTACKERS && stats.handshaken <= handshakeBound(seconds),
        `the attacker's source got at most ${handshakeBound(seconds)} handshakes in ${seconds.toFixed(1)} s (the cap, one per admission that made room, ` +
          `${DISPLACEMENTS.burst} and ${DISPLACEMENTS.perSecond} a second displacing its own), and its reconnects were closed before theirs: ${JSON.stringify(stats)}`,
      ),
    mix: ({ stats }) => assert.ok(stats.reconnects > 0, `the attackers were cut and came back: ${JSON.stringify(stats)}`),
    // Past the stream cap (the connection cap, across sessions) the held streams are reset to make room.
    'h2-stream-flood': ({ stats }) => assert.ok(stats.handshaken > 0 && stats.reconnects > 0, `held streams are reset at the stream cap and reopened: ${JSON.stringify(stats)}`),
    'h2-slow-streams': ({ stats }) => assert.ok(stats.got408 > 0, `streams slower than the minimum rate are answered 408: ${JSON.stringify(stats)}`),
    // Past its source's budget of client resets, each session that resets one more is closed.
    'h2-rapid-reset': ({ stats, closed }) =>
      assert.ok(stats.handshaken > 0 && closed.reset_flood > 0 && stats.closedByServer > 0, `sessions resetting their streams are closed (reset_flood): ${JSON.stringify({ stats, closed })}`),
  };

  for (const shared of [false, true]) {
    for (const kind of ATTACK_KINDS) {
      // Attackers on the apiserver's address reconnecting as fast as they are cut: its pooled connection.
      const pooled = shared && (kind === 'reconnect' || kind === 'mix');
      const from = shared ? ", from the apiserver's address" : '';
      test(`${ATTACK_DESCRIPTIONS[kind]}${from}: probes and admissions on ${pooled ? "the apiserver's pooled connection" : 'fresh connections'} are answered`, async (t) => {
        const agent = pooled ? keepAliveAgent(certificate.caCertificate, TEST_SERVER_NAME, 1) : undefined;
        const failures: string[] = [];
        const ports = new Set<number | undefined>();
        const admit = async (): Promise<HttpsResult> => {
          if (!agent) return postAdmission(webhook.port, REVIEW, { ca: certificate.caCertificate });
          const answer = await pooledAdmission(webhook.port, agent);
          ports.add(answer.localPort);
          return answer;
        };
        // The previous case's attackers are destroyed on the client side; until the server has seen them
        // close, their address still holds table entries and the displacements they spent: wait, so each
        // case starts from an empty table and a full bucket, as on its own.
        // The bound is generous: on a machine busy with other work, a case's 600 closes took more than a minute to reach the server.
        let stillOpen = Number.NaN;
        await until('the previous connections to be gone from the table', 180_000, async () => {
          stillOpen = openConnections((await opsRequest(webhook.opsPort, '/metrics')).text);
          return stillOpen === 0 ? true : undefined;
        }).catch((error: Error) => assert.fail(`${error.message}: ${stillOpen} still open`));
        if (agent) assert.equal((await admit()).status, 200, 'the pooled connection, before the attack');
        const closedBefore = await closedByServer(webhook.opsPort);
        const started = performance.now();
        const attack = startAttack(kind, {
          port: webhook.port,
          connections: ATTACKERS,
          servername: TEST_SERVER_NAME,
          maxReconnectsEach: 20,
          localAddresses: attackerAddresses(kind, shared),
        });
        try {
          await within(attack.opened, 60_000, 'opening the attackers');
          // Sharing the apiserver's address, the fresh admission needs a displacement from that address's
          // bucket: wait until the server has taken in every attacker (open, or closed with a reason),
          // so the attackers still in its accept queue on a busy machine are not what spends it.
          // HTTP/2 attackers open fewer sessions than ATTACKERS, every one handshaken once `opened` resolves.
          if (shared && !pooled && kind !== 'reconnect' && kind !== 'mix' && !kind.startsWith('h2-')) {
            await until('the server to take in every attacker', 60_000, async () => {
              const open = openConnections((await opsRequest(webhook.opsPort, '/metrics')).text);
              const closedNow = await closedByServer(webhook.opsPort);
              const closedSince = CLOSE_REASONS.reduce((sum, reason) => sum + closedNow[reason] - closedBefore[reason], 0);
              return open + closedSince >= ATTACKERS ? true : undefined;
            });
          }
          for (let round = 0; round < ROUNDS; round++) {
            await sleep(ROUND_PAUSE_MS);
            try {
              const probe = await opsRequest(webhook.opsPort, '/healthz', PROBE_DEADLINE_MS);
              if (probe.status !== 200) failures.push(`probe ${round}: ${probe.status} ${probe.text}`);
            } catch (error) {
              failures.push(`probe ${round}: ${(error as Error).message}`);
            }
            try {
              const answer = await within(admit(), ADMISSION_DEADLINE_MS, `admission ${round}`);
              if (answer.status !== 200) failures.push(`admission ${round}: ${answer.status} ${answer.text.slice(0, 200)}`);
            } catch (error) {
              failures.push(`admission ${round}: ${(error as Error).message}`);
            }
          }
        } finally {
          await attack.stop();
          agent?.destroy();
        }
        const seconds = (performance.now() - started) / 1000;
        const closedAfter = await closedByServer(webhook.opsPort);
        const closed = Object.fromEntries(CLOSE_REASONS.map((reason) => [reason, closedAfter[reason] - closedBefore[reason]])) as Closed;
        t.diagnostic(`attackers: ${JSON.stringify(attack.stats)}; closed by the server: ${JSON.stringify(closed)}`);
        assert.deepEqual(failures, [], `probes and admissions that failed while ${ATTACKERS} attacker connections were held`);
        if (agent) assert.equal(ports.size, 1, `every admission went on the one pooled connection: it was never displaced (local ports ${[...ports].join(', ')})`);
        expectations[kind]({ stats: attack.stats, closed, seconds, shared });
        // Every cut, eviction and abort gives its body's bytes back to the memory budget (a slow body
        // cut with 408 once kept them, and after enough of them every admission was shed with 429).
        const held = await until('the memory budget to be given back', 20_000, async () => {
          const value = sample((await opsRequest(webhook.opsPort, '/metrics')).text, 'sidecar_injector_memory_budget_held_bytes');
          return value === 0 ? value : undefined;
        }).catch((error: Error) => error.message);
        assert.equal(held, 0, 'request body bytes still held once the attackers are gone');
      });
    }
  }
});
