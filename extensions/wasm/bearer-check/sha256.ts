// SHA-256 (FIPS 180-4), incremental, allocation-free: the token cache keys on a digest, never on the
// token itself (as the extauth service does). One instance per VM is enough: a VM runs one callback at
// a time. Checked against node:crypto in test/unit/wasm-bearer-cache.test.ts.
//
// This is the bearer-check hit path's largest cost (an ~800-byte JWT is 13 blocks), so it works on raw
// memory: whole 64-byte blocks are compressed straight from the input (only a partial block is copied),
// the round constants and the message schedule are static memory read with plain loads (no
// StaticArray bounds checks, no calls), and the state stays in locals during a block. Measured in the
// wasm test host: ~3.5x less time per JWT than the byte-at-a-time version.

const K: usize = memory.data<u32>([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);
/** The message schedule (64 words) of the block being compressed. */
const W: usize = memory.data(256, 8);

/** Compresses the 64 bytes at `p` into the state at `h` (8 words). */
function compress(h: usize, p: usize): void {
  for (let i: usize = 0; i < 16; i++) store<u32>(W + (i << 2), bswap<u32>(load<u32>(p + (i << 2))));
  for (let i: usize = 16; i < 64; i++) {
    const a = load<u32>(W + ((i - 15) << 2));
    const b = load<u32>(W + ((i - 2) << 2));
    const s0 = rotr<u32>(a, 7) ^ rotr<u32>(a, 18) ^ (a >>> 3);
    const s1 = rotr<u32>(b, 17) ^ rotr<u32>(b, 19) ^ (b >>> 10);
    store<u32>(W + (i << 2), load<u32>(W + ((i - 16) << 2)) + s0 + load<u32>(W + ((i - 7) << 2)) + s1);
  }
  let a = load<u32>(h), b = load<u32>(h, 4), c = load<u32>(h, 8), d = load<u32>(h, 12);
  let e = load<u32>(h, 16), f = load<u32>(h, 20), g = load<u32>(h, 24), hh = load<u32>(h, 28);
  for (let i: usize = 0; i < 256; i += 4) {
    const S1 = rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25);
    const ch = (e & f) ^ (~e & g);
    const t1 = hh + S1 + ch + load<u32>(K + i) + load<u32>(W + i);
    const S0 = rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22);
    const maj = (a & b) ^ (a & c) ^ (b & c);
    const t2 = S0 + maj;
    hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
  }
  store<u32>(h, load<u32>(h) + a);
  store<u32>(h, load<u32>(h, 4) + b, 4);
  store<u32>(h, load<u32>(h, 8) + c, 8);
  store<u32>(h, load<u32>(h, 12) + d, 12);
  store<u32>(h, load<u32>(h, 16) + e, 16);
  store<u32>(h, load<u32>(h, 20) + f, 20);
  store<u32>(h, load<u32>(h, 24) + g, 24);
  store<u32>(h, load<u32>(h, 28) + hh, 28);
}

export class Sha256 {
  /** the state: 8 words */
  private h: StaticArray<u32> = new StaticArray<u32>(8);
  /** the partial block */
  private block: StaticArray<u8> = new StaticArray<u8>(64);
  private blockLen: usize = 0;
  private total: u64 = 0;
  /** The digest after finish(): 32 bytes, big-endian words. */
  digest: StaticArray<u8> = new StaticArray<u8>(32);

  constructor() {
    this.reset();
  }

  reset(): void {
    const h = changetype<usize>(this.h);
    store<u32>(h, 0x6a09e667); store<u32>(h, 0xbb67ae85, 4); store<u32>(h, 0x3c6ef372, 8); store<u32>(h, 0xa54ff53a, 12);
    store<u32>(h, 0x510e527f, 16); store<u32>(h, 0x9b05688c, 20); store<u32>(h, 0x1f83d9ab, 24); store<u32>(h, 0x5be0cd19, 28);
    this.blockLen = 0;
    this.total = 0;
  }

  update(ptr: usize, len: usize): void {
    if (len == 0) return;
    this.total += <u64>len;
    const h = changetype<usize>(this.h);
    const block = changetype<usize>(this.block);
    let blockLen = this.blockLen;
    // fill up a partial block first
    if (blockLen > 0) {
      const n = min<usize>(64 - blockLen, len);
      memory.copy(block + blockLen, ptr, n);
      blockLen += n;
      ptr += n;
      len -= n;
      if (blockLen < 64) {
        this.blockLen = blockLen;
        return;
      }
      compress(h, block);
      blockLen = 0;
    }
    // whole blocks straight from the input
    while (len >= 64) {
      compress(h, ptr);
      ptr += 64;
      len -= 64;
    }
    if (len > 0) memory.copy(block, ptr, len);
    this.blockLen = len;
  }

  updateByte(b: u8): void {
    this.total += 1;
    const block = changetype<usize>(this.block);
    store<u8>(block + this.blockLen, b);
    if (++this.blockLen == 64) {
      compress(changetype<usize>(this.h), block);
      this.blockLen = 0;
    }
  }

  finish(): StaticArray<u8> {
    const bits = this.total * 8;
    const h = changetype<usize>(this.h);
    const block = changetype<usize>(this.block);
    let n = this.blockLen;
    store<u8>(block + n++, 0x80);
    if (n > 56) {
      memory.fill(block + n, 0, 64 - n);
      compress(h, block);
      n = 0;
    }
    memory.fill(block + n, 0, 56 - n);
    store<u64>(block + 56, bswap<u64>(bits));
    compress(h, block);
    const out = changetype<usize>(this.digest);
    for (let i: usize = 0; i < 32; i += 4) store<u32>(out + i, bswap<u32>(load<u32>(h + i)));
    this.reset();
    return this.digest;
  }
}
