// The decision, independent of gRPC: AuthConfigs (as the controller resolved them, validated by the
// shared schema in common/auth-config.ts) compiled into steps (step.ts: introspection-step.ts, jwt.ts),
// and check(configId, authorizationHeader, headers) -> outcome. Every step must pass, in order, unless
// the config has a booleanExpr over its steps' names: then the expression decides (short-circuit).
//
// Hot path: for a cached introspection, check() is synchronous and returns a string constant; the only
// allocations are the token slice and its sha256. Anything that is not a clear "allow" is a denial,
// including every error (fail closed).
import http from 'node:http';
import https from 'node:https';
import { createHash } from 'node:crypto';
import {
  DEFAULT_JWKS_REFRESH_MS,
  parseAuthConfigConfig,
  parseBooleanExpr,
  type AuthConfigConfig,
  type BoolExpr,
} from '../../common/auth-config.js';
import type { Logger } from '../../common/log.js';
import { ApiKeyStep } from './api-key.js';
import { parseBearer } from './token.js';
import { Introspector, tokenHash, tokenRef } from './introspect.js';
import { IntrospectionStep } from './introspection-step.js';
import { JwtStep, RemoteJwks } from './jwt.js';
import type { DenyReason, Outcome } from './outcome.js';
import type { AuthStep, Hold, StepSummary } from './step.js';

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
  /** identity of the config's content: unchanged configs are kept as they are across updates */
  readonly fingerprint: string;
  readonly steps: readonly AuthStep[];
  /** some step judges the bearer token (so a missing or malformed one is denied up front) */
  readonly bearer: boolean;
  /** the parsed booleanExpr, when set */
  readonly expr: BoolExpr | undefined;
  /** the shared resources its steps use (pool keys), kept while some config uses them */
  readonly introspectors: ReadonlyMap<string, { introspector: Introspector; cacheMs: number }>;
  readonly jwks: ReadonlyMap<string, RemoteJwks>;
  readonly jwtSteps: readonly JwtStep[];
  readonly summary: AuthConfigSummary;
}

/** Validates the shape of one config from the controller (the shared schema); throws with a reason. */
export const validateAuthConfig: (raw: unknown) => AuthConfigConfig = parseAuthConfigConfig;

/** What an allow may tell Envoy's edge cache (docs/wasm.md): filled in by Authorizer.check. */
export interface EdgeGrant {
  /** `<name>@<version>` of the config that allowed; '' when none */
  key: string;
  /** epoch ms until which every step's answer holds (cache timeout and `exp`); 0 = do not cache */
  until: number;
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export class Authorizer {
  private configs = new Map<string, CompiledConfig>();
  private readonly introspectors = new Map<string, Introspector>();
  private readonly jwksSources = new Map<string, RemoteJwks>();
  private readonly agents = new Map<string, http.Agent>();
  private readonly log: Logger;
  private readonly timeoutMs: number;
  private readonly cacheMaxEntries: number;
  private readonly jwksTimeoutMs: number;
  private readonly jwksCooldownMs: number;
  private readonly jwtCacheMaxEntries: number;
  private readonly sweepTimer: NodeJS.Timeout;
  /** reused by check() on its synchronous path (nothing else runs meanwhile) */
  private readonly syncHold: Hold = { until: Infinity, detail: '', headers: NO_HEADERS };
  /** per config and reason: when a denial was last logged, and how many since were not */
  private readonly denialLog = new Map<string, { at: number; held: number }>();
  private lastUnknownLogAt = 0;
  private suppressedUnknown = 0;
  private readonly counts = { checks: 0, allowed: 0 };
  /** counters of JWT steps no longer loaded (so the totals never go down) */
  private readonly retiredJwt = { verifications: 0, cacheHits: 0 };
  private readonly denied: Record<DenyReason, number> = {
    unknown_config: 0,
    malformed_request: 0,
    missing_token: 0,
    invalid_request: 0,
    invalid_token: 0,
    insufficient_scope: 0,
    missing_api_key: 0,
    invalid_api_key: 0,
    access_denied: 0,
    unavailable: 0,
  };

  constructor(options: AuthorizerOptions) {
    this.log = options.logger;
    this.timeoutMs = options.introspectionTimeoutMs ?? 2000;
    this.cacheMaxEntries = options.cacheMaxEntries ?? 10_000;
    this.jwksTimeoutMs = options.jwksTimeoutMs ?? 2000;
    this.jwksCooldownMs = options.jwksCooldownMs ?? 10_000;
    this.jwtCacheMaxEntries = options.jwtCacheMaxEntries ?? 10_000;
    this.sweepTimer = setInterval(() => {
      const now = Date.now();
      for (const i of this.introspectors.values()) i.sweep(now);
      for (const c of this.configs.values()) for (const j of c.jwtSteps) j.sweep(now);
    }, 30_000);
    this.sweepTimer.unref();
  }

  /**
   * Replaces the loaded configs with `raw` (the full set). A config that fails validation keeps its
   * previous version if there is one (otherwise it is absent, so its routes deny); the reasons are
   * returned. Introspectors (their caches and connections) and JWK sets are kept for unchanged endpoints.
   */
  apply(raw: readonly unknown[]): { problems: string[] } {
    const problems: string[] = [];
    const next = new Map<string, CompiledConfig>();
    const usedIntrospectors = new Map<string, Introspector>();
    const usedJwks = new Map<string, RemoteJwks>();
    const cacheMs = new Map<Introspector, number>();
    const keep = (c: CompiledConfig): void => {
      next.set(c.name, c);
      for (const [key, { introspector, cacheMs: ms }] of c.introspectors) {
        usedIntrospectors.set(key, introspector);
        cacheMs.set(introspector, Math.max(cacheMs.get(introspector) ?? 0, ms));
      }
      for (const [key, jwks] of c.jwks) usedJwks.set(key, jwks);
    };
    const created: RemoteJwks[] = [];
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
      try {
        const introspectors = new Map<string, { introspector: Introspector; cacheMs: number }>();
        const jwks = new Map<string, RemoteJwks>();
        const stepLog = this.log;
        const steps = config.steps.map((s): AuthStep => {
          if (s.type === 'api-key') return new ApiKeyStep(s);
          if (s.type === 'oauth2-introspection') {
            const key = sha256(JSON.stringify([s.introspectionUrl, s.clientId ?? '', s.clientSecret ?? '']));
            let introspector = usedIntrospectors.get(key) ?? introspectors.get(key)?.introspector ?? this.introspectors.get(key);
            if (!introspector) {
              introspector = new Introspector({
                url: s.introspectionUrl,
                clientId: s.clientId,
                clientSecret: s.clientSecret,
                timeoutMs: this.timeoutMs,
                maxEntries: this.cacheMaxEntries,
                agent: this.agentFor(s.introspectionUrl),
              });
            }
            introspectors.set(key, { introspector, cacheMs: Math.max(introspectors.get(key)?.cacheMs ?? 0, s.cacheTimeoutMs) });
            return new IntrospectionStep(s, introspector, stepLog);
          }
          if (s.type !== 'oauth2-jwt') throw new Error(`${config.name}: step type ${s.type} is not enforced by this service`);
          let remote: RemoteJwks | undefined;
          if (s.remoteJwks) {
            const refreshMs = s.remoteJwks.refreshIntervalMs || DEFAULT_JWKS_REFRESH_MS;
            const key = JSON.stringify([s.remoteJwks.url, refreshMs]);
            remote = usedJwks.get(key) ?? jwks.get(key) ?? this.jwksSources.get(key);
            if (!remote) {
              remote = new RemoteJwks({
                url: s.remoteJwks.url,
                refreshMs,
                cooldownMs: this.jwksCooldownMs,
                timeoutMs: this.jwksTimeoutMs,
                logger: stepLog,
              });
              created.push(remote);
            }
            jwks.set(key, remote);
          }
          return new JwtStep(s, remote, stepLog, this.jwtCacheMaxEntries);
        });
        const jwtSteps = steps.filter((st): st is JwtStep => st instanceof JwtStep);
        const expr =
          config.booleanExpr !== undefined
            ? parseBooleanExpr(
                config.booleanExpr,
                config.steps.map((st) => st.name),
              )
            : undefined;
        const bearer = steps.some((st) => st.bearer);
        // the edge cache keys on the bearer token: only configs decided by it alone may use it
        const edgeKey =
          config.version !== undefined && expr === undefined && steps.every((st) => st.bearer)
            ? `${config.name}@${config.version}`
            : undefined;
        const summary: AuthConfigSummary = {
          steps: steps.map((st, i) => (config.steps[i]?.name !== undefined ? { ...st.summary, name: config.steps[i].name } : st.summary)),
          ...(config.booleanExpr !== undefined ? { booleanExpr: config.booleanExpr } : {}),
        };
        keep({ name: config.name, edgeKey, fingerprint, steps, bearer, expr, introspectors, jwks, jwtSteps, summary });
      } catch (err) {
        problems.push(`${config.name}: ${err instanceof Error ? err.message : String(err)}`);
        if (current) keep(current);
      }
    }
    // swap, then retire what is no longer used
    for (const [intro, ms] of cacheMs) intro.cacheMs = ms;
    const kept = new Set([...next.values()].flatMap((c) => c.jwtSteps));
    for (const c of this.configs.values()) {
      for (const j of c.jwtSteps) {
        if (kept.has(j)) continue;
        this.retiredJwt.verifications += j.counters.verifications;
        this.retiredJwt.cacheHits += j.counters.cacheHits;
      }
    }
    this.configs = next;
    for (const [key, intro] of this.introspectors) {
      if (!usedIntrospectors.has(key)) {
        intro.clear();
        this.introspectors.delete(key);
      }
    }
    for (const [key, intro] of usedIntrospectors) this.introspectors.set(key, intro);
    for (const [key, source] of this.jwksSources) {
      if (!usedJwks.has(key)) {
        source.stop();
        this.jwksSources.delete(key);
      }
    }
    for (const source of created) if (![...usedJwks.values()].includes(source)) source.stop();
    for (const [key, source] of usedJwks) this.jwksSources.set(key, source);
    const origins = new Set([...this.introspectors.values()].map((i) => i.url.origin));
    for (const [origin, agent] of this.agents) {
      if (!origins.has(origin)) {
        agent.destroy();
        this.agents.delete(origin);
      }
    }
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
    for (const i of this.introspectors.values()) {
      introspections += i.counters.calls;
      joined += i.counters.joined;
      errors += i.counters.errors;
      hits += i.counters.cacheHits;
      entries += i.cacheSize;
    }
    let jwksFetches = 0;
    let jwksFetchErrors = 0;
    for (const j of this.jwksSources.values()) {
      jwksFetches += j.counters.fetches;
      jwksFetchErrors += j.counters.errors;
    }
    let jwtVerifications = this.retiredJwt.verifications;
    let jwtCacheHits = this.retiredJwt.cacheHits;
    let jwtCacheEntries = 0;
    for (const c of this.configs.values()) {
      for (const j of c.jwtSteps) {
        jwtVerifications += j.counters.verifications;
        jwtCacheHits += j.counters.cacheHits;
        jwtCacheEntries += j.cacheSize;
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
   * Decides one request. Synchronous when every step answers without I/O (cached introspections, or
   * a denial before any call); a Promise otherwise. Never rejects.
   */
  check(
    configId: string,
    authorization: string | undefined,
    ambiguous = false,
    grant?: EdgeGrant,
    headers: Readonly<Record<string, string>> = NO_HEADERS,
  ): Outcome | Promise<Outcome> {
    const config = this.configs.get(configId);
    if (config === undefined) {
      this.logUnknownConfig(configId);
      return this.record('unknown_config');
    }
    let token = '';
    let hash = '';
    let tokenProblem: DenyReason | undefined;
    if (config.bearer) {
      const parsed = authorization === undefined || ambiguous ? undefined : parseBearer(authorization);
      if (parsed === undefined) tokenProblem = authorization === undefined ? 'missing_token' : 'invalid_request';
      else {
        token = parsed;
        hash = tokenHash(parsed);
      }
    }
    if (config.expr !== undefined) return this.checkExpr(config, token, hash, tokenProblem, headers);
    if (tokenProblem !== undefined) return this.deny(config, tokenProblem, undefined, '');
    const now = Date.now();
    const steps = config.steps;
    const hold = this.syncHold;
    hold.until = Infinity;
    hold.detail = '';
    hold.headers = headers;
    for (let i = 0; i < steps.length; i++) {
      const verdict = steps[i]!.decideNow(token, hash, now, hold);
      if (verdict === undefined) return this.checkFrom(config, i, token, hash, { until: hold.until, detail: '', headers }, grant);
      if (verdict !== 'allow') return this.deny(config, verdict, hash, hold.detail);
    }
    if (grant !== undefined) grantEdge(grant, config, hold.until);
    return this.record('allow');
  }

  stop(): void {
    clearInterval(this.sweepTimer);
    for (const i of this.introspectors.values()) i.clear();
    for (const j of this.jwksSources.values()) j.stop();
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }

  // ---- internals

  private agentFor(url: string): http.Agent {
    const origin = new URL(url).origin;
    let agent = this.agents.get(origin);
    if (!agent) {
      const options: http.AgentOptions = { keepAlive: true, maxSockets: 64, maxFreeSockets: 64, scheduling: 'lifo' };
      agent = origin.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
      this.agents.set(origin, agent);
    }
    return agent;
  }

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
      if (verdict !== 'allow') return this.deny(config, verdict, hash, hold.detail);
    }
    if (grant !== undefined) grantEdge(grant, config, hold.until);
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
    headers: Readonly<Record<string, string>>,
  ): Promise<Outcome> {
    const hold: Hold = { until: 0, detail: '', headers };
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
          if (step.bearer && tokenProblem !== undefined) verdict = tokenProblem;
          else verdict = step.decideNow(token, hash, Date.now(), hold) ?? (await step.decide(token, hash, hold, config.name));
          if (verdict === 'allow') return true;
          lastDenial = verdict;
          lastDetail = hold.detail;
          return false;
        }
      }
    };
    if (await evaluate(config.expr!)) return this.record('allow');
    return this.deny(config, lastDenial, hash || undefined, lastDetail);
  }

  private deny(config: CompiledConfig, reason: DenyReason, hash: string | undefined, detail: string): DenyReason {
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

function grantEdge(grant: EdgeGrant, config: CompiledConfig, until: number): void {
  if (config.edgeKey === undefined || !Number.isFinite(until) || until <= 0) return;
  grant.key = config.edgeKey;
  grant.until = until;
}
