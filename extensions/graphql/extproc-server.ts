// A minimal gRPC server for the one method the graphql service serves,
// envoy.service.ext_proc.v3.ExternalProcessor/Process, straight on node:http2.
//
// Why not grpc-js: Envoy opens one ext_proc stream per GraphQL request, with two messages each way, and
// grpc-js's per-stream and per-message work (interceptor chain, Metadata objects, a deadline timer, an
// object-mode Duplex, promise-based message decoding, a copy of every message into a framed buffer)
// cost more CPU than executing a cached query. Measured on the benchmark's flat query with the same
// codec on both: ~225 µs of this process's CPU per request on grpc-js, ~175 µs here. (For extauth's
// unary Check the difference was ~10%, and it stays on grpc-js.)
// Here a stream is the http2 stream plus one small object: messages are unframed from the DATA chunks
// (usually one message per chunk, no copy) and handed to the handler as ready-decoded ProcessingRequests
// (./wire.ts); answers are framed protobuf bytes written as they are.
//
// What it implements of gRPC over HTTP/2 (what Envoy's gRPC client uses): POST with
// content-type application/grpc[+proto], length-prefixed messages (uncompressed: Envoy does not compress,
// and this server advertises no grpc-accept-encoding), response headers on the first message, trailers
// with grpc-status. Other paths get UNIMPLEMENTED, other content types 415, a compressed message
// UNIMPLEMENTED, a message over MAX_MESSAGE_BYTES RESOURCE_EXHAUSTED, as grpc-js answers them. The
// grpc-timeout deadline is not enforced here: Envoy enforces it (and its message_timeout) itself.
import type http2 from 'node:http2';
import {
  GrpcStatus,
  MAX_MESSAGE_BYTES,
  RESPONSE_HEADERS,
  RESPONSE_OPTIONS,
  acceptCall,
  listenGrpcHttp2,
  sendOkTrailers,
  trailersOnly,
  type GrpcHttp2Server,
} from '../common/grpc-http2.js';
import { decodeProcessingRequest, type ProcessingRequestIn } from './wire.js';

export { GrpcStatus, MAX_MESSAGE_BYTES, frameMessage, framePrefix } from '../common/grpc-http2.js';

export const PROCESS_PATH = '/envoy.service.ext_proc.v3.ExternalProcessor/Process';

/** The server side of one Process stream, as the handler sees it. */
export interface ProcessCall {
  /** request header (gRPC initial metadata) value, lowercase name; '' when absent */
  metadata(name: string): string;
  /** Sends one framed message (frameMessage(), or bytes encoded after 5 reserved bytes and framePrefix()). */
  write(frame: Buffer): void;
  /** Ends the stream with grpc-status OK (idempotent), after sending `last` (a framed message) if given. */
  end(last?: Buffer): void;
}

/** What the handler returns for a stream: its reactions to the stream's events. */
export interface ProcessStreamHandler {
  message(msg: ProcessingRequestIn): void;
  /** the client half-closed its side */
  end(): void;
  /** the stream failed or was reset before the handler ended it */
  error(): void;
}

export interface ExtProcServerOptions {
  maxConcurrentStreams?: number;
  /** called for each new Process stream */
  open(call: ProcessCall): ProcessStreamHandler;
  /** a stream or session failed in a way worth logging */
  onError?(what: string, err: unknown): void;
}

export type ExtProcServer = GrpcHttp2Server;

// (After an immediate response Envoy resets the stream, INTERNAL_ERROR. Closing the stream first with
// RST_STREAM(NO_ERROR) once the trailers are out avoids node:http2's error object but costs as much: a
// write per stream. Measured, not kept; destroyWithoutStack below makes the error cheap instead.)

class Call implements ProcessCall {
  handler: ProcessStreamHandler | undefined;
  /** a message arriving in several DATA chunks: its parts so far, their length, and the whole length when known */
  private parts: Buffer[] = [];
  private partsLength = 0;
  private need = 0;
  private ended = false;
  private failed = false;

  constructor(
    private readonly stream: http2.ServerHttp2Stream,
    private readonly headers: http2.IncomingHttpHeaders,
    private readonly onError_: (err: unknown) => void,
  ) {}

  metadata(name: string): string {
    const v = this.headers[name];
    return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? '') : '';
  }

  write(frame: Buffer): void {
    if (this.ended || this.failed || this.stream.destroyed) return;
    if (!this.stream.headersSent) this.stream.respond(RESPONSE_HEADERS, RESPONSE_OPTIONS);
    this.stream.write(frame);
  }

  end(last?: Buffer): void {
    if (this.ended || this.failed) return;
    this.ended = true;
    const stream = this.stream;
    if (stream.destroyed) return;
    if (!stream.headersSent) {
      if (last === undefined) {
        trailersOnly(stream, GrpcStatus.OK, '');
        return;
      }
      stream.respond(RESPONSE_HEADERS, RESPONSE_OPTIONS);
    }
    stream.once('wantTrailers', sendOkTrailers);
    if (last === undefined) stream.end();
    else stream.end(last);
  }

  /** Ends the stream with an error status (as grpc-js does for a bad message). */
  fail(code: number, message: string): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    const stream = this.stream;
    if (stream.destroyed) return;
    if (!stream.headersSent) trailersOnly(stream, code, message);
    else {
      stream.once('wantTrailers', () => stream.sendTrailers({ 'grpc-status': String(code), 'grpc-message': encodeURI(message) }));
      stream.end();
    }
    this.handler?.error();
  }

  onData(chunk: Buffer): void {
    if (this.failed) return;
    let buf = chunk;
    if (this.partsLength > 0) {
      // a message split over DATA frames: collect its parts and join them once, when it is complete
      this.parts.push(chunk);
      this.partsLength += chunk.length;
      if (this.need === 0 && this.partsLength >= 5) this.need = 5 + Buffer.concat(this.parts, 5).readUInt32BE(1);
      if (this.need === 0 || this.partsLength < this.need) return;
      buf = this.parts.length === 1 ? this.parts[0]! : Buffer.concat(this.parts, this.partsLength);
      this.parts = [];
      this.partsLength = 0;
      this.need = 0;
    }
    let at = 0;
    while (buf.length - at >= 5) {
      const len = buf.readUInt32BE(at + 1);
      if (len > MAX_MESSAGE_BYTES) {
        this.fail(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${MAX_MESSAGE_BYTES})`);
        return;
      }
      if (buf.length - at - 5 < len) break;
      if (buf[at] !== 0) {
        this.fail(GrpcStatus.UNIMPLEMENTED, 'compressed messages are not supported');
        return;
      }
      const message = buf.subarray(at + 5, at + 5 + len);
      at += 5 + len;
      try {
        this.handler!.message(decodeProcessingRequest(message));
      } catch (err) {
        this.onHandlerError(err);
        return;
      }
      if (this.failed || this.stream.destroyed) return;
    }
    if (at < buf.length) {
      const rest = at === 0 ? buf : buf.subarray(at);
      this.parts = [rest];
      this.partsLength = rest.length;
      this.need = rest.length >= 5 ? 5 + rest.readUInt32BE(1) : 0;
      if (this.need - 5 > MAX_MESSAGE_BYTES)
        this.fail(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${this.need - 5} vs. ${MAX_MESSAGE_BYTES})`);
    }
  }

  private onHandlerError(err: unknown): void {
    this.onError_(err);
    this.fail(GrpcStatus.INTERNAL, 'internal error');
  }

  onEnd(): void {
    if (this.failed) return;
    // a reset before we ended our side also ends the readable side: that is a failure, not a half-close
    if (this.stream.aborted) return this.onError();
    if (this.partsLength > 0) {
      this.fail(GrpcStatus.INTERNAL, 'the stream ended inside a message');
      return;
    }
    this.handler!.end();
  }

  onError(): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    this.handler?.error();
  }
}

export function startExtProcServer(host: string, port: number, options: ExtProcServerOptions): Promise<ExtProcServer> {
  const onError = options.onError ?? (() => undefined);
  const onHandlerError = (err: unknown): void => onError('ext_proc stream handler', err);
  return listenGrpcHttp2(host, port, {
    ...(options.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: options.maxConcurrentStreams } : {}),
    onError,
    onStream(stream, headers) {
      stream.on('error', noop); // resets (Envoy resets each stream after an immediate response) are expected
      streamDestroy ??= stream.destroy;
      stream.destroy = destroyWithoutStack;
      if (!acceptCall(stream, headers, PROCESS_PATH)) return;
      const call = new Call(stream, headers, onHandlerError);
      try {
        call.handler = options.open(call);
      } catch (err) {
        onHandlerError(err);
        call.fail(GrpcStatus.INTERNAL, 'internal error');
        return;
      }
      stream.on('data', (chunk: Buffer) => call.onData(chunk));
      stream.on('end', () => call.onEnd());
      stream.on('close', () => call.onError());
    },
  });
}

function noop(): void {}

/** Http2Stream's destroy(), taken from the first stream (the class is not exported). */
let streamDestroy: ((this: http2.ServerHttp2Stream, err?: Error) => http2.ServerHttp2Stream) | undefined;

/**
 * Envoy resets every stream once it has the immediate response (RST_STREAM INTERNAL_ERROR, trailers sent
 * or not); node:http2 turns that into an ERR_HTTP2_STREAM_ERROR in destroy(), and Node's stream destroy
 * reads its `stack` at once: capturing and formatting a stack trace per request, for an error this
 * server ignores, cost ~7% of the process's CPU on the nested benchmark query. destroy() runs that
 * synchronously, so it is run with stack traces off.
 */
function destroyWithoutStack(this: http2.ServerHttp2Stream, err?: Error): http2.ServerHttp2Stream {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return streamDestroy!.call(this, err);
  } finally {
    Error.stackTraceLimit = limit;
  }
}
