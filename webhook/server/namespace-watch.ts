// Keeps a NamespaceDefaultsTable current: a paged list of namespaces, then a watch from the list's
// resourceVersion, with the in-cluster service-account token and CA. Metadata only (the apiserver's
// PartialObjectMetadata), so a namespace's spec and status never cross the wire. Every wait has an
// end: a watch is asked to close after 5 minutes and one that goes silent longer is cut; a 410 (the
// resourceVersion too old) lists again; an error backs off, 1 s doubling to 30 s. A watch line longer
// than any namespace the apiserver stores is a broken stream: it is cut and the namespaces listed again.
// Only `get`, `list` and `watch` on namespaces are used: the ClusterRole the construct makes.

import * as fs from 'node:fs';
import * as https from 'node:https';
import type { IncomingMessage } from 'node:http';
import type { NamespaceDefaultsTable } from './namespace-defaults';
import { LineTooLong, WatchErrorEvent, readWatchStream } from './watch-stream';

/** Where the apiserver is, and how to authenticate to it. */
export interface ApiserverConnection {
  /** `https://host:port`. */
  readonly url: string;
  /** The bearer token's file (read again on every request: kubelet rotates it). */
  readonly tokenFile: string;
  /** The CA bundle that signs the apiserver's certificate. */
  readonly caFile: string;
  /** The name the certificate must carry, when not the URL's host. @default the URL's host */
  readonly serverName?: string;
}

const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';

/** The in-cluster connection from the environment the kubelet sets, or why there is none. */
export function inClusterConnection(env: NodeJS.ProcessEnv = process.env): ApiserverConnection | string {
  const host = env.KUBERNETES_SERVICE_HOST;
  const port = env.KUBERNETES_SERVICE_PORT;
  if (!host || !port) return 'KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set';
  const tokenFile = `${SERVICE_ACCOUNT_DIR}/token`;
  if (!fs.existsSync(tokenFile)) return `no service-account token at ${tokenFile} (automountServiceAccountToken is off)`;
  return { url: `https://${host.includes(':') ? `[${host}]` : host}:${port}`, tokenFile, caFile: `${SERVICE_ACCOUNT_DIR}/ca.crt` };
}

/** How the watch reports itself (logs and metrics). */
export interface NamespaceWatchEvents {
  synced(namespaces: number): void;
  failed(message: string, retryInMs: number): void;
}

const METADATA_ACCEPT = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';
/** Larger than any object the apiserver stores (etcd's limit is 1.5 MiB): past it, a stream is broken. */
const MAX_LINE_BYTES = 3 * 1024 * 1024;
/** A list page is read whole, up to this: past it, the list starts again with pages a quarter the size
 * (one namespace's metadata is at most the apiserver's 1.5 MiB object limit, so a page of one fits). */
export const MAX_PAGE_BYTES = 4 * 1024 * 1024;
/** Namespaces per list page at first. */
const FIRST_PAGE_LIMIT = 100;

class PageTooLarge extends Error {}
const WATCH_SECONDS = 300;
/** A watch with no byte for this long (bookmarks come every minute) is cut. */
const SILENT_WATCH_MS = 150_000;
const REQUEST_TIMEOUT_MS = 30_000;

export interface NamespaceWatchOptions {
  readonly minBackoffMs?: number;
  readonly maxBackoffMs?: number;
}

/** Lists and watches namespaces into `table` until `stop()`. */
export class NamespaceWatch {
  private stopped = false;
  private relisting = false;
  private current: { destroy(): void } | undefined;
  private timer: NodeJS.Timeout | undefined;
  private backoffMs: number;
  private readonly minBackoffMs: number;
  private readonly maxBackoffMs: number;

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
    this.relisting = true;
    this.current?.destroy();
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.current?.destroy();
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        const resourceVersion = await this.list();
        this.backoffMs = this.minBackoffMs;
        let version = resourceVersion;
        for (;;) {
          if (this.stopped) return;
          const next = await this.watch(version);
          if (next === 'gone') break; // list again
          version = next;
        }
      } catch (error) {
        if (this.stopped) return;
        if (this.relisting) {
          this.relisting = false;
          continue;
        }
        const wait = this.backoffMs;
        this.backoffMs = Math.min(this.backoffMs * 2, this.maxBackoffMs);
        this.events.failed((error as Error).message, wait);
        await new Promise<void>((resolve) => (this.timer = setTimeout(resolve, wait)));
      }
    }
  }

  /** Namespaces per list page: divided by 4 after a page over MAX_PAGE_BYTES, down to 1. */
  private pageLimit = FIRST_PAGE_LIMIT;

  /** Every namespace, page by page; returns the list's resourceVersion. */
  private async list(): Promise<string> {
    for (;;) {
      try {
        return await this.listPages();
      } catch (error) {
        if (!(error instanceof PageTooLarge) || this.pageLimit === 1) throw error;
        this.pageLimit = Math.max(1, Math.floor(this.pageLimit / 4));
      }
    }
  }

  private async listPages(): Promise<string> {
    // Only the offered keys of each are kept: the pages themselves are dropped as they are read.
    const namespaces: { name: string; annotations: unknown }[] = [];
    let token: string | undefined;
    let resourceVersion = '';
    do {
      const query = `limit=${this.pageLimit}${token ? `&continue=${encodeURIComponent(token)}` : ''}`;
      const body = await this.getJson(`/api/v1/namespaces?${query}`, METADATA_ACCEPT);
      const items = Array.isArray(body.items) ? body.items : [];
      for (const item of items) {
        const metadata = item?.metadata;
        if (typeof metadata?.name === 'string') namespaces.push({ name: metadata.name, annotations: this.table.offeredOf(metadata.annotations) });
      }
      token = typeof body.metadata?.continue === 'string' && body.metadata.continue !== '' ? body.metadata.continue : undefined;
      resourceVersion = String(body.metadata?.resourceVersion ?? '');
    } while (token);
    this.table.replaceAll(namespaces);
    this.events.synced(namespaces.length);
    return resourceVersion;
  }

  private request(path: string, accept: string): Promise<IncomingMessage> {
    const token = fs.readFileSync(this.connection.tokenFile, 'utf8').trim();
    const ca = fs.readFileSync(this.connection.caFile);
    return new Promise((resolve, reject) => {
      const request = https.get(new URL(path, this.connection.url), { ca, servername: this.connection.serverName, headers: { authorization: `Bearer ${token}`, accept }, minVersion: 'TLSv1.2', timeout: REQUEST_TIMEOUT_MS }, resolve);
      this.current = request;
      request.on('timeout', () => request.destroy(new Error(`GET ${path}: no answer in ${REQUEST_TIMEOUT_MS / 1000}s`)));
      request.on('error', reject);
    });
  }

  private async getJson(path: string, accept: string): Promise<any> {
    const response = await this.request(path, accept);
    const chunks: Buffer[] = [];
    let bytes = 0;
    for await (const chunk of response) {
      bytes += chunk.length;
      if (bytes > MAX_PAGE_BYTES) {
        response.destroy();
        throw new PageTooLarge(`GET ${path}: answer over ${MAX_PAGE_BYTES} bytes`);
      }
      chunks.push(chunk);
    }
    const text = Buffer.concat(chunks).toString('utf8');
    if (response.statusCode !== 200) throw new Error(`GET ${path}: HTTP ${response.statusCode}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  /** Watches from `resourceVersion`; returns the last version seen, or 'gone' when it must list again. */
  private async watch(resourceVersion: string): Promise<string | 'gone'> {
    const path = `/api/v1/namespaces?watch=1&allowWatchBookmarks=true&timeoutSeconds=${WATCH_SECONDS}&resourceVersion=${encodeURIComponent(resourceVersion)}`;
    const response = await this.request(path, METADATA_WATCH_ACCEPT);
    if (response.statusCode === 410) {
      response.resume();
      return 'gone';
    }
    if (response.statusCode !== 200) {
      const chunks: Buffer[] = [];
      for await (const chunk of response) if (chunks.length < 4) chunks.push(chunk);
      throw new Error(`watch namespaces: HTTP ${response.statusCode}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
    }
    response.socket?.setTimeout(SILENT_WATCH_MS, () => response.destroy(new Error(`watch namespaces: silent for ${SILENT_WATCH_MS / 1000}s`)));
    let version = resourceVersion;
    let outcome: 'gone' | 'ended';
    try {
      outcome = await readWatchStream(response, MAX_LINE_BYTES, (event) => {
        const metadata = event.object?.metadata;
        if (typeof metadata?.name === 'string') {
          if (event.type === 'ADDED' || event.type === 'MODIFIED') this.table.upsert(metadata.name, metadata.annotations);
          else if (event.type === 'DELETED') this.table.delete(metadata.name);
        }
        if (typeof metadata?.resourceVersion === 'string') version = metadata.resourceVersion;
      });
    } catch (error) {
      if (error instanceof LineTooLong || error instanceof WatchErrorEvent) throw new Error(`watch namespaces: ${error.message}`);
      throw error;
    }
    return outcome === 'gone' ? 'gone' : version;
  }
}
