// One HTTP/2 connection of the server: reading and checking frames, the RFC 9113 5.1 stream states, flow
// control of what we send, the abuse limits (limits.ts), and writing once per event-loop turn.
import type net from 'node:net';
import {
  ACK,
  ConnectionError,
  DEFAULT_WINDOW,
  END_HEADERS,
  END_STREAM,
  FrameType,
  H2Error,
  MAX_FRAME_PAYLOAD,
  MAX_WINDOW,
  PREFACE,
  PRIORITY_FLAG,
  SETTINGS_ENABLE_PUSH,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  SETTINGS_MAX_FRAME_SIZE,
  SETTINGS_MAX_HEADER_LIST_SIZE,
  frameHeader,
  goawayFrame,
  settingsFrame,
  uint32Frame,
  unpad,
} from './frames.js';
import { HpackDecoder, HpackError } from './hpack.js';
import { limitHits, type H2Limit, type H2Limits } from './limits.js';
import { H2ServerStream, RequestCheck } from './stream.js';
import type { H2StreamHandler } from './transport.js';

/** Our receive window per stream: a whole message of the unary servers' limit fits, so no stream
 * WINDOW_UPDATE is ever needed. The connection window is opened to the maximum at once and topped up
 * as data is consumed. */
const STREAM_RECEIVE_WINDOW = 8 * 1024 * 1024;
const CONNECTION_TOP_UP = 64 * 1024 * 1024;
/** how many closed streams the connection remembers, to tell frames in flight from frames on a closed stream: one
 * slot per client stream id modulo this (a power of two), so the latest 2 x this many ids, client ids being odd */
const CLOSED_REMEMBERED = 1024;

/** How a stream that is no longer open ended (RFC 9113 5.1 closed state): which frames on it are in flight. */
const enum Closed {
  /** both sides sent END_STREAM */
  ENDED,
  /** we sent RST_STREAM: what the peer sent before it arrived is dropped */
  RESET_BY_US,
  /** the peer sent RST_STREAM: it must send nothing more */
  RESET_BY_PEER,
}

/** What the connection needs of its server. */
export interface ConnectionOwner {
  /** A new stream, its headers decoded. Returns its handler, or answers it at once and returns undefined. */
  onStream(stream: H2ServerStream): H2StreamHandler | undefined;
  /** a connection failure worth logging (never a client that went away) */
  onError(what: string, err: unknown): void;
}

export class Connection {
  private buf: Buffer = Buffer.alloc(0);
  private prefaceSeen = false;
  /** a decoded list beyond maxHeaderListBytes refuses its stream; one far beyond (indexed fields repeated: a
   * decompression bomb) ends the connection */
  private readonly decoder: HpackDecoder;
  private readonly streams = new Map<number, H2ServerStream>();
  /** streams answered before the client ended its request (half-closed local): they still count as open */
  private readonly answered = new Map<number, H2ServerStream>();
  /** recently closed streams and how they closed: a ring by stream id (ids, and Closed per slot), allocated at the first
   * close (a map of ids churned on every stream, and was a good part of a call's cost) */
  private closedIds: Int32Array | undefined;
  private closedHow: Uint8Array | undefined;
  /** the request checks, kept by the connection (they allocate nothing per block) */
  private readonly requestCheck = new RequestCheck();
  /** the header block being decoded: its fields (up to the list limit) and its decoded size */
  private blockFields: [string, string][] = [];
  private blockListSize = 0;
  private readonly onField = (name: string, value: string, kind: number): void => {
    this.blockListSize += name.length + value.length + 32;
    if (this.blockListSize <= this.limits.maxHeaderListBytes) this.blockFields.push([name, value]);
    this.requestCheck.field(name, value, kind);
  };
  private lastStreamId = 0;
  /** a header block in progress: HEADERS without END_HEADERS, waiting for CONTINUATION */
  private headerBlock:
    { streamId: number; parts: Buffer[]; length: number; frames: number; endStream: boolean; selfDependent: boolean } | undefined;
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
  /** frames counted against the flood limits in the current window */
  private flood = { start: 0, rapidResets: 0, settings: 0, pings: 0, emptyFrames: 0, droppedBytes: 0 };
  /** request body bytes delivered to the streams not yet answered */
  private heldBody = 0;
  private timer: NodeJS.Timeout | undefined;
  /** until the client acknowledges our SETTINGS */
  private settingsAckTimer: NodeJS.Timeout | undefined;
  private lastActivity = Date.now();

  constructor(
    private readonly socket: net.Socket,
    private readonly options: ConnectionOwner,
    private readonly maxStreams: number,
    private readonly limits: H2Limits,
    private readonly onClosed: (c: Connection) => void,
  ) {
    socket.setNoDelay(true);
    this.decoder = new HpackDecoder(4096, 16 * limits.maxHeaderListBytes);
    this.timer = setTimeout(() => this.onTimer(), limits.prefaceTimeoutMs).unref();
    this.settingsAckTimer = setTimeout(() => {
      this.settingsAckTimer = undefined;
      if (this.closed) return;
      limitHits.settings_timeout++;
      this.fail(H2Error.SETTINGS_TIMEOUT, 'SETTINGS not acknowledged');
    }, limits.settingsAckTimeoutMs).unref();
    // our SETTINGS first (a server may send them before the client's preface), and the connection window opened
    const settings: [number, number][] = [
      [SETTINGS_MAX_CONCURRENT_STREAMS, maxStreams],
      [SETTINGS_INITIAL_WINDOW_SIZE, STREAM_RECEIVE_WINDOW],
      [SETTINGS_MAX_HEADER_LIST_SIZE, limits.maxHeaderListBytes],
      [SETTINGS_ENABLE_PUSH, 0],
    ];
    this.queue(settingsFrame(settings));
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

  /** The preface timeout, then the idle check. */
  private onTimer(): void {
    this.timer = undefined;
    if (this.closed) return;
    if (!this.prefaceSeen) {
      limitHits.preface_timeout++;
      this.socket.destroy();
      return;
    }
    const idle = this.limits.idleTimeoutMs;
    if (!idle) return;
    const quiet = Date.now() - this.lastActivity;
    if (this.streams.size === 0 && this.answered.size === 0 && quiet >= idle) {
      limitHits.idle_timeout++;
      this.shutdown();
      return;
    }
    this.timer = setTimeout(() => this.onTimer(), Math.max(idle - quiet, 1000)).unref();
  }

  /** Counts a frame against a flood limit; over it, the connection is stopped. */
  private count(kind: 'rapidResets' | 'settings' | 'pings' | 'emptyFrames', limit: H2Limit): void {
    if (++this.floodCounts()[kind] > this.limits[kind])
      throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, `too many ${limit.replace('_', ' ')}`, limit);
  }

  /** Counts DATA no handler will read (its stream reset by us or already answered). A client that keeps sending
   * bodies past the body budget in a flood window is stopped: every byte read is garbage until the next GC, and
   * a fast sender outruns it (Envoy sends at most what is in flight when a stream ends). */
  private dropped(bytes: number): void {
    if ((this.floodCounts().droppedBytes += bytes) > this.limits.connectionBodyBytes)
      throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too much DATA on streams already ended', 'dropped_body');
  }

  private floodCounts(): typeof this.flood {
    const now = Date.now();
    if (now - this.flood.start >= this.limits.floodWindowMs)
      this.flood = { start: now, rapidResets: 0, settings: 0, pings: 0, emptyFrames: 0, droppedBytes: 0 };
    return this.flood;
  }

  // ---- reading

  private onSocketData(chunk: Buffer): void {
    this.lastActivity = Date.now();
    this.inDataHandler = true;
    try {
      if (this.buf.length && this.prefaceSeen) {
        // a frame in progress: only what completes it is copied out of the chunk, the rest is parsed in place (a
        // whole-chunk copy per read was most of the garbage of a client streaming large bodies)
        const rest = this.completeFrame(chunk);
        if (rest === undefined) return;
        this.parse();
        if (this.closed) return;
        this.buf = rest;
      } else this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
      this.parse();
    } catch (err) {
      if (err instanceof ConnectionError) {
        if (err.limit) limitHits[err.limit]++;
        this.fail(err.code, err.message);
      } else {
        this.options.onError('http2 connection', err);
        this.fail(H2Error.INTERNAL_ERROR, 'internal error');
      }
    } finally {
      this.inDataHandler = false;
    }
    // everything the handlers answered synchronously goes out in one write
    this.flush();
  }

  /** Appends to the frame in progress (this.buf) what completes it from `chunk`; the rest of the chunk, or undefined
   * when the frame is still incomplete. */
  private completeFrame(chunk: Buffer): Buffer | undefined {
    let head = this.buf;
    let at = 0;
    if (head.length < 9) {
      at = Math.min(chunk.length, 9 - head.length);
      head = Buffer.concat([head, chunk.subarray(0, at)]);
      if (head.length < 9) {
        this.buf = head;
        return undefined;
      }
    }
    const length = head.readUIntBE(0, 3);
    if (length > MAX_FRAME_PAYLOAD) {
      this.buf = head; // parse() refuses it
      return chunk.subarray(at);
    }
    const take = Math.min(chunk.length - at, 9 + length - head.length);
    if (take > 0) head = Buffer.concat([head, chunk.subarray(at, at + take)]);
    this.buf = head;
    return head.length < 9 + length ? undefined : chunk.subarray(at + take);
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
      if (this.timer) clearTimeout(this.timer);
      this.timer = this.limits.idleTimeoutMs ? setTimeout(() => this.onTimer(), this.limits.idleTimeoutMs).unref() : undefined;
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
        else if ((payload.readUInt32BE(0) & 0x7fffffff) === streamId) this.streamError(streamId, H2Error.PROTOCOL_ERROR);
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
        if (!(flags & ACK)) this.count('pings', 'ping_flood');
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

  private onDataFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on stream 0');
    // the whole frame, padding included, counts against the connection window
    this.consumed += payload.length;
    if (this.consumed >= CONNECTION_TOP_UP) {
      this.queueWindowUpdate(0, this.consumed);
      this.consumed = 0;
    }
    const data = unpad(flags, payload);
    const stream = this.streams.get(streamId);
    if (!stream) {
      if (streamId > this.lastStreamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'DATA on an idle stream');
      const answered = this.answered.get(streamId);
      if (answered) {
        // the answer is out: the rest of the body is dropped (bounded by the stream's receive window, never
        // topped up), still checked against its content-length; END_STREAM closes the stream
        this.dropped(payload.length);
        answered.received += payload.length;
        answered.bodyBytes += data.length;
        const declared = answered.contentLength;
        if (answered.received > STREAM_RECEIVE_WINDOW) this.closeAnswered(answered, Closed.RESET_BY_US, H2Error.FLOW_CONTROL_ERROR);
        else if (declared !== undefined && (answered.bodyBytes > declared || (flags & END_STREAM && answered.bodyBytes !== declared)))
          this.closeAnswered(answered, Closed.RESET_BY_US, H2Error.PROTOCOL_ERROR);
        else if (flags & END_STREAM) this.closeAnswered(answered, Closed.ENDED);
        return;
      }
      // in flight when we reset it: dropped; otherwise the stream is closed (RFC 9113 6.1)
      if (this.closedState(streamId) !== Closed.RESET_BY_US) this.streamError(streamId, H2Error.STREAM_CLOSED);
      else this.dropped(payload.length);
      return;
    }
    if (stream.remoteEnded) {
      this.resetStream(stream, H2Error.STREAM_CLOSED, true);
      return;
    }
    if (payload.length === 0 && !(flags & END_STREAM)) this.count('emptyFrames', 'empty_frames');
    stream.received += payload.length;
    if (stream.received > STREAM_RECEIVE_WINDOW) {
      this.resetStream(stream, H2Error.FLOW_CONTROL_ERROR, true);
      return;
    }
    stream.bodyBytes += data.length;
    const declared = stream.contentLength;
    if (declared !== undefined && (stream.bodyBytes > declared || (flags & END_STREAM && stream.bodyBytes !== declared))) {
      this.resetStream(stream, H2Error.PROTOCOL_ERROR, true);
      return;
    }
    if (this.heldBody + data.length > this.limits.connectionBodyBytes) {
      limitHits.connection_body++;
      this.resetStream(stream, H2Error.ENHANCE_YOUR_CALM, true);
      this.dropped(payload.length);
      return;
    }
    if (data.length) {
      stream.held += data.length;
      this.heldBody += data.length;
      stream.handler?.onData(data);
    }
    if (flags & END_STREAM && !stream.closed) this.remoteEnd(stream);
  }

  private onHeadersFrame(flags: number, streamId: number, payload: Buffer): void {
    if (streamId === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS on stream 0');
    let block = unpad(flags, payload);
    let selfDependent = false;
    if (flags & PRIORITY_FLAG) {
      if (block.length < 5) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'HEADERS too short for its priority');
      selfDependent = (block.readUInt32BE(0) & 0x7fffffff) === streamId;
      block = block.subarray(5);
    }
    const endStream = (flags & END_STREAM) !== 0;
    if (flags & END_HEADERS) this.onHeaderBlock(streamId, block, endStream, selfDependent);
    else this.headerBlock = { streamId, parts: [Buffer.from(block)], length: block.length, frames: 0, endStream, selfDependent };
  }

  private onContinuation(flags: number, streamId: number, payload: Buffer): void {
    const hb = this.headerBlock;
    if (!hb || hb.streamId !== streamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'CONTINUATION without HEADERS');
    hb.length += payload.length;
    if (hb.length > this.limits.headerBlockBytes)
      throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'header block too large', 'header_block');
    if (++hb.frames > this.limits.continuations)
      throw new ConnectionError(H2Error.ENHANCE_YOUR_CALM, 'too many CONTINUATION frames', 'continuation_flood');
    hb.parts.push(Buffer.from(payload));
    if (flags & END_HEADERS) {
      this.headerBlock = undefined;
      this.onHeaderBlock(streamId, Buffer.concat(hb.parts, hb.length), hb.endStream, hb.selfDependent);
    }
  }

  private onHeaderBlock(streamId: number, block: Buffer, endStream: boolean, selfDependent: boolean): void {
    // decoded whatever becomes of the stream: the HPACK table must follow every block
    const fields: [string, string][] = [];
    this.blockFields = fields;
    this.blockListSize = 0;
    this.requestCheck.begin();
    try {
      this.decoder.decode(block, this.onField);
    } catch (err) {
      if (err instanceof HpackError) throw new ConnectionError(H2Error.COMPRESSION_ERROR, err.message);
      throw err;
    }
    const listSize = this.blockListSize;
    const check = this.requestCheck;
    const existing = this.streams.get(streamId);
    if (existing) {
      // trailers from the client: they must end the stream, and carry no pseudo-header
      if (existing.remoteEnded) this.resetStream(existing, H2Error.STREAM_CLOSED, true);
      else if (!endStream || check.end(true) !== undefined || selfDependent) this.resetStream(existing, H2Error.PROTOCOL_ERROR, true);
      else if (existing.contentLength !== undefined && existing.bodyBytes !== existing.contentLength)
        this.resetStream(existing, H2Error.PROTOCOL_ERROR, true);
      else this.remoteEnd(existing);
      return;
    }
    const answered = this.answered.get(streamId);
    if (answered) {
      const bad = !endStream || check.end(true) !== undefined || selfDependent;
      this.closeAnswered(answered, bad ? Closed.RESET_BY_US : Closed.ENDED, bad ? H2Error.PROTOCOL_ERROR : undefined);
      return;
    }
    if (streamId % 2 === 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'a client stream with an even id');
    if (streamId <= this.lastStreamId) {
      const how = this.closedState(streamId);
      if (how === Closed.RESET_BY_US) return; // in flight when we reset it
      if (how === Closed.RESET_BY_PEER) return this.streamError(streamId, H2Error.STREAM_CLOSED);
      if (how === Closed.ENDED) throw new ConnectionError(H2Error.STREAM_CLOSED, 'HEADERS on a closed stream');
      throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'a stream id lower than a previous one');
    }
    this.lastStreamId = streamId;
    if (this.goingAway) return; // after our GOAWAY new streams are ignored (the client retries them elsewhere)
    if (listSize > this.limits.maxHeaderListBytes) {
      limitHits.header_list++;
      return this.streamError(streamId, H2Error.REFUSED_STREAM);
    }
    if (selfDependent || check.end(false) !== undefined) return this.streamError(streamId, H2Error.PROTOCOL_ERROR);
    if (this.streams.size + this.answered.size >= this.maxStreams) {
      limitHits.concurrent_streams++;
      return this.streamError(streamId, H2Error.REFUSED_STREAM);
    }
    const stream = new H2ServerStream(streamId, fields, this, this.peerInitialWindow);
    const cl = check.contentLength;
    if (cl !== undefined) stream.contentLength = Number(cl);
    if (endStream && stream.contentLength !== undefined && stream.contentLength !== 0)
      return this.streamError(streamId, H2Error.PROTOCOL_ERROR);
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
    if (stream) {
      if (!stream.headersSent) this.count('rapidResets', 'rapid_reset');
      this.resetStream(stream, H2Error.CANCEL, false);
      return;
    }
    const answered = this.answered.get(streamId);
    if (answered) this.closeAnswered(answered, Closed.RESET_BY_PEER);
  }

  private onSettings(flags: number, streamId: number, payload: Buffer): void {
    if (streamId !== 0) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'SETTINGS on a stream');
    if (flags & ACK) {
      if (payload.length) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS ACK with a payload');
      if (this.settingsAckTimer) clearTimeout(this.settingsAckTimer);
      this.settingsAckTimer = undefined;
      return;
    }
    if (payload.length % 6) throw new ConnectionError(H2Error.FRAME_SIZE_ERROR, 'SETTINGS of the wrong size');
    this.count('settings', 'settings_flood');
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
      if (streamId > this.lastStreamId) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'WINDOW_UPDATE on an idle stream');
      const answered = this.answered.get(streamId);
      if (answered) {
        // nothing more to send on it, but the update must still be valid (RFC 9113 6.9, 6.9.1)
        answered.sendWindow += inc;
        if (inc === 0) this.closeAnswered(answered, Closed.RESET_BY_US, H2Error.PROTOCOL_ERROR);
        else if (answered.sendWindow > MAX_WINDOW) this.closeAnswered(answered, Closed.RESET_BY_US, H2Error.FLOW_CONTROL_ERROR);
        return;
      }
      const stream = this.streams.get(streamId);
      if (!stream) return; // closed: updates in flight are allowed
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
    this.queue(uint32Frame(FrameType.WINDOW_UPDATE, streamId, inc));
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
    this.heldBody -= stream.held;
    stream.held = 0;
    this.streams.delete(stream.id);
    if (stream.pending) this.blocked.delete(stream);
    // answered before the client finished its request: half-closed (local) until its END_STREAM or a reset
    // (RFC 9113 8.1: we could ask it to stop with RST_STREAM NO_ERROR, but then could not tell its frames in
    // flight from frames on a closed stream); it still counts against the concurrent streams
    if (!stream.remoteEnded) this.answered.set(stream.id, stream);
    else this.rememberClosed(stream.id, Closed.ENDED);
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
    this.rememberClosed(stream.id, send ? Closed.RESET_BY_US : Closed.RESET_BY_PEER);
    stream.pending = undefined;
    stream.handler?.onAbort?.();
  }

  /** A stream error on a stream that is not open (a refused or malformed one, or a frame on a closed one). */
  private streamError(streamId: number, code: number): void {
    this.resetId(streamId, code);
    this.rememberClosed(streamId, Closed.RESET_BY_US);
  }

  /** A stream answered early leaves the half-closed (local) state: END_STREAM, or a reset by either side. */
  private closeAnswered(stream: H2ServerStream, how: Closed, code?: number): void {
    this.answered.delete(stream.id);
    if (code !== undefined) this.resetId(stream.id, code);
    this.rememberClosed(stream.id, how);
  }

  private rememberClosed(streamId: number, how: Closed): void {
    const slot = (streamId >>> 1) & (CLOSED_REMEMBERED - 1);
    const ids = (this.closedIds ??= new Int32Array(CLOSED_REMEMBERED));
    (this.closedHow ??= new Uint8Array(CLOSED_REMEMBERED))[slot] = how;
    ids[slot] = streamId;
  }

  /** How a recently closed stream closed; undefined: not one (never opened, or forgotten). */
  private closedState(streamId: number): Closed | undefined {
    const slot = (streamId >>> 1) & (CLOSED_REMEMBERED - 1);
    return this.closedIds?.[slot] === streamId ? (this.closedHow![slot] as Closed) : undefined;
  }

  private resetId(streamId: number, code: number): void {
    this.queue(uint32Frame(FrameType.RST_STREAM, streamId, code));
  }

  private sendGoaway(code: number, debug = ''): void {
    this.queue(goawayFrame(this.lastStreamId, code, debug));
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
    this.answered.clear();
    this.blocked.clear();
    for (const s of open) {
      s.closed = true;
      s.pending = undefined;
      s.handler?.onAbort?.();
    }
  }

  private onSocketClose(): void {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    if (this.settingsAckTimer) clearTimeout(this.settingsAckTimer);
    this.abortAll();
    this.onClosed(this);
  }
}
