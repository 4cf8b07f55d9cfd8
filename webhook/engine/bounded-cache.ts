// A bounded map of maps for the engine's per-request caches of made-once values: past its bound it
// starts over empty, so a workload of ever-new keys costs only the remaking.

export class TwoLevelCache<A, B, V> {
  private readonly outer = new Map<A, Map<B, V>>();
  private entries = 0;

  constructor(private readonly maxEntries: number) {}

  get(a: A, b: B): V | undefined {
    return this.outer.get(a)?.get(b);
  }

  /** Keeps `value` for `a` and `b`; when full, forgets everything kept first. */
  set(a: A, b: B, value: V): void {
    if (this.entries >= this.maxEntries) {
      this.outer.clear();
      this.entries = 0;
    }
    let inner = this.outer.get(a);
    if (inner === undefined) this.outer.set(a, (inner = new Map()));
    inner.set(b, value);
    this.entries++;
  }
}
