// The HTTPS server of POST /mutate (TLS >= 1.2), the plain-HTTP ops server of /healthz, /readyz and
// /metrics on a port of its own, live reload of the mounted config and certificate, and a graceful
// shutdown that finishes what is in flight.

import * as http from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as http2 from 'node:http2';
import type { Server as NetServer, Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import * as v8 from 'node:v8';
import express from 'express';
import { LogLevel, MemorySizing, RUNTIME_DEFAULTS, ResolvedInjectorConfig, admissionRoute, memorySizing, namespaceOverrideKeys } from '../config';
import { createAdmissionHandler } from './admission-handler';
import { CLIENT_RESETS } from './http2-streams';
import { type ConnectionCloseReason, ConnectionTable, type StreamResetReason, type TableEvent, type WebhookRequest, type WebhookResponse, http2StreamOf, sentNothing } from './connection-table';
import { Logger, createLogger } from './logger';
import { MemoryBudget } from './memory-budget';
import { WebhookMetrics } from './metrics';
import { certificateNotAfter, readInjectorConfig, readTlsMaterial, watchDirectory } from './mounted-files';
import { NamespaceDefaultsTable } from './namespace-defaults';
import { type ApiserverConnection, inClusterConnection } from '../kube-client/in-cluster-connection';
import { NamespaceWatch, type NamespaceWatchOptions } from './namespace-watch';

export interface WebhookServerSettings {
  readonly listenPort: number;
  /** The plain-HTTP port of /healthz, /readyz and /metrics; 0 picks a free one. */
  readonly opsPort: number;
  /** @default all interfaces */
  readonly listenHost?: string;
  readonly tlsDir: string;
  readonly configDir: string;
  readonly logLevel: LogLevel;
  readonly shutdownTimeoutSeconds: number;
  readonly requestTimeoutSeconds: number;
  /** Seconds to keep serving, unready, after SIGTERM before closing. @default 0 */
  readonly shutdownDelaySeconds?: number;
  /** Where log lines go. @default stdout */
  readonly writeLog?: (line: string) => void;
  /** The request-body memory budget and heap limit, from the container's memory limit.
   * @default memorySizing(192 MiB), the Deployment's default limit */
  readonly memory?: MemorySizing;
  /** Most connections open at once on the webhook port; past it the one silent or slow the longest
   * is closed to make room. @default from the memory limit, `memory.maxConnections` */
  readonly maxConnections?: number;
  /**
   * The apiserver to list and watch namespaces from, for overrides that read namespace defaults
   * (`fromNamespace`); a string says why there is none. Used only while the config has such overrides.
   * @default the in-cluster service account's, when mounted
   */
  readonly apiserver?: ApiserverConnection | string;
  /** The namespace watch's retry timing (tests shorten it). */
  readonly namespaceWatch?: NamespaceWatchOptions;
  /** How long, after a config that reads namespaces is loaded, /readyz waits for the first namespace list. @default 10 s */
  readonly namespaceSyncWaitMs?: number;
}

export interface RunningWebhookServer {
  readonly port: number;
  /** The port of /healthz, /readyz and /metrics (plain HTTP). */
  readonly opsPort: number;
  /** Connections closed to keep the webhook port free, by reason. */
  readonly connectionsClosed: Readonly<Record<ConnectionCloseReason, number>>;
  /** HTTP/2 streams reset (their sessions kept), by reason. */
  readonly streamsReset: Readonly<Record<StreamResetReason, number>>;
  readonly metrics: WebhookMetrics;
  readonly budget: MemoryBudget;
  readonly logger: Logger;
  /** The namespaces' override defaults (empty, and never filled, while no override reads them). */
  readonly namespaces: NamespaceDefaultsTable;
  /** Stops accepting, finishes in-flight requests, closes keep-alive connections. */
  shutdown(): Promise<void>;
}

/** Node's client error codes, answered as Node itself would rather than all as 400. */
const CLIENT_ERROR_STATUS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
};

/** Above the apiserver's 90 s idle timeout, so it is always the apiserver that closes an idle connection.
 * Also how long a connection that has sent nothing yet is kept (the connection table's `silentMs`). */
const KEEP_ALIVE_TIMEOUT_MS = 120_000;
/** The TLS handshake: the apiserver's takes milliseconds; a client that has not finished it by then
 * (no ClientHello, or a stalled one) is closed. Node's default is 120 s. */
export const HANDSHAKE_TIMEOUT_MS = 10_000;
/** The request line and headers of every request, from the first byte (the apiserver sends them at once). */
export const HEADERS_TIMEOUT_MS = 10_000;
/** A body that arrives slower than this (in each of two consecutive seconds) is cut with 408, whatever
 * its declared length. The apiserver writes a whole body at once; at this rate even a 5 KB review
 * would take most of a second. */
export const MIN_BODY_BYTES_PER_SECOND = 8 * 1024;
/** At the cap, a source address holding more than max(cap / sources, this) connections is over its
 * share: its new connection takes the place of one of its own (DISPLACEMENTS) or is closed at accept,
 * before the handshake. Above the apiserver's pool (tens), so an apiserver on an address of its own
 * never needs to while fewer than cap / this sources share the table. */
export const FAIR_SHARE_FLOOR = 32;
/** How often a source over its share may displace one of its own connections (silent, then slow, then
 * idle) for a new one: each newcomer costs an RSA handshake (1-2 ms of CPU), so 4 a second after a burst
 * of 32 (an apiserver's pool), for each of at most cap / FAIR_SHARE_FLOOR sources over their share. */
export const DISPLACEMENTS = { perSecond: 4, burst: 32 } as const;
const CLOSE_MESSAGES: Record<TableEvent, string> = {
  evicted: 'connection closed to make room',
  displaced: 'connection closed for a new one from its source, which holds more than its share',
  over_share: 'new connection closed before its handshake: its source holds more than its share',
  silent: 'silent connection closed',
  slow_body: 'slow request body cut with 408',
  reset_flood: 'HTTP/2 session closed: its client reset its own unanswered streams faster than allowed (rapid reset)',
  stream_slow_body: 'HTTP/2 stream with a slow request body answered 408 and reset',
  stream_evicted: 'HTTP/2 stream waiting on its client reset to make room at the stream cap',
  stream_refused: 'new HTTP/2 stream refused at the stream cap: every stream in flight is being answered',
};
/** The ops port serves the kubelet's probes (a fresh connection each) and a Prometheus scrape: a
 * small table of its own, evicting as the webhook port's does. */
export const OPS_MAX_CONNECTIONS = 32;
/** Request line and headers: the apiserver and the kubelet send a few hundred bytes; more is refused with 431. */
export const MAX_HEADER_BYTES = 8 * 1024;

/**
 * HTTP/2, offered by ALPN (`h2`, then `http/1.1` for clients that do not speak it): the apiserver's
 * webhook client multiplexes its calls on one connection instead of a connection (and a handshake)
 * per concurrent call. Streams one session may have open at once (Go's server allows 250; the
 * apiserver at 200 pods/s has a few): past it nghttp2 refuses the stream, and a session that keeps
 * opening them anyway is closed. Across sessions the connection table caps the streams in flight at
 * the connection cap, so their headers hold what one request per connection would.
 */
export const HTTP2_MAX_CONCURRENT_STREAMS = 100;
/** Header fields per request, HTTP/2 (the apiserver sends about ten). */
export const HTTP2_MAX_HEADER_PAIRS = 64;
/** The memory nghttp2 may hold for one session (MB, Node's unit): headers being decoded, frames and
 * answers queued for a client that does not read them. Past it new streams are refused. */
export const HTTP2_MAX_SESSION_MEMORY_MB = 2;

/** Mozilla's intermediate profile: TLS 1.2 with ECDHE and AEAD suites only (AES-GCM, ChaCha20-Poly1305;
 * no CBC suite, which testssl.sh flags for LUCKY13), TLS 1.3 with its own three; nothing older. */
export const TLS_PROFILE = {
  minVersion: 'TLSv1.2',
  ciphers: [
    'TLS_AES_128_GCM_SHA256',
    'TLS_AES_256_GCM_SHA384',
    'TLS_CHACHA20_POLY1305_SHA256',
    'ECDHE-ECDSA-AES128-GCM-SHA256',
    'ECDHE-RSA-AES128-GCM-SHA256',
    'ECDHE-ECDSA-AES256-GCM-SHA384',
    'ECDHE-RSA-AES256-GCM-SHA384',
    'ECDHE-ECDSA-CHACHA20-POLY1305',
    'ECDHE-RSA-CHACHA20-POLY1305',
  ].join(':'),
} as const;

export async function startWebhookServer(settings: WebhookServerSettings): Promise<RunningWebhookServer> {
  const logger = createLogger(settings.logLevel, settings.writeLog);
  const memory = settings.memory ?? memorySizing(RUNTIME_DEFAULTS.memoryLimitBytes);
  const budget = new MemoryBudget(memory);
  const metrics = new WebhookMetrics(budget, logger);
  const maxConnections = settings.maxConnections ?? memory.maxConnections;
  let config: ResolvedInjectorConfig | undefined;
  let configError: string | undefined;
  let configText = '';
  let shuttingDown = false;
  let draining = false;
  const namespaces = new NamespaceDefaultsTable();
  metrics.watchNamespaceDefaults(namespaces);
  let namespaceWatch: NamespaceWatch | undefined;
  /** Until when /readyz waits for the first namespace list (0: it does not). */
  let namespaceSyncDeadline = 0;

  /** Lists and watches namespaces while the config has overrides that read them; stops when it has none. */
  const followNamespaces = (next: ResolvedInjectorConfig): void => {
    const keys = namespaceOverrideKeys(next);
    const changed = namespaces.setKeys(keys);
    if (keys.size === 0) {
      namespaceWatch?.stop();
      namespaceWatch = undefined;
      namespaceSyncDeadline = 0;
      return;
    }
    if (!changed && namespaceWatch) return;
    namespaceSyncDeadline = Date.now() + (settings.namespaceSyncWaitMs ?? 10_000);
    if (namespaceWatch) {
      namespaceWatch.relist();
      return;
    }
    const connection = settings.apiserver ?? inClusterConnection();
    if (typeof connection === 'string') {
      logger.log('error', 'namespace defaults for overrides unavailable: their admissions warn', { error: connection, keys: [...keys] });
      return;
    }
    namespaceWatch = new NamespaceWatch(connection, namespaces, {
      synced: (count) => logger.log('info', 'namespaces listed', { namespaces: count, kept: namespaces.size.entries, notKept: namespaces.size.overflowed }),
      failed: (message, retryInMs) => logger.log('warn', 'namespace watch failed; retrying', { error: message, retryInMs }),
    }, settings.namespaceWatch);
    namespaceWatch.start();
  };

  const loadConfig = (): void => {
    try {
      const next = readInjectorConfig(settings.configDir);
      const text = JSON.stringify(next);
      metrics.lastConfigReloadSuccessful = 1;
      configError = undefined;
      if (text === configText) return;
      const first = config === undefined;
      config = next;
      configText = text;
      followNamespaces(next);
      metrics.countReload('config', 'success');
      logger.log('info', first ? 'config loaded' : 'config reloaded', {
        injections: next.injections.map((i) => i.name),
        ...(next.revisions ? { revisions: next.revisions.map((revision) => `${revision.name}: ${revision.injections.map((i) => i.name).join(', ')}`) } : {}),
        enabled: next.enabled,
      });
    } catch (error) {
      const message = (error as Error).message;
      if (message === configError) return; // the same bad file seen again by the poll
      configError = message;
      metrics.lastConfigReloadSuccessful = 0;
      metrics.countReload('config', 'failure');
      logger.log('error', config ? 'invalid config ignored; the last good config keeps serving' : 'invalid config; not ready', { error: message });
    }
  };

  const tls = readTlsMaterial(settings.tlsDir);
  /** What is being served, to tell a real change from a watch event that changed nothing. */
  let tlsText = tls.cert + tls.key;
  metrics.serveCertificateUntil(certificateNotAfter(tls.cert));
  loadConfig();

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  const handleAdmission = createAdmissionHandler({ config: () => config, metrics, logger, budget, namespaces });
  // The ops port: what the kubelet probes and Prometheus scrapes, apart from the webhook port so that
  // nothing done to the webhook port (a flood, slow clients, a full connection table) can fail a probe.
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.get('/readyz', (_req, res) => {
    // With overrides that read namespaces, a new replica waits (a few seconds at most) for the first
    // list, so the pods it admits get their namespace defaults; past the wait it serves, and warns.
    const namespacesWaited = namespaceSyncDeadline === 0 || namespaces.size.synced || Date.now() > namespaceSyncDeadline;
    const ready = config !== undefined && !shuttingDown && namespacesWaited;
    // A bad config update does not make the pods unready (that would take every replica out of the
    // Service at once); it shows here as "stale" with the error, in the metrics and in the logs.
    res.status(ready ? 200 : 503).json({
      ready,
      shuttingDown,
      config: config === undefined ? 'missing' : configError ? 'stale' : 'current',
      configError,
    });
  });
  app.get('/metrics', (_req, res, next) => {
    metrics.render().then((text) => res.type(metrics.contentType).send(text), next);
  });
  app.use((req, res) => {
    res.status(404).json({ error: { code: 404, message: `no route for ${req.method} ${req.path}` } });
  });
  const notFound = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '').split('?')[0];
    const where = path === '/healthz' || path === '/readyz' || path === '/metrics' ? ` (${path} is served on the ops port)` : '';
    const text = JSON.stringify({ error: { code: 404, message: `no route for ${req.method} ${path}${where}` } });
    res.writeHead(404, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) }).end(text);
  };

  // The webhook port serves POST /mutate (and /mutate/revisions/<name>, /mutate/unserved/<chooser>) only. Every request reaches this listener once its headers
  // are in, before any body is read.
  // HTTP/2 requests come through Node's compatibility API, whose request and response have the
  // members the admission handler and notFound use (headers, method, url, events; writeHead, end,
  // headersSent): typed as HTTP/1.1's there.
  const listener = (req: WebhookRequest, res: WebhookResponse): void => {
    const now = performance.now();
    if (!connections.requestStarted(req, res, now)) return;
    const stream = http2StreamOf(req);
    if (draining) {
      // HTTP/1.1: the answer says close; HTTP/2: a GOAWAY once it is written (streams in flight finish).
      if (stream === undefined) res.setHeader('Connection', 'close');
      else res.once('finish', () => (stream.session?.closed === false ? stream.session.close() : undefined));
    }
    const route = req.method === 'POST' ? admissionRoute(req.url ?? '') : undefined;
    if (route !== undefined) handleAdmission(req as IncomingMessage, res as ServerResponse, now, route);
    else notFound(req as IncomingMessage, res as ServerResponse);
  };

  const server = http2.createSecureServer(
    {
      cert: tls.cert,
      key: tls.key,
      ...TLS_PROFILE,
      allowHTTP1: true,
      handshakeTimeout: HANDSHAKE_TIMEOUT_MS,
      noDelay: true,
      settings: { maxConcurrentStreams: HTTP2_MAX_CONCURRENT_STREAMS, maxHeaderListSize: MAX_HEADER_BYTES },
      maxHeaderListPairs: HTTP2_MAX_HEADER_PAIRS,
      maxSessionMemory: HTTP2_MAX_SESSION_MEMORY_MB,
      // nghttp2's own rapid-reset limit, in Node 22 (the image's; Node 20 ignores them): the same bucket
      // as the connection table's, applied before a reset stream costs any JavaScript.
      ...({ streamResetBurst: CLIENT_RESETS.burst, streamResetRate: CLIENT_RESETS.perSecond } as object),
    },
    listener,
  );
  // HTTP/1.1 on this server is Node's http server, reading these from the server object.
  Object.assign(server, {
    requestTimeout: settings.requestTimeoutSeconds * 1000,
    headersTimeout: Math.min(HEADERS_TIMEOUT_MS, settings.requestTimeoutSeconds * 1000),
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    // How often stalled requests are found and cut off (Node's default is 30 s).
    connectionsCheckingInterval: 1_000,
    maxHeaderSize: MAX_HEADER_BYTES,
  });
  // No cap at accept: past `maxConnections` the connection silent or slow the longest of the source
  // address holding the most connections is closed to make room (never an admission being answered
  // while another can go); a new connection from a source over its fair share displaces that source's
  // own worst connection, a few times a second (DISPLACEMENTS), and is closed at accept, before its TLS
  // handshake, past that. The table also closes a connection silent for KEEP_ALIVE_TIMEOUT_MS and
  // cuts slow bodies.
  const logClosed = (reason: TableEvent, details: Record<string, unknown>) => logger.log('debug', CLOSE_MESSAGES[reason], details);
  const connections = new ConnectionTable(
    server,
    {
      maxConnections,
      silentMs: KEEP_ALIVE_TIMEOUT_MS,
      minBodyBytesPerSecond: MIN_BODY_BYTES_PER_SECOND,
      fairShareFloor: Math.min(FAIR_SHARE_FLOOR, maxConnections),
      displacements: DISPLACEMENTS,
      maxStreams: maxConnections,
    },
    logClosed,
    true,
  );
  metrics.watchConnections(connections);
  server.on('tlsClientError', (error) => logger.log('debug', 'TLS handshake failed', { error: error.message }));
  // A session's protocol errors (nghttp2 closes it with GOAWAY): nothing to answer.
  server.on('sessionError', (error) => logger.log('debug', 'HTTP/2 session error', { error: error.message }));
  // A connection that has not sent a byte yet is an idle connection in its client's pool: Go's
  // http.Transport, the apiserver's, keeps a connection it dialed for a request that another
  // connection served meanwhile. Node times such a connection out with the header timeout and
  // writes it an unsolicited 408, which a client that picks the connection at that moment reads as
  // its admission's answer (a failed admission; seen once in 300,000 in the soak). So a silent
  // connection is left open past the header timeout, idle like a keep-alive one, and closed quietly
  // by the connection table after KEEP_ALIVE_TIMEOUT_MS, later than the apiserver's 90 s, so the
  // apiserver closes it first (or sooner, to make room at the cap).
  // A connection that has sent part of a request is still answered 408 and cut off. "Silent" is
  // the connection table's `sentNothing`, read from the TLS socket's count of cleartext bytes.
  // Plain HTTP: what it serves is no secret (health, readiness, counters) and is reached by the node's
  // kubelet and a Prometheus the NetworkPolicy names; a probe costs no handshake.
  const opsServer = http.createServer(
    { requestTimeout: 10_000, headersTimeout: 5_000, keepAliveTimeout: 5_000, connectionsCheckingInterval: 1_000, maxHeaderSize: MAX_HEADER_BYTES },
    (req, res) => {
      opsConnections.requestStarted(req, res);
      app(req, res);
    },
  );
  const opsConnections = new ConnectionTable(
    opsServer,
    { maxConnections: OPS_MAX_CONNECTIONS, silentMs: 5_000, minBodyBytesPerSecond: MIN_BODY_BYTES_PER_SECOND },
    (reason, details) => logger.log('debug', `ops port: ${reason} connection closed`, details),
    false,
  );
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    // The HTTP/2 server reports a failed TLS handshake here too (after tlsClientError): no HTTP yet.
    if (socket instanceof TLSSocket && (socket as TLSSocket & { _secureEstablished?: boolean })._secureEstablished !== true) {
      socket.destroy();
      return;
    }
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket instanceof TLSSocket && sentNothing(socket)) {
      logger.log('debug', 'a connection that has sent nothing yet is kept open past the header timeout');
      return;
    }
    // A failed TLS handshake is reported by tlsClientError already; there is no HTTP to answer.
    if (socket instanceof TLSSocket && String(error.code).startsWith('ERR_SSL_')) {
      socket.destroy();
      return;
    }
    // Node paused the parser because the client does not read its pipelined answers, and TLS still
    // delivered bytes: answers are waiting on this connection, so a 400 written now would land in the
    // middle of them. Closed instead; the client resends what it got no answer for.
    if (error.code === 'HPE_PAUSED') {
      socket.destroy();
      logger.log('debug', 'closed a connection whose client pipelined requests faster than it read the answers');
      return;
    }
    const status = CLIENT_ERROR_STATUS[error.code ?? ''] ?? '400 Bad Request';
    if (socket.writable) socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    else socket.destroy();
    logger.log('debug', 'malformed or timed-out HTTP request', { error: error.message, status });
  });

  const reloadTls = (): void => {
    try {
      const next = readTlsMaterial(settings.tlsDir);
      if (next.cert + next.key === tlsText) return;
      const notAfter = certificateNotAfter(next.cert);
      server.setSecureContext({ cert: next.cert, key: next.key, ...TLS_PROFILE });
      tlsText = next.cert + next.key;
      metrics.serveCertificateUntil(notAfter);
      metrics.countReload('certificate', 'success');
      logger.log('info', 'certificate reloaded');
    } catch (error) {
      // Half-written files during a swap, or a bad certificate: keep serving the current one.
      metrics.countReload('certificate', 'failure');
      logger.log('error', 'certificate reload failed; the current certificate keeps serving', { error: (error as Error).message });
    }
  };
  const stopWatching = [watchDirectory(settings.configDir, loadConfig), watchDirectory(settings.tlsDir, reloadTls)];

  const listen = (target: NetServer, port: number) =>
    new Promise<number>((resolve, reject) => {
      target.once('error', reject);
      target.listen(port, settings.listenHost, () => {
        target.off('error', reject);
        const address = target.address();
        resolve(typeof address === 'object' && address ? address.port : port);
      });
    });
  const opsPort = await listen(opsServer, settings.opsPort);
  const port = await listen(server, settings.listenPort);
  const heapLimitBytes = v8.getHeapStatistics().heap_size_limit;
  logger.log('info', 'memory', {
    limitBytes: memory.limitBytes,
    budgetBytes: memory.budgetBytes,
    largeBodyBytes: memory.largeBodyBytes,
    heapLimitBytes,
    maxConnections,
  });
  if (heapLimitBytes > memory.limitBytes) {
    logger.log('warn', `V8's heap limit is above the memory limit: start node with --max-old-space-size=${memory.heapLimitMiB} (the Deployment sets it in NODE_OPTIONS)`, {
      heapLimitBytes,
      limitBytes: memory.limitBytes,
    });
  }
  logger.log('info', 'listening', { port, opsPort, ready: config !== undefined });

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= new Promise<void>((resolve) => {
      shuttingDown = true;
      draining = true;
      for (const stop of stopWatching) stop();
      namespaceWatch?.stop();
      // Unready at once, but still serving while the endpoint removal reaches every apiserver;
      // responses meanwhile ask clients to reconnect (to another replica).
      if ((settings.shutdownDelaySeconds ?? 0) > 0) logger.log('info', 'draining before shutdown', { seconds: settings.shutdownDelaySeconds });
      setTimeout(() => closeServer(resolve), (settings.shutdownDelaySeconds ?? 0) * 1000);
    });
    return shutdownPromise;
  };
  // After the drain: the listener closes, every connection without a request in flight is closed at
  // once (pooled keep-alive connections, the apiserver's included, and those that never sent a byte,
  // which Node's closeIdleConnections() leaves open), and a request in flight is answered with
  // `Connection: close`. The process exits once the last connection is closed, that is once the last
  // answer is written, or at the shutdown timeout.
  const closeServer = (resolve: () => void): void => {
    const deadline = setTimeout(() => {
      logger.log('warn', 'shutdown timeout reached; closing remaining connections', { closed: connections.closeAll() });
    }, settings.shutdownTimeoutSeconds * 1000);
    deadline.unref();
    server.close(() => {
      clearTimeout(deadline);
      connections.stop();
      opsConnections.stop();
      // Probes are answered (unready) until the webhook port has finished.
      opsServer.close(() => {
        logger.log('info', 'shut down');
        resolve();
      });
      opsServer.closeAllConnections();
    });
    logger.log('info', 'shutting down: idle connections closed, finishing in-flight requests', connections.closeIdle());
  };

  return { port, opsPort, connectionsClosed: connections.closed, streamsReset: connections.streamsReset, metrics, budget, logger, namespaces, shutdown };
}
