// Caches of made-once values that a request can reach: bounded in entries and in bytes, both checked
// before a value goes in, and past either bound started over empty, so a workload of ever-new keys
// costs only the remaking. A value larger than `maxItemBytes` is never kept.

/** Heap bytes of a string, at most: two per UTF-16 unit (V8 keeps one-byte strings in one) plus its header. */
export function stringBytes(text: string): number {
  return 16 + 2 * text.length;
}

/** Heap bytes of a key or value: a string's, a pointer's for anything else (numbers, booleans, and
 * objects kept alive elsewhere, such as a config's). */
export function keyBytes(key: unknown): number {
  return typeof key === 'string' ? stringBytes(key) : 8;
}

export interface CacheBounds {
  readonly maxEntries: number;
  /** Bytes of keys and values together, as the caller counts them (`stringBytes`, `keyBytes`). */
  readonly maxBytes: number;
  /** The most one entry may cost; a larger one is returned to the caller and not kept.
   * @default maxBytes / 16 */
  readonly maxItemBytes?: number;
}

/** Bounds and the running count of one cache. */
class Budget {
  entries = 0;
  bytes = 0;
  readonly maxItemBytes: number;

  constructor(readonly bounds: CacheBounds) {
    this.maxItemBytes = bounds.maxItemBytes ?? Math.floor(bounds.maxBytes / 16);
  }

  /** Whether an entry of `bytes` may be kept; when the cache is full, `clear` is called first. */
  admit(bytes: number, clear: () => void): boolean {
    if (bytes > this.maxItemBytes) return false;
    if (this.entries >= this.bounds.maxEntries || this.bytes + bytes > this.bounds.maxBytes) {
      clear();
      this.entries = 0;
      this.bytes = 0;
    }
    this.entries++;
    this.bytes += bytes;
    return true;
  }
}

/** A map from a key to a made-once value, bounded in entries and bytes. */
export class BoundedCache<K, V> {
  private readonly map = new Map<K, V>();
  private readonly budget: Budget;

  constructor(bounds: CacheBounds) {
    this.budget = new Budget(bounds);
  }

  get(key: K): V | undefined {
    return this.map.get(key);
  }

  /** Keeps `value` for `key` when `bytes` (the key's and the value's) fits the bounds. */
  set(key: K, value: V, bytes: number): void {
    if (this.budget.admit(bytes, () => this.map.clear())) this.map.set(key, value);
  }

  /** Entries and bytes held (for tests of the bounds). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.budget.entries, bytes: this.budget.bytes };
  }
}

/** A map of maps, bounded together in entries and bytes. */
export class TwoLevelCache<A, B, V> {
  private readonly outer = new Map<A, Map<B, V>>();
  private readonly budget: Budget;

  constructor(bounds: CacheBounds) {
    this.budget = new Budget(bounds);
  }

  get(a: A, b: B): V | undefined {
    return this.outer.get(a)?.get(b);
  }

  /** Keeps `value` for `a` and `b` when `bytes` (the keys' and the value's, a new inner map counted
   * by the caller as part of its first entry) fits the bounds. */
  set(a: A, b: B, value: V, bytes: number): void {
    if (!this.budget.admit(bytes, () => this.outer.clear())) return;
    let inner = this.outer.get(a);
    if (inner === undefined) this.outer.set(a, (inner = new Map()));
    inner.set(b, value);
  }

  /** Entries and bytes held (for tests of the bounds). */
  get size(): { entries: number; bytes: number } {
    return { entries: this.budget.entries, bytes: this.budget.bytes };
  }
}
