// Keep-alive connection pools to the upstreams resolvers call. One pool (one http/https Agent) per distinct
// (endpoints, TLS) set, shared by every engine that uses it: a new config version with the same endpoints
// reuses the warm connections. Pools are reference-counted; the last release lets the pool linger a while
// (so an old engine closed just before its successor acquires does not drop the connections) and then closes.

import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
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
  address: string;
  port: number;
  hostHeader: string;
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

export class UpstreamPool {
  readonly key: string;
  readonly name: string;
  readonly secure: boolean;
  private readonly agent: http.Agent;
  private readonly endpoints: Endpoint[];
  private readonly request: typeof http.request;
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
    this.endpoints = (upstream.endpoints ?? []).map((e) => ({ address: e.address, port: e.port, hostHeader: hostHeader(e, this.secure) }));
    const common = { keepAlive: true, keepAliveMsecs: 1_000, maxFreeSockets: 256, timeout: FREE_SOCKET_TIMEOUT_MS, scheduling: 'lifo' as const };
    if (tls !== undefined) {
      const first = this.endpoints[0]?.address;
      const servername = tls.sni ?? (first !== undefined && net.isIP(first) === 0 ? first : undefined);
      this.agent = new https.Agent({
        ...common,
        ...(tls.rootCa !== undefined ? { ca: tls.rootCa } : {}),
        ...(tls.certChain !== undefined ? { cert: tls.certChain } : {}),
        ...(tls.privateKey !== undefined ? { key: tls.privateKey } : {}),
        ...(servername !== undefined ? { servername } : {}),
        // As Envoy does for an Upstream without a validation context: no root CA, no verification.
        rejectUnauthorized: tls.rootCa !== undefined,
      });
      this.request = https.request;
    } else {
      this.agent = new http.Agent(common);
      this.request = http.request;
    }
  }

  get endpointCount(): number {
    return this.endpoints.length;
  }

  destroy(): void {
    this.agent.destroy();
  }

  /** Makes one call; resolves with the parsed JSON body of a 2xx response (null when empty), rejects with CallError. */
  call(spec: CallSpec): Promise<unknown> {
    const n = this.endpoints.length;
    if (n === 0) return Promise.reject(new CallError('UPSTREAM_UNAVAILABLE', `upstream ${this.name} has no endpoints`));
    this.calls++;
    return new Promise<unknown>((resolve, reject) => {
      let settled = false;
      let req: http.ClientRequest | undefined;
      let retried = false;
      const settle = (err: CallError | undefined, value?: unknown): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err !== undefined) reject(err);
        else resolve(value);
      };
      const timer = setTimeout(() => {
        settle(new CallError('UPSTREAM_TIMEOUT', `upstream ${this.name} did not answer within ${spec.timeoutMs} ms`));
        req?.destroy();
      }, spec.timeoutMs);

      const start = (): void => {
        const ep = this.endpoints[this.next++ % n]!;
        if (this.next >= 1 << 30) this.next = 0;
        const headers = spec.headers['host'] === undefined ? { ...spec.headers, host: ep.hostHeader } : spec.headers;
        const r = this.request({ agent: this.agent, host: ep.address, port: ep.port, method: spec.method, path: spec.path, headers });
        req = r;
        r.on('response', (res) => {
          const status = res.statusCode ?? 0;
          if (status < 200 || status > 299) {
            res.resume();
            settle(new CallError('UPSTREAM_HTTP_ERROR', `upstream ${this.name} answered HTTP ${status}`, status));
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > MAX_UPSTREAM_RESPONSE_BYTES) {
              settle(new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.name} response exceeds ${MAX_UPSTREAM_RESPONSE_BYTES} bytes`));
              r.destroy();
              return;
            }
            chunks.push(chunk);
          });
          res.on('end', () => {
            if (settled) return;
            if (size === 0) return settle(undefined, null);
            const text = chunks.length === 1 ? chunks[0]!.toString('utf8') : Buffer.concat(chunks, size).toString('utf8');
            let parsed: unknown;
            try {
              parsed = JSON.parse(text);
            } catch {
              return settle(new CallError('UPSTREAM_BAD_RESPONSE', `upstream ${this.name} answered with a body that is not JSON`, status));
            }
            settle(undefined, parsed);
          });
          res.on('error', (err) => settle(new CallError('UPSTREAM_UNAVAILABLE', `upstream ${this.name}: connection lost while reading the response`, undefined, { cause: err })));
        });
        r.on('error', (err: NodeJS.ErrnoException) => {
          if (settled) return;
          // a kept-alive socket closed by the server just as we reused it: try once more, on a new socket
          if (!retried && r.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE') && IDEMPOTENT.has(spec.method)) {
            retried = true;
            start();
            return;
          }
          settle(new CallError('UPSTREAM_UNAVAILABLE', `upstream ${this.name} is unavailable (${err.code ?? err.message})`, undefined, { cause: err }));
        });
        r.end(spec.body);
      };
      start();
    });
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
