// A bounded map of introspection results keyed by token hash, with a deadline per entry.
//
// Eviction is oldest-insertion-first (Map order), not LRU: a hit does no bookkeeping at all (an LRU
// would delete and re-insert on every hit, which is the hot path), and every entry expires within the
// cache timeout anyway, so the oldest entry is also the one closest to expiry. Dead entries are
// dropped when they are looked up, when the map is full, and by sweep().

export interface Expiring {
  /** epoch ms after which the entry must not be used */
  readonly deadAt: number;
}

export class ExpiringCache<V extends Expiring> {
  private readonly map = new Map<string, V>();

  constructor(private maxEntries: number) {}

  get size(): number {
    return this.map.size;
  }

  /** Changes the bound; drops the oldest entries if the map is over it. */
  resize(maxEntries: number): void {
    this.maxEntries = maxEntries;
    this.evict(0);
  }

  get(key: string, now: number): V | undefined {
    const v = this.map.get(key);
    if (v === undefined) return undefined;
    if (now >= v.deadAt) {
      this.map.delete(key);
      return undefined;
    }
    return v;
  }

  set(key: string, value: V): void {
    if (this.maxEntries <= 0) return;
    // re-inserting moves the key to the end (youngest)
    this.map.delete(key);
    this.evict(1);
    this.map.set(key, value);
  }

  delete(key: string): void {
    this.map.delete(key);
  }

  clear(): void {
    this.map.clear();
  }

  /** Drops every entry past its deadline; returns how many were dropped. */
  sweep(now: number): number {
    let dropped = 0;
    for (const [k, v] of this.map) {
      if (now >= v.deadAt) {
        this.map.delete(k);
        dropped++;
      }
    }
    return dropped;
  }

  /** Makes room for `incoming` more entries, oldest first. */
  private evict(incoming: number): void {
    while (this.map.size + incoming > this.maxEntries && this.map.size > 0) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) return;
      this.map.delete(oldest.value);
    }
  }
}
