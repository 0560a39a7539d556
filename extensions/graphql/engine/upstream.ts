// Keep-alive connection pools to the upstreams resolvers call. One UpstreamPool (one undici Pool per
// endpoint) per distinct (endpoints, TLS) set, shared by every engine that uses it: a new config version
// with the same endpoints reuses the warm connections. Pools are reference-counted; the last release lets
// the pool linger a while (so an old engine closed just before its successor acquires does not drop the
// connections) and then closes.
//
// Calls go through undici's low-level dispatch() with one handler object per call: no request/response
// stream objects, the headers not read, the body collected as Buffers: less work per call than node:http's
// ClientRequest/IncomingMessage (measured in the benchmark's flat query).

import net from 'node:net';
import { Pool, type Dispatcher } from 'undici';
import type { ResolverUpstream, UpstreamEndpoint } from '../../../common/contract.js';
import { CallError } from './errors.js';

export interface CallSpec {
  method: string;
  /** path with query string */
  path: string;
  /** lowercased names; `host` is added from the endpoint when absent */
  headers: Record<string, string>;
  body?: string | undefined;
  timeoutMs: number;
}

/** Largest backend response body accepted (a resolver result is held in memory). */
export const MAX_UPSTREAM_RESPONSE_BYTES = 32 * 1024 * 1024;

/** Free sockets are closed after this long, below Node's default server keepAliveTimeout (5 s), so we do
 * not reuse a socket the server is about to close. A reused socket that fails anyway is retried once. */
const FREE_SOCKET_TIMEOUT_MS = 4_000;
const LINGER_MS = 30_000;
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

interface Endpoint {
  hostHeader: string;
  pool: Pool;
}

export function poolKey(upstream: ResolverUpstream): string {
  const eps = (upstream.endpoints ?? []).map((e) => `${e.address}:${e.port}`).join(',');
  const tls = upstream.tls;
  if (tls === undefined) return `http|${eps}`;
  return `https|${eps}|${JSON.stringify([tls.sni ?? '', tls.rootCa ?? '', tls.certChain ?? '', tls.privateKey ?? ''])}`;
}

function hostHeader(e: UpstreamEndpoint, secure: boolean): string {
  const host = net.isIPv6(e.address) ? `[${e.address}]` : e.address;
  return (secure && e.port === 443) || (!secure && e.port === 80) ? host : `${host}:${e.port}`;
}

/** Errors of a connection that the server closed or reset under the request: an idempotent call is retried once. */
const RETRYABLE = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET']);

let nextPoolId = 0;

export class UpstreamPool {
  readonly key: string;
  /** short and unique in the process, for per-request memo keys (the key holds TLS material) */
  readonly id = `p${nextPoolId++}`;
  readonly name: string;
  readonly secure: boolean;
  /** @internal */ readonly endpoints: Endpoint[];
  /** @internal */ readonly servername: string | undefined;
  private next = 0;
  /** @internal */ refs = 0;
  /** @internal */ lingerTimer: NodeJS.Timeout | undefined;
  /** calls made through this pool (for tests and stats) */
  calls = 0;

  constructor(upstream: ResolverUpstream, key: string) {
    this.key = key;
    this.name = upstream.name;
    const tls = upstream.tls;
    this.secure = tls !== undefined;
    let connect: Pool.Options['connect'] | undefined;
    if (tls !== undefined) {
      const first = upstream.endpoints?.[0]?.address;
      this.servername = tls.sni ?? (first !== undefined && net.isIP(first) === 0 ? first : undefined);
      connect = {
        ...(tls.rootCa !== undefined ? { ca: tls.rootCa } : {}),
        ...(tls.certChain !== undefined ? { cert: tls.certChain } : {}),
        ...(tls.privateKey !== undefined ? { key: tls.privateKey } : {}),
        ...(this.servername !== undefined ? { servername: this.servername } : {}),
        // As Envoy does for an Upstream without a validation context: no root CA, no verification.
        rejectUnauthorized: tls.rootCa !== undefined,
      };
    }
    const scheme = this.secure ? 'https' : 'http';
    this.endpoints = (upstream.endpoints ?? []).map((e) => ({
      hostHeader: hostHeader(e, this.secure),
      pool: new Pool(`${scheme}://${net.isIPv6(e.address) ? `[${e.address}]` : e.address}:${e.port}`, {
        // idle connections close after this (or sooner if the server's Keep-Alive hint says so)
        keepAliveTimeout: FREE_SOCKET_TIMEOUT_MS,
        keepAliveMaxTimeout: FREE_SOCKET_TIMEOUT_MS,
        ...(connect !== undefined ? { connect } : {}),
      }),
    }));
  }

  get endpointCount(): number {
    return this.endpoints.length;
  }

  destroy(): void {
    for (const e of this.endpoints) e.pool.destroy().catch(() => undefined);
  }

  /** @internal the endpoint of the next call (round robin) */
  pick(): Endpoint {
    const ep = this.endpoints[this.next++ % this.endpoints.length]!;
    if (this.next >= 1 << 30) this.next = 0;
    return ep;
  }

  /** Makes one call; resolves with the parsed JSON body of a 2xx response (null when empty), rejects with CallError. */
  call(spec: CallSpec): Promise<unknown> {
    if (this.endpoints.length === 0) return Promise.reject(new CallError('UPSTREAM_UNAVAILABLE', `upstream ${this.name} has no endpoints`));
    this.calls++;
    return new Promise<unknown>((resolve, reject) => new UpstreamCall(this, spec, resolve, reject).start());
  }
}

function queueCompletion(call: UpstreamCall): void {
  setImmediate(completeCall, call);
}

function completeCall(call: UpstreamCall): void {
  call.complete();
}

/** One call: an undici dispatch handler (the controller interface of undici 7 and 8; the headers are not read). */
class UpstreamCall implements Dispatcher.DispatchHandler {
  private settled = false;
  private retried = false;
  private timedOut = false;
  private controller: Dispatcher.DispatchController | undefined;
  private status = 0;
  private chunks: Buffer[] = [];
  private size = 0;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly spec: CallSpec,
    private readonly resolve: (value: unknown) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(() => this.onTimeout(), spec.timeoutMs);
  }

  start(): void {
    const spec = this.spec;
    const ep = this.pool.pick();
    const headers = spec.headers['host'] === undefined ? { ...spec.headers, host: ep.hostHeader } : spec.headers;
    const opts: Dispatcher.DispatchOptions & { servername?: string } = {
      path: spec.path,
      method: spec.method as Dispatcher.HttpMethod,
      headers,
      body: spec.body ?? null,
    };
    if (this.pool.servername !== undefined) opts.servername = this.pool.servername;
    ep.pool.dispatch(opts, this);
  }

  private settle(err: unknown, value?: unknown): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    if (err !== undefined) this.reject(err);
    else this.resolve(value);
  }

  private onTimeout(): void {
    if (this.settled) return;
    this.timedOut = true;
    this.settle(new CallError('UPSTREAM_TIMEOUT', `upstream ${this.pool.name} did not answer within ${this.spec.timeoutMs} ms`));
    this.controller?.abort(new Error('timeout'));
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.timedOut) controller.abort(new Error('timeout'));
  }

  onResponseStart(_controller: Dispatcher.DispatchController, statusCode: number): void {
    if (statusCode < 200) return; // informational: the final response follows
    this.status = statusCode;
    if (statusCode > 299) {
      // the body is read and dropped, so the connection stays usable
      this.settle(new CallError('UPSTREAM_HTTP_ERROR', `upstream ${this.pool.name} answered HTTP ${statusCode}`, statusCode));
    }
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    this.size += chunk.length;
    if (this.size > MAX_UPSTREAM_RESPONSE_BYTES) {
      this.settle(
        new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.pool.name} response exceeds ${MAX_UPSTREAM_RESPONSE_BYTES} bytes`),
      );
      controller.abort(new Error('response too large'));
      return;
    }
    this.chunks.push(chunk);
  }

  onResponseEnd(): void {
    if (this.settled) return;
    // undici hands the connection back to the pool on the next turn of the event loop (a setImmediate it
    // queues after this returns): settling after that lets a call the result triggers (a nested resolver,
    // the next request) reuse the connection rather than open another one
    process.nextTick(queueCompletion, this);
  }

  /** @internal */ complete(): void {
    if (this.settled) return;
    if (this.size === 0) return this.settle(undefined, null);
    const text = this.chunks.length === 1 ? this.chunks[0]!.toString('utf8') : Buffer.concat(this.chunks, this.size).toString('utf8');
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      return this.settle(
        new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.pool.name} answered with a body that is not JSON`, this.status),
      );
    }
    this.settle(undefined, parsed);
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error & { code?: string }): void {
    if (this.settled) return;
    if (err.code === 'UND_ERR_INVALID_ARG') {
      // a header or path our templates rendered that HTTP cannot carry: an internal error, as node:http throws
      this.settle(err);
      return;
    }
    // a kept-alive connection closed by the server just as we reused it: try once more (on a new one)
    if (!this.retried && this.status === 0 && err.code !== undefined && RETRYABLE.has(err.code) && IDEMPOTENT.has(this.spec.method)) {
      this.retried = true;
      this.controller = undefined;
      this.chunks = [];
      this.size = 0;
      this.start();
      return;
    }
    const reason = err.code === 'UND_ERR_SOCKET' ? 'connection closed' : (err.code ?? err.message);
    this.settle(new CallError('UPSTREAM_UNAVAILABLE', `upstream ${this.pool.name} is unavailable (${reason})`, undefined, { cause: err }));
  }
}
/** A registry of pools shared across engines (and so across config versions). */
export class UpstreamPools {
  private readonly pools = new Map<string, UpstreamPool>();
  constructor(private readonly lingerMs = LINGER_MS) {}

  acquire(upstream: ResolverUpstream): UpstreamPool {
    const key = poolKey(upstream);
    let pool = this.pools.get(key);
    if (pool === undefined) {
      pool = new UpstreamPool(upstream, key);
      this.pools.set(key, pool);
    }
    if (pool.lingerTimer !== undefined) {
      clearTimeout(pool.lingerTimer);
      pool.lingerTimer = undefined;
    }
    pool.refs++;
    return pool;
  }

  release(pool: UpstreamPool): void {
    if (this.pools.get(pool.key) !== pool || pool.refs <= 0) return;
    pool.refs--;
    if (pool.refs > 0) return;
    const drop = (): void => {
      pool.lingerTimer = undefined;
      if (pool.refs === 0 && this.pools.get(pool.key) === pool) {
        this.pools.delete(pool.key);
        pool.destroy();
      }
    };
    if (this.lingerMs <= 0) drop();
    else {
      pool.lingerTimer = setTimeout(drop, this.lingerMs);
      pool.lingerTimer.unref();
    }
  }

  get size(): number {
    return this.pools.size;
  }

  /** Closes every pool now (shutdown). */
  close(): void {
    for (const pool of this.pools.values()) {
      if (pool.lingerTimer !== undefined) clearTimeout(pool.lingerTimer);
      pool.destroy();
    }
    this.pools.clear();
  }
}

/** The process-wide default registry, used when createEngine is not given one. */
export const defaultUpstreamPools = new UpstreamPools();
