// The HTTPS server: Express routes around the admission handler, TLS >= 1.2, live reload of the
// mounted config and certificate, and a graceful shutdown that finishes what is in flight.

import type { IncomingMessage, ServerResponse } from 'node:http';
import * as https from 'node:https';
import type { Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import * as v8 from 'node:v8';
import express from 'express';
import { LogLevel, MemorySizing, RUNTIME_DEFAULTS, ResolvedInjectorConfig, memorySizing } from '../config';
import { createAdmissionHandler } from './admission-handler';
import { Logger, createLogger } from './logger';
import { MemoryBudget } from './memory-budget';
import { WebhookMetrics } from './metrics';
import { readInjectorConfig, readTlsMaterial, watchDirectory } from './mounted-files';

export interface WebhookServerSettings {
  readonly listenPort: number;
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
  /** Most connections open at once. @default 512 */
  readonly maxConnections?: number;
}

export interface RunningWebhookServer {
  readonly port: number;
  readonly metrics: WebhookMetrics;
  readonly budget: MemoryBudget;
  readonly logger: Logger;
  /** Stops accepting, finishes in-flight requests, closes keep-alive connections. */
  shutdown(): Promise<void>;
}

/** Node's client error codes, answered as Node itself would rather than all as 400. */
const CLIENT_ERROR_STATUS: Record<string, string> = {
  ERR_HTTP_REQUEST_TIMEOUT: '408 Request Timeout',
  HPE_HEADER_OVERFLOW: '431 Request Header Fields Too Large',
};

/** Above the apiserver's 90 s idle timeout, so it is always the apiserver that closes an idle connection. */
const KEEP_ALIVE_TIMEOUT_MS = 120_000;
/** Request line and headers: the apiserver and the kubelet send a few hundred bytes; more is refused with 431. */
export const MAX_HEADER_BYTES = 8 * 1024;

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
  const maxConnections = settings.maxConnections ?? RUNTIME_DEFAULTS.maxConnections;
  let config: ResolvedInjectorConfig | undefined;
  let configError: string | undefined;
  let configText = '';
  let shuttingDown = false;
  let draining = false;

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
      metrics.countReload('config', 'success');
      logger.log('info', first ? 'config loaded' : 'config reloaded', { injections: next.injections.map((i) => i.name), enabled: next.enabled });
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
  loadConfig();

  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  app.set('query parser', false);
  const handleAdmission = createAdmissionHandler({ config: () => config, metrics, logger, budget });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok\n');
  });
  app.get('/readyz', (_req, res) => {
    const ready = config !== undefined && !shuttingDown;
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

  // POST /mutate, the hot path, goes straight to its handler; Express routes the rest. Every request
  // reaches this listener once its headers are in, before any body is read, so a probe waits only for
  // the work already running on the event loop, never for queued bodies.
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    if (draining) res.setHeader('Connection', 'close');
    const url = req.url ?? '';
    if (req.method === 'POST' && (url === '/mutate' || url.startsWith('/mutate?'))) handleAdmission(req, res);
    else app(req, res);
  };

  const server = https.createServer(
    {
      cert: tls.cert,
      key: tls.key,
      ...TLS_PROFILE,
      requestTimeout: settings.requestTimeoutSeconds * 1000,
      headersTimeout: Math.min(10_000, settings.requestTimeoutSeconds * 1000),
      keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
      // How often stalled requests are found and cut off (Node's default is 30 s).
      connectionsCheckingInterval: 1_000,
      maxHeaderSize: MAX_HEADER_BYTES,
    },
    listener,
  );
  // Past the cap, Node refuses new connections at accept. Close to it, idle keep-alive connections
  // are closed first (their clients reconnect when they need to), so a kubelet probe still gets in
  // unless every connection is busy.
  server.maxConnections = maxConnections;
  let openConnections = 0;
  let lastIdleSweep = 0;
  server.on('connection', (socket: Socket) => {
    openConnections++;
    socket.once('close', () => openConnections--);
    if (openConnections >= maxConnections * 0.9 && performance.now() - lastIdleSweep > 100) {
      lastIdleSweep = performance.now();
      logger.log('warn', 'near the connection cap: closing idle connections', { open: openConnections, max: maxConnections });
      server.closeIdleConnections();
      closeSilentConnections(server.headersTimeout);
    }
  });
  server.on('tlsClientError', (error) => logger.log('debug', 'TLS handshake failed', { error: error.message }));
  // A connection that has not sent a byte yet is an idle connection in its client's pool: Go's
  // http.Transport, the apiserver's, keeps a connection it dialed for a request that another
  // connection served meanwhile. Node times such a connection out with the header timeout and
  // writes it an unsolicited 408, which a client that picks the connection at that moment reads as
  // its admission's answer (a failed admission; seen once in 300,000 in the soak). So a silent
  // connection is left open past the header timeout, idle like a keep-alive one, and closed quietly
  // after KEEP_ALIVE_TIMEOUT_MS, later than the apiserver's 90 s, so the apiserver closes it first.
  // A connection that has sent part of a request is still answered 408 and cut off.
  // Near the connection cap they go first, once past the header timeout (Node's idle sweep does not
  // count them as idle).
  // "Silent" is read from the TLS socket's count of cleartext bytes received. Never from a 'data'
  // listener on the socket: adding one makes Node's HTTP server stop parsing the socket natively and
  // feed it through JavaScript stream events instead, for the connection's whole life (about 6% more
  // CPU per admission on a keep-alive connection; a test in test/server/http.test.ts counts the
  // socket's 'data' events to catch it).
  const connectedAt = new Map<TLSSocket, number>();
  const isSilent = (socket: Socket): boolean => socket.bytesRead === 0;
  server.on('secureConnection', (socket: TLSSocket) => {
    connectedAt.set(socket, performance.now());
    const idleLimit = setTimeout(() => {
      if (isSilent(socket)) socket.destroy();
    }, KEEP_ALIVE_TIMEOUT_MS);
    idleLimit.unref();
    socket.once('close', () => {
      clearTimeout(idleLimit);
      connectedAt.delete(socket);
    });
  });
  const closeSilentConnections = (olderThanMs: number): void => {
    const now = performance.now();
    for (const [socket, since] of connectedAt) if (now - since > olderThanMs && isSilent(socket)) socket.destroy();
  };
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT' && socket instanceof TLSSocket && connectedAt.has(socket) && isSilent(socket)) {
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
      server.setSecureContext({ cert: next.cert, key: next.key, ...TLS_PROFILE });
      tlsText = next.cert + next.key;
      metrics.countReload('certificate', 'success');
      logger.log('info', 'certificate reloaded');
    } catch (error) {
      // Half-written files during a swap, or a bad certificate: keep serving the current one.
      metrics.countReload('certificate', 'failure');
      logger.log('error', 'certificate reload failed; the current certificate keeps serving', { error: (error as Error).message });
    }
  };
  const stopWatching = [watchDirectory(settings.configDir, loadConfig), watchDirectory(settings.tlsDir, reloadTls)];

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(settings.listenPort, settings.listenHost, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : settings.listenPort;
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
  logger.log('info', 'listening', { port, ready: config !== undefined });

  let shutdownPromise: Promise<void> | undefined;
  const shutdown = (): Promise<void> => {
    shutdownPromise ??= new Promise<void>((resolve) => {
      shuttingDown = true;
      draining = true;
      for (const stop of stopWatching) stop();
      // Unready at once, but still serving while the endpoint removal reaches every apiserver;
      // responses meanwhile ask clients to reconnect (to another replica).
      if ((settings.shutdownDelaySeconds ?? 0) > 0) logger.log('info', 'draining before shutdown', { seconds: settings.shutdownDelaySeconds });
      setTimeout(() => closeServer(resolve), (settings.shutdownDelaySeconds ?? 0) * 1000);
    });
    return shutdownPromise;
  };
  const closeServer = (resolve: () => void): void => {
    logger.log('info', 'shutting down: finishing in-flight requests');
    const deadline = setTimeout(() => {
      logger.log('warn', 'shutdown timeout reached; closing remaining connections');
      server.closeAllConnections();
    }, settings.shutdownTimeoutSeconds * 1000);
    deadline.unref();
    // Keep-alive sockets become idle as their in-flight response completes; close them as they do.
    const closeIdle = setInterval(() => server.closeIdleConnections(), 50);
    server.close(() => {
      clearTimeout(deadline);
      clearInterval(closeIdle);
      logger.log('info', 'shut down');
      resolve();
    });
    server.closeIdleConnections();
  };

  return { port, metrics, budget, logger, shutdown };
}
