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
// (extensions/common/h2/hpack.ts), over TCP or mutual TLS (tls.ts: the same connections on a TLS socket). What
// it leaves out: h2c upgrade (Envoy connects with prior knowledge), server push, stream priorities. Connection
// errors answer GOAWAY with the RFC's code and close; stream errors RST_STREAM. Malformed requests (8.1.1, 8.2,
// 8.3) are reset before the owner sees them, the 5.1 stream states are kept, and H2Limits bounds what one client
// may do (h2spec passes: see test/e2e/h2spec.test.ts and docs/architecture.md).
//
// Modules: frames.ts (wire constants, frame building), connection.ts (one connection: parsing, stream states,
// flow control, limits), stream.ts (a stream as its owner sees it, request checks), limits.ts, hpack.ts, tls.ts, serve.ts
// (listening and the graceful stop, shared with node.ts).
import net from 'node:net';
import tls from 'node:tls';
import { Connection } from './connection.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_CONCURRENT_STREAMS } from './limits.js';
import { serve } from './serve.js';
import { readTlsFiles, servingTls, tlsServerOptions } from './tls.js';
import type { H2Server, H2ServerOptions } from './transport.js';

export { H2Error, frameHeader } from './frames.js';
export { DEFAULT_LIMITS, DEFAULT_MAX_CONCURRENT_STREAMS, limitHits, type H2Limit, type H2Limits } from './limits.js';
export { H2ServerStream, malformedRequest } from './stream.js';
export type { H2Server, H2ServerOptions, H2Stream, H2StreamHandler, HeaderList } from './transport.js';

/** Listens for HTTP/2 connections with prior knowledge (over mutual TLS with options.tls); every stream goes to options.onStream. */
export async function listenH2(host: string, port: number, options: H2ServerOptions): Promise<H2Server> {
  const connections = new Set<Connection>();
  const maxStreams = options.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS;
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const accept = (socket: net.Socket): void => {
    connections.add(new Connection(socket, options, maxStreams, limits, (c) => connections.delete(c)));
  };
  const material = options.tls ? readTlsFiles(options.tls) : undefined;
  // over TLS a connection starts once the handshake is done (the client's certificate verified)
  const server = material ? tls.createServer(tlsServerOptions(material), accept) : net.createServer(accept);
  const listening = serve(server, host, port, options, {
    shutdown: () => {
      for (const c of connections) c.shutdown();
    },
    destroy: () => {
      for (const c of connections) c.destroy();
    },
  });
  return options.tls && material ? servingTls(server as tls.Server, options.tls, material, options, listening) : listening;
}
