// `npm run bench`'s garbage collection at 500 requests/s: a fresh server under --trace-gc-nvp, bytes
// allocated and promoted per request, scavenges, mark-compacts and pauses.
import { ServerSpec, detectPinning, readCpuMs, runLoad, sampleRss, startServer } from './bench-support';
import { OPEN_INITIAL_CONNECTIONS, OPEN_MAX_CONNECTIONS, ServerName } from './https-load-segments';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export const GC_SECONDS = 4;

export interface GcStats {
  readonly server: ServerName;
  readonly answered: number;
  readonly allocatedPerRequest: number;
  readonly promotedPerRequest: number;
  readonly scavenges: number;
  readonly markCompacts: number;
  readonly pauseTotalMs: number;
  readonly pauseMaxMs: number;
  readonly rssPeakKb: number;
  readonly p99Us: number;
  readonly cpuUsPerRequest: number;
}

/** A fresh server with --trace-gc-nvp under 500 req/s: bytes allocated and promoted per request, pauses. */
export async function gcRun(
  name: ServerName,
  spec: ServerSpec,
  deployed: { caFile: string; serverName: string },
  bodyFile: string,
  pinning: ReturnType<typeof detectPinning>,
): Promise<GcStats> {
  const lines: string[] = [];
  let collecting = false;
  const server = await startServer(
    {
      ...spec,
      nodeArgs: ['--trace-gc-nvp', ...spec.nodeArgs],
      onLine: (line) => {
        if (collecting && line.includes(' gc=')) lines.push(line);
      },
    },
    pinning,
  );
  await sleep(300);
  collecting = true;
  const rss = sampleRss(server.pid, 500);
  const cpuBefore = readCpuMs(server.pid);
  const result = await runLoad(
    {
      mode: 'open',
      rate: 500,
      connections: OPEN_MAX_CONNECTIONS,
      initialConnections: OPEN_INITIAL_CONNECTIONS,
      warmupSeconds: 1,
      durationSeconds: GC_SECONDS,
      port: server.port,
      caFile: deployed.caFile,
      servername: deployed.serverName,
      bodyFile,
      expectPatch: true,
    },
    pinning,
  );
  const cpuMs = readCpuMs(server.pid) - cpuBefore;
  await sleep(100);
  collecting = false;
  const rssPeakKb = Math.max(...rss.stop());
  await server.stop('SIGKILL');
  const field = (line: string, key: string) => Number(new RegExp(`\\b${key}=([\\d.]+)`).exec(line)?.[1] ?? NaN);
  let allocated = 0;
  let promoted = 0;
  let pauseTotal = 0;
  let pauseMax = 0;
  let scavenges = 0;
  let markCompacts = 0;
  for (const line of lines) {
    const kind = / gc=(\w+)/.exec(line)?.[1];
    const a = field(line, 'allocated');
    if (Number.isFinite(a) && a < 1e12) allocated += a; // V8 prints a bogus huge value for some cycles
    const p = field(line, 'promoted');
    if (Number.isFinite(p)) promoted += p;
    const pause = field(line, 'pause');
    if (Number.isFinite(pause)) {
      pauseTotal += pause;
      pauseMax = Math.max(pauseMax, pause);
    }
    if (kind === 's' || kind === 'mmc') scavenges++;
    else if (kind === 'mc') markCompacts++;
  }
  const answered = Math.max(1, result.answeredTotal);
  return {
    server: name,
    answered,
    allocatedPerRequest: allocated / answered,
    promotedPerRequest: promoted / answered,
    scavenges,
    markCompacts,
    pauseTotalMs: pauseTotal,
    pauseMaxMs: pauseMax,
    rssPeakKb,
    p99Us: result.latencyUs.p99,
    cpuUsPerRequest: (cpuMs * 1000) / answered,
  };
}
