// What the extension services' minimal gRPC servers share (extensions/common/unary-server.ts for
// extauth's Check and ratelimit's ShouldRateLimit, extensions/graphql/extproc-server.ts for ext_proc):
// message framing, the pre-encoded response headers and trailers, trailers-only answers and the path
// and content-type check, on the HTTP/2 transport interface (./h2/transport.ts: Legate's small server, or
// node:http2 behind --http2-transport). Why neither grpc-js nor node:http2 by default: see unary-server.ts.
import { staticHeaders, type H2Server, type H2Stream, type HeaderList } from './h2/transport.js';
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

/** `:status 200`, `content-type: application/grpc` (encoded once by the transport) */
export const RESPONSE_HEADERS = staticHeaders([
  [':status', '200'],
  ['content-type', 'application/grpc'],
]);
/** `grpc-status: 0` (encoded once by the transport) */
export const OK_TRAILERS = staticHeaders([['grpc-status', '0']]);

/** Trailers with a failed call's status. */
export function statusTrailers(code: number, message: string): HeaderList {
  return [
    ['grpc-status', String(code)],
    ['grpc-message', encodeURI(message)],
  ];
}

/** Ends a stream that has sent nothing yet with a status alone (headers and trailers in one block). */
export function trailersOnly(stream: H2Stream, code: number, message: string, httpStatus = 200): void {
  if (stream.headersSent || stream.closed) return;
  stream.respond(
    [
      [':status', String(httpStatus)],
      ['content-type', 'application/grpc'],
      ['grpc-status', String(code)],
      ['grpc-message', encodeURI(message)],
    ],
    true,
  );
}

function isGrpcContentType(ct: string | undefined): boolean {
  return typeof ct === 'string' && (ct === 'application/grpc' || ct.startsWith('application/grpc+') || ct.startsWith('application/grpc;'));
}

/**
 * Answers what is not a call of `path` (UNIMPLEMENTED, or 415 for another content type) and returns
 * false; true when the stream is a call to serve.
 */
export function acceptCall(stream: H2Stream, path: string): boolean {
  const callPath = stream.header(':path');
  if (callPath !== path) {
    trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, `The server does not implement the method ${String(callPath)}`);
    return false;
  }
  if (!isGrpcContentType(stream.header('content-type'))) {
    trailersOnly(stream, GrpcStatus.UNIMPLEMENTED, 'unsupported content-type', 415);
    return false;
  }
  return true;
}

export type GrpcHttp2Server = H2Server;
