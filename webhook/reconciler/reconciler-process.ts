// The reconciler as a process: its settings and the in-cluster connection, the Lease renewed every
// third of its duration, a pass every `intervalSeconds` (backing off, 2x up to 10 min, while passes
// fail), and a plain-HTTP ops port with /healthz, /readyz and Prometheus /metrics. SIGTERM gives
// the Lease up, so the other replica takes over at once.

import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { ReconcilerSettings } from '../config';
import { type Clock, REAL_CLOCK } from '../fleet/cluster';
import type { Logger } from '../server/logger';
import type { KubeApi } from '../kube-client/kube-api';
import { LeaderLease } from './lease';
import { Reconciler, type ReconcilerMetrics } from './reconciler';
import type { WaitReason } from './repair-decision';

const PASS_RESULTS: readonly Parameters<ReconcilerMetrics['pass']>[0][] = ['done', 'failed', 'not-leader', 'injector-unreadable'];

/** Prometheus metrics of the reconciler; every label value is a fixed word, never cluster content. */
export function reconcilerMetrics(registry: Registry): ReconcilerMetrics & { leader: Gauge } {
  const passes = new Counter({ name: 'sidecar_injector_reconciler_passes_total', help: 'Passes over the cluster, by result.', labelNames: ['result'], registers: [registry] });
  const duration = new Histogram({ name: 'sidecar_injector_reconciler_pass_duration_seconds', help: 'How long a pass took.', buckets: [0.1, 0.5, 1, 5, 15, 60, 300], registers: [registry] });
  const pods = new Gauge({ name: 'sidecar_injector_reconciler_pods', help: 'Pods by state at the last pass (as status counts them; untracked: past the per-namespace bound).', labelNames: ['state'], registers: [registry] });
  const missing = new Gauge({
    name: 'sidecar_injector_reconciler_pods_missing_injection',
    help: 'Pods without an injection they should have at the last pass (counted in state="stale" too): admitted bare while the apiserver failed open, say.',
    registers: [registry],
  });
  const repairs = new Counter({ name: 'sidecar_injector_reconciler_repairs_total', help: 'Workloads restarted and pods upgraded in place, by result.', labelNames: ['action', 'result'], registers: [registry] });
  const waiting = new Gauge({ name: 'sidecar_injector_reconciler_waiting_workloads', help: 'Stale workloads not repaired at the last pass, by why.', labelNames: ['reason'], registers: [registry] });
  const leader = new Gauge({ name: 'sidecar_injector_reconciler_leader', help: '1 while this replica holds the Lease.', registers: [registry] });
  // Every counter series from the start at 0: increase() sees the first failure only if the series existed before it.
  for (const result of PASS_RESULTS) passes.inc({ result }, 0);
  for (const action of ['restart', 'in-place'] as const) for (const result of ['done', 'failed'] as const) repairs.inc({ action, result }, 0);
  return {
    leader,
    pass(result, seconds) {
      passes.inc({ result });
      if (result === 'done') duration.observe(seconds);
    },
    pods({ missing: withoutInjection, ...counts }) {
      for (const [state, count] of Object.entries(counts)) pods.set({ state }, count);
      missing.set(withoutInjection);
    },
    repair(action, result) {
      repairs.inc({ action, result });
    },
    waiting(counts: Readonly<Record<WaitReason, number>>) {
      for (const [reason, count] of Object.entries(counts)) waiting.set({ reason }, count);
    },
  };
}

export interface ReconcilerProcessOptions {
  readonly api: KubeApi;
  readonly settings: ReconcilerSettings;
  readonly namespace: string;
  readonly identity: string;
  readonly logger: Logger;
  readonly opsPort: number;
  readonly clock?: Clock;
}

export interface RunningReconciler {
  readonly opsPort: number;
  readonly reconciler: Reconciler;
  stop(): Promise<void>;
}

export async function startReconciler(options: ReconcilerProcessOptions): Promise<RunningReconciler> {
  const { api, settings, logger } = options;
  const clock = options.clock ?? REAL_CLOCK;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const metrics = reconcilerMetrics(registry);
  const lease = new LeaderLease(api, clock, { namespace: options.namespace, name: settings.leaseName, identity: options.identity, durationSeconds: settings.leaseDurationSeconds }, (held, holder) => {
    metrics.leader.set(held ? 1 : 0);
    logger.log('info', held ? 'holds the Lease: acting' : 'does not hold the Lease: watching only', { lease: settings.leaseName, holder });
  });
  const reconciler = new Reconciler({
    api,
    settings,
    namespace: options.namespace,
    identity: options.identity,
    clock,
    lease,
    metrics,
    log: (level, message, fields) => logger.log(level, message, fields),
  });

  let stopped = false;
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void) => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) run();
    }, ms);
    timers.add(timer);
  };
  let ready = false;
  const renew = async () => {
    try {
      await lease.tryAcquireOrRenew();
    } catch (error) {
      logger.log('warn', 'cannot renew the Lease', { error: (error as Error).message });
    }
    ready = true;
    later((settings.leaseDurationSeconds * 1000) / 3, renew);
  };
  let failures = 0;
  let passing: Promise<void> = Promise.resolve();
  const loop = () => {
    passing = (async () => {
      // What the pass cost, in the log line an operator reads: wall and this process's CPU (the pod
      // watch and the Lease renewals meanwhile included; they are small beside a list).
      const began = performance.now();
      const cpuBefore = process.cpuUsage();
      try {
        const outcome = await reconciler.pass();
        failures = 0;
        if (outcome.leader) {
          const cpu = process.cpuUsage(cpuBefore);
          logger.log('info', 'pass done', {
            listed: outcome.listed,
            seconds: Math.round(performance.now() - began) / 1000,
            cpuSeconds: Math.round((cpu.user + cpu.system) / 1000) / 1000,
            pods: outcome.pods,
            restarted: outcome.restarted.length,
            upgradedInPlace: outcome.upgraded.length,
            waiting: outcome.waiting.length,
            reports: outcome.reports,
            ...(outcome.injectorUnreadable ? { injectorUnreadable: outcome.injectorUnreadable } : {}),
            ...(outcome.injectorNotReady ? { injectorNotReady: outcome.injectorNotReady } : {}),
          });
        }
      } catch (error) {
        failures++;
        logger.log('error', 'pass failed', { error: (error as Error).message, failures });
      }
      const wait = Math.min(settings.intervalSeconds * 1000 * 2 ** Math.min(failures, 10), Math.max(settings.intervalSeconds * 1000, 600_000));
      later(wait, loop);
    })();
  };
  await renew();
  loop();

  const ops = http.createServer((req, res) => {
    if (req.url === '/healthz') res.writeHead(200).end('ok');
    else if (req.url === '/readyz') res.writeHead(ready ? 200 : 503).end(ready ? 'ok' : 'starting');
    else if (req.url === '/metrics') {
      void registry.metrics().then((text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text));
    } else res.writeHead(404).end();
  });
  ops.requestTimeout = 10_000;
  await new Promise<void>((resolve) => ops.listen(options.opsPort, resolve));
  return {
    opsPort: (ops.address() as AddressInfo).port,
    reconciler,
    async stop() {
      stopped = true;
      for (const timer of timers) clearTimeout(timer);
      await passing.catch(() => {});
      reconciler.stop();
      await lease.release();
      await new Promise<void>((resolve) => ops.close(() => resolve()));
    },
  };
}
