// What a process and the machine spent over a stretch of a benchmark, from /proc: a process's CPU and
// memory, and which other processes ran meanwhile (this machine is shared; a figure means little
// without what else took the cores).
import * as fs from 'node:fs';
import * as os from 'node:os';
import { clockTicksPerSecond, cpuMsOfStat } from './proc-cpu';

/** CPU (user + system, ms), RSS and peak RSS (KiB) of `pid`; NaN for what cannot be read. */
export function processStats(pid: number): { cpuMs: number; rssKb: number; peakKb: number } {
  let cpuMs = NaN;
  let rssKb = NaN;
  let peakKb = NaN;
  try {
    cpuMs = cpuMsOfStat(`/proc/${pid}/stat`);
    const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
    rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    peakKb = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  } catch {
    // gone
  }
  return { cpuMs, rssKb, peakKb };
}

/** The pid of the running process whose command line holds every one of `fragments`. */
export function pidOf(...fragments: string[]): number | undefined {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const commandLine = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      if (fragments.every((fragment) => commandLine.includes(fragment))) return Number(entry);
    } catch {
      // gone meanwhile
    }
  }
  return undefined;
}

/** CPU ticks of every process now, by pid, with its name. */
function allProcesses(): Map<number, { name: string; ticks: number }> {
  const processes = new Map<number, { name: string; ticks: number }>();
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      processes.set(Number(entry), { name, ticks: Number(fields[11]) + Number(fields[12]) });
    } catch {
      // gone meanwhile
    }
  }
  return processes;
}

/** Busy and total jiffies of all cores (/proc/stat's cpu line), and processes runnable now. */
function cpuTotals(): { busy: number; total: number; running: number } {
  const stat = fs.readFileSync('/proc/stat', 'utf8');
  const [user, nice, system, idle, iowait, irq, softirq, steal] = stat.split('\n')[0].split(/\s+/).slice(1).map(Number);
  const running = Number(/procs_running (\d+)/.exec(stat)?.[1] ?? NaN);
  return { busy: user + nice + system + irq + softirq + steal, total: user + nice + system + idle + iowait + irq + softirq + steal, running };
}

export interface MachineLoad {
  readonly seconds: number;
  readonly loadAverage: readonly [number, number];
  /** Cores busy over the stretch, all processes (of `os.cpus().length`). */
  readonly busyCores: number;
  /** Cores taken by processes other than ours and this one, the short-lived ones included. */
  readonly otherCores: number;
  /** Processes runnable at once (the kernel's procs_running), the median of one sample a second. */
  readonly runnable: number;
  /** Other processes alive at the end, by name, their CPU over the stretch in cores (1.0 = one core the whole time), highest first. */
  readonly others: readonly { readonly name: string; readonly cores: number }[];
}

/** Starts watching the machine; `stop(ours)` says what processes other than `ours` took meanwhile. */
export function watchMachine(): { stop(ours: readonly number[]): MachineLoad } {
  const began = performance.now();
  const before = allProcesses();
  const totalsBefore = cpuTotals();
  const runnable: number[] = [];
  const sampler = setInterval(() => runnable.push(cpuTotals().running), 1000);
  const loadBefore = os.loadavg()[0];
  return {
    stop(ours) {
      clearInterval(sampler);
      const seconds = (performance.now() - began) / 1000;
      const totals = cpuTotals();
      const cores = os.cpus().length;
      const busyCores = ((totals.busy - totalsBefore.busy) / Math.max(1, totals.total - totalsBefore.total)) * cores;
      let ourTicks = 0;
      for (const pid of [...ours, process.pid]) {
        const now = allProcesses().get(pid);
        if (now) ourTicks += now.ticks - (before.get(pid)?.ticks ?? 0);
      }
      const byName = new Map<string, number>();
      for (const [pid, now] of allProcesses()) {
        if (ours.includes(pid) || pid === process.pid) continue;
        const ticks = now.ticks - (before.get(pid)?.ticks ?? 0);
        if (ticks > 0) byName.set(now.name, (byName.get(now.name) ?? 0) + ticks);
      }
      const others = [...byName]
        .map(([name, ticks]) => ({ name, cores: ticks / clockTicksPerSecond() / seconds }))
        .filter(({ cores }) => cores >= 0.02)
        .sort((a, b) => b.cores - a.cores)
        .slice(0, 6);
      runnable.sort((a, b) => a - b);
      const otherCores = Math.max(0, busyCores - ourTicks / clockTicksPerSecond() / seconds);
      return { seconds, loadAverage: [loadBefore, os.loadavg()[0]], busyCores, otherCores, runnable: runnable[Math.floor(runnable.length / 2)] ?? NaN, others };
    },
  };
}

/** `1.40 of 2 cores (22 runnable); of those alive at the end: go 0.85, node 0.40` */
export function describeOthers(load: MachineLoad): string {
  const named = load.others.length === 0 ? '' : `; of those still running at the end: ${load.others.map(({ name, cores }) => `${name} ${cores.toFixed(2)}`).join(', ')}`;
  return `${load.otherCores.toFixed(2)} of ${os.cpus().length} cores (${load.runnable} processes runnable)${named}`;
}

/** Samples `pid`'s RSS every `everyMs` for `ms`; the median, KiB. */
export async function medianRssKb(pid: number, ms = 5000, everyMs = 250): Promise<number> {
  const samples: number[] = [];
  for (let waited = 0; waited < ms; waited += everyMs) {
    samples.push(processStats(pid).rssKb);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)];
}
