// The decision, independent of gRPC: AuthConfigs (as the controller resolved them) compiled into steps,
// and check(configId, authorizationHeader) -> outcome. Every step must pass; a step introspects the
// bearer token (or reuses a cached active result) and then checks `exp` and the required scopes.
//
// Hot path: for a cached token, check() is synchronous and returns a string constant; the only
// allocations are the token slice and its sha256. Anything that is not a clear "allow" is a denial,
// including every error (fail closed).
import http from 'node:http';
import https from 'node:https';
import { createHash } from 'node:crypto';
import type { AuthConfigConfig, IntrospectionStepConfig } from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { parseBearer } from './token.js';
import { IntrospectionError, Introspector, redactUrl, tokenHash, tokenRef, type ActiveToken, type Introspection } from './introspect.js';

export type DenyReason =
  /** config_id names no loaded AuthConfig (or is missing) */
  | 'unknown_config'
  /** the CheckRequest itself could not be parsed */
  | 'malformed_request'
  /** no Authorization header */
  | 'missing_token'
  /** Authorization is not `Bearer <b64token>`, is too long, or appears twice */
  | 'invalid_request'
  /** the provider says inactive (unknown, expired, revoked), or `exp` has passed */
  | 'invalid_token'
  /** active, but a required scope is missing */
  | 'insufficient_scope'
  /** the provider is unreachable, too slow, or answered something other than a valid introspection */
  | 'unavailable';

export type Outcome = 'allow' | DenyReason;

export const DENY_REASONS: readonly DenyReason[] = [
  'unknown_config',
  'malformed_request',
  'missing_token',
  'invalid_request',
  'invalid_token',
  'insufficient_scope',
  'unavailable',
];

export interface AuthorizerOptions {
  logger: Logger;
  /** per introspection call, including connecting. Default 2000 */
  introspectionTimeoutMs?: number;
  /** bound of each introspection endpoint's cache. Default 10000 */
  cacheMaxEntries?: number;
}

/** What configs() shows of a loaded AuthConfig: no secrets. */
export interface AuthConfigSummary {
  steps: Array<{ type: string; introspectionUrl: string; clientId?: string; cacheTimeoutMs: number; requiredScopes: string[] }>;
}

export interface AuthorizerStats {
  checks: number;
  allowed: number;
  denied: Record<DenyReason, number>;
  introspections: number;
  joinedIntrospections: number;
  introspectionErrors: number;
  cacheHits: number;
  cacheEntries: number;
}

interface Step {
  readonly introspector: Introspector;
  /** identity of the introspector: endpoint and client credentials, hashed */
  readonly introspectorKey: string;
  readonly cacheTimeoutMs: number;
  readonly requiredScopes: readonly string[];
}

interface CompiledConfig {
  readonly name: string;
  /** `<name>@<version>` when the controller versioned the config, else undefined (no edge caching) */
  readonly edgeKey: string | undefined;
  /** identity of the config's content: unchanged configs are kept as they are across updates */
  readonly fingerprint: string;
  readonly steps: readonly Step[];
  readonly summary: AuthConfigSummary;
}

/** Validates the shape of one config from the controller; throws with a reason. */
export function validateAuthConfig(raw: unknown): AuthConfigConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('config is not an object');
  const c = raw as Record<string, unknown>;
  if (typeof c['name'] !== 'string' || c['name'] === '') throw new Error('config has no name');
  const name = c['name'];
  if (!Array.isArray(c['steps']) || c['steps'].length === 0) throw new Error(`${name}: config has no steps`);
  const steps: IntrospectionStepConfig[] = [];
  c['steps'].forEach((s: unknown, i: number) => {
    const where = `${name}: step ${i}`;
    if (s === null || typeof s !== 'object') throw new Error(`${where} is not an object`);
    const step = s as Record<string, unknown>;
    if (step['type'] !== 'oauth2-introspection') throw new Error(`${where}: unsupported step type ${JSON.stringify(step['type'])}`);
    const url = step['introspectionUrl'];
    if (typeof url !== 'string') throw new Error(`${where}: introspectionUrl missing`);
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new Error(`${where}: introspectionUrl is not a URL`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new Error(`${where}: introspectionUrl must be http or https`);
    const clientId = step['clientId'];
    const clientSecret = step['clientSecret'];
    if (clientId !== undefined && typeof clientId !== 'string') throw new Error(`${where}: clientId is not a string`);
    if (clientSecret !== undefined && typeof clientSecret !== 'string') throw new Error(`${where}: clientSecret is not a string`);
    const cacheTimeoutMs = step['cacheTimeoutMs'] ?? 0;
    if (typeof cacheTimeoutMs !== 'number' || !Number.isFinite(cacheTimeoutMs) || cacheTimeoutMs < 0)
      throw new Error(`${where}: cacheTimeoutMs must be a number >= 0`);
    const scopes = step['requiredScopes'] ?? [];
    if (!Array.isArray(scopes) || scopes.some((x) => typeof x !== 'string' || x === '' || x.includes(' '))) {
      throw new Error(`${where}: requiredScopes must be a list of scope names`);
    }
    steps.push({
      type: 'oauth2-introspection',
      introspectionUrl: url,
      ...(clientId !== undefined ? { clientId } : {}),
      ...(clientSecret !== undefined ? { clientSecret } : {}),
      cacheTimeoutMs,
      requiredScopes: scopes as string[],
    });
  });
  const version = c['version'];
  if (version !== undefined && (typeof version !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(version))) {
    throw new Error(`${name}: version must be 1-64 characters [A-Za-z0-9._-]`);
  }
  return { name, ...(version !== undefined ? { version } : {}), steps };
}

/** What an allow may tell Envoy's edge cache (docs/wasm.md): filled in by Authorizer.check. */
export interface EdgeGrant {
  /** `<name>@<version>` of the config that allowed; '' when none */
  key: string;
  /** epoch ms until which every step's answer holds (cache timeout and `exp`); 0 = do not cache */
  until: number;
}

function summarize(config: AuthConfigConfig): AuthConfigSummary {
  return {
    steps: config.steps.map((s) => ({
      type: s.type,
      introspectionUrl: redactUrl(s.introspectionUrl),
      ...(s.clientId ? { clientId: s.clientId } : {}),
      cacheTimeoutMs: s.cacheTimeoutMs,
      requiredScopes: [...s.requiredScopes],
    })),
  };
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export class Authorizer {
  private configs = new Map<string, CompiledConfig>();
  private readonly introspectors = new Map<string, Introspector>();
  private readonly agents = new Map<string, http.Agent>();
  private readonly log: Logger;
  private readonly timeoutMs: number;
  private readonly cacheMaxEntries: number;
  private readonly sweepTimer: NodeJS.Timeout;
  /** per config and reason: when a denial was last logged, and how many since were not */
  private readonly denialLog = new Map<string, { at: number; held: number }>();
  private lastUnknownLogAt = 0;
  private suppressedUnknown = 0;
  private readonly counts = { checks: 0, allowed: 0 };
  private readonly denied: Record<DenyReason, number> = {
    unknown_config: 0,
    malformed_request: 0,
    missing_token: 0,
    invalid_request: 0,
    invalid_token: 0,
    insufficient_scope: 0,
    unavailable: 0,
  };

  constructor(options: AuthorizerOptions) {
    this.log = options.logger;
    this.timeoutMs = options.introspectionTimeoutMs ?? 2000;
    this.cacheMaxEntries = options.cacheMaxEntries ?? 10_000;
    this.sweepTimer = setInterval(() => {
      const now = Date.now();
      for (const i of this.introspectors.values()) i.sweep(now);
    }, 30_000);
    this.sweepTimer.unref();
  }

  /**
   * Replaces the loaded configs with `raw` (the full set). A config that fails validation keeps its
   * previous version if there is one (otherwise it is absent, so its routes deny); the reasons are
   * returned. Introspectors (and their caches and connections) are kept for unchanged endpoints.
   */
  apply(raw: readonly unknown[]): { problems: string[] } {
    const problems: string[] = [];
    const next = new Map<string, CompiledConfig>();
    const used = new Map<string, Introspector>();
    const cacheMs = new Map<Introspector, number>();
    const keep = (c: CompiledConfig): void => {
      next.set(c.name, c);
      for (const s of c.steps) {
        used.set(s.introspectorKey, s.introspector);
        cacheMs.set(s.introspector, Math.max(cacheMs.get(s.introspector) ?? 0, s.cacheTimeoutMs));
      }
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
      try {
        const steps = config.steps.map((s): Step => {
          const key = sha256(JSON.stringify([s.introspectionUrl, s.clientId ?? '', s.clientSecret ?? '']));
          let introspector = used.get(key) ?? this.introspectors.get(key);
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
          return { introspector, introspectorKey: key, cacheTimeoutMs: s.cacheTimeoutMs, requiredScopes: [...s.requiredScopes] };
        });
        const edgeKey = config.version !== undefined ? `${config.name}@${config.version}` : undefined;
        keep({ name: config.name, edgeKey, fingerprint, steps, summary: summarize(config) });
      } catch (err) {
        problems.push(`${config.name}: ${err instanceof Error ? err.message : String(err)}`);
        if (current) keep(current);
      }
    }
    // swap, then retire what is no longer used
    for (const [intro, ms] of cacheMs) intro.cacheMs = ms;
    this.configs = next;
    for (const [key, intro] of this.introspectors) {
      if (!used.has(key)) {
        intro.clear();
        this.introspectors.delete(key);
      }
    }
    for (const [key, intro] of used) this.introspectors.set(key, intro);
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
    return {
      checks: this.counts.checks,
      allowed: this.counts.allowed,
      denied: { ...this.denied },
      introspections,
      joinedIntrospections: joined,
      introspectionErrors: errors,
      cacheHits: hits,
      cacheEntries: entries,
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
   * Decides one request. Synchronous when every step is answered from the cache (or the request is
   * denied before any introspection); a Promise otherwise. Never rejects.
   */
  check(configId: string, authorization: string | undefined, ambiguous = false, grant?: EdgeGrant): Outcome | Promise<Outcome> {
    const config = this.configs.get(configId);
    if (config === undefined) {
      this.logUnknownConfig(configId);
      return this.record('unknown_config');
    }
    if (authorization === undefined) return this.deny(config, 'missing_token', undefined);
    const token = ambiguous ? undefined : parseBearer(authorization);
    if (token === undefined) return this.deny(config, 'invalid_request', undefined);
    const hash = tokenHash(token);
    const now = Date.now();
    const steps = config.steps;
    let until = Infinity;
    for (let i = 0; i < steps.length; i++) {
      const step = steps[i]!;
      const hit = step.introspector.cached(hash, now, step.cacheTimeoutMs);
      if (hit === undefined) return this.checkFrom(config, i, token, hash, until, grant);
      const verdict = judge(step, hit, now);
      if (verdict !== 'allow') return this.deny(config, verdict, hash);
      until = Math.min(until, holdsUntil(step, hit));
    }
    if (grant !== undefined) grantEdge(grant, config, until);
    return this.record('allow');
  }

  stop(): void {
    clearInterval(this.sweepTimer);
    for (const i of this.introspectors.values()) i.clear();
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
    holds: number,
    grant: EdgeGrant | undefined,
  ): Promise<Outcome> {
    const steps = config.steps;
    let until = holds;
    for (let i = from; i < steps.length; i++) {
      const step = steps[i]!;
      let result: Introspection | undefined = i === from ? undefined : step.introspector.cached(hash, Date.now(), step.cacheTimeoutMs);
      if (result === undefined) {
        try {
          result = await step.introspector.introspect(token, hash);
        } catch (err) {
          this.logIntrospectionError(config, step, hash, err);
          return this.deny(config, 'unavailable', hash);
        }
      }
      const verdict = judge(step, result, Date.now());
      if (verdict !== 'allow') return this.deny(config, verdict, hash);
      if (result.active) until = Math.min(until, holdsUntil(step, result));
    }
    if (grant !== undefined) grantEdge(grant, config, until);
    return this.record('allow');
  }

  private deny(config: CompiledConfig, reason: DenyReason, hash: string | undefined): DenyReason {
    this.logDenial(config.name, reason, hash);
    this.record(reason);
    return reason;
  }

  /**
   * One info line per denial (config, reason, a reference to the token, never the token), at most one
   * per second for each config and reason; the next line says how many were held back meanwhile.
   */
  private logDenial(configId: string, reason: DenyReason, hash: string | undefined): void {
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

  private logIntrospectionError(config: CompiledConfig, step: Step, hash: string, err: unknown): void {
    const held = step.introspector.errorLogTicket(Date.now());
    if (held < 0) return;
    const isKnown = err instanceof IntrospectionError;
    this.log.error('token introspection failed; denying', {
      config_id: config.name,
      introspection_url: redactUrl(step.introspector.url.href),
      kind: isKnown ? err.kind : 'internal',
      // IntrospectionError messages are built without the token; anything else is summarised by name
      error: isKnown ? err.message : err instanceof Error ? err.name : 'unknown error',
      token: tokenRef(hash),
      ...(held ? { suppressed: held } : {}),
    });
  }
}

/** Until when a step's allow may be reused: its cache timeout from the introspection, never past `exp`. */
function holdsUntil(step: Step, result: ActiveToken): number {
  if (step.cacheTimeoutMs <= 0) return 0;
  return Math.min(result.fetchedAt + step.cacheTimeoutMs, result.expiresAt);
}

function grantEdge(grant: EdgeGrant, config: CompiledConfig, until: number): void {
  if (config.edgeKey === undefined || !Number.isFinite(until) || until <= 0) return;
  grant.key = config.edgeKey;
  grant.until = until;
}

/** A step's verdict on an introspection result. */
function judge(step: Step, result: Introspection | ActiveToken, now: number): Outcome {
  if (!result.active) return 'invalid_token';
  if (result.expiresAt <= now) return 'invalid_token';
  const required = step.requiredScopes;
  for (let i = 0; i < required.length; i++) if (!result.scopes.has(required[i]!)) return 'insufficient_scope';
  return 'allow';
}
