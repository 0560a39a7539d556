// oauth2.oidcAuthorizationCode and oauth2.oauth2 (plain OAuth2) as an AuthStep: a browser login by the
// authorization code grant (RFC 6749 §4.1) with PKCE (RFC 7636, S256).
//
//   no session        -> 302 to the provider's authorization endpoint (state, nonce, PKCE challenge), the
//                        flow's state in a short-lived cookie (encrypted; in Redis for a Redis session)
//   callbackPath      -> the code exchanged at the token endpoint (with the PKCE verifier), the ID token
//                        verified with jose (signature by the discovered JWK set, iss, aud, exp, nonce), the
//                        session created, 302 back to the page the login started from
//   a valid session   -> allow, with the ID / access token in the configured upstream headers
//   an expiring one   -> refreshed with the refresh token (when allowed), the new session set on the response
//   logoutPath        -> the session dropped (cookie cleared, Redis key deleted, refresh token revoked), 302
//                        to afterLogoutUrl
//
// A cookie session is the tokens themselves, sealed with AES-256-GCM (encrypted and authenticated: a
// cookie the service did not write does not open); a Redis session is a random 256-bit id in the cookie.
// Every provider call has a timeout; the provider or Redis down is a denial (`unavailable`) with the reason
// logged, never a token, and the next request tries again (no restart). Discovery
// (`<issuerUrl>/.well-known/openid-configuration`) and the provider's JWK set are shared per issuer (pool).
import { createCipheriv, createDecipheriv, createHash, createPrivateKey, randomBytes, type KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createClient } from '@redis/client';
import { createLocalJWKSet, decodeJwt, jwtVerify, SignJWT, type JSONWebKeySet, type JWTPayload, type JWTVerifyGetKey } from 'jose';
import { JWT_ALGORITHMS, type CodeFlowStepConfig } from '../../../common/auth-config.js';
import type { Logger } from '../../../common/log.js';
import { redactUrl } from '../introspect.js';
import type { Outcome } from '../outcome.js';
import { cookieValue } from '../request.js';
import {
  addMetadata,
  addResponseHeader,
  addUpstreamHeader,
  denyWith,
  redirect,
  setState,
  type AuthStep,
  type Hold,
  type StepFactory,
} from '../step.js';

/** How long a login may take (the state cookie's lifetime). */
const FLOW_TTL_SECONDS = 600;
/** Longest sealed session a cookie may carry (browsers keep 4096 bytes per cookie, name and attributes included). */
const MAX_COOKIE_VALUE = 3800;
/** Longest edge grant of a cookie session's allow (the session's own expiry is usually sooner). */
const EDGE_GRANT_MS = 10 * 60_000;
/** Longest edge grant of a Redis session's allow. */
const EDGE_GRANT_REDIS_MS = 60_000;
/** Least time between two discovery attempts after a failure. */
const DISCOVERY_RETRY_MS = 1000;

interface Endpoints {
  issuer: string | undefined;
  authorization: string;
  token: string;
  jwksUri: string | undefined;
  revocation: string | undefined;
  /** RP-initiated logout (OpenID Connect RP-Initiated Logout 1.0) */
  endSession: string | undefined;
}

/** One provider: discovery (OIDC) or the configured endpoints (plain OAuth2), and its JWK set. */
export class ProviderEndpoints {
  private endpoints: Endpoints | undefined;
  private keys: Promise<JWTVerifyGetKey> | undefined;
  private keysUri = '';
  /** refetches of the JWK set for an unknown kid since the last poll (jwksOnDemandRefresh) */
  private onDemand = 0;
  private inflight: Promise<Endpoints> | undefined;
  private lastAttemptAt = 0;
  private lastError = '';
  private readonly timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly config: CodeFlowStepConfig,
    private readonly timeoutMs: number,
    private readonly log: Logger,
  ) {
    if (config.flow === 'oauth2') {
      this.endpoints = {
        issuer: undefined,
        authorization: config.authEndpoint!,
        token: config.tokenEndpoint!,
        jwksUri: undefined,
        revocation: config.revocationEndpoint,
        endSession: config.endSessionEndpoint,
      };
    } else {
      this.timer = setInterval(() => void this.discover().catch(() => undefined), config.discoveryPollIntervalMs);
      this.timer.unref();
      void this.discover().catch(() => undefined);
    }
  }

  /** The endpoints known now (undefined before the first discovery succeeded). */
  get now(): Endpoints | undefined {
    return this.endpoints;
  }

  /** The endpoints, discovering them when none are known (a failure is retried at most once a second). */
  async get(): Promise<Endpoints> {
    if (this.endpoints) return this.endpoints;
    if (this.inflight) return this.inflight;
    if (Date.now() - this.lastAttemptAt < DISCOVERY_RETRY_MS) throw new Error(this.lastError || 'discovery failed');
    return this.discover();
  }

  /**
   * The key of a token, from the JWK set of the discovered jwks_uri: fetched on first use and on every discovery
   * poll; a kid it does not hold refetches it only as jwksOnDemandRefresh allows (Gloo's default: never).
   */
  jwks(endpoints: Endpoints): JWTVerifyGetKey {
    const uri = endpoints.jwksUri;
    if (uri === undefined) throw new Error('the provider publishes no jwks_uri');
    return async (header, token) => {
      const set = await this.keySet(uri, false);
      try {
        return await set(header, token);
      } catch (err) {
        if ((err as { code?: unknown }).code !== 'ERR_JWKS_NO_MATCHING_KEY' || !this.mayRefetch()) throw err;
        return (await this.keySet(uri, true))(header, token);
      }
    };
  }

  private mayRefetch(): boolean {
    const p = this.config.jwksOnDemandRefresh;
    if (p === 'never') return false;
    if (p !== 'always' && this.onDemand >= p.maxPerPollInterval) return false;
    this.onDemand++;
    return true;
  }

  private keySet(uri: string, fresh: boolean): Promise<JWTVerifyGetKey> {
    if (!fresh && this.keys !== undefined && this.keysUri === uri) return this.keys;
    const fetched = this.fetchKeys(uri);
    this.keys = fetched;
    this.keysUri = uri;
    // a failed fetch is not kept: the next token tries again
    fetched.catch(() => {
      if (this.keys === fetched) this.keys = undefined;
    });
    return fetched;
  }

  private fetchKeys(uri: string): Promise<JWTVerifyGetKey> {
    return fetchJson(uri, { timeoutMs: this.timeoutMs })
      .catch((err: unknown) => {
        throw new Error(`JWK set fetch failed: ${err instanceof Error ? err.message : 'unknown error'}`, { cause: err });
      })
      .then((doc) => createLocalJWKSet(doc as unknown as JSONWebKeySet));
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
  }

  private discover(): Promise<Endpoints> {
    if (this.inflight) return this.inflight;
    this.lastAttemptAt = Date.now();
    const c = this.config;
    const url = `${c.issuerUrl!.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    this.inflight = fetchJson(url, { timeoutMs: this.timeoutMs })
      .then((doc) => {
        const str = (k: string): string | undefined => (typeof doc[k] === 'string' ? (doc[k] as string) : undefined);
        const authorization = c.authEndpoint ?? str('authorization_endpoint');
        const token = c.tokenEndpoint ?? str('token_endpoint');
        if (authorization === undefined || token === undefined)
          throw new Error('discovery has no authorization_endpoint or token_endpoint');
        const e: Endpoints = {
          issuer: str('issuer') ?? c.issuerUrl,
          authorization,
          token,
          jwksUri: c.jwksUri ?? str('jwks_uri'),
          revocation: c.revocationEndpoint ?? str('revocation_endpoint'),
          endSession: c.endSessionEndpoint ?? str('end_session_endpoint'),
        };
        this.endpoints = e;
        this.lastError = '';
        // each poll refreshes the JWK set too (once known), and starts a new allowance of on-demand refetches
        this.onDemand = 0;
        const uri = e.jwksUri;
        if (this.keys !== undefined && uri !== undefined)
          this.fetchKeys(uri).then(
            (set) => {
              this.keys = Promise.resolve(set);
              this.keysUri = uri;
            },
            () => undefined, // the set known keeps serving until a poll or a first use fetches it
          );
        return e;
      })
      .catch((err: unknown) => {
        this.lastError = err instanceof Error ? err.message : 'discovery failed';
        this.log.error('OIDC discovery failed; logins are denied until it succeeds', { url: redactUrl(url), error: this.lastError });
        throw err;
      })
      .finally(() => {
        this.inflight = undefined;
      });
    return this.inflight;
  }
}

async function fetchJson(
  url: string,
  o: { timeoutMs: number; form?: URLSearchParams; headers?: Record<string, string> },
): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(url, {
      method: o.form ? 'POST' : 'GET',
      headers: {
        accept: 'application/json',
        'user-agent': 'legate-extauth',
        ...(o.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        ...o.headers,
      },
      ...(o.form ? { body: o.form.toString() } : {}),
      redirect: 'error',
      signal: AbortSignal.timeout(o.timeoutMs),
    });
  } catch (err) {
    const timeout = err instanceof Error && err.name === 'TimeoutError';
    const cause =
      err instanceof Error && err.cause instanceof Error ? ((err.cause as NodeJS.ErrnoException).code ?? err.cause.message) : '';
    throw new Error(
      timeout ? `${redactUrl(url)} took longer than ${o.timeoutMs} ms` : `${redactUrl(url)} unreachable: ${cause || 'fetch failed'}`,
      {
        cause: err,
      },
    );
  }
  const text = await res.text();
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    throw new Error(`${redactUrl(url)} answered HTTP ${res.status} without JSON`);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`${redactUrl(url)} answered a JSON non-object`);
  const d = doc as Record<string, unknown>;
  if (!res.ok) {
    // an OAuth error names only the error code (RFC 6749 §5.2), never a token
    const code = typeof d['error'] === 'string' ? d['error'] : 'error';
    throw new ProviderRefused(`${redactUrl(url)} answered HTTP ${res.status} ${code}`);
  }
  return d;
}

/** HTTP basic client authentication (RFC 6749 §2.3.1: form-encoded id and secret). */
function basic(clientId: string, secret: string): string {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

/** The provider answered, and said no (an invalid code or refresh token): not an outage. */
class ProviderRefused extends Error {}

// ---- sealing (cookie sessions and login state)

function seal(key: Buffer, aad: string, value: unknown): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad));
  const body = Buffer.concat([cipher.update(JSON.stringify(value), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64url');
}

function unseal(key: Buffer, aad: string, text: string | undefined): unknown {
  if (text === undefined || text.length < 40 || text.length > 8192) return undefined;
  try {
    const raw = Buffer.from(text, 'base64url');
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12));
    decipher.setAAD(Buffer.from(aad));
    decipher.setAuthTag(raw.subarray(raw.length - 16));
    const plain = Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]);
    return JSON.parse(plain.toString('utf8'));
  } catch {
    return undefined;
  }
}

// ---- sessions

/**
 * A cookie session's value as this step seals it (for tools that need a logged-in cookie without a browser,
 * e.g. the benchmark): `key` the session's 32-byte key (base64), `cookieName` the session cookie's name.
 */
export function sealCookieSession(key: string, cookieName: string, session: Session): string {
  return seal(Buffer.from(key, 'base64'), cookieName, session);
}

/** What a session holds. */
export interface Session {
  idToken?: string;
  accessToken: string;
  refreshToken?: string;
  /** epoch ms when the session's token expires (ID token exp, else the access token's expires_in) */
  expiresAt: number;
}

/** Where a login's flow state lives until the callback. */
interface FlowState {
  state: string;
  nonce: string;
  verifier: string;
  returnTo: string;
}

function isSession(v: unknown): v is Session {
  return (
    v !== null && typeof v === 'object' && typeof (v as Session).accessToken === 'string' && typeof (v as Session).expiresAt === 'number'
  );
}

function isFlowState(v: unknown): v is FlowState {
  const f = v as FlowState;
  return (
    v !== null && typeof v === 'object' && typeof f.state === 'string' && typeof f.verifier === 'string' && typeof f.returnTo === 'string'
  );
}

type RedisClient = ReturnType<typeof createClient>;

/** A Redis connection shared per address and db (pool), connecting in the background and reconnecting forever. */
function redisClient(r: NonNullable<CodeFlowStepConfig['session']['redis']>, log: Logger): RedisClient {
  let lastErrorAt = 0;
  const certs = r.tls && r.tlsCertDir !== undefined ? redisCerts(r.tlsCertDir) : {};
  const client = createClient({
    socket: {
      host: r.host,
      port: r.port,
      ...(r.tls ? { tls: true as const, ...certs } : {}),
      connectTimeout: 1000,
      reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 5), 1000),
    },
    database: r.db,
    disableOfflineQueue: true,
  });
  client.on('error', (err: unknown) => {
    const now = Date.now();
    if (now - lastErrorAt < 1000) return;
    lastErrorAt = now;
    log.error('session redis connection error', {
      address: `${r.host}:${r.port}`,
      error: err instanceof Error ? err.message : String(err),
    });
  });
  client.connect().catch(() => undefined);
  return client as RedisClient;
}

/**
 * Gloo's tlsCertMountPath: the CA that signs the Redis server's certificate (`ca.crt`, required) and a client
 * certificate (`tls.crt` with `tls.key`, optional), read when the config is applied; unreadable is the config's error.
 */
function redisCerts(dir: string): { ca: Buffer; cert?: Buffer; key?: Buffer } {
  const read = (file: string, required: boolean): Buffer | undefined => {
    try {
      return readFileSync(join(dir, file));
    } catch (err) {
      if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw new Error(`session.redis tlsCertMountPath: cannot read ${join(dir, file)}: ${(err as Error).message}`, { cause: err });
    }
  };
  const ca = read('ca.crt', true)!;
  const cert = read('tls.crt', false);
  const key = read('tls.key', false);
  if ((cert === undefined) !== (key === undefined))
    throw new Error(`session.redis tlsCertMountPath: ${dir} needs both tls.crt and tls.key for a client certificate`);
  return { ca, ...(cert && key ? { cert, key } : {}) };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_r, reject) => (timer = setTimeout(() => reject(new Error(`${what} took longer than ${ms} ms`)), ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

const b64url = (b: Buffer): string => b.toString('base64url');

export class CodeFlowStep implements AuthStep {
  readonly bearer = false;
  readonly summary;
  private readonly cookieKey: Buffer | undefined;
  private readonly stateCookie: string;
  private readonly redirectUri: string;
  private readonly callback: RegExp | string;
  /** privateKeyJwt's signing key */
  private readonly assertionKey: { key: KeyObject; alg: string } | undefined;

  constructor(
    private readonly config: CodeFlowStepConfig,
    private readonly provider: ProviderEndpoints,
    private readonly redis: RedisClient | undefined,
    private readonly log: Logger,
    private readonly timeoutMs: number,
  ) {
    const s = config.session;
    this.cookieKey = s.cookieKey !== undefined ? Buffer.from(s.cookieKey, 'base64') : undefined;
    if (config.privateKeyJwt !== undefined) {
      const key = createPrivateKey(config.privateKeyJwt.signingKey);
      this.assertionKey = { key, alg: signingAlg(key) };
    }
    this.stateCookie = `${s.cookieName}_state`;
    const app = new URL(config.appUrl);
    this.callback = config.callbackPathIsRegex ? new RegExp(`^(?:${config.callbackPath})$`) : config.callbackPath;
    this.redirectUri = config.callbackPathIsRegex ? config.appUrl : `${app.origin}${config.callbackPath}`;
    this.summary = {
      type: config.type,
      flow: config.flow,
      clientId: config.clientId,
      ...(config.issuerUrl !== undefined ? { issuerUrl: redactUrl(config.issuerUrl) } : {}),
      appUrl: config.appUrl,
      callbackPath: config.callbackPath,
      ...(config.logoutPath !== undefined ? { logoutPath: config.logoutPath } : {}),
      scopes: [...config.scopes],
      session: s.store,
      allowRefreshing: s.allowRefreshing,
    };
  }

  decideNow(_token: string, _hash: string, now: number, hold: Hold): Outcome | undefined {
    if (this.redis !== undefined) return undefined;
    const req = hold.request;
    const path = pathOf(req.path);
    if (this.isCallback(path) || path === this.config.logoutPath) return undefined;
    if (!this.hostAllowed(req.host, hold)) return 'access_denied';
    const session = unseal(
      this.cookieKey!,
      this.config.session.cookieName,
      cookieValue(req.header('cookie'), this.config.session.cookieName),
    );
    if (!isSession(session) || session.expiresAt - this.config.session.preExpiryBufferMs <= now) return undefined;
    return this.allow(session, hold, now);
  }

  async decide(_token: string, _hash: string, hold: Hold, configId: string): Promise<Outcome> {
    const req = hold.request;
    const path = pathOf(req.path);
    try {
      if (!this.hostAllowed(req.host, hold)) return 'access_denied';
      if (this.isCallback(path)) return await this.handleCallback(hold);
      if (this.config.logoutPath !== undefined && path === this.config.logoutPath) return await this.logout(hold);
      const found = await this.loadSession(hold);
      if (found === 'unavailable') return 'unavailable';
      const now = Date.now();
      if (found !== undefined) {
        const { session, id } = found;
        if (session.expiresAt - this.config.session.preExpiryBufferMs > now) return this.allow(session, hold, now);
        if (this.config.session.allowRefreshing && session.refreshToken !== undefined) {
          const refreshed = await this.refresh(session, hold);
          if (refreshed !== undefined) {
            await this.saveSession(refreshed, hold, id);
            // the refreshed session's first answer carries its new cookie: never an edge grant
            const out = this.allow(refreshed, hold, now);
            hold.until = 0;
            return out;
          }
        }
      }
      return await this.startLogin(hold);
    } catch (err) {
      const message = err instanceof Error ? err.message : 'unknown error';
      hold.detail = message;
      if (err instanceof ProviderRefused) return 'invalid_token';
      this.log.error('browser login failed; denying', { config_id: configId, error: message });
      return 'unavailable';
    }
  }

  close(): void {
    // shared clients (provider, redis) are released by the pool
  }

  // ---- the flow

  private isCallback(path: string): boolean {
    return typeof this.callback === 'string' ? path === this.callback : this.callback.test(path);
  }

  /** RFC 6265 domain match of the request host against session.targetDomain. */
  private hostAllowed(host: string, hold: Hold): boolean {
    const domain = this.config.session.targetDomain?.replace(/^\./, '').toLowerCase();
    if (domain === undefined) return true;
    const h = host.replace(/:\d+$/, '').toLowerCase();
    if (h === domain || h.endsWith(`.${domain}`)) return true;
    hold.detail = 'host is not in the session target domain';
    return false;
  }

  /**
   * Allows with the session's headers. The allow may be reused by Envoy's edge cache (docs/wasm.md, keyed on the
   * session cookie) until the session needs a refresh, at most EDGE_GRANT_MS (a Redis session: EDGE_GRANT_REDIS_MS,
   * as it can end in Redis without a logout through this gateway).
   */
  private allow(session: Session, hold: Hold, now: number): Outcome {
    const cap = now + (this.redis !== undefined ? EDGE_GRANT_REDIS_MS : EDGE_GRANT_MS);
    const until = Math.min(session.expiresAt - this.config.session.preExpiryBufferMs, cap);
    if (until < hold.until) hold.until = until > now ? until : 0;
    // Gloo's state for later steps: the ID token (opaAuth policies decode input.state.jwt)
    if (session.idToken !== undefined) setState(hold, 'jwt', session.idToken);
    const h = this.config.headers;
    if (h.idTokenHeader !== undefined && session.idToken !== undefined) addUpstreamHeader(hold, h.idTokenHeader, session.idToken);
    if (h.accessTokenHeader !== undefined)
      addUpstreamHeader(
        hold,
        h.accessTokenHeader,
        h.useBearerSchemaForAuthorization ? `Bearer ${session.accessToken}` : session.accessToken,
      );
    const c = this.config;
    if (c.accessTokenClaimsToHeaders.length) {
      let claims: JWTPayload | undefined;
      try {
        claims = decodeJwt(session.accessToken);
      } catch {
        claims = undefined; // an opaque access token has no claims to map
      }
      if (claims !== undefined) claimsToHeaders(hold, claims, c.accessTokenClaimsToHeaders);
    }
    if ((c.claimsToHeaders.length || Object.keys(c.dynamicMetadataFromClaims).length) && session.idToken !== undefined) {
      const claims = decodeJwt(session.idToken);
      claimsToHeaders(hold, claims, c.claimsToHeaders);
      const meta: Record<string, unknown> = {};
      for (const [key, claim] of Object.entries(c.dynamicMetadataFromClaims)) if (claims[claim] !== undefined) meta[key] = claims[claim];
      if (Object.keys(meta).length) addMetadata(hold, meta);
    }
    return 'allow';
  }

  private async startLogin(hold: Hold): Promise<Outcome> {
    const req = hold.request;
    if (this.config.failOnRedirect) {
      hold.detail = 'no session (failOnRedirect)';
      denyWith(hold, { status: 401, headers: [{ name: 'content-type', value: 'application/json' }], body: '{"error":"login_required"}' });
      return 'redirect';
    }
    const endpoints = await this.provider.get();
    const flow: FlowState = {
      state: b64url(randomBytes(24)),
      nonce: b64url(randomBytes(24)),
      verifier: b64url(randomBytes(32)),
      returnTo: this.returnTo(req.scheme, req.host, req.path),
    };
    const challenge = createHash('sha256').update(flow.verifier).digest('base64url');
    const url = new URL(endpoints.authorization);
    const scopes = this.config.flow === 'oidc' ? ['openid', ...this.config.scopes.filter((s) => s !== 'openid')] : this.config.scopes;
    const params: Record<string, string> = {
      response_type: 'code',
      client_id: this.config.clientId,
      redirect_uri: this.redirectUri,
      state: flow.state,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      ...(scopes.length ? { scope: scopes.join(' ') } : {}),
      ...(this.config.flow === 'oidc' ? { nonce: flow.nonce } : {}),
      ...this.config.authEndpointQueryParams,
      ...this.metadataParams(hold),
    };
    for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
    let stateValue: string;
    if (this.redis !== undefined) {
      const id = b64url(randomBytes(32));
      await withTimeout(
        this.redis.set(`${this.redisPrefix()}flow:${id}`, JSON.stringify(flow), { EX: FLOW_TTL_SECONDS }),
        this.timeoutMs,
        'session redis',
      );
      stateValue = id;
    } else stateValue = seal(this.cookieKey!, this.stateCookie, { ...flow, at: Date.now() });
    hold.detail = 'no session: login';
    redirect(hold, url.toString(), [this.cookie(hold, this.stateCookie, stateValue, FLOW_TTL_SECONDS, 'lax')]);
    return 'redirect';
  }

  /** autoMapFromMetadata: the request's filter metadata fields of the namespace as query parameters (scalars only). */
  private metadataParams(hold: Hold): Record<string, string> {
    const ns = this.config.queryParamsFromMetadata;
    const fields = ns === undefined ? undefined : hold.request.filterMetadata[ns];
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(fields ?? {}))
      if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') out[k] = String(v);
    return out;
  }

  /** Where to return after the login: the requested URL, else appUrl. */
  private returnTo(scheme: string, host: string, path: string): string {
    if (host === '' || path === '' || !path.startsWith('/')) return this.config.appUrl;
    const s = scheme === 'https' || scheme === 'http' ? scheme : new URL(this.config.appUrl).protocol.slice(0, -1);
    return `${s}://${host}${path}`;
  }

  private async handleCallback(hold: Hold): Promise<Outcome> {
    const req = hold.request;
    const query = new URLSearchParams(req.path.includes('?') ? req.path.slice(req.path.indexOf('?') + 1) : '');
    const raw = cookieValue(req.header('cookie'), this.stateCookie);
    let flow: FlowState | undefined;
    if (this.redis !== undefined && raw !== undefined && /^[A-Za-z0-9_-]{43}$/.test(raw)) {
      const key = `${this.redisPrefix()}flow:${raw}`;
      const text = await withTimeout(this.redis.getDel(key), this.timeoutMs, 'session redis');
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      flow = isFlowState(parsed) ? parsed : undefined;
    } else if (this.redis === undefined) {
      const opened = unseal(this.cookieKey!, this.stateCookie, raw);
      const at = (opened as { at?: unknown } | undefined)?.at;
      flow = isFlowState(opened) && typeof at === 'number' && Date.now() - at < FLOW_TTL_SECONDS * 1000 ? opened : undefined;
    }
    const clearState = this.cookie(hold, this.stateCookie, '', 0, 'lax', true);
    if (query.get('error') !== null) {
      hold.detail = `the provider answered the login with error ${JSON.stringify(query.get('error')!.slice(0, 64))}`;
      denyWith(hold, {
        status: 403,
        headers: [{ name: 'set-cookie', value: clearState, append: true }],
        body: '{"error":"access_denied"}',
      });
      return 'access_denied';
    }
    const code = query.get('code');
    if (flow === undefined || code === null || query.get('state') !== flow.state) {
      // a stale or forged callback (no login in progress, or another one): start over
      hold.detail = flow === undefined ? 'callback without a login in progress' : 'callback state does not match';
      return this.startLogin(hold);
    }
    const endpoints = await this.provider.get();
    const form = new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: this.redirectUri,
      code_verifier: flow.verifier,
    });
    // a Redis session's id exists before the exchange: the provider may be told it (redis.headerName)
    const id = this.redis !== undefined ? b64url(randomBytes(32)) : undefined;
    const sessionHeader = this.config.session.redis?.sessionIdHeader;
    const extra = id !== undefined && sessionHeader !== undefined ? { [sessionHeader]: id } : {};
    const session = await this.tokens(endpoints, form, flow.nonce, undefined, hold, extra);
    const cookies = [clearState];
    await this.saveSession(session, hold, id, cookies, true);
    redirect(hold, flow.returnTo, cookies);
    hold.detail = 'login completed';
    return 'redirect';
  }

  private async refresh(session: Session, hold: Hold): Promise<Session | undefined> {
    const endpoints = await this.provider.get();
    const form = new URLSearchParams({ grant_type: 'refresh_token', refresh_token: session.refreshToken! });
    try {
      return await this.tokens(endpoints, form, undefined, session, hold);
    } catch (err) {
      if (err instanceof ProviderRefused) {
        hold.detail = 'refresh refused';
        return undefined; // a revoked or expired refresh token: log in again
      }
      throw err;
    }
  }

  /** A token request (code exchange or refresh) and the session it yields; the ID token verified (OIDC). */
  private async tokens(
    endpoints: Endpoints,
    form: URLSearchParams,
    nonce: string | undefined,
    previous: Session | undefined,
    hold: Hold,
    extraHeaders: Record<string, string> = {},
  ): Promise<Session> {
    const c = this.config;
    const headers: Record<string, string> = { ...extraHeaders };
    if (this.assertionKey !== undefined) await this.assert(form, endpoints);
    else if (c.clientSecret !== undefined && !c.clientSecretPost) headers['authorization'] = basic(c.clientId, c.clientSecret);
    else {
      form.set('client_id', c.clientId);
      if (c.clientSecret !== undefined) form.set('client_secret', c.clientSecret);
    }
    const url = new URL(endpoints.token);
    for (const [k, v] of Object.entries({ ...c.tokenEndpointQueryParams, ...this.metadataParams(hold) })) url.searchParams.set(k, v);
    const doc = await fetchJson(url.toString(), { timeoutMs: this.timeoutMs, form, headers });
    const accessToken = typeof doc['access_token'] === 'string' ? doc['access_token'] : undefined;
    if (accessToken === undefined) throw new ProviderRefused('the token endpoint answered without an access_token');
    const refreshToken = typeof doc['refresh_token'] === 'string' ? doc['refresh_token'] : previous?.refreshToken;
    const expiresIn = typeof doc['expires_in'] === 'number' ? doc['expires_in'] : 3600;
    let idToken = typeof doc['id_token'] === 'string' ? doc['id_token'] : undefined;
    let expiresAt = Date.now() + expiresIn * 1000;
    if (c.flow === 'oidc') {
      if (idToken === undefined) {
        if (previous?.idToken === undefined) throw new ProviderRefused('the token endpoint answered without an id_token');
        idToken = previous.idToken; // a refresh may keep the ID token
      } else {
        const payload = await this.verifyIdToken(idToken, endpoints, nonce, hold);
        if (typeof payload.exp === 'number') expiresAt = Math.min(expiresAt, payload.exp * 1000);
      }
    }
    return {
      ...(idToken !== undefined ? { idToken } : {}),
      accessToken,
      ...(refreshToken !== undefined ? { refreshToken } : {}),
      expiresAt,
    };
  }

  /**
   * private_key_jwt (RFC 7523 §2.2, OpenID Connect Core §9): the client's id, and a short-lived JWT about it signed
   * with its key, for the token endpoint (its audience).
   */
  private async assert(form: URLSearchParams, endpoints: Endpoints): Promise<void> {
    const { key, alg } = this.assertionKey!;
    const now = Math.floor(Date.now() / 1000);
    const jwt = await new SignJWT({})
      .setProtectedHeader({ alg, typ: 'JWT' })
      .setIssuer(this.config.clientId)
      .setSubject(this.config.clientId)
      .setAudience(endpoints.token)
      .setJti(b64url(randomBytes(18)))
      .setIssuedAt(now)
      .setExpirationTime(now + Math.max(1, Math.ceil(this.config.privateKeyJwt!.validForMs / 1000)))
      .sign(key);
    form.set('client_id', this.config.clientId);
    form.set('client_assertion_type', 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer');
    form.set('client_assertion', jwt);
  }

  private async verifyIdToken(idToken: string, endpoints: Endpoints, nonce: string | undefined, hold: Hold): Promise<JWTPayload> {
    try {
      const { payload } = await jwtVerify(idToken, this.provider.jwks(endpoints), {
        algorithms: this.config.idTokenAlgs.length ? [...this.config.idTokenAlgs] : [...JWT_ALGORITHMS],
        audience: this.config.clientId,
        clockTolerance: 30,
        requiredClaims: ['exp', 'sub'],
        ...(endpoints.issuer !== undefined ? { issuer: endpoints.issuer } : {}),
      });
      if (nonce !== undefined && payload['nonce'] !== nonce) throw new ProviderRefused('the ID token nonce does not match the login');
      return payload;
    } catch (err) {
      if (err instanceof ProviderRefused) throw err;
      const code = err instanceof Error && 'code' in err ? String((err as { code: unknown }).code) : 'invalid';
      hold.detail = `ID token rejected (${code})`;
      // an unreachable JWK set is an outage; anything else is a token the provider should not have sent
      if (code === 'ERR_JWKS_TIMEOUT' || (err instanceof Error && /fetch|ECONNREFUSED|timeout/i.test(err.message)))
        throw new Error(`JWK set unavailable (${code})`, { cause: err });
      throw new ProviderRefused(`ID token rejected (${code})`);
    }
  }

  private async logout(hold: Hold): Promise<Outcome> {
    const req = hold.request;
    const raw = cookieValue(req.header('cookie'), this.config.session.cookieName);
    let session: Session | undefined;
    if (this.redis !== undefined && raw !== undefined && /^[A-Za-z0-9_-]{43}$/.test(raw)) {
      const key = `${this.redisPrefix()}${raw}`;
      try {
        const text = await withTimeout(this.redis.getDel(key), this.timeoutMs, 'session redis');
        const parsed: unknown = text ? JSON.parse(text) : undefined;
        session = isSession(parsed) ? parsed : undefined;
      } catch (err) {
        this.log.error('logout: the session could not be deleted from redis', { error: err instanceof Error ? err.message : 'unknown' });
      }
    } else if (this.redis === undefined) {
      const opened = unseal(this.cookieKey!, this.config.session.cookieName, raw);
      session = isSession(opened) ? opened : undefined;
    }
    // revoke the refresh token (best effort: the session is gone either way)
    const revocation = this.provider.now?.revocation;
    if (session?.refreshToken !== undefined && revocation !== undefined) {
      const form = new URLSearchParams({ token: session.refreshToken, token_type_hint: 'refresh_token' });
      const headers: Record<string, string> = {};
      if (this.assertionKey !== undefined) await this.assert(form, this.provider.now!);
      else if (this.config.clientSecret !== undefined) headers['authorization'] = basic(this.config.clientId, this.config.clientSecret);
      else form.set('client_id', this.config.clientId);
      await fetch(revocation, { method: 'POST', body: form, headers, signal: AbortSignal.timeout(this.timeoutMs) }).then(
        (r) => r.body?.cancel(),
        () => undefined,
      );
    }
    hold.detail = 'logout';
    const after = this.config.afterLogoutUrl ?? this.config.appUrl;
    // the provider's session ends too (RP-initiated logout): the browser is sent there (get), or extauth posts
    // the request itself (post, best effort); the provider sends the browser on to afterLogoutUrl
    const endSession = (this.provider.now ?? (await this.provider.get().catch(() => undefined)))?.endSession;
    let location = after;
    if (endSession !== undefined) {
      const params = new URLSearchParams({ client_id: this.config.clientId, post_logout_redirect_uri: after });
      if (session?.idToken !== undefined) params.set('id_token_hint', session.idToken);
      if (this.config.endSessionMethod === 'get') {
        const u = new URL(endSession);
        for (const [k, v] of params) u.searchParams.set(k, v);
        location = u.toString();
      } else {
        await fetch(endSession, { method: 'POST', body: params, redirect: 'manual', signal: AbortSignal.timeout(this.timeoutMs) }).then(
          (r) => r.body?.cancel(),
          (err: unknown) =>
            this.log.error('logout: the end-session request failed', { error: err instanceof Error ? err.message : 'unknown' }),
        );
      }
    }
    redirect(hold, location, [this.cookie(hold, this.config.session.cookieName, '', 0, undefined, true)]);
    return 'redirect';
  }

  // ---- session storage

  private redisPrefix(): string {
    return this.config.session.redis?.keyPrefix ?? '';
  }

  /** The request's session: undefined when there is none (or it does not open), 'unavailable' when Redis fails and must not be bypassed. */
  private async loadSession(hold: Hold): Promise<{ session: Session; id: string | undefined } | undefined | 'unavailable'> {
    const raw = cookieValue(hold.request.header('cookie'), this.config.session.cookieName);
    if (raw === undefined || raw === '') return undefined;
    if (this.redis === undefined) {
      const opened = unseal(this.cookieKey!, this.config.session.cookieName, raw);
      return isSession(opened) ? { session: opened, id: undefined } : undefined;
    }
    if (!/^[A-Za-z0-9_-]{43}$/.test(raw)) return undefined;
    try {
      const text = await withTimeout(this.redis.get(`${this.redisPrefix()}${raw}`), this.timeoutMs, 'session redis');
      const parsed: unknown = text ? JSON.parse(text) : undefined;
      return isSession(parsed) ? { session: parsed, id: raw } : undefined;
    } catch (err) {
      const message = err instanceof Error ? err.message : 'unknown error';
      hold.detail = `session redis: ${message}`;
      this.log.error('session redis read failed', { error: message });
      if (this.config.session.failOnFetchFailure) return 'unavailable';
      // a Redis that hangs would hold the new login's write as long again, past Envoy's ext_authz timeout
      if (err instanceof Error && err.message.includes('took longer than')) return 'unavailable';
      return undefined;
    }
  }

  /**
   * Stores the session: a sealed cookie, or Redis under `id` (a new random id when undefined). The
   * Set-Cookie goes into `cookies` (a redirect's) or onto the allowed response.
   */
  private async saveSession(session: Session, hold: Hold, id: string | undefined, cookies?: string[], isNew = false): Promise<string> {
    const s = this.config.session;
    let value: string;
    if (this.redis !== undefined) {
      value = id ?? b64url(randomBytes(32));
      const ttl = s.cookie.maxAgeSeconds > 0 ? s.cookie.maxAgeSeconds : 86_400;
      await withTimeout(
        this.redis.set(`${this.redisPrefix()}${value}`, JSON.stringify(session), { EX: ttl }),
        this.timeoutMs,
        'session redis',
      );
      if (id !== undefined && !isNew) return value; // the cookie already names it
    } else {
      value = seal(this.cookieKey!, s.cookieName, session);
      // browsers drop a cookie over 4096 bytes without a word: the next request would log in again, forever
      if (value.length > MAX_COOKIE_VALUE)
        throw new Error(`the tokens need ${value.length} bytes, too many for a cookie: use session.redis`);
    }
    const cookie = this.cookie(hold, s.cookieName, value, s.cookie.maxAgeSeconds);
    if (cookies) cookies.push(cookie);
    else addResponseHeader(hold, 'set-cookie', cookie, true);
    return value;
  }

  /**
   * A Set-Cookie value with the configured attributes (`clear`: expire it). Secure unless notSecure, and
   * always when the request came over TLS.
   */
  private cookie(hold: Hold, name: string, value: string, maxAge: number, sameSite?: 'lax', clear = false): string {
    const o = this.config.session.cookie;
    const parts = [`${name}=${value}`];
    if (o.path !== '') parts.push(`Path=${o.path}`);
    if (o.domain !== undefined) parts.push(`Domain=${o.domain}`);
    if (clear) parts.push('Max-Age=0');
    else if (maxAge > 0) parts.push(`Max-Age=${maxAge}`);
    if (o.httpOnly) parts.push('HttpOnly');
    if (o.secure || hold.request.scheme === 'https') parts.push('Secure');
    const site = sameSite ?? o.sameSite;
    if (site !== 'default') parts.push(`SameSite=${site[0]!.toUpperCase()}${site.slice(1)}`);
    return parts.join('; ');
  }
}

/** Claims of a token to upstream headers (a non-string claim as JSON). */
function claimsToHeaders(hold: Hold, claims: JWTPayload, mappings: CodeFlowStepConfig['claimsToHeaders']): void {
  for (const m of mappings) {
    const v = claims[m.claim];
    if (v === undefined) continue;
    const value = typeof v === 'string' ? v : JSON.stringify(v);
    if (m.append) addUpstreamHeaderAppend(hold, m.header, value);
    else addUpstreamHeader(hold, m.header, value);
  }
}

/** The JWS algorithm of a private key (RFC 7518), from its type and curve. */
export function signingAlg(key: KeyObject): string {
  const d = key.asymmetricKeyDetails;
  switch (key.asymmetricKeyType) {
    case 'rsa':
      return 'RS256';
    case 'rsa-pss':
      return 'PS256';
    case 'ec': {
      const alg = ({ prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' } as Record<string, string>)[d?.namedCurve ?? ''];
      if (alg !== undefined) return alg;
      break;
    }
    case 'ed25519':
      return 'EdDSA';
  }
  throw new Error(`a ${key.asymmetricKeyType ?? 'symmetric'} key${d?.namedCurve ? ` (${d.namedCurve})` : ''} cannot sign a JWT`);
}

/** An upstream header added to (not replacing) the request's own. */
function addUpstreamHeaderAppend(hold: Hold, name: string, value: string): void {
  const a = (hold.answer ??= {});
  (a.upstreamHeaders ??= []).push({ name: name.toLowerCase(), value, append: true });
}

function pathOf(target: string): string {
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

export const codeFlowStep: StepFactory<CodeFlowStepConfig> = (config, ctx) => {
  const timeoutMs = ctx.settings.introspectionTimeoutMs;
  const providerKey = JSON.stringify([
    config.flow,
    config.issuerUrl,
    config.authEndpoint,
    config.tokenEndpoint,
    config.jwksUri,
    config.revocationEndpoint,
    config.endSessionEndpoint,
    config.discoveryPollIntervalMs,
    config.jwksOnDemandRefresh,
  ]);
  const provider = ctx.pool.get(
    `oidc-provider:${providerKey}`,
    () => new ProviderEndpoints(config, timeoutMs, ctx.log),
    (p) => p.stop(),
  );
  const r = config.session.redis;
  const redis =
    config.session.store === 'redis' && r !== undefined
      ? ctx.pool.get(
          `redis:${JSON.stringify([r.host, r.port, r.db, r.tls, r.tlsCertDir])}`,
          () => redisClient(r, ctx.log),
          (c) => void c.close().catch(() => undefined),
        )
      : undefined;
  return new CodeFlowStep(config, provider, redis, ctx.log, timeoutMs);
};
