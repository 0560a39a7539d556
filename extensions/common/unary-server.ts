// A minimal gRPC server for one unary method: extauth's envoy.service.auth.v3.Authorization/Check and
// ratelimit's RateLimitService/ShouldRateLimit, on Legate's own small HTTP/2 server
// (extensions/common/h2/, or node:http2 with --http2-transport node; extensions/common/h2/transport.ts).
// (The graphql service's ext_proc stream has its own server on it, extensions/graphql/extproc-server.ts.)
//
// Why not grpc-js, nor node:http2: these are called once per protected or rate-limited request. grpc-js's
// per-call work (server interceptor chain, Metadata objects, a deadline timer, an object-mode stream,
// promise-based message decoding, a copy of every message into a framed buffer) and then node:http2's
// (a Duplex per stream, header objects built and validated both ways, trailers from a setImmediate) were
// most of the process's CPU next to a decision, which is a hash and a map lookup. Here a call is a
// small stream object and a closure: the request message is unframed from the DATA payload (usually
// one, no copy), handed to the handler as bytes, and the answer (protobuf bytes, usually pre-encoded) is
// framed and sent with pre-encoded response headers and OK trailers, or the call fails with a status.
//
// What it implements of gRPC over HTTP/2 (what Envoy's gRPC client uses): POST with content-type
// application/grpc[+proto], one length-prefixed message (uncompressed: Envoy does not compress, and this
// server advertises no grpc-accept-encoding), response headers, one message, trailers with grpc-status.
// Other paths get UNIMPLEMENTED, other content types 415, a compressed message UNIMPLEMENTED, a message
// over MAX_MESSAGE_BYTES RESOURCE_EXHAUSTED, no message or several INTERNAL / UNIMPLEMENTED as grpc-js
// answers them. The grpc-timeout deadline is not enforced here: Envoy enforces it itself.
import {
  GrpcStatus,
  MAX_MESSAGE_BYTES,
  OK_TRAILERS,
  RESPONSE_HEADERS,
  acceptCall,
  trailersOnly,
  type GrpcHttp2Server,
} from './grpc-http2.js';
import { listenTransport } from './h2/listen.js';
import type { H2Config, H2Stream, H2StreamHandler } from './h2/transport.js';

export { GrpcStatus, MAX_MESSAGE_BYTES, frameMessage, framePrefix } from './grpc-http2.js';

/**
 * Answers one call. `request`: the message's bytes (valid during the call only if kept by reference
 * into the DATA chunk; the handler must not hold on to it after `reply`). `reply` takes the response
 * as a framed message (frameMessage(), or bytes encoded after 5 reserved bytes and framePrefix()); a
 * reply after the client went away is dropped.
 */
export type UnaryHandler = (
  request: Buffer,
  reply: (framed: Buffer) => void,
  fail: (code: number, message: string) => void,
  /** the call's request headers (gRPC metadata, e.g. a trace context) */
  call: { header(name: string): string | undefined },
) => void;

export interface UnaryServerOptions {
  /** the method's path, e.g. `/envoy.service.auth.v3.Authorization/Check` */
  path: string;
  /** the method's name in error reports (`<name> handler`) */
  name: string;
  handle: UnaryHandler;
  /** a stream, session or handler failed in a way worth logging */
  onError?(what: string, err: unknown): void;
  /** the HTTP/2 transport and its limits (default: Legate's server, DEFAULT_LIMITS) */
  http2?: H2Config;
}

export type UnaryServer = GrpcHttp2Server;

/** One call: the request's DATA chunks until the client half-closes, then one answer. */
class Call implements H2StreamHandler {
  /** the first chunk, and any more when the message spans several DATA frames */
  private first: Buffer | undefined;
  private more: Buffer[] | undefined;
  private length = 0;
  private done = false;
  readonly reply = (framed: Buffer): void => {
    const stream = this.stream;
    if (stream.closed || stream.headersSent) return;
    stream.respond(RESPONSE_HEADERS);
    stream.write(framed);
    stream.end(OK_TRAILERS);
  };

  /** a failed call: trailers only, with the status (dropped after the client went away or an answer) */
  readonly fail = (code: number, message: string): void => {
    trailersOnly(this.stream, code, message);
  };

  constructor(
    private readonly stream: H2Stream,
    private readonly handle: UnaryHandler,
    private readonly onError: (err: unknown) => void,
  ) {}

  onData(chunk: Buffer): void {
    if (this.done) return;
    this.length += chunk.length;
    // a message that is complete in its first DATA payload (the usual case) is read in place; the parts of a longer
    // one are copied, so that what waits for the rest holds its own bytes, not the socket's whole read buffers
    if (this.first === undefined) this.first = chunk.length >= 5 && chunk.readUInt32BE(1) + 5 <= chunk.length ? chunk : Buffer.from(chunk);
    else (this.more ??= []).push(Buffer.from(chunk));
    // refuse an oversized message as soon as its prefix says so (or as much has arrived)
    const declared = this.first.length >= 5 ? this.first.readUInt32BE(1) : 0;
    if (declared > MAX_MESSAGE_BYTES || this.length > MAX_MESSAGE_BYTES + 5) {
      const size = Math.max(declared, this.length - 5);
      this.refuse(GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${size} vs. ${MAX_MESSAGE_BYTES})`);
    }
  }

  onEnd(): void {
    if (this.done) return;
    this.done = true;
    const stream = this.stream;
    if (stream.closed) return;
    const buf = this.more === undefined ? this.first : Buffer.concat([this.first!, ...this.more], this.length);
    this.first = undefined;
    this.more = undefined;
    if (buf === undefined || buf.length < 5) {
      trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, 'received no request message');
      return;
    }
    const len = buf.readUInt32BE(1);
    if (len > MAX_MESSAGE_BYTES) {
      trailersOnly(stream, GrpcStatus.RESOURCE_EXHAUSTED, `Received message larger than max (${len} vs. ${MAX_MESSAGE_BYTES})`);
      return;
    }
    if (buf[0] !== 0) {
      trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, 'compressed messages are not supported');
      return;
    }
    if (buf.length !== 5 + len) {
      trailersOnly(
        stream,
        buf.length < 5 + len ? GrpcStatus.INTERNAL : GrpcStatus.UNIMPLEMENTED,
        buf.length < 5 + len ? 'the stream ended inside a message' : 'received a second request message',
      );
      return;
    }
    try {
      this.handle(buf.subarray(5), this.reply, this.fail, stream);
    } catch (err) {
      this.onError(err);
      trailersOnly(stream, GrpcStatus.INTERNAL, 'internal error');
    }
  }

  onAbort(): void {
    this.done = true;
    this.first = undefined;
    this.more = undefined;
  }

  private refuse(code: number, message: string): void {
    this.done = true;
    this.first = undefined;
    this.more = undefined;
    trailersOnly(this.stream, code, message);
  }
}

export function startUnaryServer(host: string, port: number, options: UnaryServerOptions): Promise<UnaryServer> {
  const onError = options.onError ?? (() => undefined);
  const onHandlerError = (err: unknown): void => onError(`${options.name} handler`, err);
  const { handle, path } = options;
  return listenTransport(options.http2, host, port, {
    onError,
    onStream(stream) {
      if (!acceptCall(stream, path)) return undefined;
      return new Call(stream, handle, onHandlerError);
    },
  });
}
