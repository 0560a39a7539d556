// The transport interface the gRPC layer serves on: a stream's request headers and body in, header lists
// (name/value pairs) and DATA out. HPACK stays inside h2/: the gRPC layer names its headers, Legate's server
// encodes them (the constant lists once: staticHeaders), node:http2 builds its header objects from them.
// Two implementations: Legate's own server (server.ts, the default) and node:http2 (node.ts), chosen with
// `--http2-transport legate|node` (LEGATE_HTTP2_TRANSPORT).
import { encodeHeaders } from './hpack.js';
import type { H2Limits } from './limits.js';

/** Header fields in order, names lower-case, pseudo-headers first. */
export type HeaderList = readonly (readonly [string, string])[];

/** A server-side stream as the gRPC layer uses it. */
export interface H2Stream {
  /** request header fields in order (pseudo-headers first), names lower-case as HTTP/2 requires */
  readonly headers: readonly (readonly [string, string])[];
  /** set once the answer is complete (END_STREAM sent) or the stream was reset */
  readonly closed: boolean;
  readonly headersSent: boolean;
  /** The first value of a header, or undefined. */
  header(name: string): string | undefined;
  /** Sends the response headers; endStream: nothing follows (a trailers-only answer). */
  respond(headers: HeaderList, endStream?: boolean): void;
  /** Sends DATA (queued while the flow-control windows are closed). */
  write(data: Buffer): void;
  /** Ends the answer: with trailers, or an empty DATA frame with END_STREAM. */
  end(trailers?: HeaderList): void;
}

/** What a stream's owner is told. */
export interface H2StreamHandler {
  /** a DATA payload (may be a view into the read buffer: copy it to keep it past this call) */
  onData(chunk: Buffer): void;
  /** the client half-closed (END_STREAM) */
  onEnd(): void;
  /** the client reset the stream or the connection went away before the answer was complete */
  onAbort?(): void;
}

export interface H2ServerOptions {
  /** advertised and enforced: a stream over it is refused (REFUSED_STREAM); default DEFAULT_MAX_CONCURRENT_STREAMS */
  maxConcurrentStreams?: number;
  /** abuse limits (each defaults to DEFAULT_LIMITS') */
  limits?: Partial<H2Limits>;
  /** A new stream, its headers decoded. Returns its handler, or answers it at once and returns undefined. */
  onStream(stream: H2Stream): H2StreamHandler | undefined;
  /** a connection or server failure worth logging (never a client that went away) */
  onError(what: string, err: unknown): void;
  /** mutual TLS (tls.ts) instead of cleartext */
  tls?: H2TlsFiles;
}

export interface H2Server {
  port: number;
  /** Stops accepting connections, sends GOAWAY on open ones, closes them when their streams are done or after graceMs. */
  stop(graceMs?: number): Promise<void>;
}

export const H2_TRANSPORTS = ['legate', 'node'] as const;
export type H2TransportName = (typeof H2_TRANSPORTS)[number];

/** How a service serves HTTP/2: the transport, its stream limit and abuse limits (defaults: legate, DEFAULT_LIMITS). */
export interface H2Config {
  transport?: H2TransportName;
  maxConcurrentStreams?: number;
  limits?: Partial<H2Limits>;
  /** mutual TLS (tls.ts) instead of cleartext (--tls-cert, --tls-key, --tls-client-ca) */
  tls?: H2TlsFiles;
}

/** PEM files, as a Kubernetes TLS Secret mounts them (tls.crt, tls.key, ca.crt). */
export interface H2TlsFiles {
  /** the server's certificate (chain) */
  certFile: string;
  /** its private key */
  keyFile: string;
  /** the CA (bundle) a client's certificate must chain to */
  clientCaFile: string;
  /** how often the files are checked for a new version; 0: never (default DEFAULT_TLS_RELOAD_MS) */
  reloadIntervalMs?: number;
}

/** where staticHeaders keeps a list's HPACK block: a property of the list itself (a WeakMap lookup per answer cost more) */
const HPACK = Symbol('hpack');
type EncodedList = HeaderList & { [HPACK]?: Buffer };

/** A header list sent often (response headers, OK trailers): Legate's server encodes it once. */
export function staticHeaders(list: HeaderList): HeaderList {
  Object.defineProperty(list, HPACK, { value: encodeHeaders(list) });
  return Object.freeze(list);
}

/** The HPACK block of a header list (cached for staticHeaders' lists). */
export function headerBlock(list: HeaderList): Buffer {
  return (list as EncodedList)[HPACK] ?? encodeHeaders(list);
}
