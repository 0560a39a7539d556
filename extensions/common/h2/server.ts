// A minimal HTTP/2 server (RFC 9113, cleartext with prior knowledge: what Envoy's gRPC client speaks to a
// cluster with http2_protocol_options) on node:net, for the extensions' unary gRPC calls.
//
// Why not node:http2: a call through it is a Duplex stream, header objects built and validated both
// ways, a date header, trailers sent from a setImmediate and a destroy sequence; on a rate-limit decision
// that was most of the service's CPU (bench: ratelimit-remote). Here a stream is a small object, the
// handler gets the request's DATA payloads as they come, and the answer is pre-encoded header blocks and
// DATA frames appended to the connection's output, written once per event-loop turn for all streams.
//
// What it implements: the connection preface, SETTINGS (ours and the peer's, acknowledged), PING,
// GOAWAY both ways, RST_STREAM, WINDOW_UPDATE and flow control of what we send (queued per stream until
// the windows allow), HEADERS with CONTINUATION, padding and priority, DATA, PRIORITY (ignored), HPACK
// (extensions/common/h2/hpack.ts). What it leaves out: TLS and h2c upgrade (Envoy connects with prior
// knowledge), server push, stream priorities. Connection errors answer GOAWAY with the RFC's code and
// close; stream errors RST_STREAM.
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { HpackDecoder, HpackError } from './hpack.js';

const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

const enum FrameType {
  DATA = 0,
  HEADERS = 1,
  PRIORITY = 2,
  RST_STREAM = 3,
  SETTINGS = 4,
  PUSH_PROMISE = 5,
  PING = 6,
  GOAWAY = 7,
  WINDOW_UPDATE = 8,
  CONTINUATION = 9,
}

const END_STREAM = 0x1;
const ACK = 0x1;
const END_HEADERS = 0x4;
const PADDED = 0x8;
const PRIORITY_FLAG = 0x20;

export const H2Error = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

const SETTINGS_ENABLE_PUSH = 2;
const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
const SETTINGS_INITIAL_WINDOW_SIZE = 4;
const SETTINGS_MAX_FRAME_SIZE = 5;
const SETTINGS_MAX_HEADER_LIST_SIZE = 6;

const DEFAULT_WINDOW = 65_535;
const MAX_WINDOW = 2 ** 31 - 1;
/** the largest frame payload we accept (the protocol default: we do not advertise more) */
const MAX_FRAME_PAYLOAD = 16_384;
/** a header block (HEADERS and its CONTINUATIONs) beyond this is a flood, not a request */
const MAX_HEADER_BLOCK = 64 * 1024;
/** Our receive window per stream: a whole message of the unary servers' limit fits, so no stream
 * WINDOW_UPDATE is ever needed. The connection window is opened to the maximum at once and topped up
 * as data is consumed. */
const STREAM_RECEIVE_WINDOW = 8 * 1024 * 1024;
const CONNECTION_TOP_UP = 64 * 1024 * 1024;

/** What a stream's owner is told. */
export interface H2StreamHandler {
  /** a DATA payload (a view into the read buffer: copy it to keep it past this call) */
  onData(chunk: Buffer): void;
  /** the client half-closed (END_STREAM) */
  onEnd(): void;
  /** the client reset the stream or the connection went away before the answer was complete */
  onAbort?(): void;
}

export interface H2ServerOptions {
  maxConcurrentStreams?: number;
  /** A new stream, its headers decoded. Returns its handler, or answers it at once and returns undefined. */
  onStream(stream: H2ServerStream): H2StreamHandler | undefined;
  /** a connection or server failure worth logging (never a client that went away) */
  onError(what: string, err: unknown): void;
}

export interface H2Server {
  port: number;
  /** Stops accepting connections, sends GOAWAY on open ones, closes them when their streams are done or after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

/** A server-side stream as its owner uses it. */
export class H2ServerStream {
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

  constructor(
    readonly id: number,
    headers: [string, string][],
    private readonly conn: Connection,
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

  /** Sends the response header block (HPACK, see encodeHeaders); endStream: nothing follows. */
  respond(block: Buffer, endStream = false): void {
    if (this.closed || this.headersSent) return;
    this.headersSent = true;
    this.conn.sendHeaders(this, block, endStream);
  }

  /** Sends DATA (split to the peer's frame size, queued while the flow-control windows are closed). */
  write(data: Buffer): void {
    if (this.closed || !this.headersSent) return;
    this.conn.sendData(this, data, false);
  }

  /** Ends the answer: the trailers' header block, or an empty DATA frame with END_STREAM. */
  end(trailers?: Buffer): void {
    if (this.closed || !this.headersSent) return;
    if (trailers) this.conn.sendTrailers(this, trailers);
    else this.conn.sendData(this, Buffer.alloc(0), true);
  }
}

class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** The 9-byte header of a frame (RFC 9113 4.1); exported for tests that speak raw HTTP/2. */
export function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b.writeUIntBE(length, 0, 3);
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(streamId, 5);
  return b;
}

class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private prefaceSeen = false;
  private readonly decoder = new HpackDecoder(4096);
  private readonly streams = new Map<number, H2ServerStream>();
  private lastStreamId = 0;
  /** a header block in progress: HEADERS without END_HEADERS, waiting for CONTINUATION */
  private headerBlock: { streamId: number; parts: Buffer[]; length: number; endStream: boolean } | undefined;
  private out: Buffer[] = [];
  private flushScheduled = false;
  private inDataHandler = false;
  // the peer's settings that shape what we send
  private peerInitialWindow = DEFAULT_WINDOW;
  private peerMaxFrame = 16_384;
  private connSendWindow = DEFAULT_WINDOW;
  /** DATA bytes received since the last connection WINDOW_UPDATE */
  private consumed = 0;
  /** streams with something waiting for window, in order */
  private readonly blocked = new Set<H2ServerStream>();
  private goingAway = false;
  private closed = false;

  constructor(
    private readonly socket: net.Socket,
    private readonly options: H2ServerOptions,
    private readonly maxStreams: number,
    private readonly onClosed: (c: Connection) => void,
  ) {
    socket.setNoDelay(true);
    // our SETTINGS first (a server may send them before the client's preface), and the connection window opened
    const settings: [number, number][] = [
      [SETTINGS_MAX_CONCURRENT_STREAMS, maxStreams],
      [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_RECEIVE_WINDOW],
      [SETTINGS_MAX_HEADER_LIST_SIZE, MAX_HEADER_BLOCK],
      [SETTINGS_ENABLE_PUSH, 0],
    ];
    const payload = Buffer.allocUnsafe(settings.length * 6);
    settings.forEach(([id, value], i) => {
      payload.writeUInt16BE(id, i * 6);
      payload.writeUInt32BE(value, i * 6 + 2);
    });
    this.queue(frameHeader(payload.length, FrameType.SETTINGS, 0, 0), payload);
    this.queueWindowUpdate(0, MAX_WINDOW - DEFAULT_WINDOW);
    this.flush();
    socket.on('data', (chunk: Buffer) => this.onSocketData(chunk));
    socket.on('error', () => undefined); // a peer that goes away is not an error; 'close' follows
    socket.on('close', () => this.onSocketClose());
  }

  /** GOAWAY (NO_ERROR): no new streams; the connection closes when the open ones are done. */
  shutdown(): void {
    if (this.closed || this.goingAway) return;
    this.goingAway = true;
    this.sendGoaway(H2Error.NO_ERROR);
    this.flush();
    if (this.streams.size === 0) this.socket.end();
  }

  destroy(): void {
    this.socket.destroy();
  }

  // ---- reading

  private onSocketData(chunk: Buffer): void {
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    this.inDataHandler = true;
    try {
      this.parse();
    } catch (err) {
      if (err instanceof ConnectionError) this.fail(err.code, err.message);
      else {
        this.options.onError('http2 connection', err);
        this.fail(H2Error.INTERNAL_ERROR, 'internal error');
      }
    } finally {
      this.inDataHandler = false;
    }
    // everything the handlers answered synchronously goes out in one write
    this.flush();
  }

  private parse(): void {
    let buf = this.buf;
    let off = 0;
    if (!this.prefaceSeen) {
      if (buf.length < PREFACE.length) {
        if (!PREFACE.subarray(0, buf.length).equals(buf)) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'not an HTTP/2 client preface');
        return;
      }
      if (!buf.subarray(0, PREFACE.length).equals(PREFACE))
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'not an HTTP/2 client preface');
      this.prefaceSeen = true;
      off = PREFACE.length;
    }
    while (!this.closed && buf.length - off >= 9) {
      const length = buf.readUIntBE(off, 3);
      if (length > MAX_FRAME_PAYLOAD) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, `frame of ${length} bytes`);
      if (buf.length - off < 9 + length) break;
      const type = buf[off + 3]!;
      const flags = buf[off + 4]!;
      const streamId = buf.readUInt32BE(off + 5) & 0x7fffffff;
      const payload = buf.subarray(off + 9, off + 9 + length);
      off += 9 + length;
      this.onFrame(type, flags, streamId, payload);
    }
    // keep the unread tail (copied when small, so the big read buffer it came from can go)
    buf = this.buf;
    this.buf = off >= buf.length ? Buffer.alloc(0) : off === 0 ? buf : Buffer.from(buf.subarray(off));
  }

  private onFrame(type: number, flags: number, streamId: number, payload: Buffer): void {
    if (this.headerBlock && (type !== FrameType.CONTINUATION || streamId !== this.headerBlock.streamId))
      throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'expected CONTINUATION');
    switch (type) {
      case FrameType.DATA:
        return this.onDataFrame(flags, streamId, payload);
      case FrameType.HEADERS:
        return this.onHeadersFrame(flags, streamId, payload);
      case FrameType.CONTINUATION:
        return this.onContinuation(flags, streamId, payload);
      case FrameType.PRIORITY:
        if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'PRIORITY on stream 0');
        if (payload.length !== 5) this.resetId(streamId, H2Error.FRAME_SIZE_ERROR);
        return;
      case FrameType.RST_STREAM:
        return this.onRstStream(streamId, payload);
      case FrameType.SETTINGS:
        return this.onSettings(flags, streamId, payload);
      case FrameType.PUSH_PROMISE:
        throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'PUSH_PROMISE from a client');
      case FrameType.PING:
        if (streamId !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'PING on a stream');
        if (payload.length !== 8) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'PING of the wrong size');
        if (!(flags & ACK)) this.queue(frameHeader(8, FrameType.PING, ACK, 0), Buffer.from(payload));
        return;
      case FrameType.GOAWAY:
        if (streamId !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'GOAWAY on a stream');
        // the client opens no more streams; the ones open finish
        this.goingAway = true;
        if (this.streams.size === 0) this.socket.end();
        return;
      case FrameType.WINDOW_UPDATE:
        return this.onWindowUpdate(streamId, payload);
      default:
        return; // unknown frame types are ignored (RFC 9113 5.5)
    }
  }

  /** The payload without its padding (PADDED flag), or a PROTOCOL_ERROR. */
  private unpad(flags: number, payload: Buffer): Buffer {
    if (!(flags & PADDED)) return payload;
    if (payload.length < 1) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'padded frame without a pad length');
    const pad = payload[0]!;
    if (pad >= payload.length) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'padding longer than the frame');
    return payload.subarray(1, payload.length - pad);
  }

  private onDataFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on stream 0');
    // the whole frame, padding included, counts against the connection window
    this.consumed += payload.length;
    if (this.consumed >= CONNECTION_TOP_UP) {
      this.queueWindowUpdate(0, this.consumed);
      this.consumed = 0;
    }
    const data = this.unpad(flags, payload);
    const stream = this.streams.get(streamId);
    if (!stream) {
      if (streamId > this.lastStreamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
      return; // a stream we finished or reset: what was in flight is dropped
    }
    if (stream.remoteEnded) {
      this.resetStream(stream, H2Error.STREAM_CLOSED, true);
      return;
    }
    stream.received += payload.length;
    if (stream.received > STREAM_RECEIVE_WINDOW) {
      this.resetStream(stream, H2Error.FLOW_CONTROL_ERROR, true);
      return;
    }
    if (data.length) stream.handler?.onData(data);
    if (flags & END_STREAM && !stream.closed) this.remoteEnd(stream);
  }

  private onHeadersFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let block = this.unpad(flags, payload);
    if (flags & PRIORITY_FLAG) {
      if (block.length < 5) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS too short for its priority');
      block = block.subarray(5);
    }
    if (flags & END_HEADERS) this.onHeaderBlock(streamId, block, (flags & END_STREAM) !== 0);
    else this.headerBlock = { streamId, parts: [Buffer.from(block)], length: block.length, endStream: (flags & END_STREAM) !== 0 };
  }

  private onContinuation(flags: number, streamId: number, payload: Buffer): void {
    const hb = this.headerBlock;
    if (!hb || hb.streamId !== streamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'CONTINUATION without HEADERS');
    hb.length += payload.length;
    if (hb.length > MAX_HEADER_BLOCK) throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'header block too large');
    hb.parts.push(Buffer.from(payload));
    if (flags & END_HEADERS) {
      this.headerBlock = undefined;
      this.onHeaderBlock(streamId, Buffer.concat(hb.parts, hb.length), hb.endStream);
    }
  }

  private onHeaderBlock(streamId: number, block: Buffer, endStream: boolean): void {
    // decoded whatever becomes of the stream: the HPACK table must follow every block
    const fields: [string, string][] = [];
    try {
      this.decoder.decode(block, (name, value) => void fields.push([name, value]));
    } catch (err) {
      if (err instanceof HpackError) throw new ConnectionError(H2Error.COMPRESSION_ERROR, err.message);
      throw err;
    }
    const existing = this.streams.get(streamId);
    if (existing) {
      // trailers from the client: they must end the stream
      if (!endStream || existing.remoteEnded) {
        this.resetStream(existing, H2Error.PROTOCOL_ERROR, true);
        return;
      }
      this.remoteEnd(existing);
      return;
    }
    if (streamId % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'a client stream with an even id');
    if (streamId <= this.lastStreamId) return; // trailers of a stream we already finished or reset
    this.lastStreamId = streamId;
    if (this.goingAway) return; // after our GOAWAY new streams are ignored (the client retries them elsewhere)
    if (this.streams.size >= this.maxStreams) {
      this.resetId(streamId, H2Error.REFUSED_STREAM);
      return;
    }
    const stream = new H2ServerStream(streamId, fields, this, this.peerInitialWindow);
    this.streams.set(streamId, stream);
    // a request without a body is complete already: an answer from onStream must not reset it
    if (endStream) stream.remoteEnded = true;
    stream.handler = this.options.onStream(stream);
    if (endStream && !stream.closed) stream.handler?.onEnd();
  }

  private remoteEnd(stream: H2ServerStream): void {
    stream.remoteEnded = true;
    stream.handler?.onEnd();
  }

  private onRstStream(streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on stream 0');
    if (payload.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'RST_STREAM of the wrong size');
    if (streamId > this.lastStreamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'RST_STREAM on an idle stream');
    const stream = this.streams.get(streamId);
    if (stream) this.resetStream(stream, H2Error.CANCEL, false);
  }

  private onSettings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & ACK) {
      if (payload.length) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      return;
    }
    if (payload.length % 6) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    for (let i = 0; i < payload.length; i += 6) {
      const id = payload.readUInt16BE(i);
      const value = payload.readUInt32BE(i + 2);
      if (id === SETTINGS_INITIAL_WINDOW_SIZE) {
        if (value > MAX_WINDOW) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'initial window too large');
        const delta = value - this.peerInitialWindow;
        this.peerInitialWindow = value;
        for (const s of this.streams.values()) s.sendWindow += delta;
      } else if (id === SETTINGS_MAX_FRAME_SIZE) {
        if (value < 16_384 || value > 16_777_215) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad max frame size');
        this.peerMaxFrame = value;
      } else if (id === SETTINGS_ENABLE_PUSH) {
        if (value > 1) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'bad enable push');
      }
      // (HEADER_TABLE_SIZE: we never index what we send, so the peer's table size does not matter to us)
    }
    this.queue(frameHeader(0, FrameType.SETTINGS, ACK, 0));
    this.unblock();
  }

  private onWindowUpdate(streamId: number, payload: Buffer): void {
    if (payload.length !== 4) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'WINDOW_UPDATE of the wrong size');
    const inc = payload.readUInt32BE(0) & 0x7fffffff;
    if (streamId === 0) {
      if (inc === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE of 0');
      this.connSendWindow += inc;
      if (this.connSendWindow > MAX_WINDOW) throw new ConnectionError(H2Error.FLOW_CONTROL_ERROR, 'connection window overflow');
    } else {
      const stream = this.streams.get(streamId);
      if (!stream) return;
      if (inc === 0) {
        this.resetStream(stream, H2Error.PROTOCOL_ERROR, true);
        return;
      }
      stream.sendWindow += inc;
      if (stream.sendWindow > MAX_WINDOW) {
        this.resetStream(stream, H2Error.FLOW_CONTROL_ERROR, true);
        return;
      }
    }
    this.unblock();
  }

  // ---- writing

  private queue(...bufs: Buffer[]): void {
    for (const b of bufs) this.out.push(b);
    if (!this.inDataHandler && !this.flushScheduled) {
      this.flushScheduled = true;
      setImmediate(() => {
        this.flushScheduled = false;
        this.flush();
      });
    }
  }

  private flush(): void {
    if (!this.out.length || this.socket.destroyed) {
      this.out = [];
      return;
    }
    const out = this.out;
    this.out = [];
    // a peer that stops reading stops being read: what we owe it waits in the socket, bounded by the
    // socket's high-water mark, instead of growing with every request it keeps sending
    if (!this.socket.write(out.length === 1 ? out[0]! : Buffer.concat(out)) && !this.socket.isPaused()) {
      this.socket.pause();
      this.socket.once('drain', () => this.socket.resume());
    }
  }

  private queueWindowUpdate(streamId: number, inc: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(inc, 0);
    this.queue(frameHeader(4, FrameType.WINDOW_UPDATE, 0, streamId), p);
  }

  /** A header block as HEADERS (+ CONTINUATION when over the peer's frame size). */
  private queueHeaderBlock(streamId: number, block: Buffer, endStream: boolean): void {
    const max = this.peerMaxFrame;
    if (block.length <= max) {
      this.queue(frameHeader(block.length, FrameType.HEADERS, END_HEADERS | (endStream ? END_STREAM : 0), streamId), block);
      return;
    }
    this.queue(frameHeader(max, FrameType.HEADERS, endStream ? END_STREAM : 0, streamId), block.subarray(0, max));
    for (let off = max; off < block.length; off += max) {
      const part = block.subarray(off, Math.min(off + max, block.length));
      const last = off + max >= block.length;
      this.queue(frameHeader(part.length, FrameType.CONTINUATION, last ? END_HEADERS : 0, streamId), part);
    }
  }

  sendHeaders(stream: H2ServerStream, block: Buffer, endStream: boolean): void {
    this.queueHeaderBlock(stream.id, block, endStream);
    if (endStream) this.closeStream(stream);
  }

  sendData(stream: H2ServerStream, data: Buffer, end: boolean): void {
    if (stream.pending) {
      if (data.length) stream.pending.data.push(data);
      stream.pending.end ||= end;
      return;
    }
    const rest = this.sendAllowed(stream, data, end);
    if (rest !== undefined) {
      stream.pending = { data: rest.length ? [rest] : [], trailers: undefined, end };
      this.blocked.add(stream);
    }
  }

  sendTrailers(stream: H2ServerStream, block: Buffer): void {
    if (stream.pending) {
      stream.pending.trailers = block;
      return;
    }
    this.queueHeaderBlock(stream.id, block, true);
    this.closeStream(stream);
  }

  /** Sends what the windows allow of data; returns what is left (undefined: all sent, end included). */
  private sendAllowed(stream: H2ServerStream, data: Buffer, end: boolean): Buffer | undefined {
    let off = 0;
    if (data.length === 0 && end) {
      this.queue(frameHeader(0, FrameType.DATA, END_STREAM, stream.id));
      this.closeStream(stream);
      return undefined;
    }
    while (off < data.length) {
      const n = Math.min(data.length - off, this.peerMaxFrame, this.connSendWindow, stream.sendWindow);
      if (n <= 0) return data.subarray(off);
      const last = off + n === data.length;
      this.queue(frameHeader(n, FrameType.DATA, last && end ? END_STREAM : 0, stream.id), data.subarray(off, off + n));
      off += n;
      this.connSendWindow -= n;
      stream.sendWindow -= n;
    }
    if (end) this.closeStream(stream);
    return undefined;
  }

  /** The windows opened: send what waits, in order. */
  private unblock(): void {
    streams: for (const stream of this.blocked) {
      const p = stream.pending!;
      while (p.data.length) {
        const rest = this.sendAllowed(stream, p.data[0]!, p.end && p.data.length === 1 && !p.trailers);
        if (rest !== undefined) {
          p.data[0] = rest;
          if (this.connSendWindow <= 0) return;
          continue streams; // this stream's window is shut: the next may still send
        }
        p.data.shift();
      }
      this.blocked.delete(stream);
      stream.pending = undefined;
      if (p.trailers) {
        this.queueHeaderBlock(stream.id, p.trailers, true);
        this.closeStream(stream);
      } else if (p.end && !stream.closed) this.sendAllowed(stream, Buffer.alloc(0), true);
    }
  }

  private closeStream(stream: H2ServerStream): void {
    if (stream.closed) return;
    stream.closed = true;
    this.streams.delete(stream.id);
    this.blocked.delete(stream);
    // answered before the client finished its request: ask it to stop sending, without error (RFC 9113 8.1)
    if (!stream.remoteEnded) this.resetId(stream.id, H2Error.NO_ERROR);
    if (this.goingAway && this.streams.size === 0) {
      this.flush();
      this.socket.end();
    }
  }

  private resetStream(stream: H2ServerStream, code: number, send: boolean): void {
    if (stream.closed) return;
    if (send) this.resetId(stream.id, code);
    stream.remoteEnded = true; // no second reset from closeStream
    this.closeStream(stream);
    stream.pending = undefined;
    stream.handler?.onAbort?.();
  }

  private resetId(streamId: number, code: number): void {
    const p = Buffer.allocUnsafe(4);
    p.writeUInt32BE(code, 0);
    this.queue(frameHeader(4, FrameType.RST_STREAM, 0, streamId), p);
  }

  private sendGoaway(code: number, debug = ''): void {
    const d = Buffer.from(debug, 'utf8');
    const p = Buffer.allocUnsafe(8 + d.length);
    p.writeUInt32BE(this.lastStreamId, 0);
    p.writeUInt32BE(code, 4);
    d.copy(p, 8);
    this.queue(frameHeader(p.length, FrameType.GOAWAY, 0, 0), p);
  }

  /** A connection error: GOAWAY with its code, then close. */
  private fail(code: number, message: string): void {
    if (this.closed) return;
    this.sendGoaway(code, message);
    this.flush();
    this.closed = true;
    this.socket.end();
    // a peer that does not close its side after our GOAWAY is cut off
    setTimeout(() => this.socket.destroy(), 1000).unref();
    this.abortAll();
  }

  private abortAll(): void {
    const open = [...this.streams.values()];
    this.streams.clear();
    this.blocked.clear();
    for (const s of open) {
      s.closed = true;
      s.pending = undefined;
      s.handler?.onAbort?.();
    }
  }

  private onSocketClose(): void {
    this.closed = true;
    this.abortAll();
    this.onClosed(this);
  }
}

/** Listens for HTTP/2 connections with prior knowledge; every stream goes to options.onStream. */
export function listenH2(host: string, port: number, options: H2ServerOptions): Promise<H2Server> {
  const connections = new Set<Connection>();
  const maxStreams = options.maxConcurrentStreams ?? 100_000;
  const server = net.createServer((socket) => {
    connections.add(new Connection(socket, options, maxStreams, (c) => connections.delete(c)));
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.on('error', (err) => options.onError('http2 server', err));
      resolve({
        port: (server.address() as AddressInfo).port,
        stop: (graceMs = 2000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => {
              for (const c of connections) c.destroy();
            }, graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            for (const c of connections) c.shutdown();
          }),
      });
    });
  });
}
