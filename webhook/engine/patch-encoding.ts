// The JSONPatch's wire form: base64 of its JSON text, as the AdmissionResponse carries it.
//
// Nearly every patch is one seen before: the same injections added to pods of the same shape give the
// same operations, whose values are the config's own objects. So a config's patches are kept, by
// their operations, in a bounded cache; a patch seen before costs a few map lookups instead of its
// text and its base64 (two strings of a kilobyte or more on every admission otherwise).
//
// A value can be part of a cache key by identity only if it never changes and means the same on every
// request: the config's objects (marked by `markStable` when evaluate() first sees a config; the config
// is never changed in place, a reload brings new objects) and the wrappers made of them here, frozen.
// A patch with any other object (a templated injection's rendered container) is encoded every time.

import { TwoLevelCache, keyBytes } from './bounded-cache';

/** Objects whose identity stands for their content: a config's, and wrappers of those. */
const stable = new WeakSet<object>();
/** `[item]` by item: the list a patch creates around a config's container or volume. */
const singletonLists = new WeakMap<object, readonly unknown[]>();

/** Marks `value` and every object inside it as stable (a config's, never changed in place). */
export function markStable(value: unknown): void {
  if (typeof value !== 'object' || value === null || stable.has(value)) return;
  stable.add(value);
  for (const child of Array.isArray(value) ? value : Object.values(value)) markStable(child);
}

/** `[item]`: for a stable item the same list every time (stable itself), else a new one. */
export function singletonList(item: unknown): readonly unknown[] {
  if (typeof item !== 'object' || item === null || !stable.has(item)) return [item];
  let list = singletonLists.get(item);
  if (list === undefined) {
    // Frozen: it is a cache key, so nobody who reads the patch may change it.
    list = Object.freeze([item]);
    stable.add(list);
    singletonLists.set(item, list);
  }
  return list;
}

/** A copy of a stable `source` with `extra` fields, made once per source and stable itself (a
 * native sidecar: the config's container with `restartPolicy: Always`). Any other source gets a
 * fresh copy each time. */
const extendedCopies = new WeakMap<object, Map<string, object>>();
export function stableCopy<T extends object>(source: T, key: string, extra: Partial<T>): T {
  if (!stable.has(source)) return { ...source, ...extra };
  let byKey = extendedCopies.get(source);
  if (byKey === undefined) extendedCopies.set(source, (byKey = new Map()));
  let copy = byKey.get(key) as T | undefined;
  if (copy === undefined) {
    copy = Object.freeze({ ...source, ...extra });
    markStable(copy);
    byKey.set(key, copy);
  }
  return copy;
}

/** `{ [key]: value }` for a primitive or stable value: the same object each time, stable itself (the
 * label or annotation map a patch creates on a pod without one). A value may come from the request (a
 * templated label, the status annotation's names), so the cache is bounded in bytes as well as entries. */
const records = new TwoLevelCache<string, unknown, object>({ maxEntries: 1024, maxBytes: 256 * 1024 });
/** Bytes of a one-member record beyond its key and value. */
const RECORD_BYTES = 64;
export function stableRecord(key: string, value: unknown): Record<string, unknown> {
  if (typeof value === 'object' && value !== null && !stable.has(value)) return { [key]: value };
  let record = records.get(key, value);
  if (record === undefined) {
    record = Object.freeze({ [key]: value });
    stable.add(record);
    records.set(key, value, record, keyBytes(key) + keyBytes(value) + RECORD_BYTES);
  }
  return record as Record<string, unknown>;
}

/** One operation of a patch, as the encoder reads it. */
export interface EncodedOperation {
  readonly op: string;
  readonly path: string;
  readonly value: unknown;
}

/** JSON text of stable values, made once each. */
const valueTextCache = new WeakMap<object, string>();

function valueText(value: unknown): string {
  if (typeof value !== 'object' || value === null || !stable.has(value)) return JSON.stringify(value);
  let text = valueTextCache.get(value);
  if (text === undefined) valueTextCache.set(value, (text = JSON.stringify(value)));
  return text;
}

/** `JSON.stringify(operations)`, with each value's text from the cache above. */
export function patchText(operations: readonly EncodedOperation[]): string {
  let text = '[';
  for (let i = 0; i < operations.length; i++) {
    const operation = operations[i];
    text += `${i === 0 ? '' : ','}{"op":"${operation.op}","path":${JSON.stringify(operation.path)},"value":${valueText(operation.value)}}`;
  }
  return text + ']';
}

/** Reused for encoding patches, so base64 costs no buffer per request; a larger patch gets its own. */
const scratch = Buffer.allocUnsafe(64 * 1024);

/** Base64 of the patch text through the reused buffer. */
function encodeUncached(operations: readonly EncodedOperation[]): string {
  const text = patchText(operations);
  if (text.length * 3 > scratch.length) return Buffer.from(text).toString('base64');
  const length = scratch.write(text, 0);
  return scratch.toString('base64', 0, length);
}

/** Bounds of one cache: nodes of the operation tree, and bytes of its keys (paths and primitive
 * values, which may come from the request) and of the kept base64. Both are checked before anything
 * is added; past either the cache starts over empty (a workload of ever-new patches, such as rendered
 * per-pod values, pays only that). */
export const PATCH_CACHE_MAX_NODES = 4096;
export const PATCH_CACHE_MAX_BYTES = 1024 * 1024;
/** Patches larger than this are encoded every time, not kept. */
const MAX_CACHED_PATCH_BYTES = 64 * 1024;
/** Bytes of a tree node beyond its keys: the node and its share of the two maps. */
const NODE_BYTES = 160;

interface PatchNode {
  /** The base64 of the patch whose operations lead here. */
  base64?: string;
  /** The next operation: by path, then by value (a primitive or a stable object). */
  next?: Map<string, Map<unknown, PatchNode>>;
}

/** Base64 patches of one config, by their operations. */
export class PatchEncoder {
  private root: PatchNode = {};
  private nodes = 0;
  private bytes = 0;

  /** Base64 of `JSON.stringify(operations)`. */
  encode(operations: readonly EncodedOperation[]): string {
    // Looked up without adding anything: a patch that is not kept leaves no node behind.
    let node: PatchNode | undefined = this.root;
    for (const operation of operations) {
      const key = cacheKey(operation.value);
      if (key === undefined || operation.op !== 'add') return encodeUncached(operations);
      node = node.next?.get(operation.path)?.get(key);
      if (node === undefined) break;
    }
    if (node?.base64 !== undefined) return node.base64;
    const base64 = encodeUncached(operations);
    if (base64.length > MAX_CACHED_PATCH_BYTES) return base64;
    // What keeping it costs, counted as if every node were new (an upper bound), before adding any.
    let cost = base64.length;
    for (const operation of operations) cost += NODE_BYTES + keyBytes(operation.path) + keyBytes(operation.value);
    if (cost > MAX_CACHED_PATCH_BYTES) return base64;
    if (this.nodes + operations.length > PATCH_CACHE_MAX_NODES || this.bytes + cost > PATCH_CACHE_MAX_BYTES) {
      this.root = {};
      this.nodes = 0;
      this.bytes = 0;
    }
    let at = this.root;
    for (const operation of operations) {
      at.next ??= new Map();
      let byValue = at.next.get(operation.path);
      if (byValue === undefined) at.next.set(operation.path, (byValue = new Map()));
      let child = byValue.get(operation.value);
      if (child === undefined) {
        byValue.set(operation.value, (child = {}));
        this.nodes++;
      }
      at = child;
    }
    at.base64 = base64;
    this.bytes += cost;
    return base64;
  }

  /** Nodes and bytes held (for tests of the bounds). */
  get size(): { nodes: number; bytes: number } {
    return { nodes: this.nodes, bytes: this.bytes };
  }
}

/** A value's part of a cache key: a primitive or a stable object itself; undefined for any other. */
function cacheKey(value: unknown): unknown {
  return typeof value !== 'object' || value === null || stable.has(value) ? value : undefined;
}
