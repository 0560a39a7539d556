// A map that is another with some values replaced, made without copying it: what an edit makes of the
// previous run's maps of every RouteTable (the same keys, a few values new). The base is never changed;
// past a few layers the result is copied flat, so a lookup stays a few map lookups.
const MAX_DEPTH = 4;

export class PatchedMap<K, V> implements ReadonlyMap<K, V> {
  private constructor(
    private readonly base: ReadonlyMap<K, V>,
    /** new values of keys of `base`; never undefined */
    private readonly changes: ReadonlyMap<K, V>,
    private readonly depth: number,
  ) {}

  /** `base` with the values of `changes` (keys `base` has), or `base` itself when there are none. */
  static of<K, V>(base: ReadonlyMap<K, V>, changes: ReadonlyMap<K, V>): ReadonlyMap<K, V> {
    if (!changes.size) return base;
    const depth = base instanceof PatchedMap ? (base as PatchedMap<K, V>).depth + 1 : 1;
    if (depth <= MAX_DEPTH) return new PatchedMap(base, changes, depth);
    const flat = new Map(base);
    for (const [k, v] of changes) flat.set(k, v);
    return flat;
  }

  get size(): number {
    return this.base.size;
  }

  has(key: K): boolean {
    return this.base.has(key);
  }

  get(key: K): V | undefined {
    const v = this.changes.get(key);
    return v !== undefined ? v : this.base.get(key);
  }

  *entries(): MapIterator<[K, V]> {
    for (const [k, v] of this.base) yield [k, this.changes.get(k) ?? v];
  }

  keys(): MapIterator<K> {
    return this.base.keys();
  }

  *values(): MapIterator<V> {
    for (const [, v] of this.entries()) yield v;
  }

  forEach(callback: (value: V, key: K, map: ReadonlyMap<K, V>) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }

  [Symbol.iterator](): MapIterator<[K, V]> {
    return this.entries();
  }
}
