// Instructions and simulated cache misses per admission, counted by valgrind's callgrind: unlike CPU
// time, the counts do not move with what else the machine is doing, so they tell a real change in
// the work per request from a noisy run. The server runs under callgrind with collection off while
// it warms up (V8 optimizes the hot path), then collection is switched on for a fixed number of
// sequential requests over one keep-alive connection and the totals are divided by that number.
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import type { ServerSpec } from './bench-support';
import { httpsGet, makeTempDir, readyStatus } from './bench-support';
import { reviewBody, reviewTemplate } from './load-generator';

export interface InstructionCounts {
  readonly server: string;
  readonly requests: number;
  /** Per request, on the main thread: instructions executed, and misses of the simulated caches (first level
   * instruction, data read and data write; last level, sized as one core's L2, read and write). */
  readonly instructions: number;
  readonly i1Misses: number;
  readonly d1ReadMisses: number;
  readonly d1WriteMisses: number;
  readonly llMisses: number;
  /** The simulated caches, as callgrind describes them. */
  readonly caches: string[];
  /** Instructions per request of the other threads (V8's GC and compiler helpers, libuv's pool), not
   * in the counts above: under valgrind, which runs one thread at a time, V8's helpers spend far more
   * than they do natively, where /proc's per-thread CPU time puts them at a few percent. */
  readonly otherThreadsInstructions: number;
}

/** The last level is simulated as a 1 MiB, 8-way L2 (one core's own, on the EPYC generations this
 * runs on); callgrind's own guess from the hypervisor's report was a 512 MiB cache. */
const LAST_LEVEL = '--LL=1048576,8,64';

export function valgrindMissing(): string | undefined {
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'pipe' });
    execFileSync('callgrind_control', ['-h'], { stdio: 'pipe' });
    return undefined;
  } catch {
    return 'valgrind (with callgrind_control) is not installed: apt-get install valgrind';
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** POSTs `count` reviews one after another on one keep-alive connection, each with a fresh uid (and
 * with `uniquePods`, a pod name of its own, so no review repeats another), and checks every answer
 * echoes it with a patch. */
async function sendSequentially(spec: ServerSpec, template: string, count: number, firstSeq: number, uniquePods = false): Promise<void> {
  const cut = reviewTemplate(template, uniquePods);
  const ca = fs.readFileSync(spec.caFile, 'utf8');
  const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
  try {
    for (let seq = firstSeq; seq < firstSeq + count; seq++) {
      const uid = `c4110000-0000-4000-8000-${seq.toString(16).padStart(12, '0')}`;
      const text = reviewBody(cut, uid);
      await new Promise<void>((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: spec.port,
            path: '/mutate?timeout=10s',
            method: 'POST',
            ca,
            servername: spec.servername,
            agent,
            headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) },
          },
          (res) => {
            let answer = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (answer += chunk));
            res.on('end', () => {
              if (res.statusCode === 200 && answer.includes(uid) && answer.includes('"patch"')) resolve();
              else reject(new Error(`${spec.name}: answer ${res.statusCode}: ${answer.slice(0, 200)}`));
            });
          },
        );
        req.on('error', reject);
        req.end(text);
      });
    }
  } finally {
    agent.destroy();
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
}

/** Runs `spec`'s server under callgrind: `warm` requests uncounted, then `count` counted; the counts
 * are the main thread's, per request. With `uniquePods`, every request is a different pod. */
export async function countInstructions(spec: ServerSpec, bodyFile: string, warm: number, count: number, pinTo: string[], uniquePods = false): Promise<InstructionCounts> {
  const dir = makeTempDir(`callgrind-${spec.name}`);
  const outFile = path.join(dir, 'callgrind.out');
  const [command, ...prefixArgs] = [...pinTo, 'valgrind'];
  const child = spawn(
    command,
    [...prefixArgs, '--tool=callgrind', '--instr-atstart=no', '--smc-check=all-non-file', '--cache-sim=yes', '--separate-threads=yes', LAST_LEVEL, `--callgrind-out-file=${outFile}`, process.execPath, ...spec.nodeArgs],
    { env: { PATH: process.env.PATH ?? '', ...spec.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stderr = '';
  child.stdout!.resume(); // log lines: drained, as a container runtime would
  child.stderr!.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4000)));
  try {
    const ca = fs.readFileSync(spec.caFile, 'utf8');
    const deadline = performance.now() + 120_000;
    const ready = () => (spec.name === 'baseline' ? httpsGet(spec.port, '/', ca, spec.servername, 5000).then((result) => result.status) : readyStatus(spec, ca, 5000));
    while ((await ready()) !== 200) {
      if (child.exitCode !== null || performance.now() > deadline) {
        // The program's own last words, not valgrind's banner.
        const lines = stderr.split('\n').filter((line) => line.trim() !== '' && !/^==\d+==/.test(line));
        const said = lines.find((line) => /Error/.test(line)) ?? lines.slice(-3).join(' / ');
        throw new Error(`${spec.name} did not start under valgrind: ${said || 'it printed nothing'}`);
      }
      await sleep(200);
    }
    const template = fs.readFileSync(bodyFile, 'utf8');
    await sendSequentially(spec, template, warm, 0, uniquePods);
    // valgrind runs the program in its own process: the pid callgrind_control wants is the child's
    // (taskset execs valgrind, which runs node in that same process).
    execFileSync('callgrind_control', ['--instr=on', String(child.pid)], { stdio: 'pipe' });
    await sendSequentially(spec, template, count, warm, uniquePods);
    execFileSync('callgrind_control', ['--instr=off', String(child.pid)], { stdio: 'pipe' });
    execFileSync('callgrind_control', ['--dump', String(child.pid)], { stdio: 'pipe' });
  } finally {
    child.kill('SIGKILL');
    await exited(child);
  }
  // The dump requested above is part 1, one file per thread: callgrind.out.1-01 is the main thread,
  // the one that runs JavaScript (a SIGKILL writes no part at exit).
  const dumps = fs.readdirSync(dir).filter((file) => /^callgrind\.out\.1-\d+$/.test(file)).sort();
  if (!dumps.includes('callgrind.out.1-01')) throw new Error(`${spec.name}: callgrind wrote no dump of the main thread (${fs.readdirSync(dir).join(', ')})`);
  const read = (dump: string) => {
    const text = fs.readFileSync(path.join(dir, dump), 'utf8');
    const events = /^events: (.+)$/m.exec(text)?.[1].split(' ') ?? [];
    const totals = /^totals: (.+)$/m.exec(text)?.[1].split(' ').map(Number) ?? [];
    const perRequest = (event: string) => {
      const index = events.indexOf(event);
      if (index < 0) throw new Error(`${spec.name}: callgrind counted no ${event} in ${dump}`);
      return (totals[index] ?? 0) / count;
    };
    return { text, perRequest };
  };
  const main = read('callgrind.out.1-01');
  // To see where the instructions go: BENCH_CALLGRIND_DIR=/some/dir keeps the main thread's dump
  // there, for callgrind_annotate (JIT-compiled JavaScript shows as bare addresses).
  const keepDir = process.env.BENCH_CALLGRIND_DIR;
  if (keepDir) {
    fs.mkdirSync(keepDir, { recursive: true });
    fs.copyFileSync(path.join(dir, 'callgrind.out.1-01'), path.join(keepDir, `${spec.name}.callgrind.out`));
  }
  const otherThreadsInstructions = dumps.filter((dump) => dump !== 'callgrind.out.1-01').reduce((sum, dump) => sum + read(dump).perRequest('Ir'), 0);
  return {
    server: spec.name,
    requests: count,
    instructions: main.perRequest('Ir'),
    i1Misses: main.perRequest('I1mr'),
    d1ReadMisses: main.perRequest('D1mr'),
    d1WriteMisses: main.perRequest('D1mw'),
    llMisses: main.perRequest('ILmr') + main.perRequest('DLmr') + main.perRequest('DLmw'),
    otherThreadsInstructions,
    caches: [...main.text.matchAll(/^desc: ((?:I1|D1|LL) cache: .+)$/gm)].map((match) => match[1]),
  };
}
