// The proxy-wasm pairs encoding (header maps, local-reply headers):
//   u32 count; count x (u32 key_len, u32 value_len); count x (key, 0x00, value, 0x00)
// Lengths exclude the NULs. Envoy parses it strictly (every key and value NUL-terminated, nothing after
// the last NUL, at most 1024 pairs / 1 MiB) and silently treats a bad buffer as an empty map.

export class Pairs {
  private keys: ArrayBuffer[] = [];
  private values: ArrayBuffer[] = [];

  add(key: string, value: string): Pairs {
    this.keys.push(String.UTF8.encode(key));
    this.values.push(String.UTF8.encode(value));
    return this;
  }

  get count(): i32 {
    return this.keys.length;
  }

  /** The encoded map. An empty map encodes as an empty buffer (sent as length 0). */
  encode(): ArrayBuffer {
    const n = this.keys.length;
    if (n == 0) return new ArrayBuffer(0);
    let size = 4 + 8 * n;
    for (let i = 0; i < n; i++) size += this.keys[i].byteLength + this.values[i].byteLength + 2;
    const out = new ArrayBuffer(size);
    const base = changetype<usize>(out);
    store<u32>(base, <u32>n);
    let lens = base + 4;
    let data = base + 4 + 8 * <usize>n;
    for (let i = 0; i < n; i++) {
      const k = this.keys[i];
      const v = this.values[i];
      store<u32>(lens, <u32>k.byteLength);
      store<u32>(lens + 4, <u32>v.byteLength);
      lens += 8;
      memory.copy(data, changetype<usize>(k), <usize>k.byteLength);
      data += <usize>k.byteLength;
      store<u8>(data, 0);
      data += 1;
      memory.copy(data, changetype<usize>(v), <usize>v.byteLength);
      data += <usize>v.byteLength;
      store<u8>(data, 0);
      data += 1;
    }
    return out;
  }
}
