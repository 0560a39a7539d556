// OAuth2 token introspection (RFC 7662) against one endpoint with one client identity, with a cache of
// active results and single-flight: concurrent checks of the same token share one HTTP call.
//
// The call: POST <introspectionUrl>, Content-Type application/x-www-form-urlencoded,
// body `token=<token>&token_type_hint=access_token`, and client authentication by HTTP basic
// (client id and secret each form-urlencoded first, RFC 6749 §2.3.1) when a client id and secret are
// configured; a client id without a secret is sent as the `client_id` form field (a public client).
// Anything but a 200 with a JSON object holding a boolean `active` is an IntrospectionError: the
// caller denies (fail closed). Tokens never appear in errors or logs; callers log tokenRef() instead.
import { hash as oneShotHash } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import { ExpiringCache, type Expiring } from './cache.js';

/** An introspection that said `active: true`. */
export interface ActiveToken extends Expiring {
  readonly active: true;
  /** epoch ms when the introspection call was sent (cache age is counted from here) */
  readonly fetchedAt: number;
  /** epoch ms of `exp`; +Infinity when the response has none */
  readonly expiresAt: number;
  readonly scopes: ReadonlySet<string>;
  /** `sub`, else `client_id` (for debug logs) */
  readonly subject: string | undefined;
  /** the whole response (dynamicMetadataFromClaims, userIdAttributeName) */
  readonly claims: Readonly<Record<string, unknown>>;
}

export interface InactiveToken {
  readonly active: false;
}

export type Introspection = ActiveToken | InactiveToken;

export const INACTIVE: InactiveToken = Object.freeze({ active: false });

export type IntrospectionErrorKind = 'unreachable' | 'timeout' | 'status' | 'malformed';

export class IntrospectionError extends Error {
  constructor(
    readonly kind: IntrospectionErrorKind,
    message: string,
  ) {
    super(message);
    this.name = 'IntrospectionError';
  }
}

/** Largest introspection response read (bytes); bigger ones are treated as garbage. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

/** sha256 of the token, base64: the cache key. */
export function tokenHash(token: string): string {
  return oneShotHash('sha256', token, 'base64');
}

/** What logs may say about a token: a short prefix of its sha256. */
export function tokenRef(hash: string): string {
  return `sha256:${Buffer.from(hash, 'base64').toString('hex', 0, 6)}`;
}

/** application/x-www-form-urlencoded encoding of one value (WHATWG URL "urlencoded serializer"). */
export function formEncode(value: string): string {
  return encodeURIComponent(value)
    .replace(/%20/g, '+')
    .replace(/[!'()~]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** The `Authorization` value for HTTP basic client authentication per RFC 6749 §2.3.1. */
export function basicAuthorization(clientId: string, clientSecret: string): string {
  return `Basic ${Buffer.from(`${formEncode(clientId)}:${formEncode(clientSecret)}`, 'utf8').toString('base64')}`;
}

/** URL for logs: no credentials, no query string. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.protocol}//${u.host}${u.pathname}`;
  } catch {
    return '<invalid url>';
  }
}

export interface IntrospectorOptions {
  url: string;
  clientId?: string | undefined;
  clientSecret?: string | undefined;
  timeoutMs: number;
  /** bound of this endpoint's cache */
  maxEntries: number;
  agent: http.Agent;
}

export interface IntrospectorCounters {
  /** HTTP calls made */
  calls: number;
  /** checks that joined an in-flight call instead of making one */
  joined: number;
  /** calls that failed (IntrospectionError) */
  errors: number;
  cacheHits: number;
}

export class Introspector {
  readonly url: URL;
  /** Longest cache timeout of the steps using this introspector; 0 stores nothing. Set by the owner. */
  cacheMs = 0;
  readonly counters: IntrospectorCounters = { calls: 0, joined: 0, errors: 0, cacheHits: 0 };
  private readonly cache: ExpiringCache<ActiveToken>;
  private readonly inflight = new Map<string, Promise<Introspection>>();
  private readonly transport: typeof http | typeof https;
  private readonly requestOptions: http.RequestOptions;
  private readonly bodySuffix: string;
  private readonly timeoutMs: number;
  // error-log rate limiting (one line per second per endpoint, with a count of the ones held back)
  private lastErrorLogAt = 0;
  private suppressedErrors = 0;

  constructor(options: IntrospectorOptions) {
    this.url = new URL(options.url);
    if (this.url.protocol !== 'http:' && this.url.protocol !== 'https:') {
      throw new Error(`introspection URL must be http or https, got ${this.url.protocol}`);
    }
    this.transport = this.url.protocol === 'https:' ? https : http;
    this.timeoutMs = options.timeoutMs;
    this.cache = new ExpiringCache(options.maxEntries);
    const headers: Record<string, string> = {
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
      'user-agent': 'legate-extauth',
    };
    let suffix = '&token_type_hint=access_token';
    if (options.clientId !== undefined && options.clientId !== '') {
      if (options.clientSecret !== undefined && options.clientSecret !== '') {
        headers['authorization'] = basicAuthorization(options.clientId, options.clientSecret);
      } else {
        suffix += `&client_id=${formEncode(options.clientId)}`;
      }
    }
    this.bodySuffix = suffix;
    this.requestOptions = {
      method: 'POST',
      hostname: this.url.hostname.startsWith('[') ? this.url.hostname.slice(1, -1) : this.url.hostname,
      port: this.url.port || (this.url.protocol === 'https:' ? 443 : 80),
      path: `${this.url.pathname}${this.url.search}`,
      headers,
      agent: options.agent,
    };
  }

  get cacheSize(): number {
    return this.cache.size;
  }

  resize(maxEntries: number): void {
    this.cache.resize(maxEntries);
  }

  /** A cached active result no older than `cacheTimeoutMs` (and not past `exp`), if any. */
  cached(hash: string, now: number, cacheTimeoutMs: number): ActiveToken | undefined {
    if (cacheTimeoutMs <= 0) return undefined;
    const hit = this.cache.get(hash, now);
    if (hit === undefined || now - hit.fetchedAt >= cacheTimeoutMs) return undefined;
    this.counters.cacheHits++;
    return hit;
  }

  /** Introspects `token` (whose tokenHash is `hash`), sharing a call already in flight for it. */
  introspect(token: string, hash: string): Promise<Introspection> {
    const pending = this.inflight.get(hash);
    if (pending !== undefined) {
      this.counters.joined++;
      return pending;
    }
    const fetchedAt = Date.now();
    this.counters.calls++;
    const p = this.post(token, fetchedAt).then(
      (result) => {
        this.inflight.delete(hash);
        if (result.active && this.cacheMs > 0) {
          const deadAt = Math.min(fetchedAt + this.cacheMs, result.expiresAt);
          if (deadAt > Date.now()) this.cache.set(hash, { ...result, deadAt });
        }
        return result;
      },
      (err: unknown) => {
        this.inflight.delete(hash);
        this.counters.errors++;
        throw err;
      },
    );
    this.inflight.set(hash, p);
    return p;
  }

  /** Forgets cached results (e.g. when the introspector's configuration goes away). */
  clear(): void {
    this.cache.clear();
  }

  sweep(now: number): number {
    return this.cache.sweep(now);
  }

  /** Whether to log an error now; returns the number of errors held back since the last one, or -1. */
  errorLogTicket(now: number): number {
    if (now - this.lastErrorLogAt < 1000) {
      this.suppressedErrors++;
      return -1;
    }
    this.lastErrorLogAt = now;
    const held = this.suppressedErrors;
    this.suppressedErrors = 0;
    return held;
  }

  private post(token: string, fetchedAt: number): Promise<Introspection> {
    const body = `token=${formEncode(token)}${this.bodySuffix}`;
    return this.attempt(body, fetchedAt, true);
  }

  private attempt(body: string, fetchedAt: number, mayRetry: boolean): Promise<Introspection> {
    return new Promise<Introspection>((resolve, reject) => {
      let settled = false;
      const finish = (err: IntrospectionError | undefined, value?: Introspection): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (err) reject(err);
        else resolve(value!);
      };
      const req = this.transport.request(this.requestOptions, (res) => {
        if (res.statusCode !== 200) {
          res.resume(); // drain, so the connection can be reused
          finish(new IntrospectionError('status', `introspection endpoint answered HTTP ${res.statusCode ?? '?'}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_RESPONSE_BYTES) {
            finish(new IntrospectionError('malformed', `introspection response larger than ${MAX_RESPONSE_BYTES} bytes`));
            req.destroy();
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => {
          if (settled) return;
          try {
            finish(undefined, interpret(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks), fetchedAt));
          } catch (err) {
            finish(err instanceof IntrospectionError ? err : new IntrospectionError('malformed', String(err)));
          }
        });
        res.on('error', (err: NodeJS.ErrnoException) =>
          finish(new IntrospectionError('unreachable', `introspection response failed: ${err.code ?? err.message}`)),
        );
        res.on('aborted', () => finish(new IntrospectionError('unreachable', 'introspection response aborted')));
      });
      const timer = setTimeout(() => {
        finish(new IntrospectionError('timeout', `introspection took longer than ${this.timeoutMs} ms`));
        req.destroy();
      }, this.timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => {
        if (settled) return;
        // a kept-alive connection the server closed while we were reusing it: try once on a fresh one
        if (mayRetry && req.reusedSocket && (err.code === 'ECONNRESET' || err.code === 'EPIPE')) {
          settled = true;
          clearTimeout(timer);
          this.attempt(body, fetchedAt, false).then(resolve, reject);
          return;
        }
        finish(new IntrospectionError('unreachable', `introspection endpoint unreachable: ${err.code ?? err.message}`));
      });
      req.setHeader('content-length', Buffer.byteLength(body));
      req.end(body);
    });
  }
}

/** Turns an introspection response body into a result; throws IntrospectionError('malformed'). */
export function interpret(body: Buffer, fetchedAt: number): Introspection {
  let doc: unknown;
  try {
    doc = JSON.parse(body.toString('utf8'));
  } catch {
    throw new IntrospectionError('malformed', 'introspection response is not JSON');
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) {
    throw new IntrospectionError('malformed', 'introspection response is not a JSON object');
  }
  const r = doc as Record<string, unknown>;
  if (typeof r['active'] !== 'boolean') throw new IntrospectionError('malformed', 'introspection response has no boolean `active`');
  if (!r['active']) return INACTIVE;
  const scope = r['scope'];
  if (scope !== undefined && typeof scope !== 'string') throw new IntrospectionError('malformed', '`scope` is not a string');
  const exp = r['exp'];
  if (exp !== undefined && (typeof exp !== 'number' || !Number.isFinite(exp)))
    throw new IntrospectionError('malformed', '`exp` is not a number');
  const sub = r['sub'];
  const clientId = r['client_id'];
  const scopes = new Set<string>();
  if (typeof scope === 'string') for (const s of scope.split(' ')) if (s !== '') scopes.add(s);
  const expiresAt = typeof exp === 'number' ? exp * 1000 : Number.POSITIVE_INFINITY;
  return {
    active: true,
    fetchedAt,
    expiresAt,
    deadAt: expiresAt,
    scopes,
    subject: typeof sub === 'string' ? sub : typeof clientId === 'string' ? clientId : undefined,
    claims: r,
  };
}
