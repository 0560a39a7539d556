// The decision, independent of gRPC: AuthConfigs (as the controller resolved them, validated by the
// shared schema in common/auth-config.ts) compiled into steps by their kinds' factories (steps/index.ts),
// and check(request) -> outcome (+ what the steps add to the answer). Every step must pass, in order,
// unless the config has a booleanExpr over its steps' names: then the expression decides (short-circuit).
// Clients the steps share (introspection endpoints, JWK sets, agents) live in a reference-counted pool.
//
// Hot path: for a cached introspection, check() is synchronous and returns a string constant; the only
// allocations are the token slice and its sha256. Anything that is not a clear "allow" is a denial,
// including every error (fail closed).
import { createHash } from 'node:crypto';
import { edgeCredential, parseAuthConfigConfig, parseBooleanExpr, type AuthConfigConfig, type BoolExpr } from '../../common/auth-config.js';
import type { Logger } from '../../common/log.js';
import { parseBearer } from './token.js';
import { Introspector, tokenHash, tokenRef } from './introspect.js';
import type { DenyReason, Outcome } from './outcome.js';
import { PoolLease, SharedPool } from './pool.js';
import { PlainRequest, type AuthRequest } from './request.js';
import type { Answer, AuthStep, Hold, StepSettings, StepSummary } from './step.js';
import { buildStep } from './steps/index.js';
import { RemoteJwks } from './steps/oauth2-jwt.js';

export { DENY_REASONS, type DenyReason, type Outcome } from './outcome.js';

export interface AuthorizerOptions {
  logger: Logger;
  /** per introspection call, including connecting. Default 2000 */
  introspectionTimeoutMs?: number;
  /** bound of each introspection endpoint's cache. Default 10000 */
  cacheMaxEntries?: number;
  /** per JWKS fetch. Default 2000 */
  jwksTimeoutMs?: number;
  /** least time between two JWKS fetches caused by an unknown `kid` (per endpoint). Default 10000 */
  jwksCooldownMs?: number;
  /** bound of each JWT step's cache of verified tokens (0 = verify every check). Default 10000 */
  jwtCacheMaxEntries?: number;
}

/** What configs() shows of a loaded AuthConfig: no secrets. */
export interface AuthConfigSummary {
  steps: StepSummary[];
  booleanExpr?: string;
}

const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

export interface AuthorizerStats {
  checks: number;
  allowed: number;
  denied: Record<DenyReason, number>;
  introspections: number;
  joinedIntrospections: number;
  introspectionErrors: number;
  cacheHits: number;
  cacheEntries: number;
  jwksFetches: number;
  jwksFetchErrors: number;
  /** JWT signature verifications made (cache misses) */
  jwtVerifications: number;
  /** JWT checks answered from a step's cache of verified tokens */
  jwtCacheHits: number;
  /** verified JWTs held (every JWT step) */
  jwtCacheEntries: number;
}

interface CompiledConfig {
  readonly name: string;
  /** `<name>@<version>` when the controller versioned the config, else undefined (no edge caching) */
  readonly edgeKey: string | undefined;
  /** what the edge grant is keyed on besides the route: '' the bearer token, `cookie:<name>`, `authorization` */
  readonly edgeCredential: string;
  /** identity of the config's content: unchanged configs are kept as they are across updates */
  readonly fingerprint: string;
  readonly steps: readonly AuthStep[];
  /** some step judges the bearer token (so a missing or malformed one is denied up front) */
  readonly bearer: boolean;
  /** the parsed booleanExpr, when set */
  readonly expr: BoolExpr | undefined;
  /** some step reads the state earlier steps set (opaAuth, passThroughAuth): each check carries one */
  readonly state: boolean;
  /** the shared clients its steps use, held while the config is loaded */
  readonly lease: PoolLease;
  readonly summary: AuthConfigSummary;
}

/** Validates the shape of one config from the controller (the shared schema); throws with a reason. */
export const validateAuthConfig: (raw: unknown) => AuthConfigConfig = parseAuthConfigConfig;

/** What an allow may tell Envoy's edge cache (docs/wasm.md), and what the steps add: filled in by Authorizer.check. */
export interface EdgeGrant {
  /** `<name>@<version>` of the config that allowed; '' when none */
  key: string;
  /** epoch ms until which every step's answer holds (cache timeout and `exp`); 0 = do not cache */
  until: number;
  /** headers, metadata or a denial's own response the steps set; undefined when none (the usual case) */
  answer?: Answer | undefined;
  /** `cookie:<name>` or `authorization` when the grant is keyed on that instead of a bearer token */
  credential?: string;
  /** the upstream headers a cached answer must set again (credential grants): name NUL value NUL ... */
  headers?: string;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

const isIntrospector = (v: unknown): v is Introspector => v instanceof Introspector;
const isJwks = (v: unknown): v is RemoteJwks => v instanceof RemoteJwks;

export class Authorizer {
  private configs = new Map<string, CompiledConfig>();
  private readonly pool = new SharedPool();
  private readonly log: Logger;
  private readonly settings: StepSettings;
  private readonly sweepTimer: NodeJS.Timeout;
  /** reused by check() on its synchronous path (nothing else runs meanwhile) */
  private readonly syncHold: Hold;
  /** the request of check(configId, authorization, …): refilled per call, copied when a check goes async */
  private readonly scratch = new PlainRequest({}, true);
  /** per config and reason: when a denial was last logged, and how many since were not */
  private readonly denialLog = new Map<string, { at: number; held: number }>();
  private lastUnknownLogAt = 0;
  private suppressedUnknown = 0;
  private readonly counts = { checks: 0, allowed: 0 };
  /** counters of steps no longer loaded (so the totals never go down) */
  private readonly retired = { jwtVerifications: 0, jwtCacheHits: 0 };
  private readonly denied: Record<DenyReason, number> = {
    unknown_config: 0,
    malformed_request: 0,
    missing_token: 0,
    invalid_request: 0,
    invalid_token: 0,
    insufficient_scope: 0,
    missing_api_key: 0,
    invalid_api_key: 0,
    invalid_credentials: 0,
    access_denied: 0,
    unavailable: 0,
    redirect: 0,
  };

  constructor(options: AuthorizerOptions) {
    this.log = options.logger;
    this.settings = {
      introspectionTimeoutMs: options.introspectionTimeoutMs ?? 2000,
      cacheMaxEntries: options.cacheMaxEntries ?? 10_000,
      jwksTimeoutMs: options.jwksTimeoutMs ?? 2000,
      jwksCooldownMs: options.jwksCooldownMs ?? 10_000,
      jwtCacheMaxEntries: options.jwtCacheMaxEntries ?? 10_000,
    };
    this.syncHold = { until: Infinity, detail: '', request: this.scratch, answer: undefined };
    this.sweepTimer = setInterval(() => {
      const now = Date.now();
      for (const i of this.pool.values('introspector:', isIntrospector)) i.sweep(now);
      for (const c of this.configs.values()) for (const st of c.steps) st.sweep?.(now);
    }, 30_000);
    this.sweepTimer.unref();
  }

  /**
   * Replaces the loaded configs with `raw` (the full set). A config that fails validation keeps its
   * previous version if there is one (otherwise it is absent, so its routes deny); the reasons are
   * returned. Shared clients (introspectors with their caches and connections, JWK sets) are kept for
   * what the new configs still use, and closed when nothing does.
   */
  apply(raw: readonly unknown[]): { problems: string[] } {
    const problems: string[] = [];
    const next = new Map<string, CompiledConfig>();
    const keep = (c: CompiledConfig): void => {
      next.set(c.name, c);
    };
    for (const item of raw) {
      let config: AuthConfigConfig;
      try {
        config = validateAuthConfig(item);
      } catch (err) {
        problems.push(err instanceof Error ? err.message : String(err));
        const name = item !== null && typeof item === 'object' ? (item as Record<string, unknown>)['name'] : undefined;
        const previous = typeof name === 'string' ? this.configs.get(name) : undefined;
        if (previous && !next.has(previous.name)) keep(previous);
        continue;
      }
      if (next.has(config.name)) {
        problems.push(`${config.name}: appears more than once`);
        continue;
      }
      const fingerprint = sha256(JSON.stringify(config));
      const current = this.configs.get(config.name);
      if (current && current.fingerprint === fingerprint) {
        keep(current);
        continue;
      }
      const lease = new PoolLease(this.pool);
      try {
        const ctx = { configName: config.name, log: this.log, settings: this.settings, pool: lease };
        const steps = config.steps.map((s): AuthStep => buildStep(s, ctx));
        const expr =
          config.booleanExpr !== undefined
            ? parseBooleanExpr(
                config.booleanExpr,
                config.steps.map((st) => st.name),
              )
            : undefined;
        const bearer = steps.some((st) => st.bearer);
        const state = steps.some((st) => st.readsState === true);
        // the edge cache keys on one credential: the bearer token, a session cookie or the Authorization value
        const credential = edgeCredential(config.steps, config.booleanExpr);
        const edgeKey = config.version !== undefined && credential !== undefined ? `${config.name}@${config.version}` : undefined;
        const edgeCredentialName =
          credential === undefined || credential.kind === 'bearer'
            ? ''
            : credential.kind === 'cookie'
              ? `cookie:${credential.name}`
              : 'authorization';
        const summary: AuthConfigSummary = {
          steps: steps.map((st, i) => (config.steps[i]?.name !== undefined ? { ...st.summary, name: config.steps[i].name } : st.summary)),
          ...(config.booleanExpr !== undefined ? { booleanExpr: config.booleanExpr } : {}),
        };
        keep({ name: config.name, edgeKey, edgeCredential: edgeCredentialName, fingerprint, steps, bearer, expr, state, lease, summary });
      } catch (err) {
        lease.releaseAll();
        problems.push(`${config.name}: ${err instanceof Error ? err.message : String(err)}`);
        if (current) keep(current);
      }
    }
    // swap, then retire what is no longer used (the new configs hold their references already)
    const previous = this.configs;
    this.configs = next;
    const live = new Set(next.values());
    for (const c of previous.values()) {
      if (live.has(c)) continue;
      for (const st of c.steps) {
        this.retired.jwtVerifications += st.counters?.jwtVerifications ?? 0;
        this.retired.jwtCacheHits += st.counters?.jwtCacheHits ?? 0;
        st.close?.();
      }
      c.lease.releaseAll();
    }
    for (const i of this.pool.values('introspector:', isIntrospector)) i.cacheMs = 0;
    for (const c of next.values()) for (const st of c.steps) st.applied?.();
    return { problems };
  }

  /** name -> summary (no secrets) of the loaded configs. */
  summaries(): Record<string, AuthConfigSummary> {
    const out: Record<string, AuthConfigSummary> = {};
    for (const c of this.configs.values()) out[c.name] = c.summary;
    return out;
  }

  stats(): AuthorizerStats {
    let introspections = 0;
    let joined = 0;
    let errors = 0;
    let hits = 0;
    let entries = 0;
    for (const i of this.pool.values('introspector:', isIntrospector)) {
      introspections += i.counters.calls;
      joined += i.counters.joined;
      errors += i.counters.errors;
      hits += i.counters.cacheHits;
      entries += i.cacheSize;
    }
    let jwksFetches = 0;
    let jwksFetchErrors = 0;
    for (const j of this.pool.values('jwks:', isJwks)) {
      jwksFetches += j.counters.fetches;
      jwksFetchErrors += j.counters.errors;
    }
    let jwtVerifications = this.retired.jwtVerifications;
    let jwtCacheHits = this.retired.jwtCacheHits;
    let jwtCacheEntries = 0;
    for (const c of this.configs.values()) {
      for (const st of c.steps) {
        if (st.counters === undefined) continue;
        jwtVerifications += st.counters.jwtVerifications ?? 0;
        jwtCacheHits += st.counters.jwtCacheHits ?? 0;
        if (st.counters.jwtVerifications !== undefined) jwtCacheEntries += st.cacheSize ?? 0;
      }
    }
    return {
      checks: this.counts.checks,
      allowed: this.counts.allowed,
      denied: { ...this.denied },
      introspections,
      joinedIntrospections: joined,
      introspectionErrors: errors,
      cacheHits: hits,
      cacheEntries: entries,
      jwksFetches,
      jwksFetchErrors,
      jwtVerifications,
      jwtCacheHits,
      jwtCacheEntries,
    };
  }

  /** Counts a decision made outside check() (e.g. an unparsable CheckRequest). */
  record(outcome: Outcome): Outcome {
    this.counts.checks++;
    if (outcome === 'allow') this.counts.allowed++;
    else this.denied[outcome]++;
    return outcome;
  }

  /**
   * Decides one request from its bearer header and the other headers sent (check(request) with plain
   * values). Synchronous when every step answers without I/O; a Promise otherwise. Never rejects.
   */
  check(
    configId: string,
    authorization: string | undefined,
    ambiguous = false,
    grant?: EdgeGrant,
    headers: Readonly<Record<string, string>> = NO_HEADERS,
  ): Outcome | Promise<Outcome> {
    return this.checkRequest(this.scratch.reset(configId, authorization, ambiguous, headers), grant);
  }

  /**
   * Decides one request. Synchronous when every step answers without I/O (cached introspections, or
   * a denial before any call); a Promise otherwise. Never rejects. `grant` receives the edge grant of
   * an allow and what the steps add to the answer (headers, metadata, a denial's own response).
   */
  checkRequest(request: AuthRequest, grant?: EdgeGrant): Outcome | Promise<Outcome> {
    const configId = request.configId;
    const config = this.configs.get(configId);
    if (config === undefined) {
      this.logUnknownConfig(configId);
      return this.record('unknown_config');
    }
    let token = '';
    let hash = '';
    let tokenProblem: DenyReason | undefined;
    if (config.bearer) {
      const authorization = request.authorization;
      const parsed = authorization === undefined || request.ambiguous ? undefined : parseBearer(authorization);
      if (parsed === undefined) tokenProblem = authorization === undefined ? 'missing_token' : 'invalid_request';
      else {
        token = parsed;
        hash = tokenHash(parsed);
      }
    }
    if (config.expr !== undefined) return this.checkExpr(config, token, hash, tokenProblem, request.stable(), grant);
    if (tokenProblem !== undefined) return this.deny(config, tokenProblem, undefined, '');
    const now = Date.now();
    const steps = config.steps;
    const hold = this.syncHold;
    hold.until = Infinity;
    hold.detail = '';
    hold.request = request;
    hold.answer = undefined;
    hold.state = config.state ? {} : undefined;
    for (let i = 0; i < steps.length; i++) {
      const verdict = steps[i]!.decideNow(token, hash, now, hold);
      if (verdict === undefined) {
        const later: Hold = { until: hold.until, detail: '', request: request.stable(), answer: hold.answer, state: hold.state };
        hold.answer = undefined;
        hold.state = undefined;
        return this.checkFrom(config, i, token, hash, later, grant);
      }
      if (verdict !== 'allow') return this.deny(config, verdict, hash, hold.detail, hold, grant);
    }
    if (grant !== undefined) {
      grantEdge(grant, config, hold.until, hold.answer);
      if (hold.answer !== undefined) grant.answer = hold.answer;
    }
    hold.answer = undefined;
    hold.state = undefined;
    return this.record('allow');
  }

  stop(): void {
    clearInterval(this.sweepTimer);
    for (const c of this.configs.values()) for (const st of c.steps) st.close?.();
    this.pool.clear();
  }

  // ---- internals

  private async checkFrom(
    config: CompiledConfig,
    from: number,
    token: string,
    hash: string,
    hold: Hold,
    grant: EdgeGrant | undefined,
  ): Promise<Outcome> {
    const steps = config.steps;
    for (let i = from; i < steps.length; i++) {
      const step = steps[i]!;
      let verdict = i === from ? undefined : step.decideNow(token, hash, Date.now(), hold);
      verdict ??= await step.decide(token, hash, hold, config.name);
      if (verdict !== 'allow') return this.deny(config, verdict, hash, hold.detail, hold, grant);
    }
    if (grant !== undefined) {
      grantEdge(grant, config, hold.until, hold.answer);
      if (hold.answer !== undefined) grant.answer = hold.answer;
    }
    return this.record('allow');
  }

  /**
   * A config with a booleanExpr: the expression over its steps, short-circuiting (`a || b` does not
   * run b when a allows). A denial names the reason of the last step that denied (`!a` with a allowing:
   * access_denied). A bearer step without a usable token denies as missing_token / invalid_request.
   * Never offered to the edge cache.
   */
  private async checkExpr(
    config: CompiledConfig,
    token: string,
    hash: string,
    tokenProblem: DenyReason | undefined,
    request: AuthRequest,
    grant: EdgeGrant | undefined,
  ): Promise<Outcome> {
    const hold: Hold = { until: 0, detail: '', request, answer: undefined, state: config.state ? {} : undefined };
    let lastDenial: DenyReason = 'access_denied';
    let lastDetail = '';
    const evaluate = async (e: BoolExpr): Promise<boolean> => {
      switch (e.op) {
        case 'and':
          return (await evaluate(e.left)) && evaluate(e.right);
        case 'or':
          return (await evaluate(e.left)) || evaluate(e.right);
        case 'not': {
          const inner = await evaluate(e.expr);
          if (inner) {
            lastDenial = 'access_denied';
            lastDetail = 'booleanExpr is false';
          }
          return !inner;
        }
        case 'step': {
          const step = config.steps[e.step]!;
          let verdict: Outcome;
          hold.detail = '';
          // a denial's own response is the deciding step's: an earlier step's does not outlive it
          if (hold.answer?.denial !== undefined) delete hold.answer.denial;
          if (step.bearer && tokenProblem !== undefined) verdict = tokenProblem;
          else verdict = step.decideNow(token, hash, Date.now(), hold) ?? (await step.decide(token, hash, hold, config.name));
          if (verdict === 'allow') return true;
          lastDenial = verdict;
          lastDetail = hold.detail;
          return false;
        }
      }
    };
    if (await evaluate(config.expr!)) {
      if (grant !== undefined && hold.answer !== undefined) grant.answer = hold.answer;
      return this.record('allow');
    }
    return this.deny(config, lastDenial, hash || undefined, lastDetail, hold, grant);
  }

  /** Counts and logs a denial; hands the steps' answer (a denial's own response) to the grant. */
  private deny(
    config: CompiledConfig,
    reason: DenyReason,
    hash: string | undefined,
    detail: string,
    hold?: Hold,
    grant?: EdgeGrant,
  ): DenyReason {
    if (hold !== undefined) {
      if (grant !== undefined && hold.answer !== undefined) grant.answer = hold.answer;
      hold.answer = undefined;
      hold.state = undefined;
    }
    this.logDenial(config.name, reason, hash, detail);
    this.record(reason);
    return reason;
  }

  /**
   * One info line per denial (config, reason, what failed, a reference to the token, never the
   * token), at most one per second for each config and reason; the next line says how many were held
   * back meanwhile.
   */
  private logDenial(configId: string, reason: DenyReason, hash: string | undefined, detail: string): void {
    if (!this.log.enabled('info')) return;
    const key = `${configId}|${reason}`;
    const now = Date.now();
    const last = this.denialLog.get(key);
    if (last && now - last.at < 1000) {
      last.held++;
      return;
    }
    if (!last && this.denialLog.size >= 1000) this.denialLog.clear(); // bounded: config ids come from requests
    this.denialLog.set(key, { at: now, held: 0 });
    this.log.info('request denied', {
      config_id: configId,
      reason,
      ...(detail ? { detail } : {}),
      ...(hash ? { token: tokenRef(hash) } : {}),
      ...(last?.held ? { suppressed: last.held } : {}),
    });
  }

  private logUnknownConfig(configId: string): void {
    const now = Date.now();
    if (now - this.lastUnknownLogAt < 1000) {
      this.suppressedUnknown++;
      return;
    }
    this.lastUnknownLogAt = now;
    const held = this.suppressedUnknown;
    this.suppressedUnknown = 0;
    this.log.error('Auth Server does not contain auth configuration with the given ID', {
      config_id: configId,
      loaded: this.configs.size,
      ...(held ? { suppressed: held } : {}),
    });
  }
}

function grantEdge(grant: EdgeGrant, config: CompiledConfig, until: number, answer: Answer | undefined): void {
  if (config.edgeKey === undefined || !Number.isFinite(until) || until <= 0) return;
  if (config.edgeCredential !== '') {
    // the filter can only set request headers again: an answer with anything else is not offered
    if (answer?.removeHeaders?.length || answer?.responseHeaders?.length || answer?.metadata !== undefined) return;
    const upstream = answer?.upstreamHeaders ?? [];
    if (upstream.some((h) => h.append)) return;
    // the filter reads them as name NUL value NUL ...: a NUL inside would shift every pair after it
    if (upstream.some((h) => h.name.includes('\0') || h.value.includes('\0'))) return;
    grant.credential = config.edgeCredential;
    if (upstream.length) grant.headers = upstream.map((h) => `${h.name}\0${h.value}`).join('\0');
  } else if (answer !== undefined) return;
  grant.key = config.edgeKey;
  grant.until = until;
}
