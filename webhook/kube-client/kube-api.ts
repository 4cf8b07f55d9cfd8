// The in-cluster apiserver client of the reconciler and of the webhook's namespace watch: JSON over
// HTTPS with the pod's service-account token (read again on every request: the kubelet rotates it)
// and the cluster CA, lists in pages that shrink when one is too large, watches as streams of events.
// A few dozen lines instead of @kubernetes/client-node, so the bundles fit ConfigMaps. Every answer is
// read up to a bound and every request has a deadline: an apiserver (or something posing as one)
// cannot grow the caller's memory or hold it forever.

import * as fs from 'node:fs';
import * as https from 'node:https';
import type { ClientRequest, IncomingMessage } from 'node:http';
import type { ApiserverConnection } from './in-cluster-connection';
import { LineTooLong, WatchErrorEvent, readWatchStream } from './watch-stream';

export type Method = 'GET' | 'POST' | 'PATCH' | 'PUT' | 'DELETE';

export interface KubeRequest {
  readonly body?: unknown;
  /** For PATCH: `application/merge-patch+json` (the default), `application/json-patch+json` or `application/strategic-merge-patch+json`. */
  readonly contentType?: string;
  /** Query parameters (`limit`, `continue`, `labelSelector`, `dryRun`, `fieldManager`). */
  readonly query?: Readonly<Record<string, string | undefined>>;
  /** The Accept header (a metadata-only list asks for `as=PartialObjectMetadataList`). @default application/json */
  readonly accept?: string;
  /** Cuts the request (the answer rejects). */
  readonly signal?: AbortSignal;
}

/** One event of a watch, its object as metadata only (PartialObjectMetadata). */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK';
  readonly object: { readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly resourceVersion?: string; readonly annotations?: unknown } };
}

/** What the reconciler needs of the apiserver: one JSON request. Its tests give it an in-memory cluster. */
export interface KubeApi {
  request(method: Method, path: string, request?: KubeRequest): Promise<any>;
  /**
   * Watches `path` (metadata only) from `query.resourceVersion`, handing each event to `onEvent`, until
   * the apiserver ends it (`ended`, after its `timeoutSeconds`), the version is too old (`gone`: list
   * again), or `signal` aborts it (`ended`); rejects on any other failure. Absent: the client cannot
   * watch, and the reconciler lists every pod every pass.
   */
  watch?(path: string, query: Readonly<Record<string, string>>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<'gone' | 'ended'>;
}

/** The apiserver answered with an error status (its Status object's reason and message kept). */
export class KubeApiError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'KubeApiError';
  }
}

/** An answer past the client's bound: cut, never read whole. */
export class ResponseTooLarge extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ResponseTooLarge';
  }
}

/** Whether an error is the apiserver saying the object is not there. */
export const isNotFound = (error: unknown) => error instanceof KubeApiError && error.status === 404;
/** Whether an error is a write that lost a race: 409, a stale resourceVersion. (A JSON Patch whose `test`
 * fails is a bare 422 from the apiserver; `rollout --in-place`'s upgradePod tells it apart by reading the pod again.) */
export const isConflict = (error: unknown) => error instanceof KubeApiError && error.status === 409;

/** The most one answer may hold: a page of pods is asked for at `PAGE_LIMIT` and one pod is at most 1.5 MiB. */
export const MAX_RESPONSE_BYTES = 16 * 1024 * 1024;
const REQUEST_TIMEOUT_MS = 30_000;
/** Larger than any object the apiserver stores (etcd's limit is 1.5 MiB): past it, a watch stream is broken. */
export const MAX_WATCH_LINE_BYTES = 3 * 1024 * 1024;
/** A watch with no byte for this long (bookmarks come about every minute) is cut. */
const SILENT_WATCH_MS = 150_000;
const METADATA_WATCH_ACCEPT = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

/** The in-cluster client. */
export class HttpsKubeApi implements KubeApi {
  private readonly agent: https.Agent;
  private readonly watchAgent: https.Agent;
  private readonly base: URL;

  constructor(
    private readonly connection: ApiserverConnection,
    private readonly options: { readonly maxResponseBytes?: number; readonly timeoutMs?: number; readonly userAgent?: string } = {},
  ) {
    this.base = new URL(connection.url);
    const tls: https.AgentOptions = { ca: fs.readFileSync(connection.caFile), minVersion: 'TLSv1.2', ...(connection.serverName ? { servername: connection.serverName } : {}) };
    this.agent = new https.Agent({ ...tls, keepAlive: true, maxSockets: 4 });
    this.watchAgent = new https.Agent({ ...tls, keepAlive: false, maxSockets: 1 });
  }

  request(method: Method, path: string, request: KubeRequest = {}): Promise<any> {
    const url = new URL(path, this.base);
    for (const [key, value] of Object.entries(request.query ?? {})) if (value !== undefined) url.searchParams.set(key, value);
    const body = request.body === undefined ? undefined : Buffer.from(JSON.stringify(request.body));
    const limit = this.options.maxResponseBytes ?? MAX_RESPONSE_BYTES;
    return new Promise((resolve, reject) => {
      const req = https.request(
        url,
        this.requestOptions(method, this.agent, request.signal, {
          accept: request.accept ?? 'application/json',
          ...(body ? { 'content-type': method === 'PATCH' ? (request.contentType ?? 'application/merge-patch+json') : 'application/json', 'content-length': body.length } : {}),
        }),
        (res: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          let cut = false;
          res.on('data', (chunk: Buffer) => {
            if (cut) return;
            size += chunk.length;
            if (size > limit) {
              cut = true;
              chunks.length = 0;
              reject(new ResponseTooLarge(`${method} ${url.pathname}: the answer is over ${limit} bytes; cut`));
              res.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('error', (error) => cut || reject(error));
          res.on('end', () => {
            if (cut) return;
            const text = Buffer.concat(chunks).toString('utf8');
            let parsed: any;
            try {
              parsed = text === '' ? {} : JSON.parse(text);
            } catch {
              parsed = undefined;
            }
            const status = res.statusCode ?? 0;
            if (status >= 200 && status < 300 && parsed !== undefined) return resolve(parsed);
            const reason = typeof parsed?.reason === 'string' ? parsed.reason : `HTTP ${status}`;
            const message = typeof parsed?.message === 'string' ? parsed.message : text.slice(0, 200);
            reject(new KubeApiError(status, reason, `${method} ${url.pathname}: ${status} ${reason}: ${message}`));
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error(`${method} ${url.pathname}: no answer in ${(this.options.timeoutMs ?? REQUEST_TIMEOUT_MS) / 1000} s`)));
      // After a cut the socket's own error (if any) changes nothing: the promise is settled.
      req.on('error', (error) => reject(error));
      req.end(body);
    });
  }

  /** A request's options: the token read again now (the kubelet rotates it), the CA's agent, a deadline. */
  private requestOptions(method: Method, agent: https.Agent, signal: AbortSignal | undefined, headers: Record<string, string | number>): https.RequestOptions {
    const token = fs.readFileSync(this.connection.tokenFile, 'utf8').trim();
    return {
      method,
      agent,
      signal,
      ...(this.connection.serverName ? { servername: this.connection.serverName } : {}),
      headers: { authorization: `Bearer ${token}`, 'user-agent': this.options.userAgent ?? 'sidecar-injector-reconciler', ...headers },
      timeout: this.options.timeoutMs ?? REQUEST_TIMEOUT_MS,
    };
  }

  async watch(path: string, query: Readonly<Record<string, string>>, onEvent: (event: WatchEvent) => void, signal: AbortSignal): Promise<'gone' | 'ended'> {
    if (signal.aborted) return 'ended';
    const url = new URL(path, this.base);
    for (const [key, value] of Object.entries({ watch: '1', ...query })) url.searchParams.set(key, value);
    let req: ClientRequest | undefined;
    const abort = () => req?.destroy();
    signal.addEventListener('abort', abort, { once: true });
    try {
      const res = await new Promise<IncomingMessage>((resolve, reject) => {
        // Its own socket, held for minutes: the requests' pool stays free.
        req = https.request(url, this.requestOptions('GET', this.watchAgent, undefined, { accept: METADATA_WATCH_ACCEPT }), resolve);
        req.on('timeout', () => req!.destroy(new Error(`watch ${url.pathname}: no answer in ${(this.options.timeoutMs ?? REQUEST_TIMEOUT_MS) / 1000} s`)));
        req.on('error', reject);
        req.end();
      });
      const status = res.statusCode ?? 0;
      if (status === 410) {
        res.resume();
        return 'gone';
      }
      if (status !== 200) {
        const chunks: Buffer[] = [];
        for await (const chunk of res as AsyncIterable<Buffer>) if (chunks.length < 4) chunks.push(chunk);
        throw new KubeApiError(status, `HTTP ${status}`, `watch ${url.pathname}: ${status}: ${Buffer.concat(chunks).toString('utf8').slice(0, 200)}`);
      }
      req!.setTimeout(SILENT_WATCH_MS, () => req!.destroy(new Error(`watch ${url.pathname}: silent for ${SILENT_WATCH_MS / 1000} s`)));
      return await readWatchStream(res, MAX_WATCH_LINE_BYTES, onEvent);
    } catch (error) {
      if (signal.aborted) return 'ended';
      if (error instanceof LineTooLong) throw new ResponseTooLarge(`watch ${url.pathname}: a line over ${MAX_WATCH_LINE_BYTES} bytes`);
      if (error instanceof SyntaxError) throw new Error(`watch ${url.pathname}: a line that is not JSON`);
      if (error instanceof WatchErrorEvent) throw new KubeApiError(error.code, error.reason, `watch ${url.pathname}: ${error.message}`);
      throw error;
    } finally {
      signal.removeEventListener('abort', abort);
    }
  }

  close(): void {
    this.agent.destroy();
    this.watchAgent.destroy();
  }
}

/** Objects per list page at first; a page over the client's bound (MAX_RESPONSE_BYTES) is asked for again
 * a quarter the size, down to one object (at most the apiserver's 1.5 MiB object limit). */
export const PAGE_LIMIT = 250;

/**
 * Every item of a list, page by page, handed to `each` as each page arrives: at most one page is held.
 * Returns the list's resourceVersion. `pageSize` is where the page size starts, and keeps it once it
 * shrank, for the next list; `request` adds the Accept header or a signal to each page's request.
 */
export async function listPages(
  api: KubeApi,
  path: string,
  each: (items: readonly any[]) => Promise<void> | void,
  query: Record<string, string> = {},
  pageSize: { limit: number } = { limit: PAGE_LIMIT },
  request: Pick<KubeRequest, 'accept' | 'signal'> = {},
): Promise<string> {
  let continueToken: string | undefined;
  let resourceVersion = '';
  for (;;) {
    let page: any;
    try {
      page = await api.request('GET', path, { ...request, query: { ...query, limit: String(pageSize.limit), continue: continueToken } });
    } catch (error) {
      if (!(error instanceof ResponseTooLarge) || pageSize.limit === 1) throw error;
      pageSize.limit = Math.max(1, Math.floor(pageSize.limit / 4));
      continue;
    }
    await each(Array.isArray(page?.items) ? page.items : []);
    resourceVersion = String(page?.metadata?.resourceVersion ?? '');
    continueToken = typeof page?.metadata?.continue === 'string' && page.metadata.continue !== '' ? page.metadata.continue : undefined;
    if (!continueToken) break;
  }
  return resourceVersion;
}
