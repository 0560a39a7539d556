// The abuse limits of the extensions' HTTP/2 server: what a client may do to one connection, their safe
// defaults, and how often each stopped a client (exported as legate_http2_limit_hits_total).

/** streams a client may have open at once (advertised; one more is refused with REFUSED_STREAM) */
export const DEFAULT_MAX_CONCURRENT_STREAMS = 100;

/** What a client may do to one connection before it is stopped; each has a safe default (DEFAULT_LIMITS). */
export interface H2Limits {
  /** streams the client resets before any answer, per floodWindowMs: more is the "rapid reset" attack (GOAWAY ENHANCE_YOUR_CALM) */
  rapidResets: number;
  /** SETTINGS frames (not ACKs) per floodWindowMs (GOAWAY ENHANCE_YOUR_CALM) */
  settings: number;
  /** PING frames (not ACKs) per floodWindowMs (GOAWAY ENHANCE_YOUR_CALM) */
  pings: number;
  /** DATA frames with no payload and no END_STREAM, per floodWindowMs (GOAWAY ENHANCE_YOUR_CALM) */
  emptyFrames: number;
  floodWindowMs: number;
  /** request body bytes held for the streams not yet answered, all streams of the connection together: the stream
   * that goes over is reset with ENHANCE_YOUR_CALM (each stream is also bounded by its receive window, 8 MiB) */
  connectionBodyBytes: number;
  /** time for the client preface after the connection opens (then closed) */
  prefaceTimeoutMs: number;
  /** time with no stream open and nothing received (then GOAWAY NO_ERROR and closed); 0: none */
  idleTimeoutMs: number;
  /** time for the client to acknowledge our SETTINGS (then GOAWAY SETTINGS_TIMEOUT, RFC 9113 6.5.3) */
  settingsAckTimeoutMs: number;
  /** CONTINUATION frames in one header block (the CONTINUATION flood: GOAWAY ENHANCE_YOUR_CALM) */
  continuations: number;
  /** bytes of one header block as received, HPACK-compressed (HEADERS and its CONTINUATIONs; GOAWAY ENHANCE_YOUR_CALM) */
  headerBlockBytes: number;
  /** the decoded header list of a request (RFC 9113 6.5.2 sizes), advertised as SETTINGS_MAX_HEADER_LIST_SIZE: a larger
   * one refuses its stream (REFUSED_STREAM), the connection goes on */
  maxHeaderListBytes: number;
}

export const DEFAULT_LIMITS: H2Limits = {
  rapidResets: 1000,
  settings: 100,
  pings: 100,
  emptyFrames: 1000,
  floodWindowMs: 10_000,
  connectionBodyBytes: 16 * 1024 * 1024,
  prefaceTimeoutMs: 10_000,
  idleTimeoutMs: 10 * 60_000,
  settingsAckTimeoutMs: 10_000,
  continuations: 64,
  headerBlockBytes: 256 * 1024,
  maxHeaderListBytes: 64 * 1024,
};

/** Each limit's command-line flag (`--http2-<name>`, e.g. --http2-rapid-resets) and Helm value (its key). */
export const LIMIT_FLAGS: Record<keyof H2Limits, string> = {
  rapidResets: 'streams reset by the client before an answer, per flood window (then GOAWAY ENHANCE_YOUR_CALM)',
  settings: 'SETTINGS frames per flood window (then GOAWAY ENHANCE_YOUR_CALM)',
  pings: 'PING frames per flood window (then GOAWAY ENHANCE_YOUR_CALM)',
  emptyFrames: 'empty DATA frames per flood window (then GOAWAY ENHANCE_YOUR_CALM)',
  floodWindowMs: 'the window the flood limits count in, ms',
  connectionBodyBytes: 'request body bytes one connection may hold unanswered (the stream over it is reset)',
  prefaceTimeoutMs: 'time for the client preface, ms',
  idleTimeoutMs: 'idle connection timeout, ms (0: none)',
  settingsAckTimeoutMs: 'time for the client to acknowledge our SETTINGS, ms (then GOAWAY SETTINGS_TIMEOUT)',
  continuations: 'CONTINUATION frames in one header block (then GOAWAY ENHANCE_YOUR_CALM)',
  headerBlockBytes: 'bytes of one compressed header block (then GOAWAY ENHANCE_YOUR_CALM)',
  maxHeaderListBytes: 'decoded request header list size, advertised (a larger one is refused: REFUSED_STREAM)',
};

/** `rapidResets` -> `http2-rapid-resets` */
export function limitFlagName(key: string): string {
  return `http2-${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

export type H2Limit =
  | 'rapid_reset'
  | 'settings_flood'
  | 'ping_flood'
  | 'empty_frames'
  | 'connection_body'
  | 'dropped_body'
  | 'preface_timeout'
  | 'idle_timeout'
  | 'settings_timeout'
  | 'continuation_flood'
  | 'header_block'
  | 'header_list'
  | 'concurrent_streams';

/** How often each limit stopped a client in this process (the services export them as a metric). */
export const limitHits: Record<H2Limit, number> = {
  rapid_reset: 0,
  settings_flood: 0,
  ping_flood: 0,
  empty_frames: 0,
  connection_body: 0,
  dropped_body: 0,
  preface_timeout: 0,
  idle_timeout: 0,
  settings_timeout: 0,
  continuation_flood: 0,
  header_block: 0,
  header_list: 0,
  concurrent_streams: 0,
};
