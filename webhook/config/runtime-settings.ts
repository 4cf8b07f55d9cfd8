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
} as const;

export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
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
} as const;

/** Files inside the mounted TLS Secret directory (a `kubernetes.io/tls` Secret's keys). */
export const TLS_FILES = { certificate: 'tls.crt', privateKey: 'tls.key', caCertificate: 'ca.crt' } as const;
