// Namespace defaults for overrides (`fromNamespace`): the webhook sees no namespace in an
// AdmissionReview, so it keeps the few annotation values overrides read, per namespace, from a list
// and watch of namespaces (namespace-watch.ts). Only the keys the config offers are kept, each value
// cut at 65 characters (longer than any override accepts, so a long value is still refused, and
// named, by the engine), and the table is bounded in bytes and entries, checked before inserting.
// Past a bound, or before the first list, the table says it does not know: the engine then applies
// no namespace default and the answer warns, never a silent guess.

import { MAX_OVERRIDE_VALUE_LENGTH } from '../config';

/** The table's bounds: a few hundred KiB whatever the cluster holds. */
export const NAMESPACE_DEFAULTS_BOUNDS = { maxEntries: 10_000, maxBytes: 1024 * 1024 } as const;
/** What an entry costs beyond its strings: the Map slot and the record object. */
const ENTRY_OVERHEAD_BYTES = 96;
const stringBytes = (text: string) => 2 * text.length + 16;

/** What the engine is told about a namespace: its kept values, or why they are not known. */
export type NamespaceDefaults = { readonly annotations: Readonly<Record<string, string>> } | { readonly unknown: string };

const NONE: Readonly<Record<string, string>> = Object.freeze(Object.create(null));

export class NamespaceDefaultsTable {
  private entries = new Map<string, { values: Record<string, string>; bytes: number }>();
  private bytes = 0;
  private keys: ReadonlySet<string> = new Set();
  /** Set by the watch once a full list is in; cleared when the keys change (a relist follows). */
  private synced = false;
  /** Namespaces whose values did not fit: until a relist finds room, misses are unknown, not empty. */
  private overflowed = 0;
  /** Bumped on every change of what the engine could be told: answers kept under another are stale. */
  generation = 0;

  constructor(private readonly bounds: { maxEntries: number; maxBytes: number } = NAMESPACE_DEFAULTS_BOUNDS) {}

  /** The annotation keys to keep (the config's `fromNamespace` overrides). Different keys empty the table. */
  setKeys(keys: ReadonlySet<string>): boolean {
    if (keys.size === this.keys.size && [...keys].every((key) => this.keys.has(key))) return false;
    this.keys = new Set(keys);
    this.clear();
    return true;
  }

  /** Whether any override reads namespaces: otherwise admissions need no lookup at all. */
  get active(): boolean {
    return this.keys.size > 0;
  }

  /** Empties the table: lookups say unknown until the next `replaceAll`. */
  clear(): void {
    this.entries = new Map();
    this.bytes = 0;
    this.overflowed = 0;
    this.synced = false;
    this.generation++;
  }

  /**
   * A full list: every namespace's annotations (only the kept keys are read). The generation moves only
   * when the list tells the engine something new: a relist after a watch error that finds the same
   * values keeps the answers made under them.
   */
  replaceAll(namespaces: Iterable<{ name: string; annotations: unknown }>): void {
    const before = { entries: this.entries, overflowed: this.overflowed, synced: this.synced };
    this.entries = new Map();
    this.bytes = 0;
    this.overflowed = 0;
    for (const { name, annotations } of namespaces) this.put(name, annotations);
    this.synced = true;
    if (!before.synced || before.overflowed > 0 || this.overflowed > 0 || !sameEntries(before.entries, this.entries)) this.generation++;
  }

  /** A namespace added or changed (a watch event). */
  upsert(name: string, annotations: unknown): void {
    if (this.put(name, annotations)) this.generation++;
  }

  /** A namespace deleted. */
  delete(name: string): void {
    const entry = this.entries.get(name);
    if (!entry) return;
    this.entries.delete(name);
    this.bytes -= entry.bytes;
    this.generation++;
  }

  /** What to tell the engine for a request in `namespace`. */
  lookup(namespace: string | undefined): NamespaceDefaults {
    if (this.keys.size === 0) return { annotations: NONE };
    if (!this.synced) return { unknown: 'the webhook has not listed the namespaces yet' };
    const entry = namespace === undefined ? undefined : this.entries.get(namespace);
    if (entry) return { annotations: entry.values };
    if (this.overflowed > 0) return { unknown: `the webhook's namespace table is full (${this.overflowed} namespaces not kept)` };
    return { annotations: NONE };
  }

  /** Entries, bytes held, and namespaces not kept for the bounds (for metrics and tests). */
  get size(): { entries: number; bytes: number; overflowed: number; synced: boolean } {
    return { entries: this.entries.size, bytes: this.bytes, overflowed: this.overflowed, synced: this.synced };
  }

  /** Only the offered keys of `annotations`, values cut (so a list holds no more of a namespace than the table will). */
  offeredOf(annotations: unknown): Record<string, string> {
    const kept: Record<string, string> = Object.create(null);
    if (annotations === null || typeof annotations !== 'object' || Array.isArray(annotations)) return kept;
    for (const key of this.keys) {
      const value = (annotations as Record<string, unknown>)[key];
      if (typeof value === 'string' && Object.prototype.hasOwnProperty.call(annotations, key)) kept[key] = value.length > MAX_OVERRIDE_VALUE_LENGTH + 1 ? value.slice(0, MAX_OVERRIDE_VALUE_LENGTH + 1) : value;
    }
    return kept;
  }

  /** Keeps `name`'s wanted values; returns whether what is kept changed. */
  private put(name: string, annotations: unknown): boolean {
    const values = this.offeredOf(annotations);
    let bytes = ENTRY_OVERHEAD_BYTES + stringBytes(name);
    for (const [key, value] of Object.entries(values)) bytes += stringBytes(key) + stringBytes(value);
    const before = this.entries.get(name);
    const empty = Object.keys(values).length === 0;
    if (before) {
      if (!empty && sameValues(before.values, values)) return false;
      this.entries.delete(name);
      this.bytes -= before.bytes;
    }
    if (empty) return before !== undefined;
    // Checked before inserting: past either bound the values are not kept, and misses become unknown.
    if (this.entries.size + 1 > this.bounds.maxEntries || this.bytes + bytes > this.bounds.maxBytes) {
      this.overflowed++;
      return true;
    }
    this.entries.set(name, { values: Object.freeze(values) as Record<string, string>, bytes });
    this.bytes += bytes;
    return true;
  }
}

function sameEntries(a: ReadonlyMap<string, { values: Record<string, string> }>, b: ReadonlyMap<string, { values: Record<string, string> }>): boolean {
  if (a.size !== b.size) return false;
  for (const [name, entry] of a) {
    const other = b.get(name);
    if (!other || !sameValues(entry.values, other.values)) return false;
  }
  return true;
}

function sameValues(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => a[key] === b[key]);
}
