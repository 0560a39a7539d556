// oauth2.accessTokenValidation by introspection (RFC 7662) as an AuthStep: the token's introspection
// result, from the shared Introspector's cache or from a call, then `active`, `exp` and the scopes.
// The Introspector (endpoint + client identity, cache, single-flight) is shared by every step that
// names the same endpoint and client, and its keep-alive agent by every introspector of the origin
// (both from the SharedPool, so an update that keeps the endpoint keeps its cache and connections).
import http from 'node:http';
import https from 'node:https';
import { createHash } from 'node:crypto';
import type { IntrospectionStepConfig } from '../../../common/contract.js';
import type { Logger } from '../../../common/log.js';
import { IntrospectionError, Introspector, redactUrl, tokenRef, type ActiveToken, type Introspection } from '../introspect.js';
import type { Outcome } from '../outcome.js';
import { claimsMetadata } from '../claims.js';
import { addMetadata, setUserId, type AuthStep, type Hold, type StepFactory, type StepSummary } from '../step.js';

export class IntrospectionStep implements AuthStep {
  readonly bearer = true;
  readonly summary: StepSummary;
  private readonly cacheTimeoutMs: number;
  private readonly requiredScopes: readonly string[];
  private readonly userIdAttributeName: string | undefined;
  private readonly metadataFromClaims: readonly (readonly [key: string, claim: string])[];

  constructor(
    config: IntrospectionStepConfig,
    readonly introspector: Introspector,
    private readonly log: Logger,
  ) {
    this.cacheTimeoutMs = config.cacheTimeoutMs;
    this.requiredScopes = [...config.requiredScopes];
    this.userIdAttributeName = config.userIdAttributeName;
    this.metadataFromClaims = Object.entries(config.dynamicMetadataFromClaims ?? {});
    this.summary = {
      type: config.type,
      introspectionUrl: redactUrl(config.introspectionUrl),
      ...(config.clientId ? { clientId: config.clientId } : {}),
      cacheTimeoutMs: config.cacheTimeoutMs,
      requiredScopes: [...config.requiredScopes],
    };
  }

  get cacheMs(): number {
    return this.cacheTimeoutMs;
  }

  /** The shared introspector keeps results as long as the longest cache timeout of its steps asks. */
  applied(): void {
    if (this.cacheTimeoutMs > this.introspector.cacheMs) this.introspector.cacheMs = this.cacheTimeoutMs;
  }

  decideNow(_token: string, hash: string, now: number, hold: Hold): Outcome | undefined {
    const hit = this.introspector.cached(hash, now, this.cacheTimeoutMs);
    if (hit === undefined) return undefined;
    return this.judge(hit, now, hold);
  }

  async decide(token: string, hash: string, hold: Hold, configId: string): Promise<Outcome> {
    let result: Introspection;
    try {
      result = await this.introspector.introspect(token, hash);
    } catch (err) {
      this.logError(configId, hash, err);
      return 'unavailable';
    }
    return this.judge(result, Date.now(), hold);
  }

  private judge(result: Introspection | ActiveToken, now: number, hold: Hold): Outcome {
    if (!result.active || result.expiresAt <= now) return 'invalid_token';
    const required = this.requiredScopes;
    for (let i = 0; i < required.length; i++) if (!result.scopes.has(required[i]!)) return 'insufficient_scope';
    // the user id, when asked for, must be in the answer (Gloo denies without it)
    const userAttr = this.userIdAttributeName;
    if (userAttr !== undefined) {
      const id = result.claims[userAttr];
      if (typeof id !== 'string' && typeof id !== 'number') {
        hold.detail = `the introspection answer has no ${userAttr}`;
        return 'invalid_token';
      }
      addMetadata(hold, { user_id: String(id) });
      setUserId(hold, String(id));
    }
    if (this.metadataFromClaims.length) addMetadata(hold, claimsMetadata(result.claims, this.metadataFromClaims));
    // the edge cache would skip ext_authz, and with it the metadata
    if (userAttr !== undefined || this.metadataFromClaims.length) hold.until = 0;
    // until when the allow may be reused: the cache timeout from the introspection, never past `exp`
    const until = this.cacheTimeoutMs <= 0 ? 0 : Math.min(result.fetchedAt + this.cacheTimeoutMs, result.expiresAt);
    if (until < hold.until) hold.until = until;
    return 'allow';
  }

  private logError(configId: string, hash: string, err: unknown): void {
    const held = this.introspector.errorLogTicket(Date.now());
    if (held < 0) return;
    const isKnown = err instanceof IntrospectionError;
    this.log.error('token introspection failed; denying', {
      config_id: configId,
      introspection_url: redactUrl(this.introspector.url.href),
      kind: isKnown ? err.kind : 'internal',
      // IntrospectionError messages are built without the token; anything else is summarised by name
      error: isKnown ? err.message : err instanceof Error ? err.name : 'unknown error',
      token: tokenRef(hash),
      ...(held ? { suppressed: held } : {}),
    });
  }
}

/** A keep-alive agent per origin, shared by the introspectors there. */
function agentFor(origin: string): http.Agent {
  const options: http.AgentOptions = { keepAlive: true, maxSockets: 64, maxFreeSockets: 64, scheduling: 'lifo' };
  return origin.startsWith('https:') ? new https.Agent(options) : new http.Agent(options);
}

export const introspectionStep: StepFactory<IntrospectionStepConfig> = (config, ctx) => {
  const origin = new URL(config.introspectionUrl).origin;
  const agent = ctx.pool.get(
    `agent:${origin}`,
    () => agentFor(origin),
    (a) => a.destroy(),
  );
  const key = createHash('sha256')
    .update(JSON.stringify([config.introspectionUrl, config.clientId ?? '', config.clientSecret ?? '']))
    .digest('hex');
  const introspector = ctx.pool.get(
    `introspector:${key}`,
    () =>
      new Introspector({
        url: config.introspectionUrl,
        clientId: config.clientId,
        clientSecret: config.clientSecret,
        timeoutMs: ctx.settings.introspectionTimeoutMs,
        maxEntries: ctx.settings.cacheMaxEntries,
        agent,
      }),
    (i) => i.clear(),
  );
  return new IntrospectionStep(config, introspector, ctx.log);
};
