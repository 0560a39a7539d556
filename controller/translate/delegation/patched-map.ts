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
    // flattened: the plain map at the bottom copied, then each layer's changes, oldest first
    const layers = [changes];
    let bottom = base;
    while (bottom instanceof PatchedMap) {
      const layer = bottom as PatchedMap<K, V>;
      layers.push(layer.changes);
      bottom = layer.base;
    }
    const flat = new Map(bottom);
    for (let i = layers.length - 1; i >= 0; i--) for (const [k, v] of layers[i]!) flat.set(k, v);
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
    // the keys are those of the plain map at the bottom
    for (const k of this.keys()) yield [k, this.get(k)!];
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
