// The edge cache of accepted tokens: a direct-mapped table of SHA-256 digests (of route auth key +
// Authorization value) with a deadline each. Fixed size, set at configure time, so memory is bounded
// and a lookup allocates nothing; a digest that lands on a taken slot replaces it (the older token then
// just goes through ext_authz again). See docs/wasm.md "Edge cache".

/** A SHA-256 digest as four words (the cache key). */
export class Digest {
  d0: u64 = 0;
  d1: u64 = 0;
  d2: u64 = 0;
  d3: u64 = 0;

  clone(): Digest {
    const d = new Digest();
    d.d0 = this.d0;
    d.d1 = this.d1;
    d.d2 = this.d2;
    d.d3 = this.d3;
    return d;
  }

  /** Copies the 32 bytes at `bytes`. */
  copyFrom(bytes: StaticArray<u8>): void {
    const p = changetype<usize>(bytes);
    this.d0 = load<u64>(p);
    this.d1 = load<u64>(p, 8);
    this.d2 = load<u64>(p, 16);
    this.d3 = load<u64>(p, 24);
  }
}

export class TokenCache {
  private digests: StaticArray<u64>;
  private deadlines: StaticArray<i64>;
  private used: i32 = 0;

  constructor(public capacity: i32) {
    this.digests = new StaticArray<u64>(capacity * 4);
    this.deadlines = new StaticArray<i64>(capacity);
  }

  /** Slots ever filled (for logs and tests). */
  get size(): i32 {
    return this.used;
  }

  /** True when `d` is cached with a deadline after `now` (epoch ms). */
  has(d: Digest, now: i64): bool {
    const slot = <i32>(d.d0 % <u64>this.capacity);
    if (this.deadlines[slot] <= now) return false;
    const base = slot * 4;
    return this.digests[base] == d.d0 && this.digests[base + 1] == d.d1 && this.digests[base + 2] == d.d2 && this.digests[base + 3] == d.d3;
  }

  set(d: Digest, deadline: i64): void {
    const slot = <i32>(d.d0 % <u64>this.capacity);
    if (this.deadlines[slot] == 0) this.used++;
    const base = slot * 4;
    this.digests[base] = d.d0;
    this.digests[base + 1] = d.d1;
    this.digests[base + 2] = d.d2;
    this.digests[base + 3] = d.d3;
    this.deadlines[slot] = deadline;
  }
}
