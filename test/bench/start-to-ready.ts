// `npm run bench`'s start-to-ready times: bare node, the webhook and the baseline, each started anew.
import { ServerSpec, detectPinning, runToEnd, startServer, webhookSpec } from './bench-support';

export const STARTS = 5;

/** Wall time of `node -e 0`, five times: what any Node process costs to start here. */
export async function bareNodeStarts(pinning: ReturnType<typeof detectPinning>): Promise<number[]> {
  const bareNodeMs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const started = performance.now();
    await runToEnd(pinning.server, process.execPath, ['-e', '0'], {}, 10_000);
    bareNodeMs.push(performance.now() - started);
  }
  return bareNodeMs;
}

/** STARTS starts of the webhook as deployed: until it listens, and until it is ready. */
export async function webhookStartTimes(deployed: Parameters<typeof webhookSpec>[0], pinning: ReturnType<typeof detectPinning>): Promise<{ readyMs: number; listeningMs: number }[]> {
  const webhookStarts: { readyMs: number; listeningMs: number }[] = [];
  for (let i = 0; i < STARTS; i++) {
    const server = await startServer(await webhookSpec(deployed), pinning);
    webhookStarts.push({ readyMs: server.readyMs, listeningMs: server.listeningMs });
    await server.stop('SIGKILL'); // a graceful stop would wait out the Deployment's drain delay
  }
  return webhookStarts;
}

/** Three starts of the baseline, until ready. */
export async function baselineStartTimes(spec: ServerSpec, pinning: ReturnType<typeof detectPinning>): Promise<number[]> {
  const baselineStarts: number[] = [];
  for (let i = 0; i < 3; i++) {
    const server = await startServer(spec, pinning);
    baselineStarts.push(server.readyMs);
    await server.stop('SIGKILL');
  }
  return baselineStarts;
}
