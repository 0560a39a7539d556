// A server-side HTTP/2 stream as its owner (the gRPC layer) uses it, and the RFC 9113 request checks
// that run before the owner sees a stream.
import { headerBlock, type H2Stream, type H2StreamHandler, type HeaderList } from './transport.js';

// the request pseudo-headers (RFC 9113 8.3.1; no extended CONNECT: we do not advertise it), one bit each
const METHOD = 1;
const SCHEME = 2;
const PATH = 4;
const AUTHORITY = 8;

function pseudoBit(name: string): number {
  switch (name) {
    case ':method':
      return METHOD;
    case ':scheme':
      return SCHEME;
    case ':path':
      return PATH;
    case ':authority':
      return AUTHORITY;
    default:
      return 0;
  }
}

/** a connection-specific field, malformed in HTTP/2 (RFC 9113 8.2.2) */
function connectionSpecific(name: string): boolean {
  switch (name) {
    case 'connection':
    case 'keep-alive':
    case 'proxy-connection':
    case 'transfer-encoding':
    case 'upgrade':
      return true;
    default:
      return false;
  }
}

function hasUppercase(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c >= 65 && c <= 90) return true;
  }
  return false;
}

function digits(value: string): boolean {
  if (value.length === 0) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The RFC 9113 checks of a request's header list (8.1.1, 8.2, 8.3). Run once per header block, so it allocates nothing
 * (no Set, no regular expression): a connection keeps one and reads `contentLength` after a valid check. */
export class RequestCheck {
  /** the content-length field's value (digits) of the last list checked, if it had one */
  contentLength: string | undefined;

  /** Why a request header list (trailers: a trailer list) is malformed, or undefined. */
  check(fields: readonly (readonly [string, string])[], trailers: boolean): string | undefined {
    let regular = false;
    let seen = 0;
    let emptyPath = false;
    this.contentLength = undefined;
    for (let i = 0; i < fields.length; i++) {
      const [name, value] = fields[i]!;
      if (name.length === 0) return 'an empty field name';
      if (hasUppercase(name)) return `an uppercase field name (${name})`;
      if (name.charCodeAt(0) === 58 /* : */) {
        if (trailers) return `a pseudo-header in trailers (${name})`;
        if (regular) return `a pseudo-header after a regular field (${name})`;
        const bit = pseudoBit(name);
        if (bit === 0) return `pseudo-header ${name} is not a request's`;
        if (seen & bit) return `a duplicate ${name}`;
        seen |= bit;
        if (bit === PATH && value === '') emptyPath = true;
        continue;
      }
      regular = true;
      if (connectionSpecific(name)) return `a connection-specific field (${name})`;
      if (name === 'te' && value !== 'trailers') return 'te other than trailers';
      if (name === 'content-length') {
        if (!digits(value)) return 'a content-length that is not a number';
        this.contentLength ??= value;
      }
    }
    if (trailers) return undefined;
    if (!(seen & METHOD)) return 'no :method';
    if (!(seen & SCHEME)) return 'no :scheme';
    if (!(seen & PATH)) return 'no :path';
    if (emptyPath) return 'an empty :path';
    return undefined;
  }
}

const shared = new RequestCheck();

/** Why a request header block is malformed (RFC 9113 8.1.1, 8.2, 8.3), or undefined. */
export function malformedRequest(fields: readonly (readonly [string, string])[], trailers: boolean): string | undefined {
  return shared.check(fields, trailers);
}

/** What a stream sends through: its connection. */
export interface StreamSink {
  sendHeaders(stream: H2ServerStream, block: Buffer, endStream: boolean): void;
  sendData(stream: H2ServerStream, data: Buffer, end: boolean): void;
  sendTrailers(stream: H2ServerStream, block: Buffer): void;
}

/** A server-side stream as its owner uses it. */
export class H2ServerStream implements H2Stream {
  /** request header fields in order (pseudo-headers first), names lower-case as HTTP/2 requires */
  readonly headers: [string, string][];
  /** set once the answer is complete (END_STREAM sent) or the stream was reset */
  closed = false;
  headersSent = false;
  /** @internal handler of this stream */
  handler: H2StreamHandler | undefined;
  /** @internal the client half-closed */
  remoteEnded = false;
  /** @internal what could not be sent yet for want of window: DATA payloads, then the trailers */
  pending: { data: Buffer[]; trailers: Buffer | undefined; end: boolean } | undefined;
  /** @internal what the peer lets us send on this stream */
  sendWindow: number;
  /** @internal DATA bytes received */
  received = 0;
  /** @internal the request's content-length, checked against the DATA received (RFC 9113 8.1.1) */
  contentLength: number | undefined;
  /** @internal DATA payload bytes received, padding excluded */
  bodyBytes = 0;
  /** @internal of those, what was handed to the owner while the stream was open (counted in the connection's budget) */
  held = 0;

  constructor(
    readonly id: number,
    headers: [string, string][],
    private readonly conn: StreamSink,
    sendWindow: number,
  ) {
    this.headers = headers;
    this.sendWindow = sendWindow;
  }

  /** The first value of a header, or undefined. */
  header(name: string): string | undefined {
    for (const [k, v] of this.headers) if (k === name) return v;
    return undefined;
  }

  /** Sends the response headers; endStream: nothing follows. */
  respond(headers: HeaderList, endStream = false): void {
    if (this.closed || this.headersSent) return;
    this.headersSent = true;
    this.conn.sendHeaders(this, headerBlock(headers), endStream);
  }

  /** Sends DATA (split to the peer's frame size, queued while the flow-control windows are closed). */
  write(data: Buffer): void {
    if (this.closed || !this.headersSent) return;
    this.conn.sendData(this, data, false);
  }

  /** Ends the answer: the trailers' header block, or an empty DATA frame with END_STREAM. */
  end(trailers?: HeaderList): void {
    if (this.closed || !this.headersSent) return;
    if (trailers) this.conn.sendTrailers(this, headerBlock(trailers));
    else this.conn.sendData(this, Buffer.alloc(0), true);
  }
}
