// A closed-loop load that takes turns between two servers in short phases, for comparing their CPU
// per request and throughput at saturation on a machine whose speed moves by tens of percent within
// seconds (a neighbour on the host, not this machine's own load): run as its own process, pinned to the
// generator core by the caller,
//   node --import tsx test/bench/paired-load.ts '<PairedConfig as JSON>'
// prints one line of JSON (PairedResult) on stdout.
//
// Each server gets `connections` keep-alive connections (as the apiserver's pool would hold). Only one
// server is loaded at a time: in its phase its connections each send the next request as soon as the
// previous one is answered; at the phase's end they stop sending, and the other server's phase starts
// once every answer is in, so the two never share the server core. Phases go A B B A A B B A ..., so
// a drift in the machine's speed lands on both alike. Each server's CPU time is read from
// /proc/<pid>/stat at the start and the end of the measured span (its idle time during the other's
// phases included, the same for both) and divided by the answers it gave in that span.
//
// With `rate`, a phase is an open loop instead: requests are scheduled at that rate, each sent on an
// idle connection of the side in turn (the least recently used, so every connection stays in use),
// and its latency is counted from when it was scheduled. For comparing the servers at low load, where
// the tail is set by stalls of the machine: each phase also reads its server's main-thread CPU time
// (schedstat, in ns), so a phase's CPU per request is its own and not spread over the other's phases.
import * as fs from 'node:fs';
import { Connection, InFlight, PATCH_MARK, requestBuilder, runAsProcess } from './load-generator';
import { clockTicksPerSecond, cpuMsOfStat, mainThreadCpuNs } from './proc-cpu';
import { Distribution, distribution } from './stats';

export interface PairedConfig {
  /** The two servers: their HTTPS ports and process ids. */
  readonly servers: readonly [{ readonly port: number; readonly pid: number }, { readonly port: number; readonly pid: number }];
  readonly caFile: string;
  readonly servername: string;
  readonly bodyFile: string;
  /** Every request a different pod (load-generator.ts `uniquePods`). @default false */
  readonly uniquePods?: boolean;
  /** Connections per server. */
  readonly connections: number;
  /** Length of one phase, ms. */
  readonly phaseMs: number;
  /** Measured phases per server; even, so the A B B A pattern is whole. */
  readonly phasesPerServer: number;
  /** Unmeasured alternating phases first (connections warm, JIT settled), seconds per server. */
  readonly warmupSeconds: number;
  /** Per request. @default 10000 */
  readonly timeoutMs?: number;
  /** Requests per second in each phase (open loop); closed loop when absent. */
  readonly rate?: number;
  /** Open loop: where each side's measured latencies (µs) are written as JSON, `[[...], [...]]`, so
   * that runs can be pooled afterwards (test/bench/pool-p99.ts). */
  readonly samplesFile?: string;
}

export interface PairedSide {
  /** Answers in the measured phases (each a 200 carrying the request's uid and a patch). */
  readonly answers: number;
  readonly errors: number;
  /** Time this server was loaded in the measured phases, from its first send to its last answer, ms. */
  readonly activeMs: number;
  /** answers / activeMs. */
  readonly throughput: number;
  /** Each measured phase's own throughput, req/s, in the order run. */
  readonly phaseThroughputs: number[];
  /** Server CPU over the measured span (both servers' phases), ms. */
  readonly cpuMs: number;
  readonly cpuUsPerRequest: number;
  /** Open loop only: the answers' latencies from their scheduled times over the measured phases, µs. */
  readonly latencyUs?: Distribution;
  /** Open loop only: each measured phase's p99 latency, µs. */
  readonly phaseP99Us?: number[];
  /** Open loop only: each measured phase's main-thread CPU per answer, µs. */
  readonly phaseMainCpuUs?: number[];
}

export interface PairedResult {
  readonly sides: readonly [PairedSide, PairedSide];
  /** The measured span, ms. */
  readonly spanMs: number;
  readonly badAnswers: readonly string[];
}

const cpuMsOf = (pid: number) => cpuMsOfStat(`/proc/${pid}/stat`);

export async function runPaired(config: PairedConfig): Promise<PairedResult> {
  if (config.phasesPerServer % 2 !== 0) throw new Error('phasesPerServer must be even (phases go A B B A)');
  clockTicksPerSecond(); // getconf runs now, not between the measured phases
  const ca = fs.readFileSync(config.caFile, 'utf8');
  const { uidOf, requestBytes } = requestBuilder(config.bodyFile, config.servername, config.uniquePods);
  const timeoutMs = config.timeoutMs ?? 10_000;
  const badAnswers: string[] = [];
  let seq = 0;

  interface Side {
    readonly index: 0 | 1;
    readonly idle: Connection[];
    readonly all: Set<Connection>;
    opening: number;
    opened: number;
    answers: number;
    errors: number;
    activeMs: number;
    phaseThroughputs: number[];
    latenciesUs: number[];
    phaseP99Us: number[];
    phaseMainCpuUs: number[];
  }
  const sides: [Side, Side] = [0, 1].map((index) => ({
    index,
    idle: [],
    all: new Set(),
    opening: 0,
    opened: 0,
    answers: 0,
    errors: 0,
    activeMs: 0,
    phaseThroughputs: [],
    latenciesUs: [],
    phaseP99Us: [],
    phaseMainCpuUs: [],
  })) as unknown as [Side, Side];
  const openLoop = config.rate !== undefined;

  // The phase in progress: which side sends, until when, whether it counts, and its answers; in an
  // open loop also the next scheduled time, the scheduled requests waiting for an idle connection, and
  // the answers' latencies.
  let phase:
    | { side: Side; until: number; record: boolean; answers: number; lastAnswer: number; settle?: () => void; nextAt: number; waiting: number[]; latenciesUs: number[] }
    | undefined;

  const send = (connection: Connection, scheduled = performance.now()) => {
    const now = performance.now();
    const request: InFlight = { seq, scheduled, sent: now, uid: uidOf(seq), deadline: now + timeoutMs, record: true };
    seq++;
    connection.send(request, requestBytes(request.uid));
  };
  const parked = (side: Side, connection: Connection) => {
    side.idle.push(connection);
    // An open-loop phase is over once its time is up and nothing scheduled is left unsent.
    const over = !openLoop || (phase !== undefined && performance.now() >= phase.until && phase.waiting.length === 0);
    if (phase?.side === side && over && side.opening === 0 && side.idle.length >= config.connections) phase.settle?.();
  };
  const next = (side: Side, connection: Connection) => {
    if (!openLoop && phase?.side === side && performance.now() < phase.until) send(connection);
    else parked(side, connection);
  };
  /** Open loop: schedules the phase's requests at `rate` and sends each on the least recently used idle connection. */
  const interval = openLoop ? 1000 / config.rate! : 0;
  const drive = (side: Side) => {
    const current = phase;
    if (current === undefined || current.side !== side) return;
    const now = performance.now();
    while (current.nextAt < current.until && current.nextAt <= now) {
      current.waiting.push(current.nextAt);
      current.nextAt += interval;
    }
    while (current.waiting.length > 0 && side.idle.length > 0) send(side.idle.shift()!, current.waiting.shift()!);
    if (now >= current.until && current.waiting.length === 0) {
      // Settled here when every answer is in already, else by the last one (parked).
      if (side.opening === 0 && side.idle.length >= config.connections) current.settle?.();
      return;
    }
    setImmediate(drive, side);
  };
  const open = (side: Side) => {
    side.opening++;
    side.opened++;
    const connection: Connection = new Connection(
      { port: config.servers[side.index].port, servername: config.servername },
      ca,
      (c) => {
        side.opening--;
        next(side, c);
      },
      (c, request, status, body, head) => {
        const ok = status === 200 && body.indexOf(request.uid) >= 0 && body.indexOf(PATCH_MARK) >= 0;
        if (phase?.side === side && phase.record) {
          if (ok) {
            phase.answers++;
            phase.lastAnswer = performance.now();
            if (openLoop) phase.latenciesUs.push((phase.lastAnswer - request.scheduled) * 1000);
          } else {
            side.errors++;
            if (badAnswers.length < 5) badAnswers.push(`server ${side.index}: status ${status}; head ${JSON.stringify(head.slice(0, 300))}; body ${JSON.stringify(body.toString('utf8', 0, Math.min(body.length, 200)))}`);
          }
        }
        if (!c.dead) next(side, c);
      },
      (c, request) => {
        if (!c.ready) side.opening--;
        side.all.delete(c);
        const at = side.idle.indexOf(c);
        if (at >= 0) side.idle.splice(at, 1);
        if (request && phase?.record) side.errors++;
        // Replaced, as the apiserver's pool would, a bounded number of times.
        if (side.opened < config.connections * 100) open(side);
      },
    );
    side.all.add(connection);
  };

  // Connect both pools first.
  for (const side of sides) for (let i = 0; i < config.connections; i++) open(side);
  const connectDeadline = performance.now() + 10_000;
  while (sides.some((side) => side.idle.length < config.connections)) {
    if (performance.now() > connectDeadline) throw new Error('the connections did not open within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }

  const runPhase = (side: Side, record: boolean) =>
    new Promise<void>((resolve, reject) => {
      const pid = config.servers[side.index].pid;
      const cpuBefore = openLoop && record ? mainThreadCpuNs(pid) : 0;
      const started = performance.now();
      const guard = setTimeout(() => reject(new Error(`server ${side.index}: a phase's answers were not all in within ${timeoutMs} ms`)), config.phaseMs + timeoutMs);
      phase = {
        side,
        until: started + config.phaseMs,
        record,
        answers: 0,
        lastAnswer: started,
        nextAt: started,
        waiting: [],
        latenciesUs: [],
        settle: () => {
          clearTimeout(guard);
          const current = phase!;
          phase = undefined;
          if (record) {
            const activeMs = current.lastAnswer - started;
            side.answers += current.answers;
            side.activeMs += activeMs;
            side.phaseThroughputs.push(activeMs > 0 ? (current.answers * 1000) / activeMs : 0);
            if (openLoop) {
              side.phaseMainCpuUs.push((mainThreadCpuNs(pid) - cpuBefore) / 1000 / Math.max(1, current.answers));
              side.phaseP99Us.push(distribution(current.latenciesUs).p99);
              for (const latency of current.latenciesUs) side.latenciesUs.push(latency);
            }
          }
          resolve();
        },
      };
      if (openLoop) {
        drive(side);
        return;
      }
      const starting = side.idle.splice(0, side.idle.length);
      for (const connection of starting) send(connection);
    });

  const order = [0, 1, 1, 0] as const;
  const warmupPhases = Math.max(2, Math.ceil((config.warmupSeconds * 1000) / config.phaseMs) * 2);
  for (let i = 0; i < warmupPhases; i++) await runPhase(sides[order[i % 4]], false);
  const cpuBefore = config.servers.map((server) => cpuMsOf(server.pid));
  const spanStart = performance.now();
  for (let i = 0; i < config.phasesPerServer * 2; i++) await runPhase(sides[order[i % 4]], true);
  const spanMs = performance.now() - spanStart;
  const cpuAfter = config.servers.map((server) => cpuMsOf(server.pid));
  for (const side of sides) for (const connection of side.all) connection.destroy();

  if (openLoop && config.samplesFile) fs.writeFileSync(config.samplesFile, JSON.stringify(sides.map((side) => side.latenciesUs.map((us) => Math.round(us)))));
  const result = sides.map((side) => {
    const cpuMs = cpuAfter[side.index] - cpuBefore[side.index];
    return {
      answers: side.answers,
      errors: side.errors,
      activeMs: side.activeMs,
      throughput: side.activeMs > 0 ? (side.answers * 1000) / side.activeMs : 0,
      phaseThroughputs: side.phaseThroughputs,
      cpuMs,
      cpuUsPerRequest: (cpuMs * 1000) / Math.max(1, side.answers),
      ...(openLoop ? { latencyUs: distribution(side.latenciesUs), phaseP99Us: side.phaseP99Us, phaseMainCpuUs: side.phaseMainCpuUs } : {}),
    };
  }) as unknown as [PairedSide, PairedSide];
  return { sides: result, spanMs, badAnswers };
}

if (require.main === module) {
  runAsProcess<PairedConfig, PairedResult>(
    'paired load',
    (config) => config.warmupSeconds * 2000 + config.phasesPerServer * 2 * (config.phaseMs + 1000) + 40_000,
    runPaired,
  );
}
