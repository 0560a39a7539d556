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
}

export const DEFAULT_LIMITS: H2Limits = {
  rapidResets: 1000,
  settings: 100,
  pings: 100,
  emptyFrames: 1000,
  floodWindowMs: 10_000,
  connectionBodyBytes: 64 * 1024 * 1024,
  prefaceTimeoutMs: 10_000,
  idleTimeoutMs: 10 * 60_000,
};

export type H2Limit =
  'rapid_reset' | 'settings_flood' | 'ping_flood' | 'empty_frames' | 'connection_body' | 'preface_timeout' | 'idle_timeout';

/** How often each limit stopped a client in this process (the services export them as a metric). */
export const limitHits: Record<H2Limit, number> = {
  rapid_reset: 0,
  settings_flood: 0,
  ping_flood: 0,
  empty_frames: 0,
  connection_body: 0,
  preface_timeout: 0,
  idle_timeout: 0,
};
