// A minimal gRPC server for the one method the graphql service serves,
// envoy.service.ext_proc.v3.ExternalProcessor/Process, on Legate's small HTTP/2 server
// (extensions/common/h2/; node:http2 with --http2-transport node).
//
// Why not grpc-js: Envoy opens one ext_proc stream per GraphQL request, with a message or two each way,
// and grpc-js's per-stream and per-message work (interceptor chain, Metadata objects, a deadline timer,
// an object-mode Duplex, promise-based message decoding, a copy of every message into a framed buffer)
// cost more CPU than executing a cached query (~225 µs of this process's CPU per flat request, against
// ~175 µs on node:http2). Why not node:http2 either: see extensions/common/unary-server.ts; besides,
// Envoy resets each stream once it has the answer, which node:http2 turned into an error object per
// request and, past 1,000 resets on a connection, a GOAWAY (its rapid-reset protection).
// Here a stream is one small object: messages are unframed from the DATA payloads (usually one message
// per payload, no copy) and handed to the handler as ready-decoded ProcessingRequests (./wire.ts);
// answers are framed protobuf bytes sent as they are, with pre-encoded headers and trailers.
//
// What it implements of gRPC over HTTP/2 (what Envoy's gRPC client uses): POST with
// content-type application/grpc[+proto], length-prefixed messages (uncompressed: Envoy does not compress,
// and this server advertises no grpc-accept-encoding), response headers on the first message, trailers
// with grpc-status. Other paths get UNIMPLEMENTED, other content types 415, a compressed message
// UNIMPLEMENTED, a message over MAX_MESSAGE_BYTES RESOURCE_EXHAUSTED, as grpc-js answers them. The
// grpc-timeout deadline is not enforced here: Envoy enforces it (and its message_timeout) itself.
import {
  GrpcStatus,
  MAX_MESSAGE_BYTES,
  OK_TRAILERS,
  RESPONSE_HEADERS,
  acceptCall,
  statusTrailers,
  trailersOnly,
  type GrpcHttp2Server,
} from '../common/grpc-http2.js';
import { listenTransport } from '../common/h2/listen.js';
import type { H2Config, H2Stream, H2StreamHandler } from '../common/h2/transport.js';
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
  /** the HTTP/2 transport and its limits (default: Legate's server, DEFAULT_LIMITS) */
  http2?: H2Config;
}

export type ExtProcServer = GrpcHttp2Server;

class Call implements ProcessCall, H2StreamHandler {
  handler: ProcessStreamHandler | undefined;
  /** a message arriving in several DATA chunks: its parts so far, their length, and the whole length when known */
  private parts: Buffer[] = [];
  private partsLength = 0;
  private need = 0;
  private ended = false;
  private failed = false;

  constructor(
    private readonly stream: H2Stream,
    private readonly onError_: (err: unknown) => void,
  ) {}

  metadata(name: string): string {
    return this.stream.header(name) ?? '';
  }

  write(frame: Buffer): void {
    if (this.ended || this.failed || this.stream.closed) return;
    if (!this.stream.headersSent) this.stream.respond(RESPONSE_HEADERS);
    this.stream.write(frame);
  }

  end(last?: Buffer): void {
    if (this.ended || this.failed) return;
    this.ended = true;
    const stream = this.stream;
    if (stream.closed) return;
    if (!stream.headersSent) {
      if (last === undefined) {
        trailersOnly(stream, GrpcStatus.OK, '');
        return;
      }
      stream.respond(RESPONSE_HEADERS);
    }
    if (last !== undefined) stream.write(last);
    stream.end(OK_TRAILERS);
  }

  /** Ends the stream with an error status (as grpc-js does for a bad message). */
  fail(code: number, message: string): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    const stream = this.stream;
    if (!stream.closed) {
      if (!stream.headersSent) trailersOnly(stream, code, message);
      else stream.end(statusTrailers(code, message));
    }
    this.handler?.error();
  }

  onData(chunk: Buffer): void {
    if (this.failed) return;
    let buf = chunk;
    if (this.partsLength > 0) {
      // a message split over DATA frames: collect its parts (copies: what waits must not hold the socket's read
      // buffers) and join them once, when it is complete
      this.parts.push(Buffer.from(chunk));
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
      if (this.failed || this.stream.closed) return;
    }
    if (at < buf.length) {
      const rest = Buffer.from(at === 0 ? buf : buf.subarray(at));
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
    if (this.partsLength > 0) {
      this.fail(GrpcStatus.INTERNAL, 'the stream ended inside a message');
      return;
    }
    this.handler!.end();
  }

  /** the stream was reset or the connection went away */
  onAbort(): void {
    if (this.ended || this.failed) return;
    this.failed = true;
    this.handler?.error();
  }
}

export function startExtProcServer(host: string, port: number, options: ExtProcServerOptions): Promise<ExtProcServer> {
  const onError = options.onError ?? (() => undefined);
  const onHandlerError = (err: unknown): void => onError('ext_proc stream handler', err);
  return listenTransport(options.http2, host, port, {
    ...(options.maxConcurrentStreams !== undefined ? { maxConcurrentStreams: options.maxConcurrentStreams } : {}),
    onError,
    onStream(stream) {
      if (!acceptCall(stream, PROCESS_PATH)) return undefined;
      const call = new Call(stream, onHandlerError);
      try {
        call.handler = options.open(call);
      } catch (err) {
        onHandlerError(err);
        call.fail(GrpcStatus.INTERNAL, 'internal error');
        return undefined;
      }
      return call;
    },
  });
}
