// Keep-alive connection pools to the upstreams resolvers call. One UpstreamPool (one undici Pool per
// endpoint) per distinct (endpoints, TLS) set, shared by every engine that uses it: a new config version
// with the same endpoints reuses the warm connections. Pools are reference-counted; the last release lets
// the pool linger a while (so an old engine closed just before its successor acquires does not drop the
// connections) and then closes.
//
// REST calls go through a minimal HTTP/1.1 client (h1.ts) with one connection set per endpoint; the remote
// executor (remote.ts) uses the endpoint's undici Pool.

import net from 'node:net';
import type tls from 'node:tls';
import { Pool } from 'undici';
import type { ResolverUpstream, UpstreamEndpoint } from '../../../common/contract.js';
import { CallError } from './errors.js';
import { encodeRequest, H1Endpoint, H1Error, type H1Connection, type H1Handler } from './h1.js';

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
  /** for the remote executor */
  pool: Pool;
  /** for REST calls */
  h1: H1Endpoint;
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
    const h1Tls = connect === undefined ? undefined : (connect as tls.ConnectionOptions);
    this.endpoints = (upstream.endpoints ?? []).map((e) => ({
      hostHeader: hostHeader(e, this.secure),
      h1: new H1Endpoint({
        host: e.address,
        port: e.port,
        tls: h1Tls,
        idleTimeoutMs: FREE_SOCKET_TIMEOUT_MS,
        maxResponseBytes: MAX_UPSTREAM_RESPONSE_BYTES,
      }),
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
    for (const e of this.endpoints) {
      e.h1.close();
      e.pool.destroy().catch(() => undefined);
    }
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

/** One call on the endpoint's HTTP/1.1 connections. */
class UpstreamCall implements H1Handler {
  private settled = false;
  private retried = false;
  private conn: H1Connection | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly pool: UpstreamPool,
    private readonly spec: CallSpec,
    private readonly resolve: (value: unknown) => void,
    private readonly reject: (err: unknown) => void,
  ) {
    this.timer = setTimeout(() => this.onTimeout(), spec.timeoutMs);
  }

  start(fresh = false): void {
    const spec = this.spec;
    const ep = this.pool.pick();
    const headers = spec.headers['host'] === undefined ? { host: ep.hostHeader, ...spec.headers } : spec.headers;
    const head = encodeRequest(spec.method, spec.path, headers, spec.body);
    // a header or path our templates rendered that HTTP cannot carry: an internal error, as node:http throws
    if (head instanceof H1Error) return this.settle(head);
    this.conn = ep.h1.send(head, spec.body, this, fresh);
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
    this.settle(new CallError('UPSTREAM_TIMEOUT', `upstream ${this.pool.name} did not answer within ${this.spec.timeoutMs} ms`));
    // the response may still come: the connection cannot serve another call before it, so it goes
    this.conn?.destroy();
  }

  response(status: number, body: Buffer | undefined): void {
    if (this.settled) return;
    if (status > 299) {
      this.settle(new CallError('UPSTREAM_HTTP_ERROR', `upstream ${this.pool.name} answered HTTP ${status}`, status));
      return;
    }
    if (body === undefined) return this.settle(undefined, null);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body.toString('utf8'));
    } catch {
      return this.settle(
        new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.pool.name} answered with a body that is not JSON`, status),
      );
    }
    this.settle(undefined, parsed);
  }

  failure(err: Error & { code?: string }, retryable: boolean): void {
    if (this.settled) return;
    this.conn = undefined;
    if (err.code === 'UND_ERR_RES_EXCEEDED_MAX_SIZE') {
      this.settle(
        new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.pool.name} response exceeds ${MAX_UPSTREAM_RESPONSE_BYTES} bytes`),
      );
      return;
    }
    // a kept-alive connection closed by the server just as we reused it: try once more, on a new one
    if (retryable && !this.retried && IDEMPOTENT.has(this.spec.method)) {
      this.retried = true;
      this.start(true);
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
