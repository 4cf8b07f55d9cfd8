// CPU time from /proc, for the benchmarks' processes: light enough for the generator processes, which
// must not load bench-support's dependencies.
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';

let clockTicks: number | undefined;
/** The kernel's clock ticks per second (USER_HZ), the unit of /proc's CPU times; read once. */
export function clockTicksPerSecond(): number {
  clockTicks ??= (() => {
    try {
      return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      return 100;
    }
  })();
  return clockTicks;
}

/** User + system CPU time in a /proc `stat` file (a process's, or one thread's under task/), ms. Throws when it cannot be read. */
export function cpuMsOfStat(statFile: string): number {
  const stat = fs.readFileSync(statFile, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) / clockTicksPerSecond()) * 1000;
}

/** On-CPU time of a process's main thread (where JavaScript runs), ns: the kernel's schedstat, finer
 * than the clock ticks of `stat`. Throws when it cannot be read. */
export function mainThreadCpuNs(pid: number): number {
  return Number(fs.readFileSync(`/proc/${pid}/task/${pid}/schedstat`, 'utf8').split(' ')[0]);
}
