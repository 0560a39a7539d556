// What a header field's name is to the request checks (RFC 9113 8.2, 8.3), decided once per name: the HPACK decoder
// keeps it for every name its tables hold (the static table's, and each dynamic entry's when inserted), so a request
// whose fields are indexed (Envoy's, after the first on a connection) is checked without reading its names again.

// the request pseudo-headers (RFC 9113 8.3.1; no extended CONNECT: we do not advertise it), one bit each
export const KIND_METHOD = 1;
export const KIND_SCHEME = 2;
export const KIND_PATH = 4;
export const KIND_AUTHORITY = 8;
/** any other name starting with ':' */
export const KIND_OTHER_PSEUDO = 16;
/** a lower-case regular name the checks have nothing to say about */
export const KIND_REGULAR = 32;
export const KIND_EMPTY = 33;
export const KIND_UPPERCASE = 34;
/** connection-specific, malformed in HTTP/2 (RFC 9113 8.2.2) */
export const KIND_CONNECTION_SPECIFIC = 35;
export const KIND_TE = 36;
export const KIND_CONTENT_LENGTH = 37;

/** A name's kind (one of the KIND_ constants). */
export function nameKind(name: string): number {
  if (name.length === 0) return KIND_EMPTY;
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return KIND_UPPERCASE;
  }
  switch (name) {
    case ':method':
      return KIND_METHOD;
    case ':scheme':
      return KIND_SCHEME;
    case ':path':
      return KIND_PATH;
    case ':authority':
      return KIND_AUTHORITY;
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'transfer-encoding':
    case 'upgrade':
      return KIND_CONNECTION_SPECIFIC;
    case 'te':
      return KIND_TE;
    case 'content-length':
      return KIND_CONTENT_LENGTH;
    default:
      return name.charCodeAt(0) === 58 /* : */ ? KIND_OTHER_PSEUDO : KIND_REGULAR;
  }
}
