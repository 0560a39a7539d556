// A minimal HTTP/1.1 client for resolver calls: one request at a time per kept-alive connection, the request
// written in one go, the response parsed by hand (status, the framing headers, the body). A nested query
// makes a call per list item, so the client's own work per call is most of the graphql service's CPU;
// undici's request objects, header validation and llhttp parser cost more than the call needs
// (docs/benchmarks.md "Nested GraphQL"). The connection is free again as soon as its response has been
// read, before the caller sees the result, so a call the result triggers reuses it.

import net from 'node:net';
import tls from 'node:tls';

/** What a connection reports for its call; exactly one of the two ends it. */
export interface H1Handler {
  /** a final response, its body whole (status >= 200) */
  response(status: number, body: Buffer | undefined): void;
  /** the connection failed before the response was whole; `retryable`: it had served earlier calls and nothing
   * of this call's response arrived (the server closed a kept-alive connection as it was reused) */
  failure(err: Error & { code?: string }, retryable: boolean): void;
}

export interface H1Options {
  host: string;
  port: number;
  /** TLS: options of tls.connect (servername, ca, cert, key, rejectUnauthorized); undefined for plain TCP */
  tls: tls.ConnectionOptions | undefined;
  /** free connections idle longer than this are closed rather than reused */
  idleTimeoutMs: number;
  /** responses above this many bytes fail the call (and close the connection) */
  maxResponseBytes: number;
}

const MAX_HEAD_BYTES = 64 * 1024;
const CRLF2 = Buffer.from('\r\n\r\n');
/** Request-line and header values a template may have rendered: HTTP cannot carry these bytes. */
const BAD_PATH = /[^\x21-\x7e\x80-\xff]/;
const BAD_VALUE = /[\r\n\0]/;

export class H1Error extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'H1Error';
  }
}

/** The request's bytes, or an H1Error (code UND_ERR_INVALID_ARG, as undici names it) when they cannot be sent. */
export function encodeRequest(method: string, path: string, headers: Record<string, string>, body: string | undefined): string | H1Error {
  if (BAD_PATH.test(path)) return new H1Error(`invalid request path ${JSON.stringify(path)}`, 'UND_ERR_INVALID_ARG');
  let head = method + ' ' + path + ' HTTP/1.1\r\n';
  for (const name in headers) {
    const v = headers[name]!;
    if (BAD_VALUE.test(v)) return new H1Error(`invalid value of header ${name}`, 'UND_ERR_INVALID_ARG');
    head += name + ': ' + v + '\r\n';
  }
  if (body !== undefined && headers['content-length'] === undefined) head += 'content-length: ' + Buffer.byteLength(body) + '\r\n';
  return head + '\r\n';
}

/** Connections to one endpoint; the most recently freed one is reused first (its caches are warm). */
export class H1Endpoint {
  private readonly idle: H1Connection[] = [];
  private closed = false;
  private sweeper: NodeJS.Timeout | undefined;
  /** connections opened so far (for tests and stats) */
  opened = 0;

  constructor(readonly options: H1Options) {}

  /** Sends one request on a free connection (or a new one). `head` from encodeRequest. */
  send(head: string, body: string | undefined, handler: H1Handler, fresh = false): H1Connection {
    let conn: H1Connection | undefined;
    if (!fresh) {
      const now = Date.now();
      while ((conn = this.idle.pop()) !== undefined) {
        if (conn.usable(now)) break;
        conn.destroy();
      }
    }
    if (conn === undefined) {
      conn = new H1Connection(this);
      this.opened++;
    }
    conn.send(head, body, handler);
    return conn;
  }

  /** @internal */ release(conn: H1Connection): void {
    if (this.closed) return conn.destroy();
    this.idle.push(conn);
    // free connections left idle past the timeout are closed by a sweep (not a timer per call)
    if (this.sweeper === undefined) {
      this.sweeper = setInterval(() => this.sweep(), Math.max(50, this.options.idleTimeoutMs / 2));
      this.sweeper.unref();
    }
  }

  private sweep(): void {
    const now = Date.now();
    for (let i = this.idle.length - 1; i >= 0; i--) {
      const conn = this.idle[i]!;
      if (conn.usable(now)) continue;
      this.idle.splice(i, 1);
      conn.destroy();
    }
    if (this.idle.length === 0 && this.sweeper !== undefined) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }

  /** @internal */ forget(conn: H1Connection): void {
    const i = this.idle.indexOf(conn);
    if (i >= 0) this.idle.splice(i, 1);
  }

  close(): void {
    this.closed = true;
    if (this.sweeper !== undefined) clearInterval(this.sweeper);
    this.sweeper = undefined;
    for (const c of this.idle.splice(0)) c.destroy();
  }
}

/** `remaining` in a chunked body: the next bytes are a size line, the trailers, or the CRLF after a chunk's data */
const CHUNK_SIZE_LINE = -1;
const CHUNK_TRAILERS = -2;
const CHUNK_DATA_END = -3;

const enum Phase {
  Idle,
  Head,
  Length,
  Chunked,
  UntilClose,
}

export class H1Connection {
  private readonly socket: net.Socket;
  private handler: H1Handler | undefined;
  private phase = Phase.Idle;
  private buf: Buffer | undefined;
  private status = 0;
  private remaining = 0;
  private body: Buffer[] = [];
  private bodySize = 0;
  private keepAlive = true;
  private head = false;
  /** responses read on this connection (a failure on a used one may be the server closing it as we reused it) */
  private responses = 0;
  private idleSince = 0;
  private dead = false;

  constructor(private readonly endpoint: H1Endpoint) {
    const o = endpoint.options;
    this.socket = o.tls === undefined ? net.connect(o.port, o.host) : tls.connect({ ...o.tls, host: o.host, port: o.port });
    this.socket.setNoDelay(true);
    this.socket.on('data', (d: Buffer) => this.onData(d));
    this.socket.on('error', (err: Error) => this.fail(err));
    this.socket.on('end', () => this.onEnd());
    this.socket.on('close', () => this.fail(new H1Error('connection closed', 'UND_ERR_SOCKET')));
  }

  /** @internal */ usable(now: number): boolean {
    return !this.dead && now - this.idleSince < this.endpoint.options.idleTimeoutMs;
  }

  /** @internal */ send(head: string, body: string | undefined, handler: H1Handler): void {
    this.handler = handler;
    this.phase = Phase.Head;
    this.head = head.charCodeAt(0) === 72 && head.startsWith('HEAD ');
    if (body === undefined) this.socket.write(head, 'latin1');
    else {
      this.socket.cork();
      this.socket.write(head, 'latin1');
      this.socket.write(body, 'utf8');
      this.socket.uncork();
    }
  }

  destroy(): void {
    this.dead = true;
    this.handler = undefined;
    this.socket.destroy();
  }

  private onEnd(): void {
    if (this.phase === Phase.UntilClose) {
      this.finish();
      return;
    }
    this.fail(new H1Error('connection closed by the server', 'UND_ERR_SOCKET'));
  }

  private fail(err: Error & { code?: string }): void {
    const handler = this.handler;
    const retryable = this.responses > 0 && this.phase === Phase.Head && this.buf === undefined;
    this.handler = undefined;
    this.phase = Phase.Idle;
    if (!this.dead) {
      this.dead = true;
      this.endpoint.forget(this);
      this.socket.destroy();
    }
    if (handler !== undefined) handler.failure(err, retryable);
  }

  private onData(d: Buffer): void {
    if (this.handler === undefined) {
      // bytes nobody asked for: the connection cannot be trusted any more
      this.fail(new H1Error('unexpected data', 'UND_ERR_SOCKET'));
      return;
    }
    this.buf = this.buf === undefined ? d : Buffer.concat([this.buf, d]);
    while (this.buf !== undefined && this.handler !== undefined) {
      if (!this.step()) return;
    }
  }

  private take(n: number): Buffer {
    const b = this.buf!;
    const out = b.subarray(0, n);
    this.buf = n === b.length ? undefined : b.subarray(n);
    return out;
  }

  private addBody(chunk: Buffer): boolean {
    this.bodySize += chunk.length;
    if (this.bodySize > this.endpoint.options.maxResponseBytes) {
      this.fail(new H1Error('response too large', 'UND_ERR_RES_EXCEEDED_MAX_SIZE'));
      return false;
    }
    this.body.push(chunk);
    return true;
  }

  /** Parses what it can; false when it needs more bytes (or the connection failed). */
  private step(): boolean {
    const b = this.buf!;
    switch (this.phase) {
      case Phase.Head: {
        const end = b.indexOf(CRLF2);
        if (end < 0) {
          if (b.length > MAX_HEAD_BYTES) this.fail(new H1Error('response head too large', 'UND_ERR_HEADERS_OVERFLOW'));
          return false;
        }
        const text = b.toString('latin1', 0, end);
        this.buf = end + 4 === b.length ? undefined : b.subarray(end + 4);
        return this.parseHead(text);
      }
      case Phase.Length: {
        const n = Math.min(this.remaining, b.length);
        if (!this.addBody(this.take(n))) return false;
        this.remaining -= n;
        if (this.remaining === 0) this.finish();
        return true;
      }
      case Phase.Chunked:
        return this.chunk();
      case Phase.UntilClose:
        this.buf = undefined;
        return this.addBody(b) && false;
      default:
        this.fail(new H1Error('unexpected data', 'UND_ERR_SOCKET'));
        return false;
    }
  }

  private parseHead(text: string): boolean {
    const lines = text.split('\r\n');
    const m = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]!);
    if (m === null) {
      this.fail(new H1Error('malformed status line', 'HPE_INVALID_CONSTANT'));
      return false;
    }
    const status = Number(m[2]);
    let length = -1;
    let chunked = false;
    let connection = '';
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]!;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const c0 = line.charCodeAt(0) | 0x20;
      // only the framing headers matter here: content-length, transfer-encoding, connection
      if (c0 !== 0x63 && c0 !== 0x74) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      if (name === 'content-length') {
        const v = line.slice(colon + 1).trim();
        if (!/^\d+$/.test(v) || (length >= 0 && Number(v) !== length)) {
          this.fail(new H1Error('bad content-length', 'HPE_INVALID_CONTENT_LENGTH'));
          return false;
        }
        length = Number(v);
      } else if (name === 'transfer-encoding') {
        chunked = /(?:^|,)\s*chunked\s*$/i.test(line.slice(colon + 1));
      } else if (name === 'connection') {
        connection += ',' + line.slice(colon + 1).toLowerCase();
      }
    }
    if (status < 200) {
      // informational: the final response follows
      return true;
    }
    this.status = status;
    this.keepAlive = m[1] === '1' ? !/(?:^|,)\s*close\s*(?:,|$)/.test(connection) : /(?:^|,)\s*keep-alive\s*(?:,|$)/.test(connection);
    this.body = [];
    this.bodySize = 0;
    if (this.head || status === 204 || status === 304) {
      this.finish();
      return true;
    }
    if (chunked) {
      this.phase = Phase.Chunked;
      this.remaining = CHUNK_SIZE_LINE;
    } else if (length >= 0) {
      if (length > this.endpoint.options.maxResponseBytes) {
        this.fail(new H1Error('response too large', 'UND_ERR_RES_EXCEEDED_MAX_SIZE'));
        return false;
      }
      this.remaining = length;
      this.phase = Phase.Length;
      if (length === 0) this.finish();
    } else {
      this.phase = Phase.UntilClose;
      this.keepAlive = false;
    }
    return true;
  }

  /** One step of a chunked body: a size line, the chunk's data, the CRLF after it, or the trailers. */
  private chunk(): boolean {
    const b = this.buf!;
    if (this.remaining === CHUNK_SIZE_LINE || this.remaining === CHUNK_TRAILERS) {
      const eol = b.indexOf('\r\n');
      if (eol < 0) {
        if (b.length > MAX_HEAD_BYTES) this.fail(new H1Error('bad chunk framing', 'HPE_INVALID_CHUNK_SIZE'));
        return false;
      }
      if (this.remaining === CHUNK_TRAILERS) {
        this.take(eol + 2);
        if (eol === 0) this.finish();
        return this.buf !== undefined;
      }
      const text = b.toString('latin1', 0, eol).split(';')[0]!.trim();
      if (!/^[0-9a-fA-F]{1,8}$/.test(text)) {
        this.fail(new H1Error('bad chunk size', 'HPE_INVALID_CHUNK_SIZE'));
        return false;
      }
      this.take(eol + 2);
      const size = parseInt(text, 16);
      this.remaining = size === 0 ? CHUNK_TRAILERS : size;
      return this.buf !== undefined;
    }
    if (this.remaining === CHUNK_DATA_END) {
      if (b.length < 2) return false;
      if (b[0] !== 13 || b[1] !== 10) {
        this.fail(new H1Error('bad chunk framing', 'HPE_INVALID_CHUNK_SIZE'));
        return false;
      }
      this.take(2);
      this.remaining = CHUNK_SIZE_LINE;
      return this.buf !== undefined;
    }
    const n = Math.min(this.remaining, b.length);
    if (!this.addBody(this.take(n))) return false;
    this.remaining -= n;
    if (this.remaining === 0) this.remaining = CHUNK_DATA_END;
    return this.buf !== undefined;
  }

  private finish(): void {
    const handler = this.handler!;
    const status = this.status;
    const body = this.bodySize === 0 ? undefined : this.body.length === 1 ? this.body[0]! : Buffer.concat(this.body, this.bodySize);
    this.handler = undefined;
    this.phase = Phase.Idle;
    this.body = [];
    this.bodySize = 0;
    this.responses++;
    if (this.buf !== undefined || !this.keepAlive) {
      // bytes past the response (or the server said close): not reusable
      this.dead = true;
      this.socket.destroy();
    } else {
      this.idleSince = Date.now();
      this.endpoint.release(this);
    }
    handler.response(status, body);
  }
}
