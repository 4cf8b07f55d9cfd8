import { LOG_LEVELS, LogLevel, RUNTIME_DEFAULTS, RUNTIME_ENV, memorySizing } from '../config';
import type { WebhookServerSettings } from './webhook-server';

/** Reads the runtime contract from the environment; throws naming the variable when a value is bad. */
export function settingsFromEnvironment(env: NodeJS.ProcessEnv): WebhookServerSettings {
  const number = (name: string, fallback: number, min: number, max: number): number => {
    const raw = env[name];
    if (raw === undefined || raw === '') return fallback;
    const value = Number(raw);
    if (!Number.isInteger(value) || value < min || value > max) throw new Error(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
    return value;
  };
  const logLevel = (env[RUNTIME_ENV.logLevel] || RUNTIME_DEFAULTS.logLevel) as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new Error(`${RUNTIME_ENV.logLevel} must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  // The downward API gives limits.memory in bytes (or the node's allocatable memory without a limit).
  const memory = memorySizing(number(RUNTIME_ENV.memoryLimitBytes, RUNTIME_DEFAULTS.memoryLimitBytes, 32 * 1024 * 1024, Number.MAX_SAFE_INTEGER));
  return {
    listenPort: number(RUNTIME_ENV.listenPort, RUNTIME_DEFAULTS.listenPort, 0, 65535),
    opsPort: number(RUNTIME_ENV.opsPort, RUNTIME_DEFAULTS.opsPort, 0, 65535),
    tlsDir: env[RUNTIME_ENV.tlsDir] || RUNTIME_DEFAULTS.tlsDir,
    configDir: env[RUNTIME_ENV.configDir] || RUNTIME_DEFAULTS.configDir,
    logLevel,
    shutdownTimeoutSeconds: number(RUNTIME_ENV.shutdownTimeoutSeconds, RUNTIME_DEFAULTS.shutdownTimeoutSeconds, 0, 3600),
    requestTimeoutSeconds: number(RUNTIME_ENV.requestTimeoutSeconds, RUNTIME_DEFAULTS.requestTimeoutSeconds, 1, 3600),
    shutdownDelaySeconds: number(RUNTIME_ENV.shutdownDelaySeconds, RUNTIME_DEFAULTS.shutdownDelaySeconds, 0, 600),
    memory,
    // Unset: from the memory limit (memory.maxConnections).
    maxConnections: number(RUNTIME_ENV.maxConnections, memory.maxConnections, 1, 1_000_000),
  };
}
