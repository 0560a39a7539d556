// A server-side HTTP/2 stream as its owner (the gRPC layer) uses it, and the RFC 9113 request checks
// that run before the owner sees a stream.
import { headerBlock, type H2Stream, type H2StreamHandler, type HeaderList } from './transport.js';

/** the request pseudo-headers (RFC 9113 8.3.1; no extended CONNECT: we do not advertise it) */
const REQUEST_PSEUDO = new Set([':method', ':scheme', ':path', ':authority']);
/** connection-specific fields, malformed in HTTP/2 (RFC 9113 8.2.2) */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

/** Why a request header block is malformed (RFC 9113 8.1.1, 8.2, 8.3), or undefined. */
export function malformedRequest(fields: [string, string][], trailers: boolean): string | undefined {
  let regular = false;
  const seen = new Set<string>();
  for (const [name, value] of fields) {
    if (name.length === 0) return 'an empty field name';
    if (/[A-Z]/.test(name)) return `an uppercase field name (${name})`;
    if (name.startsWith(':')) {
      if (trailers) return `a pseudo-header in trailers (${name})`;
      if (regular) return `a pseudo-header after a regular field (${name})`;
      if (!REQUEST_PSEUDO.has(name)) return `pseudo-header ${name} is not a request's`;
      if (seen.has(name)) return `a duplicate ${name}`;
      seen.add(name);
      continue;
    }
    regular = true;
    if (CONNECTION_SPECIFIC.has(name)) return `a connection-specific field (${name})`;
    if (name === 'te' && value !== 'trailers') return 'te other than trailers';
    if (name === 'content-length' && !/^[0-9]+$/.test(value)) return 'a content-length that is not a number';
  }
  if (trailers) return undefined;
  for (const required of [':method', ':scheme', ':path']) if (!seen.has(required)) return `no ${required}`;
  for (const [name, value] of fields) if (name === ':path' && value === '') return 'an empty :path';
  return undefined;
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
