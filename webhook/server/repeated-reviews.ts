// Reviews that repeat but for their uid. A ReplicaSet's pods reach the webhook as AdmissionReviews that
// are byte for byte the same except request.uid: one template, one owner, one user, and no name yet
// (each is named from its generateName after admission). So are a Job's parallel pods and every replica
// a scale-up or a rollout creates. Such a review gets the answer its first copy got, with its own uid,
// without being decoded, parsed or evaluated: the engine's answer is a function of the review and the
// config alone, and it echoes the uid without reading it.
//
// Exact by construction: the key is the SHA-256 of every byte the engine's answer is made from (the body
// without its managedFields, review-text.ts: the apiserver stamps them with the second they were written,
// so a ReplicaSet's pods created across a second differ there alone) but the uid's value, and a
// review is remembered only when the apiserver's own encoding puts that uid where it is looked for (the
// body starts as Go's encoder writes an AdmissionReview, the parsed request.uid is that value, and the
// value occurs nowhere else in the body). Any other body is answered the long way, as before. Bounded
// like every cache a request can reach (bounded-cache.ts): entries and bytes checked before a value goes
// in, past either bound started over empty, emptied when the config changes.

import * as crypto from 'node:crypto';
import { type ResolvedInjectorConfig, SMALL_BODY_BYTES } from '../config';
import type { InjectionDecision, PodWarning, UnservedRevisionChooser } from '../engine';
import { BoundedCache, stringBytes } from '../engine/bounded-cache';

/** How the apiserver's encoder starts every AdmissionReview (Go's field order: kind, apiVersion, request; a
 * request's first member its uid), per apiVersion. */
const PREFIXES = ['admission.k8s.io/v1', 'admission.k8s.io/v1beta1'].map((apiVersion) => ({
  apiVersion,
  bytes: Buffer.from(`{"kind":"AdmissionReview","apiVersion":"${apiVersion}","request":{"uid":"`),
}));

/** Kubernetes makes uids as UUIDs (36 characters); anything longer is answered the long way. */
const MAX_UID_LENGTH = 128;
const QUOTE = 0x22;

/** Where a body's request.uid value is, as the apiserver writes it. */
export interface UidSpan {
  readonly apiVersion: string;
  /** The value's first byte, and the index just past its last. */
  readonly start: number;
  readonly end: number;
  /** The value: letters, digits and dashes only, so it needs no escaping in JSON. */
  readonly uid: string;
}

function isUidByte(byte: number): boolean {
  return (byte >= 0x30 && byte <= 0x39) || (byte >= 0x41 && byte <= 0x5a) || (byte >= 0x61 && byte <= 0x7a) || byte === 0x2d;
}

/** The span of request.uid's value when `body` starts as the apiserver writes a review and the value is
 * uid-shaped; undefined for anything else (which is then never looked up nor remembered). */
export function requestUidSpan(body: Buffer): UidSpan | undefined {
  for (const prefix of PREFIXES) {
    const start = prefix.bytes.length;
    if (body.length <= start || body.compare(prefix.bytes, 0, start, 0, start) !== 0) continue;
    const limit = Math.min(body.length, start + MAX_UID_LENGTH + 1);
    let end = start;
    while (end < limit && isUidByte(body[end])) end++;
    if (end === start || end >= limit || body[end] !== QUOTE) return undefined;
    return { apiVersion: prefix.apiVersion, start, end, uid: body.toString('latin1', start, end) };
  }
  return undefined;
}

const NAME_MEMBER = Buffer.from(',"name":"');
const OPERATION_MEMBER = Buffer.from(',"operation":"');

/**
 * Whether the request the apiserver wrote names its object (request.name): then it cannot repeat.
 * Reviews repeat only while the object has no name yet: a controller's pods are named from their
 * generateName after admission, so a ReplicaSet's, a Job's or a DaemonSet's pods reach the webhook
 * alike. A named object (a bare pod, a StatefulSet's pod, any UPDATE, a workload) is one of a kind:
 * its key would be computed, looked up and kept for nothing, and a stream of them (a StatefulSet
 * scaled up, a burst of bare pods) would fill the kept answers and start them over, evicting the
 * ReplicaSets' answers that do repeat. So it is neither looked up nor remembered.
 *
 * Go's encoder writes the request's members in its struct's order: uid, kind, resource, subResource,
 * requestKind, requestResource, requestSubResource, name, namespace, operation, ... The members
 * before `name` hold only API group, version, kind and resource names (no quote inside), so the
 * name member, when there is one, is the first `,"name":"` after the uid, ahead of the first
 * `,"operation":"`. Neither answer is ever wrong: a review taken for named is answered the long way,
 * one taken for unnamed is looked up by its exact key, as before. Only the cost differs.
 */
export function requestIsNamed(body: Buffer, span: UidSpan): boolean {
  const operation = body.indexOf(OPERATION_MEMBER, span.end);
  if (operation < 0) return false;
  return body.subarray(span.end, operation).indexOf(NAME_MEMBER) >= 0;
}

/** `crypto.hash` (Node 20.12 and 21.7 on): a digest in one call, without a Hash object and its stream
 * machinery, which cost more than the SHA-256 of a review's few kilobytes does. */
const hashOnce: ((algorithm: string, data: Buffer, encoding: 'binary') => string) | undefined = typeof crypto.hash === 'function' ? crypto.hash : undefined;
/** The bytes a key is the digest of, gathered for `hashOnce` (one call at a time: the caller is
 * synchronous); grown to the largest small body seen, at most SMALL_BODY_BYTES. */
let keyBytes = Buffer.allocUnsafeSlow(8 * 1024);

/** The key of a body: SHA-256 of its bytes before and after the uid's value (the prefix before it is
 * one of two fixed texts that differ within their length, so no two bodies run together). Every
 * review of the first-seen path pays it, so it is computed in one call when Node has one. */
export function reviewKey(body: Buffer, span: UidSpan): string {
  const length = body.length - (span.end - span.start);
  if (hashOnce === undefined || length > SMALL_BODY_BYTES) {
    return crypto.createHash('sha256').update(body.subarray(0, span.start)).update(body.subarray(span.end)).digest('binary');
  }
  if (keyBytes.length < length) keyBytes = Buffer.allocUnsafeSlow(length);
  body.copy(keyBytes, 0, 0, span.start);
  body.copy(keyBytes, span.start, span.end);
  return hashOnce('sha256', keyBytes.subarray(0, length), 'binary');
}

/**
 * Whether the uid JSON.parse kept for `body` (`parsedUid`) is certainly the one at `span`: the same
 * value, found nowhere else in the body. Otherwise a duplicate member or a later "request" could have
 * been the one kept, and a body differing only at the span would not be answered alike: such a body
 * (which no apiserver sends) is never remembered.
 */
export function uidIsSpan(body: Buffer, span: UidSpan, parsedUid: unknown): boolean {
  return parsedUid === span.uid && body.indexOf(span.uid, span.end, 'latin1') === -1;
}

/** What the admission line says of the request, taken from it when it is answered. */
export interface RequestLogFields {
  readonly kind: string | undefined;
  readonly namespace: string | undefined;
  readonly name: string | undefined;
  readonly operation: string | undefined;
  readonly dryRun: boolean;
}

/** What is counted, logged and answered for a review, apart from its uid. */
export interface Answered {
  readonly request: RequestLogFields;
  readonly decisions: readonly InjectionDecision[];
  readonly podWarnings: readonly PodWarning[];
  readonly patched: boolean;
  readonly warnings: readonly string[] | undefined;
  /** The answer's text after the uid, and its length in bytes. */
  readonly tail: { readonly text: string; readonly bytes: number };
  /** Set when the answer is the one for a revision label naming nothing served: who chose. */
  readonly unserved?: UnservedRevisionChooser;
}

/** Bounds: part of the server's own memory (MEMORY_RESERVED_BYTES), whatever requests carry. */
export const REPEATED_REVIEW_BOUNDS = { maxEntries: 512, maxBytes: 1024 * 1024, maxItemBytes: 64 * 1024 } as const;
/** What an entry costs beyond its strings: the Map slot, the entry's objects, the arrays' slots. */
const ENTRY_OVERHEAD_BYTES = 256;

function answeredBytes(key: string, answered: Answered): number {
  let bytes = ENTRY_OVERHEAD_BYTES + stringBytes(key) + stringBytes(answered.tail.text);
  const { kind, namespace, name, operation } = answered.request;
  for (const text of [kind, namespace, name, operation]) if (text !== undefined) bytes += stringBytes(text);
  // Decisions are the engine's own objects, shared: a pointer each. Pod warnings are made per result.
  bytes += 8 * answered.decisions.length;
  for (const warning of answered.podWarnings) bytes += 64 + stringBytes(warning.injection) + stringBytes(warning.message);
  for (const warning of answered.warnings ?? []) bytes += stringBytes(warning);
  return bytes;
}

/** Answers remembered by the key of the review they answered, under one config at a time. */
export class RepeatedReviews {
  private cache = new BoundedCache<string, Answered>(REPEATED_REVIEW_BOUNDS);
  private config: ResolvedInjectorConfig | undefined;
  /** The namespace defaults' generation the kept answers were made under (namespace-defaults.ts). */
  private namespaces = 0;

  /** The answer kept for `key`: to be used only when `answersFor` the config in force. */
  get(key: string): Answered | undefined {
    return this.cache.get(key);
  }

  /** Whether the kept answers were made under `config` and the namespace defaults of `namespaces`
   * (an answer depends on both: a namespace's override defaults are not in the review). */
  answersFor(config: ResolvedInjectorConfig, namespaces = 0): boolean {
    return config === this.config && namespaces === this.namespaces;
  }

  /** Keeps `answered`, the answer under `config` (and namespace defaults `namespaces`) to a review of
   * `key` whose uid was its span's (`uidIsSpan`). Answers kept under another are dropped first. */
  remember(key: string, config: ResolvedInjectorConfig, answered: Answered, namespaces = 0): void {
    if (config !== this.config || namespaces !== this.namespaces) {
      this.cache = new BoundedCache<string, Answered>(REPEATED_REVIEW_BOUNDS);
      this.config = config;
      this.namespaces = namespaces;
    }
    this.cache.set(key, answered, answeredBytes(key, answered));
  }

  /** Entries and bytes held (for tests of the bounds). */
  get size(): { entries: number; bytes: number } {
    return this.cache.size;
  }
}
