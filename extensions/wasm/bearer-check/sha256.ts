// SHA-256 (FIPS 180-4), incremental, allocation-free: the token cache keys on a digest, never on the
// token itself (as the extauth service does). One instance per VM is enough: a VM runs one callback at
// a time. Checked against node:crypto in test/unit/wasm-bearer-cache.test.ts.

const K: StaticArray<u32> = [
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

export class Sha256 {
  private h: StaticArray<u32> = new StaticArray<u32>(8);
  private w: StaticArray<u32> = new StaticArray<u32>(64);
  private block: StaticArray<u8> = new StaticArray<u8>(64);
  private blockLen: i32 = 0;
  private total: u64 = 0;
  /** The digest after finish(): 32 bytes, big-endian words. */
  digest: StaticArray<u8> = new StaticArray<u8>(32);

  constructor() {
    this.reset();
  }

  reset(): void {
    const h = this.h;
    h[0] = 0x6a09e667; h[1] = 0xbb67ae85; h[2] = 0x3c6ef372; h[3] = 0xa54ff53a;
    h[4] = 0x510e527f; h[5] = 0x9b05688c; h[6] = 0x1f83d9ab; h[7] = 0x5be0cd19;
    this.blockLen = 0;
    this.total = 0;
  }

  update(ptr: usize, len: usize): void {
    this.total += <u64>len;
    const block = changetype<usize>(this.block);
    for (let i: usize = 0; i < len; i++) {
      store<u8>(block + <usize>this.blockLen, load<u8>(ptr + i));
      if (++this.blockLen == 64) {
        this.compress();
        this.blockLen = 0;
      }
    }
  }

  updateByte(b: u8): void {
    this.total += 1;
    this.block[this.blockLen] = b;
    if (++this.blockLen == 64) {
      this.compress();
      this.blockLen = 0;
    }
  }

  finish(): StaticArray<u8> {
    const bits = this.total * 8;
    const block = this.block;
    block[this.blockLen++] = 0x80;
    if (this.blockLen > 56) {
      while (this.blockLen < 64) block[this.blockLen++] = 0;
      this.compress();
      this.blockLen = 0;
    }
    while (this.blockLen < 56) block[this.blockLen++] = 0;
    for (let i = 7; i >= 0; i--) block[56 + (7 - i)] = <u8>(bits >> (<u64>i * 8));
    this.compress();
    for (let i = 0; i < 8; i++) {
      const v = this.h[i];
      this.digest[i * 4] = <u8>(v >>> 24);
      this.digest[i * 4 + 1] = <u8>(v >>> 16);
      this.digest[i * 4 + 2] = <u8>(v >>> 8);
      this.digest[i * 4 + 3] = <u8>v;
    }
    this.reset();
    return this.digest;
  }

  private compress(): void {
    const w = this.w;
    const block = this.block;
    for (let i = 0; i < 16; i++) {
      w[i] = (<u32>block[i * 4] << 24) | (<u32>block[i * 4 + 1] << 16) | (<u32>block[i * 4 + 2] << 8) | <u32>block[i * 4 + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15];
      const b = w[i - 2];
      const s0 = rotr<u32>(a, 7) ^ rotr<u32>(a, 18) ^ (a >>> 3);
      const s1 = rotr<u32>(b, 17) ^ rotr<u32>(b, 19) ^ (b >>> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    const h = this.h;
    let a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (let i = 0; i < 64; i++) {
      const S1 = rotr<u32>(e, 6) ^ rotr<u32>(e, 11) ^ rotr<u32>(e, 25);
      const ch = (e & f) ^ (~e & g);
      const t1 = hh + S1 + ch + K[i] + w[i];
      const S0 = rotr<u32>(a, 2) ^ rotr<u32>(a, 13) ^ rotr<u32>(a, 22);
      const maj = (a & b) ^ (a & c) ^ (b & c);
      const t2 = S0 + maj;
      hh = g; g = f; f = e; e = d + t1; d = c; c = b; b = a; a = t1 + t2;
    }
    h[0] += a; h[1] += b; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
  }
}
