// The edge cache of accepted tokens: a direct-mapped table of SHA-256 digests (of route auth key +
// Authorization value) with a deadline each. Fixed size, set at configure time, so memory is bounded
// and a lookup allocates nothing; a digest that lands on a taken slot replaces it (the older token then
// just goes through ext_authz again). See docs/wasm.md "Edge cache".
//
// Two levels: TokenCache is this VM's own table (one per Envoy worker, no host call), SharedTokenCache
// the same layout over proxy-wasm shared data (one store per vm_id, seen by every worker's VM), so a
// token one worker learnt is good is not checked again by the others.
import { HostBytes, Status, getSharedData, lastSharedDataCas, setSharedData } from "../abi";

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

/** "lbc/" + 8 hex digits of the slot number; the digits are rewritten in place per access. */
const KEY: usize = memory.data<u8>([0x6c, 0x62, 0x63, 0x2f, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30, 0x30]);
const KEY_LEN: usize = 12;
/** A slot's value: magic "LBC1", 4 reserved bytes, the digest's four words, the deadline (epoch ms). */
const VALUE_LEN: usize = 48;
const MAGIC: u32 = 0x3143424c; // "LBC1" little-endian
const VALUE: usize = memory.data(48, 8);
/** Attempts of a store that loses CAS races to other workers before it gives up (the token is then just checked again). */
const STORE_ATTEMPTS: i32 = 3;

function writeKey(slot: u32): void {
  for (let i: i32 = 7; i >= 0; i--) {
    const nibble = slot & 0xf;
    store<u8>(KEY + 4 + <usize>i, <u8>(nibble < 10 ? 0x30 + nibble : 0x57 + nibble));
    slot >>= 4;
  }
}

/** Whether `v` is a slot value holding digest `d`. */
function holds(v: HostBytes, d: Digest): bool {
  if (v.len != VALUE_LEN || load<u32>(v.ptr) != MAGIC) return false;
  return load<u64>(v.ptr, 8) == d.d0 && load<u64>(v.ptr, 16) == d.d1 && load<u64>(v.ptr, 24) == d.d2 && load<u64>(v.ptr, 32) == d.d3;
}

/**
 * The edge cache over proxy-wasm shared data: `capacity` keys `lbc/<slot, 8 hex digits>` (a digest
 * goes to slot d0 % capacity, as in TokenCache), each a 48-byte value. Keys hold digests only, never a
 * token. Writes use the CAS token of the read before them, so two workers storing into one slot at
 * once do not interleave: the loser re-reads and either finds its digest already there or retries.
 * Shared data cannot be deleted in ABI 0.2.1, so the store never holds more than `capacity` keys
 * (the largest capacity configured while the Envoy process lives).
 */
export class SharedTokenCache {
  private readonly value: HostBytes = new HostBytes();
  /** host calls that failed (not NotFound / CasMismatch), for logs and tests */
  failures: i32 = 0;

  constructor(public capacity: i32) {}

  /** The deadline (epoch ms) of `d` when it is cached past `now`, else 0. */
  deadline(d: Digest, now: i64): i64 {
    writeKey(<u32>(d.d0 % <u64>this.capacity));
    const v = this.value;
    const status = getSharedData(KEY, KEY_LEN, v);
    if (status != Status.Ok) {
      if (status != Status.NotFound) this.failures++;
      return 0;
    }
    let deadline: i64 = 0;
    if (holds(v, d)) {
      const at = load<i64>(v.ptr, 40);
      if (at > now) deadline = at;
    }
    v.release();
    return deadline;
  }

  /** Stores `d` until `deadline`; false when the store gave up (CAS lost every time, or a host error). */
  set(d: Digest, deadline: i64): bool {
    writeKey(<u32>(d.d0 % <u64>this.capacity));
    store<u32>(VALUE, MAGIC);
    store<u32>(VALUE, 0, 4);
    store<u64>(VALUE, d.d0, 8);
    store<u64>(VALUE, d.d1, 16);
    store<u64>(VALUE, d.d2, 24);
    store<u64>(VALUE, d.d3, 32);
    store<i64>(VALUE, deadline, 40);
    const v = this.value;
    for (let attempt = 0; attempt < STORE_ATTEMPTS; attempt++) {
      const got = getSharedData(KEY, KEY_LEN, v);
      let cas: u32 = 0;
      if (got == Status.Ok) {
        cas = lastSharedDataCas();
        // another worker already stored this token for at least as long
        const done = holds(v, d) && load<i64>(v.ptr, 40) >= deadline;
        v.release();
        if (done) return true;
      } else if (got != Status.NotFound) {
        this.failures++;
        return false;
      }
      const status = setSharedData(KEY, KEY_LEN, VALUE, VALUE_LEN, cas);
      if (status == Status.Ok) return true;
      if (status != Status.CasMismatch) {
        this.failures++;
        return false;
      }
    }
    return false;
  }
}

/** A grant value: magic "LBC2", the payload length, the digest's four words, the deadline, then the payload. */
const GRANT_MAGIC: u32 = 0x3243424c; // "LBC2" little-endian
const GRANT_HEAD: usize = 48;

/** Whether `v` is a grant value holding digest `d`. */
function holdsGrant(v: HostBytes, d: Digest): bool {
  if (v.len < GRANT_HEAD || load<u32>(v.ptr) != GRANT_MAGIC || <usize>load<u32>(v.ptr, 4) != v.len - GRANT_HEAD) return false;
  return load<u64>(v.ptr, 8) == d.d0 && load<u64>(v.ptr, 16) == d.d1 && load<u64>(v.ptr, 24) == d.d2 && load<u64>(v.ptr, 32) == d.d3;
}

/**
 * credential-check's grants over proxy-wasm shared data: the SharedTokenCache layout (keys `lbc/<slot>` in
 * its own vm_id) with a payload after the 48-byte head: the request headers the grant adds (encoded by the
 * filter). Every lookup reads shared data (there is no per-worker table), so a grant dropped by one worker
 * (a logout) is gone for every worker at once.
 */
export class SharedGrantCache {
  /** the value of the last hit, valid until the next call (payloadPtr / payloadLen) */
  private readonly value: HostBytes = new HostBytes();
  failures: i32 = 0;

  constructor(public capacity: i32) {}

  /** The deadline of `d` when it is granted past `now` (its payload then readable), else 0. */
  lookup(d: Digest, now: i64): i64 {
    writeKey(<u32>(d.d0 % <u64>this.capacity));
    const v = this.value;
    const status = getSharedData(KEY, KEY_LEN, v);
    if (status != Status.Ok) {
      if (status != Status.NotFound) this.failures++;
      return 0;
    }
    if (holdsGrant(v, d)) {
      const at = load<i64>(v.ptr, 40);
      if (at > now) return at;
    }
    v.release();
    return 0;
  }

  get payloadPtr(): usize {
    return this.value.ptr + GRANT_HEAD;
  }

  get payloadLen(): usize {
    return this.value.len - GRANT_HEAD;
  }

  /** Frees the value of the last hit. */
  done(): void {
    this.value.release();
  }

  /** Stores `d` until `deadline` with the `len` payload bytes at `payload`; false when the store gave up. */
  set(d: Digest, deadline: i64, payload: usize, len: usize): bool {
    const buf = heap.alloc(GRANT_HEAD + len);
    store<u32>(buf, GRANT_MAGIC);
    store<u32>(buf, <u32>len, 4);
    store<u64>(buf, d.d0, 8);
    store<u64>(buf, d.d1, 16);
    store<u64>(buf, d.d2, 24);
    store<u64>(buf, d.d3, 32);
    store<i64>(buf, deadline, 40);
    if (len > 0) memory.copy(buf + GRANT_HEAD, payload, len);
    const ok = this.write(d, buf, GRANT_HEAD + len, false);
    heap.free(buf);
    return ok;
  }

  /** Ends the grant of `d`, when the slot holds it (a logout): the slot keeps the digest with deadline 0. */
  drop(d: Digest): bool {
    const buf = heap.alloc(GRANT_HEAD);
    store<u32>(buf, GRANT_MAGIC);
    store<u32>(buf, 0, 4);
    store<u64>(buf, d.d0, 8);
    store<u64>(buf, d.d1, 16);
    store<u64>(buf, d.d2, 24);
    store<u64>(buf, d.d3, 32);
    store<i64>(buf, 0, 40);
    const ok = this.write(d, buf, GRANT_HEAD, true);
    heap.free(buf);
    return ok;
  }

  /** CAS write of slot(d); `onlyIfHeld`: leave a slot that holds another digest (or nothing) alone. */
  private write(d: Digest, buf: usize, len: usize, onlyIfHeld: bool): bool {
    writeKey(<u32>(d.d0 % <u64>this.capacity));
    const v = this.value;
    for (let attempt = 0; attempt < STORE_ATTEMPTS; attempt++) {
      const got = getSharedData(KEY, KEY_LEN, v);
      let cas: u32 = 0;
      if (got == Status.Ok) {
        cas = lastSharedDataCas();
        const held = holdsGrant(v, d);
        v.release();
        if (onlyIfHeld && !held) return true;
      } else if (got == Status.NotFound) {
        if (onlyIfHeld) return true;
      } else {
        this.failures++;
        return false;
      }
      const status = setSharedData(KEY, KEY_LEN, buf, len, cas);
      if (status == Status.Ok) return true;
      if (status != Status.CasMismatch) {
        this.failures++;
        return false;
      }
    }
    return false;
  }
}
