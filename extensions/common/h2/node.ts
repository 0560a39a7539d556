// The transport interface (transport.ts) on node:http2, the alternative to Legate's own server
// (`--http2-transport node`): what to fall back to, and the reference the unit and e2e suites also run on.
// Limits it applies: concurrent streams, header-list size and the idle timeout from H2Limits; the floods are
// node:http2's own protections (its rapid-reset GOAWAY, maxSessionInvalidFrames, maxSessionRejectedStreams,
// maxSessionMemory), not counted in legate_http2_limit_hits_total.
import http2 from 'node:http2';
import { DEFAULT_LIMITS, DEFAULT_MAX_CONCURRENT_STREAMS } from './limits.js';
import { serve } from './serve.js';
import { readTlsFiles, servingTls, tlsServerOptions } from './tls.js';
import type { H2Server, H2ServerOptions, H2Stream, H2StreamHandler, HeaderList } from './transport.js';

const objects = new WeakMap<HeaderList, http2.OutgoingHttpHeaders>();

/** node:http2's header object for a list (cached per list: the constant ones are built once). */
function headerObject(list: HeaderList): http2.OutgoingHttpHeaders {
  let o = objects.get(list);
  if (o) return o;
  o = {};
  for (const [name, value] of list) {
    const prev = o[name];
    o[name] = prev === undefined ? value : Array.isArray(prev) ? [...prev, value] : [String(prev), value];
  }
  if (Object.isFrozen(list)) objects.set(list, o);
  return o;
}

class NodeStream implements H2Stream {
  closed = false;
  headersSent = false;
  handler: H2StreamHandler | undefined;
  private trailers: HeaderList | undefined;

  constructor(
    readonly headers: [string, string][],
    private readonly s: http2.ServerHttp2Stream,
  ) {
    s.on('wantTrailers', () => {
      if (this.trailers) s.sendTrailers(headerObject(this.trailers));
      else s.close(http2.constants.NGHTTP2_NO_ERROR);
    });
  }

  header(name: string): string | undefined {
    for (const [k, v] of this.headers) if (k === name) return v;
    return undefined;
  }

  respond(headers: HeaderList, endStream = false): void {
    if (this.closed || this.headersSent || this.s.destroyed) return;
    this.headersSent = true;
    this.s.respond(headerObject(headers), { endStream, waitForTrailers: !endStream });
    if (endStream) this.closed = true;
  }

  write(data: Buffer): void {
    if (this.closed || !this.headersSent) return;
    this.s.write(data);
  }

  end(trailers?: HeaderList): void {
    if (this.closed || !this.headersSent) return;
    this.closed = true;
    this.trailers = trailers;
    this.s.end();
  }

  /** the stream went away before the answer was complete */
  aborted(): void {
    if (this.closed) return;
    this.closed = true;
    this.handler?.onAbort?.();
  }
}

export async function listenNodeH2(host: string, port: number, options: H2ServerOptions): Promise<H2Server> {
  const limits = { ...DEFAULT_LIMITS, ...options.limits };
  const settings: http2.ServerOptions = {
    settings: {
      maxConcurrentStreams: options.maxConcurrentStreams ?? DEFAULT_MAX_CONCURRENT_STREAMS,
      maxHeaderListSize: limits.maxHeaderListBytes,
      enablePush: false,
    },
    maxHeaderListPairs: 1000,
  };
  const material = options.tls ? readTlsFiles(options.tls) : undefined;
  // over TLS: HTTP/2 only (no HTTP/1.1 fallback), the client's certificate verified in the handshake
  const server = material
    ? http2.createSecureServer({ ...settings, ...tlsServerOptions(material), allowHTTP1: false })
    : http2.createServer(settings);
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session) => {
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => undefined); // a peer that goes away is not an error
    if (limits.idleTimeoutMs) session.setTimeout(limits.idleTimeoutMs, () => session.close());
  });
  server.on('stream', (s: http2.ServerHttp2Stream, _headers: http2.IncomingHttpHeaders, _flags: number, raw: string[]) => {
    s.on('error', () => undefined);
    const fields: [string, string][] = [];
    for (let i = 0; i + 1 < raw.length; i += 2) fields.push([raw[i]!, raw[i + 1]!]);
    const stream = new NodeStream(fields, s);
    s.on('close', () => stream.aborted());
    let handler: H2StreamHandler | undefined;
    try {
      handler = options.onStream(stream);
    } catch (err) {
      options.onError('http2 stream', err);
      s.close(http2.constants.NGHTTP2_INTERNAL_ERROR);
      return;
    }
    stream.handler = handler;
    if (!handler) {
      s.resume(); // the answer is out: the rest of the body is dropped
      return;
    }
    s.on('data', (chunk: Buffer) => handler.onData(chunk));
    s.on('end', () => {
      if (!stream.closed) handler.onEnd();
    });
  });
  const listening = serve(server, host, port, options, {
    shutdown: () => {
      for (const s of sessions) s.close();
    },
    destroy: () => {
      for (const s of sessions) s.destroy();
    },
  });
  return options.tls && material ? servingTls(server as http2.Http2SecureServer, options.tls, material, options, listening) : listening;
}
