// Bearer credentials (RFC 6750 §2.1): `Authorization: Bearer <b64token>`, where
//   b64token = 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="
// and the scheme name is case-insensitive (RFC 9110 §11.1). One or more spaces separate the two.
// A hand-written scan rather than a regex: no match arrays on the hot path.

/** Longest token accepted (bytes). Longer values are denied without asking the provider. */
export const MAX_TOKEN_LENGTH = 4096;

/** Characters allowed in a b64token (before the `=` padding), indexed by char code. */
const TOKEN_CHAR = new Uint8Array(128);
for (let c = 0x30; c <= 0x39; c++) TOKEN_CHAR[c] = 1; // 0-9
for (let c = 0x41; c <= 0x5a; c++) TOKEN_CHAR[c] = 1; // A-Z
for (let c = 0x61; c <= 0x7a; c++) TOKEN_CHAR[c] = 1; // a-z
for (const ch of '-._~+/') TOKEN_CHAR[ch.charCodeAt(0)] = 1;

/**
 * Returns the token of a `Bearer` Authorization header value, or undefined when the value is not a
 * well-formed bearer credential (other scheme, bad token syntax, or longer than MAX_TOKEN_LENGTH).
 */
export function parseBearer(header: string): string | undefined {
  const n = header.length;
  if (n < 8 || n > MAX_TOKEN_LENGTH + 64) return undefined;
  // "bearer", case-insensitively: OR 0x20 lower-cases ASCII letters
  if (
    (header.charCodeAt(0) | 0x20) !== 0x62 || // b
    (header.charCodeAt(1) | 0x20) !== 0x65 || // e
    (header.charCodeAt(2) | 0x20) !== 0x61 || // a
    (header.charCodeAt(3) | 0x20) !== 0x72 || // r
    (header.charCodeAt(4) | 0x20) !== 0x65 || // e
    (header.charCodeAt(5) | 0x20) !== 0x72 || // r
    header.charCodeAt(6) !== 0x20
  ) {
    return undefined;
  }
  let i = 7;
  while (i < n && header.charCodeAt(i) === 0x20) i++;
  const start = i;
  while (i < n) {
    const c = header.charCodeAt(i);
    if (c >= 128 || TOKEN_CHAR[c] !== 1) break;
    i++;
  }
  if (i === start) return undefined; // no token characters
  while (i < n && header.charCodeAt(i) === 0x3d) i++; // trailing '=' padding
  if (i !== n) return undefined;
  if (n - start > MAX_TOKEN_LENGTH) return undefined;
  return header.slice(start);
}
