// Bearer credentials (RFC 6750 §2.1): `Authorization: Bearer <b64token>` with
//   b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
// the scheme case-insensitive and one or more spaces before the token (RFC 6750's `1*SP`), exactly as
// extensions/extauth/token.ts accepts it, so this filter never denies what ext_authz would let through.
// A token longer than `maxTokenBytes` (padding included) is malformed.

function isTokenChar(c: u32): bool {
  return (c >= 0x61 && c <= 0x7a) || // a-z
    (c >= 0x41 && c <= 0x5a) || // A-Z
    (c >= 0x30 && c <= 0x39) || // 0-9
    c == 0x2d || c == 0x2e || c == 0x5f || c == 0x7e || c == 0x2b || c == 0x2f; // - . _ ~ + /
}

/** 1 for each byte value that is a token character: one load per byte instead of up to ten comparisons
 * (the scan of an ~800-byte JWT went from ~5-7 µs to about a fifth of that). Filled at start-up. */
const TOKEN_CHARS: usize = memory.data(256);
for (let c: u32 = 0; c < 256; c++) store<u8>(TOKEN_CHARS + <usize>c, isTokenChar(c) ? 1 : 0);

/** True when the `len` bytes at `ptr` are a well-formed bearer credential. */
export function checkBearer(ptr: usize, len: usize, maxTokenBytes: usize): bool {
  if (len < 8) return false;
  // "bearer", case-insensitively (OR 0x20 lower-cases ASCII letters), then a space
  if ((<u32>load<u8>(ptr) | 0x20) != 0x62 ||
    (<u32>load<u8>(ptr + 1) | 0x20) != 0x65 ||
    (<u32>load<u8>(ptr + 2) | 0x20) != 0x61 ||
    (<u32>load<u8>(ptr + 3) | 0x20) != 0x72 ||
    (<u32>load<u8>(ptr + 4) | 0x20) != 0x65 ||
    (<u32>load<u8>(ptr + 5) | 0x20) != 0x72 ||
    <u32>load<u8>(ptr + 6) != 0x20) {
    return false;
  }
  let i: usize = 7;
  while (i < len && <u32>load<u8>(ptr + i) == 0x20) i++;
  const start = i;
  while (i < len && load<u8>(TOKEN_CHARS + <usize>load<u8>(ptr + i)) != 0) i++;
  if (i == start) return false; // no token characters
  while (i < len && <u32>load<u8>(ptr + i) == 0x3d) i++; // '=' padding
  return i == len && len - start <= maxTokenBytes;
}
