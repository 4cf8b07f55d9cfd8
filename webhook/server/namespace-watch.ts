// Keeps a NamespaceDefaultsTable current: a paged list of namespaces, then a watch from the list's
// resourceVersion, through the in-cluster client the reconciler uses too (kube-client/kube-api.ts: the
// service-account token and CA, pages that shrink when one is too large). Metadata only (the apiserver's
// PartialObjectMetadata), so a namespace's spec and status never cross the wire. Every wait has an
// end: a watch is asked to close after 5 minutes and one that goes silent longer is cut; a 410 (the
// resourceVersion too old) lists again; an error backs off, 1 s doubling to 30 s. A watch line longer
// than any namespace the apiserver stores is a broken stream: it is cut and the namespaces listed again.
// relist() and stop() abort what is under way. Only `list` and `watch` on namespaces are used: the
// ClusterRole the construct makes.

import type { ApiserverConnection } from '../kube-client/in-cluster-connection';
import { HttpsKubeApi, listPages } from '../kube-client/kube-api';
import type { NamespaceDefaultsTable } from './namespace-defaults';

/** How the watch reports itself (logs and metrics). */
export interface NamespaceWatchEvents {
  synced(namespaces: number): void;
  failed(message: string, retryInMs: number): void;
}

const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** A list page is read whole, up to this: past it, the page is asked for again a quarter the size
 * (one namespace's metadata is at most the apiserver's 1.5 MiB object limit, so a page of one fits). */
const MAX_PAGE_BYTES = 4 * 1024 * 1024;
/** Namespaces per list page at first. */
const FIRST_PAGE_LIMIT = 100;
const WATCH_SECONDS = 300;

export interface NamespaceWatchOptions {
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** Lists and watches namespaces into `table` until `stop()`. */
export class NamespaceWatch {
  private stopped = false;
  /** Aborts the list or watch under way: relist() and stop(). */
  private current: AbortController | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;
  /** Namespaces per list page: divided by 4 after a page over MAX_PAGE_BYTES, down to 1, and kept for the next list. */
  private readonly pageSize = { limit: FIRST_PAGE_LIMIT };

  constructor(
    private readonly connection: ApiserverConnection,
    private readonly table: NamespaceDefaultsTable,
    private readonly events: NamespaceWatchEvents,
    options: NamespaceWatchOptions = {},
  ) {
    this.minBackoffMs = options.minBackoffMs ?? 1000;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.backoffMs = this.minBackoffMs;
  }

  start(): void {
    void this.run();
  }

  /** Lists again from scratch (the keys changed), at once. */
  relist(): void {
    this.current?.abort();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.current?.abort();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const current = (this.current = new AbortController());
      let api: HttpsKubeApi | undefined;
      try {
        // A client per list: the CA is read again, as the token is on every request.
        api = new HttpsKubeApi(this.connection, { maxResponseBytes: MAX_PAGE_BYTES, userAgent: 'sidecar-injector-webhook' });
        let version = await this.list(api, current.signal);
        this.backoffMs = this.minBackoffMs;
        // Until the apiserver says the version is too old (410), or relist() or stop() cuts it.
        while (!current.signal.aborted) {
          const next = await this.watch(api, version, current.signal);
          if (next === 'gone') break;
          version = next;
        }
      } catch (error) {
        if (this.stopped) return;
        if (current.signal.aborted) continue;
        const wait = this.backoffMs;
        this.backoffMs = Math.min(this.backoffMs * 2, this.maxBackoffMs);
        this.events.failed((error as Error).message, wait);
        await new Promise<void>((resolve) => (this.timer = setTimeout(resolve, wait)));
      } finally {
        api?.close();
      }
    }
  }

  /** Every namespace, page by page; returns the list's resourceVersion. */
  private async list(api: HttpsKubeApi, signal: AbortSignal): Promise<string> {
    // Only the offered keys of each are kept: the pages themselves are dropped as they are read.
    const namespaces: { name: string; annotations: unknown }[] = [];
    const resourceVersion = await listPages(
      api,
      '/api/v1/namespaces',
      (items) => {
        for (const item of items) {
          const metadata = item?.metadata;
          if (typeof metadata?.name === 'string') namespaces.push({ name: metadata.name, annotations: this.table.offeredOf(metadata.annotations) });
        }
      },
      {},
      this.pageSize,
      { accept: METADATA_ACCEPT, signal },
    );
    this.table.replaceAll(namespaces);
    this.events.synced(namespaces.length);
    return resourceVersion;
  }

  /** Watches from `resourceVersion`; returns the last version seen, or 'gone' when it must list again. */
  private async watch(api: HttpsKubeApi, resourceVersion: string, signal: AbortSignal): Promise<string | 'gone'> {
    let version = resourceVersion;
    const outcome = await api.watch('/api/v1/namespaces', { allowWatchBookmarks: 'true', timeoutSeconds: String(WATCH_SECONDS), resourceVersion }, (event) => {
      const metadata = event.object?.metadata;
      if (typeof metadata?.name === 'string') {
        if (event.type === 'ADDED' || event.type === 'MODIFIED') this.table.upsert(metadata.name, metadata.annotations);
        else if (event.type === 'DELETED') this.table.delete(metadata.name);
      }
      if (typeof metadata?.resourceVersion === 'string') version = metadata.resourceVersion;
    }, signal);
    return outcome === 'gone' ? 'gone' : version;
  }
}
