// What the extension services' minimal gRPC servers on node:http2 share (extensions/common/unary-server.ts
// for extauth's Check and ratelimit's ShouldRateLimit, extensions/graphql/extproc-server.ts for ext_proc):
// message framing, trailers-only answers, the content-type check, and the server with its sessions,
// listen and graceful stop. Why not grpc-js: see unary-server.ts.
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';

/** Largest request message accepted (grpc-js's default receive limit). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024;

/** google.rpc.Code values used here */
export const GrpcStatus = { OK: 0, RESOURCE_EXHAUSTED: 8, UNIMPLEMENTED: 12, INTERNAL: 13, UNAVAILABLE: 14 } as const;

/** Fills in the 5-byte gRPC message prefix (uncompressed, length) of a buffer encoded with 5 reserved bytes. */
export function framePrefix(buf: Buffer): Buffer {
  buf[0] = 0;
  buf.writeUInt32BE(buf.length - 5, 1);
  return buf;
}

/** A message framed for the wire: a new buffer with the prefix and the bytes. */
export function frameMessage(message: Buffer): Buffer {
  const out = Buffer.allocUnsafe(message.length + 5);
  message.copy(out, 5);
  return framePrefix(out);
}

export const RESPONSE_HEADERS = Object.freeze({ ':status': 200, 'content-type': 'application/grpc' });
export const RESPONSE_OPTIONS = Object.freeze({ waitForTrailers: true });
const OK_TRAILERS = Object.freeze({ 'grpc-status': '0' });

/** 'wantTrailers' listener of a stream ended with OK. */
export function sendOkTrailers(this: http2.ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** Ends a stream that has sent nothing yet with a status alone (headers and trailers in one frame). */
export function trailersOnly(stream: http2.ServerHttp2Stream, code: number, message: string, httpStatus = 200): void {
  if (stream.headersSent || stream.destroyed) return;
  stream.respond(
    { ':status': httpStatus, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeURI(message) },
    { endStream: true },
  );
}

export function isGrpcContentType(ct: string | string[] | undefined): boolean {
  return typeof ct === 'string' && (ct === 'application/grpc' || ct.startsWith('application/grpc+') || ct.startsWith('application/grpc;'));
}

/**
 * Answers what is not a call of `path` (UNIMPLEMENTED, or 415 for another content type) and returns
 * false; true when the stream is a call to serve.
 */
export function acceptCall(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders, path: string): boolean {
  if (headers[':path'] !== path) {
    trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${String(headers[':path'])}`);
    return false;
  }
  if (!isGrpcContentType(headers['content-type'])) {
    trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, 'unsupported content-type', 415);
    return false;
  }
  return true;
}

export interface GrpcHttp2Server {
  port: number;
  /** Stops accepting connections, asks open sessions to finish (GOAWAY) and closes them after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

/** Listens with `onStream` for every stream; session and server failures go to `onError`. */
export function listenGrpcHttp2(
  host: string,
  port: number,
  options: {
    maxConcurrentStreams?: number;
    onStream(stream: http2.ServerHttp2Stream, headers: http2.IncomingHttpHeaders): void;
    onError(what: string, err: unknown): void;
  },
): Promise<GrpcHttp2Server> {
  const server = http2.createServer({
    // as grpc-js sets them: no session memory cap (a refused stream is a failed request), large header blocks
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
    maxSendHeaderBlockLength: Number.MAX_SAFE_INTEGER,
    settings: { maxConcurrentStreams: options.maxConcurrentStreams ?? 100_000 },
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  const onError = options.onError;
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', (err) => onError('http2 session', err));
  });
  server.on('stream', options.onStream);

  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      server.on('error', (err) => onError('http2 server', err));
      resolve({
        port: (server.address() as AddressInfo).port,
        stop: (graceMs = 2000) =>
          new Promise<void>((done) => {
            const timer = setTimeout(() => {
              for (const s of sessions) s.destroy();
            }, graceMs);
            server.close(() => {
              clearTimeout(timer);
              done();
            });
            for (const s of sessions) s.close();
          }),
      });
    });
  });
}
