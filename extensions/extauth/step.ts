// The seam between the Authorizer and one kind of auth step (introspection, JWT, API key, OIDC, …). The
// Authorizer parses the bearer token (when some step of the config judges it), runs a config's steps in
// order (or its booleanExpr) and denies at the first step that does not allow. A step sees the whole
// request (Hold.request) and may shape the answer (Hold.answer): headers for the upstream request, response
// headers on an allow (Set-Cookie), a denial's own status, headers and body (a 302 to a login page), and
// dynamic metadata. Every failure is a denial (fail closed), never a throw.
//
// Each kind is a factory in steps/<kind>.ts, registered in steps/index.ts; shared clients (introspection
// endpoints, JWK sets, connection pools, LDAP / Redis / HTTP clients) come from the SharedPool (pool.ts).
import type { AuthStepConfig } from '../../common/auth-config.js';
import type { Logger } from '../../common/log.js';
import type { Outcome } from './outcome.js';
import type { SharedPool } from './pool.js';
import type { AuthRequest } from './request.js';

/** A header of an answer (name lower-case). */
export interface AnswerHeader {
  readonly name: string;
  readonly value: string;
  /** add another value even when the header is present (several Set-Cookie); default: overwrite */
  readonly append?: boolean;
}

/** What steps add to the answer besides allow / deny. Allocated only when a step sets something. */
export interface Answer {
  /** allow: headers set on the request forwarded upstream (ID token, user id, …) */
  upstreamHeaders?: AnswerHeader[];
  /** allow: request headers removed before forwarding (lower-case names) */
  removeHeaders?: string[];
  /** allow: headers added to the response the client gets (Set-Cookie after a refresh) */
  responseHeaders?: AnswerHeader[];
  /** allow: dynamic metadata (namespace envoy.filters.http.ext_authz), for later filters and access logs */
  metadata?: Record<string, unknown>;
  /** deny: the response instead of the reason's default (JSON error body, 401/403) */
  denial?: Denial;
}

export interface Denial {
  /** HTTP status, e.g. 302 for a redirect to a login page */
  status: number;
  /** Location, Set-Cookie, WWW-Authenticate, content-type, … */
  headers: AnswerHeader[];
  body: string;
}

/** What a check carries from step to step; one per check (reused on the synchronous path). */
export interface Hold {
  /** epoch ms until which every step's allow holds (edge grant); steps lower it, 0 = do not cache */
  until: number;
  /** why the deciding step denied, for the denial log line (never token content); '' when none */
  detail: string;
  /** the request being checked */
  request: AuthRequest;
  /** what steps add to the answer; undefined until one does (see addUpstreamHeader and friends) */
  answer: Answer | undefined;
  /**
   * Gloo's AuthorizationRequest state, shared by the steps of one check (`jwt`, `jwtAccessToken`,
   * `introspection`, a passthrough server's state); read by opaAuth (`input.state`) and passThroughAuth.
   * Undefined when no step of the config reads it (then setState does nothing).
   */
  state?: Record<string, unknown> | undefined;
}

/** A step's answer about itself, for `configs()` and the `got new config` log: no secrets. */
export type StepSummary = Record<string, unknown> & { type: string };

/** Counters a step keeps (summed over steps in Authorizer.stats; kept across config updates). */
export interface StepCounters {
  jwtVerifications?: number;
  jwtCacheHits?: number;
}

export interface AuthStep {
  readonly summary: StepSummary;
  /** whether the step judges the bearer token (false: it reads the request itself; token and hash are '') */
  readonly bearer: boolean;
  /**
   * The outcome without any I/O, when the step can give one (a cached introspection, a syntactically
   * hopeless JWT); undefined when it must call out, and then the Authorizer awaits decide().
   */
  decideNow(token: string, hash: string, now: number, hold: Hold): Outcome | undefined;
  /** The outcome, calling out as needed. Never rejects; logs its own call failures (rate-limited). */
  decide(token: string, hash: string, hold: Hold, configId: string): Promise<Outcome>;
  /** The step reads the state earlier steps set (so the Authorizer keeps one per check). */
  readonly readsState?: boolean;
  /** Drops expired cache entries (every 30 s). */
  sweep?(now: number): void;
  /** Called on every loaded step after each config update (e.g. to size a shared cache). */
  applied?(): void;
  /** Counters that only grow (read by stats()). */
  readonly counters?: Readonly<StepCounters>;
  /** Entries held in the step's own cache (stats()). */
  readonly cacheSize?: number;
  /** The config was replaced or removed: stop timers (shared resources are released by the pool). */
  close?(): void;
}

/** The service-wide settings a factory may use (the Authorizer's options, defaults applied). */
export interface StepSettings {
  introspectionTimeoutMs: number;
  cacheMaxEntries: number;
  jwksTimeoutMs: number;
  jwksCooldownMs: number;
  jwtCacheMaxEntries: number;
}

/** What a factory gets besides its step's config. */
export interface StepContext {
  /** `<namespace>.<name>` of the AuthConfig */
  readonly configName: string;
  readonly log: Logger;
  readonly settings: StepSettings;
  /** shared clients: get(key, create, dispose) holds one reference for this config until it is replaced */
  readonly pool: Pick<SharedPool, 'get'>;
}

/** Builds the step of one kind; throws (with a reason) when the config cannot be built. */
export type StepFactory<C extends AuthStepConfig = AuthStepConfig> = (config: C, ctx: StepContext) => AuthStep;

// ---- answers

function answerOf(hold: Hold): Answer {
  return (hold.answer ??= {});
}

/** An allow sets this header on the request forwarded upstream. */
export function addUpstreamHeader(hold: Hold, name: string, value: string): void {
  (answerOf(hold).upstreamHeaders ??= []).push({ name: name.toLowerCase(), value });
}

/**
 * An allow names the authenticated user: the header Envoy asked for (Settings userIdHeader) is set to `id` on the
 * request forwarded upstream (the client's own copy was removed before the check). Nothing when none was asked for.
 */
export function setUserId(hold: Hold, id: string): void {
  const header = hold.request.userIdHeader;
  if (header === undefined) return;
  addUpstreamHeader(hold, header, id);
  // the edge cache would skip the check, and with it the header
  hold.until = 0;
}

/** An allow removes this header from the request forwarded upstream. */
export function removeUpstreamHeader(hold: Hold, name: string): void {
  (answerOf(hold).removeHeaders ??= []).push(name.toLowerCase());
}

/** An allow adds this header to the client's response (`append`: keep others of the name, as for Set-Cookie). */
export function addResponseHeader(hold: Hold, name: string, value: string, append = false): void {
  (answerOf(hold).responseHeaders ??= []).push({ name: name.toLowerCase(), value, ...(append ? { append } : {}) });
}

/** An allow sets these dynamic metadata fields. */
export function addMetadata(hold: Hold, fields: Record<string, unknown>): void {
  const a = answerOf(hold);
  a.metadata = { ...a.metadata, ...fields };
}

/** Records `value` under `key` of the check's state, when some step of the config reads it. */
export function setState(hold: Hold, key: string, value: unknown): void {
  if (hold.state !== undefined) hold.state[key] = value;
}

/** A denial answers with this response (the outcome's DenyReason still names it in metrics and logs). */
export function denyWith(hold: Hold, denial: Denial): void {
  answerOf(hold).denial = denial;
}

/** A 302 to `location`, with optional Set-Cookie values. */
export function redirect(hold: Hold, location: string, cookies: readonly string[] = []): void {
  denyWith(hold, {
    status: 302,
    headers: [{ name: 'location', value: location }, ...cookies.map((c) => ({ name: 'set-cookie', value: c, append: true }))],
    body: '',
  });
}
