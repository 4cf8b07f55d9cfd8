// Which namespaces' pods changed since the last pass, so a pass lists those (and the ones with work
// left) instead of every pod in the cluster. After a pass that listed every pod, a watch of all pods
// (metadata only: a pod's spec and status never cross the wire) starts from that list's
// resourceVersion and marks the namespace of each event. Nothing per pod is kept: a set of namespace
// names, at most MAX_CHANGED_NAMESPACES (past it, the next pass lists everything). Whenever the watch
// is not known to be whole (not started, failed, its version too old) the next pass lists every pod
// and starts it again; and every FULL_PASS_EVERY_MS one does anyway, whatever the watch says.

import type { Clock } from '../fleet/cluster';
import type { KubeApi } from '../kube-client/kube-api';

/** Namespaces remembered as changed; one more and the next pass lists every pod. */
export const MAX_CHANGED_NAMESPACES = 10_000;
/** However whole the watch, a pass at least this often lists every pod. */
export const FULL_PASS_EVERY_MS = 10 * 60_000;
/** Asked of the apiserver: it ends a watch after this, and the next one goes on from the last version. */
const WATCH_SECONDS = 300;

/** What a pass lists: every pod, and why; or the pods of these namespaces. */
export type ListPlan = { readonly all: true; readonly reason: string } | { readonly all: false; readonly namespaces: ReadonlySet<string> };

export class PodChanges {
  private changed = new Set<string>();
  private overflow = false;
  /** A watch runs from the last full list, and none has failed since. */
  private whole = false;
  private lastFullPass = Number.NEGATIVE_INFINITY;
  private abort: AbortController | undefined;

  constructor(
    private readonly api: KubeApi,
    private readonly clock: Pick<Clock, 'now'>,
    private readonly log: (level: 'info' | 'warn', message: string, fields?: Record<string, unknown>) => void,
  ) {}

  /** What the next pass must list; the namespaces handed out are forgotten. */
  plan(): ListPlan {
    if (!this.api.watch) return { all: true, reason: 'the client cannot watch' };
    if (!this.whole) return { all: true, reason: 'no pod watch runs from the last full list' };
    if (this.overflow) return { all: true, reason: `pods changed in more than ${MAX_CHANGED_NAMESPACES} namespaces` };
    if (this.clock.now() - this.lastFullPass >= FULL_PASS_EVERY_MS) return { all: true, reason: `a full pass every ${FULL_PASS_EVERY_MS / 60_000} minutes` };
    const namespaces = this.changed;
    this.changed = new Set();
    return { all: false, namespaces };
  }

  /** A pass listed every pod as of `resourceVersion`: watch from there. */
  synced(resourceVersion: string): void {
    this.stop();
    if (!this.api.watch || resourceVersion === '') return;
    this.lastFullPass = this.clock.now();
    this.changed = new Set();
    this.overflow = false;
    this.whole = true;
    const abort = new AbortController();
    this.abort = abort;
    void this.run(resourceVersion, abort.signal);
  }

  /** Stops watching (the Lease lost, the process ending); the next pass lists every pod. */
  stop(): void {
    this.abort?.abort();
    this.abort = undefined;
    this.whole = false;
  }

  private mark(namespace: string): void {
    if (this.overflow || this.changed.has(namespace)) return;
    if (this.changed.size >= MAX_CHANGED_NAMESPACES) {
      this.overflow = true;
      this.changed = new Set();
      return;
    }
    this.changed.add(namespace);
  }

  private async run(from: string, signal: AbortSignal): Promise<void> {
    let version = from;
    while (!signal.aborted) {
      const started = performance.now();
      try {
        const outcome = await this.api.watch!(
          '/api/v1/pods',
          { resourceVersion: version, allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_SECONDS) },
          (event) => {
            const metadata = event.object.metadata;
            if (typeof metadata?.resourceVersion === 'string' && metadata.resourceVersion !== '') version = metadata.resourceVersion;
            if (event.type !== 'BOOKMARK' && typeof metadata?.namespace === 'string') this.mark(metadata.namespace);
          },
          signal,
        );
        if (signal.aborted) return;
        if (outcome === 'gone') {
          this.log('info', 'the pod watch fell too far behind: the next pass lists every pod', { resourceVersion: version });
          this.whole = false;
          return;
        }
        // Ended by the apiserver after timeoutSeconds: on from the last version, nothing missed. One that
        // ends at once, again and again, is not a watch: the passes list everything until the next full one.
        if (performance.now() - started < 1000) {
          this.log('warn', 'the pod watch ended at once: the next pass lists every pod');
          this.whole = false;
          return;
        }
      } catch (error) {
        if (signal.aborted) return;
        this.log('warn', 'the pod watch failed: the next pass lists every pod', { error: (error as Error).message });
        this.whole = false;
        return;
      }
    }
  }
}
