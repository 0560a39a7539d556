// A small LRU on Map insertion order, bounded by entry count and by a total weight (here: query length,
// so 1000 one-megabyte queries cannot pin a gigabyte of ASTs).

export class Lru<V> {
  private readonly map = new Map<string, { value: V; weight: number }>();
  private weight = 0;

  constructor(
    readonly maxEntries: number,
    readonly maxWeight: number = Number.POSITIVE_INFINITY,
  ) {}

  get size(): number {
    return this.map.size;
  }

  get(key: string): V | undefined {
    const e = this.map.get(key);
    if (e === undefined) return undefined;
    // most recently used goes last
    this.map.delete(key);
    this.map.set(key, e);
    return e.value;
  }

  set(key: string, value: V, weight = key.length): void {
    if (this.maxEntries <= 0 || weight > this.maxWeight) return;
    const old = this.map.get(key);
    if (old !== undefined) {
      this.weight -= old.weight;
      this.map.delete(key);
    }
    this.map.set(key, { value, weight });
    this.weight += weight;
    while (this.map.size > this.maxEntries || this.weight > this.maxWeight) {
      const oldest = this.map.keys().next();
      if (oldest.done === true) break;
      const e = this.map.get(oldest.value)!;
      this.weight -= e.weight;
      this.map.delete(oldest.value);
    }
  }

  clear(): void {
    this.map.clear();
    this.weight = 0;
  }
}
