// oauth2.accessTokenValidation.jwt as an AuthStep: the token is a JWS verified with jose against a
// JWK set (fetched from remoteJwks.url, or given inline as localJwks), then `exp` (when present, as Gloo), `nbf`,
// `iss` and `aud` with a small clock skew, then the required scopes from `scope` (space-separated) or
// `scp` (an array, or a space-separated string). Only asymmetric algorithms are accepted
// (JWT_ALGORITHMS): never `none`, never HS*, so a public key can never serve as an HMAC secret.
//
// A JWT route never calls the provider per request: a RemoteJwks is fetched when its config is
// applied and every refresh interval after that, and a `kid` it does not hold triggers at most one
// refetch per cooldown (key rotation). A failed fetch keeps the last good set. With no set at all (the
// endpoint never answered), checks deny as `unavailable` until one arrives.
//
// Verified tokens (by hash) are kept with their claims in a bounded cache per step until `exp`, never
// longer than the step's cacheTimeoutMs after verification (0 = no cache): a cached token is judged
// synchronously (scopes from the kept claims) without verifying the signature again. A JWK set whose
// content changes (a refresh, a rotation) starts a new generation and every cached verification made
// with the old one is verified again, so a key removed from the set stops its tokens at the next fetch,
// as without the cache. An allow also grants Envoy's edge cache the same deadline (docs/wasm.md).
import { createHash, type KeyObject } from 'node:crypto';
import { createLocalJWKSet, errors, jwtVerify, type JWTPayload, type JWTVerifyGetKey, type JWTVerifyOptions } from 'jose';
import { DEFAULT_JWKS_REFRESH_MS, JWT_ALGORITHMS, parseLocalKeys, unusableJwk, type JwtStepConfig } from '../../../common/auth-config.js';
import type { Logger } from '../../../common/log.js';
import { ExpiringCache } from '../cache.js';
import { redactUrl, tokenRef } from '../introspect.js';
import type { Outcome } from '../outcome.js';
import { claimsMetadata } from '../claims.js';
import { addMetadata, setState, type AuthStep, type Hold, type StepCounters, type StepFactory, type StepSummary } from '../step.js';

/** Seconds of clock difference tolerated on `exp`, `nbf` and `iat`. */
export const JWT_CLOCK_SKEW_SECONDS = 30;
/** Largest JWK set read (bytes); bigger answers are garbage. */
export const MAX_JWKS_BYTES = 512 * 1024;

/** The JWK set could not be had: the step denies as `unavailable`. */
export class JwksUnavailableError extends Error {
  override readonly name = 'JwksUnavailableError';
}

export interface RemoteJwksOptions {
  url: string;
  refreshMs: number;
  /** least time between two fetches caused by unknown `kid`s (or by checks while no set is loaded) */
  cooldownMs: number;
  timeoutMs: number;
  logger: Logger;
}

/** One JWKS endpoint, shared by every step naming the same URL and refresh interval. */
export class RemoteJwks {
  readonly url: string;
  readonly counters = { fetches: 0, errors: 0 };
  /** bumped whenever a fetch brings a key set that differs from the one before (verifications made
   * with an older generation are not reused) */
  generation = 0;
  private fingerprint = '';
  private keys: JWTVerifyGetKey | undefined;
  private keyCount = 0;
  private lastAttemptAt = Number.NEGATIVE_INFINITY;
  private inflight: Promise<void> | undefined;
  private lastError = '';
  private readonly timer: NodeJS.Timeout;

  constructor(private readonly options: RemoteJwksOptions) {
    this.url = options.url;
    this.timer = setInterval(() => void this.refresh(), options.refreshMs);
    this.timer.unref();
    void this.refresh();
  }

  get loadedKeys(): number {
    return this.keyCount;
  }

  /** Fetches the set now (joining a fetch in flight); never rejects: a failure keeps the last set. */
  refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    this.lastAttemptAt = Date.now();
    this.counters.fetches++;
    this.inflight = this.fetchSet()
      .then(
        (jwks) => {
          const fingerprint = createHash('sha256').update(JSON.stringify(jwks.keys)).digest('hex');
          if (fingerprint !== this.fingerprint) {
            this.keys = createLocalJWKSet(jwks);
            this.keyCount = jwks.keys.length;
            this.fingerprint = fingerprint;
            this.generation++;
          }
          this.lastError = '';
        },
        (err: unknown) => {
          this.counters.errors++;
          this.lastError = err instanceof Error ? err.message : 'unknown error';
          this.options.logger.error('JWKS fetch failed; keeping the last good key set', {
            jwks_url: redactUrl(this.url),
            error: this.lastError,
            keys: this.keyCount,
          });
        },
      )
      .finally(() => {
        // the cooldown counts from the end of an attempt, so a slow endpoint is not asked back to back
        this.lastAttemptAt = Date.now();
        this.inflight = undefined;
      });
    return this.inflight;
  }

  /** jose's key resolver: the set's key for the token's header, refetching once on a `kid` miss. */
  readonly getKey: JWTVerifyGetKey = async (header, token) => {
    if (this.keys === undefined) {
      await this.refetch();
      if (this.keys === undefined) throw new JwksUnavailableError(this.lastError || 'JWKS not loaded yet');
    }
    try {
      return await this.keys(header, token);
    } catch (err) {
      if (!(err instanceof errors.JWKSNoMatchingKey) || !(await this.refetch())) throw err;
      if (this.lastError !== '') throw new JwksUnavailableError(this.lastError);
      return await this.keys(header, token);
    }
  };

  stop(): void {
    clearInterval(this.timer);
  }

  /** A fetch unless one was attempted within the cooldown (joins one in flight); whether it ran. */
  private async refetch(): Promise<boolean> {
    if (this.inflight === undefined && Date.now() - this.lastAttemptAt < this.options.cooldownMs) return false;
    await this.refresh();
    return true;
  }

  private async fetchSet(): Promise<{ keys: Array<Record<string, unknown>> }> {
    let res: Response;
    try {
      res = await fetch(this.url, {
        headers: { accept: 'application/json', 'user-agent': 'legate-extauth' },
        redirect: 'error',
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
    } catch (err) {
      const cause =
        err instanceof Error && err.cause instanceof Error ? ((err.cause as NodeJS.ErrnoException).code ?? err.cause.message) : '';
      const timeout = err instanceof Error && err.name === 'TimeoutError';
      throw new Error(
        timeout ? `JWKS endpoint took longer than ${this.options.timeoutMs} ms` : `JWKS endpoint unreachable: ${cause || 'fetch failed'}`,
        { cause: err },
      );
    }
    if (res.status !== 200) {
      await res.body?.cancel();
      throw new Error(`JWKS endpoint answered HTTP ${res.status}`);
    }
    const length = Number(res.headers.get('content-length') ?? 0);
    if (length > MAX_JWKS_BYTES) {
      await res.body?.cancel();
      throw new Error(`JWKS response larger than ${MAX_JWKS_BYTES} bytes`);
    }
    const text = await res.text();
    if (text.length > MAX_JWKS_BYTES) throw new Error(`JWKS response larger than ${MAX_JWKS_BYTES} bytes`);
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      throw new Error('JWKS response is not JSON');
    }
    const keys = doc !== null && typeof doc === 'object' ? (doc as Record<string, unknown>)['keys'] : undefined;
    if (!Array.isArray(keys)) throw new Error('JWKS response has no `keys` list');
    // keys that cannot verify (symmetric, private, other uses, broken) are left out
    const usable = keys.filter((k: unknown) => unusableJwk(k) === undefined) as Array<Record<string, unknown>>;
    if (usable.length === 0) throw new Error(`JWKS response has no usable public signing key (of ${keys.length})`);
    return { keys: usable };
  }
}

/** A verified token: its claims, until when they may be reused, and the key-set generation that verified it. */
interface Verified {
  readonly deadAt: number;
  readonly payload: JWTPayload;
  readonly generation: number;
}

export class JwtStep implements AuthStep {
  readonly bearer = true;
  readonly summary: StepSummary;
  readonly counters: Required<StepCounters> = { jwtVerifications: 0, jwtCacheHits: 0 };
  private readonly key: JWTVerifyGetKey | KeyObject;
  private readonly verifyOptions: JWTVerifyOptions;
  private readonly requiredScopes: readonly string[];
  private readonly metadataFromClaims: readonly (readonly [key: string, claim: string])[];
  private readonly cacheTimeoutMs: number;
  /** verified tokens by hash; undefined when off (cacheTimeoutMs 0 or no entries allowed) */
  private readonly verified: ExpiringCache<Verified> | undefined;

  /**
   * `remote` is the shared RemoteJwks of `config.remoteJwks` (required then); local keys are compiled
   * here. `cacheMaxEntries`: bound of this step's verification cache (0 = none).
   */
  constructor(
    config: JwtStepConfig,
    private readonly remote: RemoteJwks | undefined,
    private readonly log: Logger,
    cacheMaxEntries = 0,
  ) {
    if (config.remoteJwks) {
      if (!remote) throw new Error('remoteJwks without its key set');
      this.key = remote.getKey;
    } else {
      const local = parseLocalKeys(config.localJwks?.inlineString ?? '');
      this.key = local.kind === 'pem' ? local.key : createLocalJWKSet(local.jwks as Parameters<typeof createLocalJWKSet>[0]);
    }
    this.requiredScopes = [...config.requiredScopes];
    this.metadataFromClaims = Object.entries(config.dynamicMetadataFromClaims ?? {});
    this.cacheTimeoutMs = config.cacheTimeoutMs;
    this.verified = config.cacheTimeoutMs > 0 && cacheMaxEntries > 0 ? new ExpiringCache<Verified>(cacheMaxEntries) : undefined;
    this.verifyOptions = {
      // a JWK set picks keys by the token's alg; a single PEM key only takes the algorithms of its type
      algorithms: 'asymmetricKeyType' in this.key ? algorithmsFor(this.key) : [...JWT_ALGORITHMS],
      clockTolerance: JWT_CLOCK_SKEW_SECONDS,
      ...(config.issuer !== undefined ? { issuer: config.issuer } : {}),
      ...(config.audiences.length ? { audience: [...config.audiences] } : {}),
    };
    this.summary = {
      type: config.type,
      ...(config.remoteJwks
        ? { remoteJwks: { url: redactUrl(config.remoteJwks.url), refreshIntervalMs: config.remoteJwks.refreshIntervalMs } }
        : { localJwks: true }),
      ...(config.issuer !== undefined ? { issuer: config.issuer } : {}),
      audiences: [...config.audiences],
      requiredScopes: [...config.requiredScopes],
      cacheTimeoutMs: config.cacheTimeoutMs,
    };
  }

  /** Verified tokens held now. */
  get cacheSize(): number {
    return this.verified?.size ?? 0;
  }

  /** Drops expired verifications. */
  sweep(now: number): void {
    this.verified?.sweep(now);
  }

  decideNow(token: string, hash: string, now: number, hold: Hold): Outcome | undefined {
    const verified = this.verified;
    if (verified !== undefined) {
      const hit = verified.get(hash, now);
      if (hit !== undefined) {
        if (hit.generation === (this.remote?.generation ?? 0)) {
          this.counters.jwtCacheHits++;
          return this.judge(token, hit.payload, hit.deadAt, hold);
        }
        verified.delete(hash); // verified with a key set that has changed since
      }
    }
    // a JWS in compact form is three segments; anything else is no JWT at all
    const first = token.indexOf('.');
    const second = first < 0 ? -1 : token.indexOf('.', first + 1);
    if (first <= 0 || second < 0 || token.indexOf('.', second + 1) >= 0) {
      hold.detail = 'not a JWT';
      return 'invalid_token';
    }
    return undefined;
  }

  async decide(token: string, hash: string, hold: Hold, configId: string): Promise<Outcome> {
    let payload: JWTPayload;
    // the generation before the verification: a set that changes meanwhile makes the entry stale, not wrong
    const generation = this.remote?.generation ?? 0;
    this.counters.jwtVerifications++;
    try {
      ({ payload } = await jwtVerify(token, this.key, this.verifyOptions));
    } catch (err) {
      return this.refused(err, hash, hold, configId);
    }
    // reusable until `exp` (a token without one: cacheTimeoutMs alone), never past cacheTimeoutMs from now
    const now = Date.now();
    const expMs = typeof payload.exp === 'number' ? payload.exp * 1000 : Infinity;
    let deadAt = this.cacheTimeoutMs <= 0 ? 0 : Math.min(now + this.cacheTimeoutMs, expMs);
    if (deadAt <= now)
      deadAt = 0; // past `exp` but within the clock skew: allowed, never reused
    else if (this.verified !== undefined) this.verified.set(hash, { deadAt, payload, generation });
    return this.judge(token, payload, deadAt, hold);
  }

  /** Scopes, then the allow's reuse deadline (0 = none) into the hold (the edge grant). */
  private judge(token: string, payload: JWTPayload, deadAt: number, hold: Hold): Outcome {
    if (!hasScopes(payload, this.requiredScopes)) {
      hold.detail = 'a required scope is missing';
      return 'insufficient_scope';
    }
    // Gloo's state: the claims under jwtAccessToken; the token itself under jwt (what OPA policies decode)
    setState(hold, 'jwtAccessToken', payload);
    setState(hold, 'jwt', token);
    if (deadAt < hold.until) hold.until = deadAt;
    if (this.metadataFromClaims.length) {
      addMetadata(hold, claimsMetadata(payload, this.metadataFromClaims));
      hold.until = 0; // the edge cache would skip ext_authz, and with it the metadata
    }
    return 'allow';
  }

  /** The denial for a verification failure; the detail names the check, never token content. */
  private refused(err: unknown, hash: string, hold: Hold, configId: string): Outcome {
    if (err instanceof JwksUnavailableError) {
      hold.detail = 'JWKS unavailable';
      return 'unavailable';
    }
    if (err instanceof errors.JWTExpired) hold.detail = 'jwt expired';
    else if (err instanceof errors.JWTClaimValidationFailed) hold.detail = `jwt claim ${err.claim} ${err.reason}`;
    else if (err instanceof errors.JOSEAlgNotAllowed) hold.detail = 'jwt alg not allowed';
    else if (err instanceof errors.JWKSNoMatchingKey) hold.detail = 'no key for the jwt kid';
    else if (err instanceof errors.JWKSMultipleMatchingKeys) hold.detail = 'several keys match the jwt kid';
    else if (err instanceof errors.JWSSignatureVerificationFailed) hold.detail = 'jwt signature invalid';
    else if (err instanceof errors.JOSEError) hold.detail = `jwt invalid (${err.code})`;
    else if (err instanceof TypeError || err instanceof DOMException) hold.detail = 'jwt alg does not fit the key';
    else {
      this.log.error('JWT verification failed unexpectedly; denying', {
        config_id: configId,
        error: err instanceof Error ? err.name : 'unknown error',
        token: tokenRef(hash),
      });
      hold.detail = 'internal error';
      return 'unavailable';
    }
    return 'invalid_token';
  }
}

/** The allowed algorithms that can use `key` (JWT_ALGORITHMS narrowed by key type and curve). */
function algorithmsFor(key: KeyObject): string[] {
  const type = key.asymmetricKeyType;
  const curve = key.asymmetricKeyDetails?.namedCurve;
  const fits = (alg: string): boolean => {
    if (type === 'rsa') return alg.startsWith('RS') || alg.startsWith('PS');
    if (type === 'rsa-pss') return alg.startsWith('PS');
    if (type === 'ed25519') return alg === 'EdDSA' || alg === 'Ed25519';
    if (type === 'ec')
      return alg === ({ prime256v1: 'ES256', secp384r1: 'ES384', secp521r1: 'ES512' } as Record<string, string>)[curve ?? ''];
    return false;
  };
  return JWT_ALGORITHMS.filter(fits);
}

/** Whether the token grants every required scope, from `scope` (space-separated) or `scp`. */
function hasScopes(payload: JWTPayload, required: readonly string[]): boolean {
  if (required.length === 0) return true;
  const have = new Set<string>();
  const add = (v: unknown): void => {
    if (typeof v === 'string') for (const s of v.split(' ')) if (s !== '') have.add(s);
  };
  add(payload['scope']);
  const scp = payload['scp'];
  if (Array.isArray(scp)) {
    for (const s of scp) if (typeof s === 'string') have.add(s);
  } else add(scp);
  return required.every((r) => have.has(r));
}

export const jwtStep: StepFactory<JwtStepConfig> = (config, ctx) => {
  let remote: RemoteJwks | undefined;
  if (config.remoteJwks) {
    const { url } = config.remoteJwks;
    const refreshMs = config.remoteJwks.refreshIntervalMs || DEFAULT_JWKS_REFRESH_MS;
    remote = ctx.pool.get(
      `jwks:${JSON.stringify([url, refreshMs])}`,
      () =>
        new RemoteJwks({ url, refreshMs, cooldownMs: ctx.settings.jwksCooldownMs, timeoutMs: ctx.settings.jwksTimeoutMs, logger: ctx.log }),
      (j) => j.stop(),
    );
  }
  return new JwtStep(config, remote, ctx.log, ctx.settings.jwtCacheMaxEntries);
};
