// Checks both filters of the bearer-check module (bearer-check, credential-check) make of their configuration and
// of the metadata ext_authz leaves.
import { HostBytes } from "../abi";

/** A positive decimal integer (at most 12 digits), or -1. */
export function parseMillis(b: HostBytes): i64 {
  if (b.len == 0 || b.len > 12) return -1;
  let v: i64 = 0;
  for (let i: usize = 0; i < b.len; i++) {
    const c = b.byteAt(i);
    if (c < 0x30 || c > 0x39) return -1;
    v = v * 10 + <i64>(c - 0x30);
  }
  return v;
}

/** A header name the filter may set: lower-case RFC 9110 token characters. */
export function isHeaderName(s: string): bool {
  if (s.length == 0) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ok = (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x5f || c == 0x2e;
    if (!ok) return false;
  }
  return true;
}

/** A secret header value: 16..256 visible ASCII characters. */
export function isSecretValue(s: string): bool {
  if (s.length < 16 || s.length > 256) return false;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}
