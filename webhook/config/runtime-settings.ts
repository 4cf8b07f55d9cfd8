// The webhook's runtime contract: the environment variables the synthesized Deployment sets and the
// server reads, with defaults equal to the Deployment's mount paths and port.
// (Prefixed INJECTOR_ so that no Service's docker-link variables can shadow them.)

export const RUNTIME_ENV = {
  listenPort: 'INJECTOR_LISTEN_PORT',
  tlsDir: 'INJECTOR_TLS_DIR',
  configDir: 'INJECTOR_CONFIG_DIR',
  logLevel: 'INJECTOR_LOG_LEVEL',
  shutdownTimeoutSeconds: 'INJECTOR_SHUTDOWN_TIMEOUT_SECONDS',
  requestTimeoutSeconds: 'INJECTOR_REQUEST_TIMEOUT_SECONDS',
  shutdownDelaySeconds: 'INJECTOR_SHUTDOWN_DELAY_SECONDS',
  /** The container's memory limit in bytes (the Deployment passes `limits.memory` by the downward API). */
  memoryLimitBytes: 'INJECTOR_MEMORY_LIMIT_BYTES',
  /** Most TLS connections open at once on the webhook port; past it, the connection silent or slow the
   * longest is closed to make room for the new one. Default: from the memory limit (`memorySizing`). */
  maxConnections: 'INJECTOR_MAX_CONNECTIONS',
  /** The plain-HTTP port of `/healthz`, `/readyz` and `/metrics`, apart from the webhook port. */
  opsPort: 'INJECTOR_OPS_PORT',
} as const;

/** The webhook server's log levels, most to least verbose. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
/** The least severe level the webhook server writes to stdout (JSON lines): `debug`, `info`, `warn` or `error`. */
export type LogLevel = (typeof LOG_LEVELS)[number];

export const RUNTIME_DEFAULTS = {
  listenPort: 8443,
  tlsDir: '/etc/sidecar-injector/tls',
  configDir: '/etc/sidecar-injector/config',
  logLevel: 'info' as LogLevel,
  /** Below the pod's default terminationGracePeriodSeconds (30) so in-flight requests finish first. */
  shutdownTimeoutSeconds: 20,
  /** A whole request, headers and body; a client stalling longer is cut off. The apiserver gives up at 30 s. */
  requestTimeoutSeconds: 30,
  /** Unready but serving after SIGTERM; the synthesized Deployment sets 5 so endpoint removal propagates. */
  shutdownDelaySeconds: 0,
  /** Probes and metrics (controller-runtime's health port). */
  opsPort: 8081,
  /** Without the variable: the synthesized Deployment's default limit, 192Mi. */
  memoryLimitBytes: 192 * 1024 * 1024,
} as const;

/** Files inside the mounted TLS Secret directory (a `kubernetes.io/tls` Secret's keys). */
export const TLS_FILES = { certificate: 'tls.crt', privateKey: 'tls.key', caCertificate: 'ca.crt' } as const;

const MiB = 1024 * 1024;

/** The webhook's own memory when busy, before any request body: code, V8's young generation (two
 * semi-spaces of `semiSpaceMiB`, at most 2 x 16 MiB), TLS buffers, the idle heap, the log backlog (at most
 * 1 MiB), the kept patch and answer texts and the answers to repeated reviews (at most 1 MiB each). Measured: ~100 MiB peak RSS at
 * saturation with small reviews (BENCHMARKS.md). */
export const MEMORY_RESERVED_BYTES = 96 * MiB;
/** Bytes of memory one held request body byte costs at the peak: the body read into one buffer, its
 * string, and the parsed object (measured ~3x, 4x leaves room for the GC to lag behind). */
export const MEMORY_PER_BODY_BYTE = 4;
/** What JSON.parse makes of a body byte at worst, in budget bytes (MEMORY_PER_BODY_BYTE heap bytes
 * each). Measured on Node 22, heap per body byte with the body's buffer and string: deep
 * `[[[...]]]` 31, `[{},{},...]` 24, `[[],...]` 16, `{"k1":0,...}` (unique keys) 10, `[0,0,...]` 7, a
 * pod's JSON ~5: the 4 assumed per byte holds for pods, not for every shape. */
export const JSON_WORST_BUDGET_PER_BODY_BYTE = 8;
/** Bodies up to this size are charged the worst case at once, unread (so they stay small: SMALL_BODY_BYTES
 * / 8); larger ones are charged by their shape as their bytes arrive (memory-budget.ts `JsonShapeScanner`). */
export const UNSCANNED_BODY_BYTES = 8 * 1024;
/** The smallest budget: one ~3 MiB object still fits; below it a request of that size is shed. */
export const MIN_MEMORY_BUDGET_BYTES = 4 * MiB;
/** What one open TLS connection costs in RSS: the TLS socket, OpenSSL's state and buffers, the HTTP
 * parser. Measured on Node 22.23.2 with 2,000 connections: 28 KiB before the handshake, 54 KiB once
 * handshaken, 61 KiB after a request; rounded up. */
export const CONNECTION_BYTES = 64 * 1024;
/** The share of the memory limit open connections may take; the webhook port's cap is this over
 * `CONNECTION_BYTES` (384 at 192Mi). The apiserver keeps a connection per concurrent request, tens. */
export const CONNECTION_SHARE = 1 / 8;
/** Bodies up to this size are "small" (every recorded review is under 10 KiB). */
export const SMALL_BODY_BYTES = 64 * 1024;

/** How the webhook divides its container's memory limit. */
export interface MemorySizing {
  /** The container memory limit this was derived from. */
  readonly limitBytes: number;
  /** Request body bytes held at once (being read plus being processed); past it, 429. */
  readonly budgetBytes: number;
  /** Of the budget, what bodies over `SMALL_BODY_BYTES` may hold together: the rest is kept for small
   * reviews, so a flood of large bodies never sheds ordinary pods. */
  readonly largeBodyBytes: number;
  /** V8's old-generation limit (`--max-old-space-size`), MiB: half the limit, so V8 collects before
   * the kubelet's OOM killer would. */
  readonly heapLimitMiB: number;
  /** V8's largest semi-space (`--max-semi-space-size`), MiB: the limit / 24, from 1 to 16 (V8's own
   * default, 16). Left to itself V8 grows the young generation to 2 x 16 MiB whenever enough objects
   * survive scavenges (answers batched per event-loop turn keep a turn's requests alive together) and
   * shrinks it again later: a step of ~13-16 MiB of RSS long after start. Capped, it reaches its size
   * within seconds of load and stays there. */
  readonly semiSpaceMiB: number;
  /** Connections open at once on the webhook port: `CONNECTION_SHARE` of the limit at `CONNECTION_BYTES`
   * each. At the cap a new connection still gets in: the one silent or slow the longest makes room. */
  readonly maxConnections: number;
}

/**
 * The sizing rule: `connections = limit / 8 / 64 KiB`, `budget = max(4 MiB, (limit - 96 MiB -
 * connections * 64 KiB) / 4)`, three quarters of it for large bodies; V8's heap limit is half the
 * limit, its semi-spaces the limit / 24. For the default 192Mi: 384 connections (24 MiB), an 18 MiB
 * budget (13.5 MiB for bodies over 64 KiB, charged by their JSON shape), a 96 MiB heap and 8 MiB
 * semi-spaces.
 */
export function memorySizing(limitBytes: number): MemorySizing {
  const maxConnections = Math.max(16, Math.floor((limitBytes * CONNECTION_SHARE) / CONNECTION_BYTES));
  const budgetBytes = Math.max(MIN_MEMORY_BUDGET_BYTES, Math.floor((limitBytes - MEMORY_RESERVED_BYTES - maxConnections * CONNECTION_BYTES) / MEMORY_PER_BODY_BYTE));
  return {
    limitBytes,
    budgetBytes,
    largeBodyBytes: Math.floor((budgetBytes * 3) / 4),
    heapLimitMiB: Math.max(16, Math.floor(limitBytes / MiB / 2)),
    semiSpaceMiB: Math.min(16, Math.max(1, Math.floor(limitBytes / MiB / 24))),
    maxConnections,
  };
}

const QUANTITY_SUFFIX: Record<string, number> = {
  '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6,
};

/**
 * A Kubernetes memory quantity ("192Mi", "0.5Gi", "200M", "1e9") in whole bytes, rounded up as the
 * kubelet's downward API does; undefined when it is not a quantity.
 */
export function memoryQuantityBytes(quantity: string): number | undefined {
  const match = /^([+]?[0-9]+(?:\.[0-9]*)?|[+]?\.[0-9]+)(?:([eE][+-]?[0-9]+)|(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E))?$/.exec(quantity.trim());
  if (!match) return undefined;
  const number = Number(match[1]) * (match[2] ? Number('1' + match[2]) : QUANTITY_SUFFIX[match[3] ?? '']);
  return Number.isFinite(number) ? Math.ceil(number) : undefined;
}
