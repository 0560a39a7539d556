// A server-side HTTP/2 stream as its owner (the gRPC layer) uses it, and the RFC 9113 request checks
// that run before the owner sees a stream.
import {
  KIND_CONNECTION_SPECIFIC,
  KIND_CONTENT_LENGTH,
  KIND_EMPTY,
  KIND_METHOD,
  KIND_OTHER_PSEUDO,
  KIND_PATH,
  KIND_REGULAR,
  KIND_SCHEME,
  KIND_TE,
  KIND_UPPERCASE,
  nameKind,
} from './fields.js';
import { headerBlock, type H2Stream, type H2StreamHandler, type HeaderList } from './transport.js';

function digits(value: string): boolean {
  if (value.length === 0) return false;
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 48 || c > 57) return false;
  }
  return true;
}

/** The RFC 9113 checks of a header list (8.1.1, 8.2, 8.3), field by field as the HPACK decoder yields them with their
 * name's kind (fields.ts): nothing allocated, no name read again. begin(), field() for each, then end(). */
export class RequestCheck {
  /** the content-length field's value (digits) of the list, if it had one */
  contentLength: string | undefined;
  /** pseudo-headers seen (KIND_ bits) */
  private seen = 0;
  private regular = false;
  /** the first pseudo-header, for a trailer list (which may have none) */
  private pseudo: string | undefined;
  /** the first problem of a request's pseudo-headers */
  private badPseudo: string | undefined;
  /** the first problem of any other field */
  private bad: string | undefined;
  private emptyPath = false;

  begin(): void {
    this.contentLength = undefined;
    this.seen = 0;
    this.regular = false;
    this.pseudo = undefined;
    this.badPseudo = undefined;
    this.bad = undefined;
    this.emptyPath = false;
  }

  field(name: string, value: string, kind: number): void {
    if (kind < KIND_REGULAR) {
      // a pseudo-header
      this.pseudo ??= name;
      if (this.badPseudo !== undefined) return;
      if (this.regular) this.badPseudo = `a pseudo-header after a regular field (${name})`;
      else if (kind === KIND_OTHER_PSEUDO) this.badPseudo = `pseudo-header ${name} is not a request's`;
      else if (this.seen & kind) this.badPseudo = `a duplicate ${name}`;
      else {
        this.seen |= kind;
        if (kind === KIND_PATH && value === '') this.emptyPath = true;
      }
      return;
    }
    this.regular = true;
    if (kind === KIND_REGULAR || this.bad !== undefined) return;
    if (kind === KIND_EMPTY) this.bad = 'an empty field name';
    else if (kind === KIND_UPPERCASE) this.bad = `an uppercase field name (${name})`;
    else if (kind === KIND_CONNECTION_SPECIFIC) this.bad = `a connection-specific field (${name})`;
    else if (kind === KIND_TE) {
      if (value !== 'trailers') this.bad = 'te other than trailers';
    } else if (kind === KIND_CONTENT_LENGTH) {
      if (!digits(value)) this.bad = 'a content-length that is not a number';
      else this.contentLength ??= value;
    }
  }

  /** Why the list is malformed as a request's (trailers: as a trailer list), or undefined. */
  end(trailers: boolean): string | undefined {
    if (this.bad !== undefined) return this.bad;
    if (trailers) return this.pseudo === undefined ? undefined : `a pseudo-header in trailers (${this.pseudo})`;
    if (this.badPseudo !== undefined) return this.badPseudo;
    if (!(this.seen & KIND_METHOD)) return 'no :method';
    if (!(this.seen & KIND_SCHEME)) return 'no :scheme';
    if (!(this.seen & KIND_PATH)) return 'no :path';
    if (this.emptyPath) return 'an empty :path';
    return undefined;
  }
}

/** Why a request header list (trailers: a trailer list) is malformed (RFC 9113 8.1.1, 8.2, 8.3), or undefined. */
export function malformedRequest(fields: readonly (readonly [string, string])[], trailers: boolean): string | undefined {
  const check = new RequestCheck();
  check.begin();
  for (const [name, value] of fields) check.field(name, value, nameKind(name));
  return check.end(trailers);
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
