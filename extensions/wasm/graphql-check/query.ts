// The `query` and `operationName` parameters of a GET's `:path`, found and decoded as URLSearchParams
// (application/x-www-form-urlencoded) does it: `&`-separated, split at the first `=`, `+` is a space,
// `%XX` a byte (a `%` without two hex digits stays as is), names decoded too, the first occurrence wins.

function hexValue(c: u32): i32 {
  if (c >= 0x30 && c <= 0x39) return <i32>(c - 0x30);
  if (c >= 0x61 && c <= 0x66) return <i32>(c - 0x61 + 10);
  if (c >= 0x41 && c <= 0x46) return <i32>(c - 0x41 + 10);
  return -1;
}

/** Decodes `[src, src+len)` into `dst` (at least `len` bytes); returns the decoded length. */
export function formDecode(dst: usize, src: usize, len: usize): usize {
  let o: usize = 0;
  let i: usize = 0;
  while (i < len) {
    const c = <u32>load<u8>(src + i);
    if (c == 0x2b) {
      store<u8>(dst + o++, 0x20);
      i++;
    } else if (c == 0x25 && i + 2 < len && hexValue(<u32>load<u8>(src + i + 1)) >= 0 && hexValue(<u32>load<u8>(src + i + 2)) >= 0) {
      store<u8>(dst + o++, <u8>((hexValue(<u32>load<u8>(src + i + 1)) << 4) | hexValue(<u32>load<u8>(src + i + 2))));
      i += 3;
    } else {
      store<u8>(dst + o++, <u8>c);
      i++;
    }
  }
  return o;
}

/** True when `[src, src+len)` decodes to the ASCII string `name`. No allocation. */
function decodedEquals(src: usize, len: usize, name: string): bool {
  let i: usize = 0;
  let k = 0;
  const n = name.length;
  while (i < len) {
    if (k >= n) return false;
    let c = <u32>load<u8>(src + i);
    if (c == 0x2b) {
      c = 0x20;
      i++;
    } else if (c == 0x25 && i + 2 < len && hexValue(<u32>load<u8>(src + i + 1)) >= 0 && hexValue(<u32>load<u8>(src + i + 2)) >= 0) {
      c = <u32>((hexValue(<u32>load<u8>(src + i + 1)) << 4) | hexValue(<u32>load<u8>(src + i + 2)));
      i += 3;
    } else {
      i++;
    }
    if (c != <u32>name.charCodeAt(k)) return false;
    k++;
  }
  return k == n;
}

/** Where the raw (still encoded) values of `query` and `operationName` are in a path. */
export class GetParams {
  hasQuery: bool = false;
  queryStart: usize = 0;
  queryLen: usize = 0;
  hasOperationName: bool = false;
  operationNameStart: usize = 0;
  operationNameLen: usize = 0;

  /** Scans the path at `[ptr, ptr+len)`. */
  scan(ptr: usize, len: usize): void {
    this.hasQuery = false;
    this.hasOperationName = false;
    let i: usize = 0;
    while (i < len && <u32>load<u8>(ptr + i) != 0x3f) i++; // '?'
    i++;
    while (i < len) {
      const start = i;
      while (i < len && <u32>load<u8>(ptr + i) != 0x26) i++; // '&'
      const end = i;
      i++;
      if (end == start) continue;
      let eq = start;
      while (eq < end && <u32>load<u8>(ptr + eq) != 0x3d) eq++; // '='
      const valueStart = eq < end ? eq + 1 : end;
      if (!this.hasQuery && decodedEquals(ptr + start, eq - start, "query")) {
        this.hasQuery = true;
        this.queryStart = valueStart;
        this.queryLen = end - valueStart;
      } else if (!this.hasOperationName && decodedEquals(ptr + start, eq - start, "operationName")) {
        this.hasOperationName = true;
        this.operationNameStart = valueStart;
        this.operationNameLen = end - valueStart;
      }
    }
  }
}
