// The hash of an injection as configured, recorded in each pod it is applied to (the annotation
// `<prefix>/injection-hashes`, beside the status annotation), so that whether a pod's sidecars are the
// ones configured now can be told from the pod and the config alone. The construct computes it at synth
// (the admission policies carry it as a literal) and the webhook when it loads the config: the same
// function on the same config.json gives the same text.

import { createHash } from 'node:crypto';
import type { Injection } from './injector-config';

/** Hex digits kept of the sha256: 48 bits tell versions of one injection apart, and stay short. */
export const INJECTION_HASH_LENGTH = 12;

/** The fields that decide what an injection puts into a pod; `name`, `trigger`, `targetKinds` and
 * `podSecurity` decide where it goes or how it is checked, so changing them restarts nothing. */
const POD_SHAPING_FIELDS = [
  'containers', 'initContainers', 'volumes', 'volumeMounts', 'env', 'imagePullSecrets', 'labels', 'annotations', 'merges',
  'qos', 'podResources', 'nativeSidecars', 'nativeSidecarPosition', 'readinessGate',
] as const;

/** Values equal to what leaving the field out means: left out of the hash, so writing a default changes nothing. */
const DEFAULTS: Partial<Record<(typeof POD_SHAPING_FIELDS)[number], string | boolean>> = { qos: 'warn', podResources: 'add', nativeSidecars: 'never', nativeSidecarPosition: 'last', readinessGate: false };

/** JSON with every object's keys sorted, so the order a config was written in does not matter. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record).filter((key) => record[key] !== undefined).sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`).join(',')}}`;
}

/** What the hash covers: the pod-shaping fields as written (placeholders unfilled), defaults and empty lists left out. */
export function hashedDefinition(injection: Injection): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const record = injection as unknown as Record<string, unknown>;
  const nativeNever = (injection.nativeSidecars ?? 'never') === 'never';
  for (const field of POD_SHAPING_FIELDS) {
    const value = record[field];
    if (value === undefined || value === DEFAULTS[field]) continue;
    if (field === 'nativeSidecarPosition' && nativeNever) continue; // no native sidecars: the position means nothing
    if (Array.isArray(value) && value.length === 0) continue;
    if (typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).length === 0) continue;
    out[field] = value;
  }
  return out;
}

/** The short hash of an injection as configured: 12 hex digits of the sha256 of its canonical definition. */
export function injectionHash(injection: Injection): string {
  return createHash('sha256').update(canonicalJson(hashedDefinition(injection))).digest('hex').slice(0, INJECTION_HASH_LENGTH);
}

/** `name=hash`: one entry of the hashes annotation. */
export function injectionHashEntry(injection: Injection): string {
  return `${injection.name}=${injectionHash(injection)}`;
}

/** The longest hashes annotation read: the annotation comes with the pod, from whoever wrote it. */
export const MAX_HASHES_ANNOTATION_LENGTH = 8192;
/** The most entries read from one hashes annotation. */
export const MAX_HASHES_ENTRIES = 64;

const HASH_PATTERN = new RegExp(`^[0-9a-f]{${INJECTION_HASH_LENGTH}}$`);

/**
 * The hashes annotation read back: injection name to hash, the last entry winning (a reinvocation
 * appends). Bounded: a value longer than MAX_HASHES_ANNOTATION_LENGTH, or with more than
 * MAX_HASHES_ENTRIES entries, is not read (undefined: the versions are unknown), and entries that are
 * not `name=<12 hex digits>` are skipped.
 */
export function parseInjectionHashes(value: string | undefined): Map<string, string> | undefined {
  if (value === undefined || value.length > MAX_HASHES_ANNOTATION_LENGTH) return undefined;
  const hashes = new Map<string, string>();
  const entries = value.split(',', MAX_HASHES_ENTRIES + 1);
  if (entries.length > MAX_HASHES_ENTRIES) return undefined;
  for (const entry of entries) {
    const equals = entry.lastIndexOf('=');
    if (equals <= 0) continue;
    const name = entry.slice(0, equals).trim();
    const hash = entry.slice(equals + 1).trim();
    if (name !== '' && HASH_PATTERN.test(hash)) hashes.set(name, hash);
  }
  return hashes;
}
