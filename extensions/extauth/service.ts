// Legate's extauth extension: an Envoy ext_authz service (envoy.service.auth.v3.Authorization/Check)
// that validates OAuth2 bearer tokens by introspection (RFC 7662). AuthConfigs arrive from the
// controller over xDS (role `extauth`) and are swapped atomically; each route names its config in the
// `config_id` context extension.
//
// Every answer is an explicit CheckResponse: allowed (status OK + ok_response) or denied (status
// PERMISSION_DENIED + denied_response 403 with a small JSON body). A step may shape the answer (step.ts
// Answer): headers for the upstream request or the client's response and dynamic metadata on an allow, its
// own status, headers and body on a denial (a 302 to a login page); those answers are encoded per call. Failures (unknown config, provider
// down, internal errors) are denials too, never gRPC errors, so a filter configured with
// failure_mode_allow still fails closed. The wire format is handled by ./wire.ts (see there why), the
// gRPC server by ./check-server.ts (on Legate's HTTP/2 server, neither node:http2 nor grpc-js: see ../common/unary-server.ts for why).
import { ExtensionRoles, ExtensionTypeUrls, USER_ID_HEADER_METADATA, decodeExtensionConfig } from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { loadEnvoyService, lookupService } from '../common/grpc.js';
import type { Tracer } from '../common/tracing.js';
import { XdsClient } from '../common/xds-client.js';
import {
  Authorizer,
  DENY_REASONS,
  type AuthConfigSummary,
  type AuthorizerStats,
  type DenyReason,
  type EdgeGrant,
  type Outcome,
} from './authorizer.js';
import type { Answer, AnswerHeader } from './step.js';
import { encodeAllowWithEdgeGrant, parseCheckRequest, type CheckInput } from './wire.js';
import { framePrefix, frameMessage, startCheckServer, type CheckServer } from './check-server.js';
import type { H2Config } from '../common/h2/transport.js';
import { throttledLogger } from '../common/log-throttle.js';

export type { AuthConfigSummary, AuthorizerStats, DenyReason, Outcome } from './authorizer.js';

export interface ExtauthServiceOptions {
  host: string;
  port: number;
  /** host:port of the controller's xDS server */
  xdsAddress: string;
  nodeId?: string;
  logger: Logger;
  /** per introspection call. Default 2000 ms */
  introspectionTimeoutMs?: number;
  /** bound of each introspection endpoint's token cache. Default 10000 */
  cacheMaxEntries?: number;
  /** bound of each JWT step's cache of verified tokens (0 = verify every check). Default 10000 */
  jwtCacheMaxEntries?: number;
  /** Called once per Check with its outcome and duration (for metrics and traces). */
  observe?: (outcome: Outcome, configId: string, seconds: number) => void;
  /** exports a span per Check whose trace context Envoy sampled (none: no tracing) */
  tracer?: Tracer;
  /** the HTTP/2 transport and its limits (--http2-transport, --http2-*) */
  http2?: H2Config;
}

export interface RunningExtauthService {
  port: number;
  /** loaded AuthConfigs: name -> summary (no secrets) */
  configs(): Record<string, AuthConfigSummary>;
  /** true once a config set has been received from the controller */
  ready(): boolean;
  /** counters: checks, outcomes, introspection calls, cache hits */
  stats(): AuthorizerStats;
  stop(): Promise<void>;
}

/** The JSON body, WWW-Authenticate challenge (RFC 6750 §3) and HTTP status (default 403) of each denial. */
export const DENIAL_BODIES: Readonly<Record<DenyReason, { error: string; challenge?: string; status?: 'Unauthorized' }>> = {
  unknown_config: { error: 'access_denied' },
  malformed_request: { error: 'access_denied' },
  missing_token: { error: 'missing_token', challenge: 'Bearer' },
  invalid_request: { error: 'invalid_request', challenge: 'Bearer error="invalid_request"' },
  invalid_token: { error: 'invalid_token', challenge: 'Bearer error="invalid_token"' },
  insufficient_scope: { error: 'insufficient_scope', challenge: 'Bearer error="insufficient_scope"' },
  missing_api_key: { error: 'missing_api_key', status: 'Unauthorized' },
  invalid_api_key: { error: 'invalid_api_key', status: 'Unauthorized' },
  invalid_credentials: { error: 'invalid_credentials', status: 'Unauthorized' },
  access_denied: { error: 'access_denied' },
  unavailable: { error: 'temporarily_unavailable' },
  // (a redirect carries its own response; this is the fallback)
  redirect: { error: 'access_denied' },
};

const AUTHORIZATION_SERVICE = 'envoy.service.auth.v3.Authorization';
/** the span of a Check, named as gRPC servers name theirs */
const CHECK_SPAN = `${AUTHORIZATION_SERVICE}/Check`;
/** google.rpc.Code */
const RPC_OK = 0;
const RPC_PERMISSION_DENIED = 7;

/** google.protobuf.Value of a JSON value (dynamic metadata; protobufjs names the well-known types in camelCase). */
function structValue(v: unknown): object {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(structValue) } };
  if (typeof v === 'object') return { structValue: toStruct(v as Record<string, unknown>) };
  return { stringValue: String(v) };
}

function toStruct(o: Readonly<Record<string, unknown>>): object {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, structValue(v)])) };
}

function headerOptions(headers: readonly AnswerHeader[] | undefined): object[] {
  return (headers ?? []).map((h) => ({
    header: { key: h.name, value: h.value },
    append_action: h.append ? 'APPEND_IF_EXISTS_OR_ADD' : 'OVERWRITE_IF_EXISTS_OR_ADD',
  }));
}

/**
 * The CheckResponse of an outcome whose steps shaped the answer (encoded per call: not the hot path). An
 * allow carries its headers and metadata; a denial its own response, or the reason's default when the
 * step set none (then the answer's allow parts are dropped).
 */
export function encodeAnswer(serialize: (value: object) => Buffer, outcome: Outcome, answer: Answer): Buffer | undefined {
  if (outcome === 'allow') {
    return serialize({
      status: { code: RPC_OK },
      ok_response: {
        headers: headerOptions(answer.upstreamHeaders),
        headers_to_remove: answer.removeHeaders ?? [],
        response_headers_to_add: headerOptions(answer.responseHeaders),
      },
      ...(answer.metadata !== undefined ? { dynamic_metadata: toStruct(answer.metadata) } : {}),
    });
  }
  const d = answer.denial;
  if (d === undefined) return undefined;
  return serialize({
    status: { code: RPC_PERMISSION_DENIED },
    denied_response: { status: { code: d.status }, headers: headerOptions(d.headers), body: d.body },
  });
}

/** The CheckResponse of every outcome, as the proto-loader definition encodes it (once). */
export function encodeResponses(serialize: (value: object) => Buffer): Record<Outcome, Buffer> {
  const out = { allow: serialize({ status: { code: RPC_OK }, ok_response: {} }) } as Record<Outcome, Buffer>;
  for (const reason of DENY_REASONS) {
    const d = DENIAL_BODIES[reason];
    const headers = [{ header: { key: 'content-type', value: 'application/json' } }];
    if (d.challenge) headers.push({ header: { key: 'www-authenticate', value: d.challenge } });
    out[reason] = serialize({
      status: { code: RPC_PERMISSION_DENIED },
      denied_response: { status: { code: d.status ?? 'Forbidden' }, headers, body: JSON.stringify({ error: d.error }) },
    });
  }
  return out;
}

export async function startExtauthService(options: ExtauthServiceOptions): Promise<RunningExtauthService> {
  const log = options.logger;
  /** what a client can cause once per call: one line per message text per LOG_THROTTLE_MS */
  const perCall = throttledLogger(log);
  const authorizer = new Authorizer({
    logger: log.child('check'),
    ...(options.introspectionTimeoutMs !== undefined ? { introspectionTimeoutMs: options.introspectionTimeoutMs } : {}),
    ...(options.cacheMaxEntries !== undefined ? { cacheMaxEntries: options.cacheMaxEntries } : {}),
    ...(options.jwtCacheMaxEntries !== undefined ? { jwtCacheMaxEntries: options.jwtCacheMaxEntries } : {}),
  });

  const xds = new XdsClient({
    address: options.xdsAddress,
    role: ExtensionRoles.extauth,
    nodeId: options.nodeId ?? `extauth-${process.pid}`,
    typeUrl: ExtensionTypeUrls.authConfig,
    logger: log.child('xds'),
    apply(resources, version) {
      const decoded: unknown[] = [];
      const problems: string[] = [];
      for (const bytes of resources) {
        try {
          decoded.push(decodeExtensionConfig<unknown>(bytes));
        } catch {
          problems.push('a resource is not valid JSON');
        }
      }
      problems.push(...authorizer.apply(decoded).problems);
      // names, endpoints (without credentials or query), client ids and scopes; never secrets
      log.info('got new config', { version, configs: authorizer.summaries() });
      if (problems.length) throw new Error(`cannot load AuthConfigs: ${problems.join('; ')}`);
    },
  });

  const pkg = loadEnvoyService('envoy/service/auth/v3/external_auth.proto');
  const definition = lookupService(pkg, AUTHORIZATION_SERVICE).service;
  const check = definition['Check'];
  if (!check) throw new Error(`${AUTHORIZATION_SERVICE}/Check missing from the loaded protos`);
  const serialize = check.responseSerialize as (value: object) => Buffer;
  const responses = encodeResponses(serialize);

  const observe = options.observe;
  /** Decides one Check and hands `answer` the outcome and the edge grant an allow carries (until 0: none). */
  const decide = (input: CheckInput, answer: (o: Outcome, grant: EdgeGrant) => void): void => {
    const t0 = observe ? performance.now() : 0;
    // an allow may carry how long Envoy's edge cache may reuse it (docs/wasm.md)
    const grant: EdgeGrant = { key: '', until: 0 };
    let outcome: Outcome | Promise<Outcome>;
    if (input.malformed) {
      perCall.error('unparsable CheckRequest; denying');
      outcome = authorizer.record('malformed_request');
    } else {
      try {
        outcome = authorizer.checkRequest(input, grant);
      } catch (err) {
        log.error('check failed; denying', { config_id: input.configId, error: err instanceof Error ? err.message : 'unknown error' });
        outcome = authorizer.record('unavailable');
      }
    }
    if (typeof outcome === 'string') {
      if (observe) observe(outcome, input.configId, (performance.now() - t0) / 1000);
      answer(outcome, grant);
      return;
    }
    // a closure only on the asynchronous path: the synchronous one (the usual) answers directly
    const finish = (o: Outcome): void => {
      if (observe) observe(o, input.configId, (performance.now() - t0) / 1000);
      answer(o, grant);
    };
    outcome.then(finish, (err: unknown) => {
      log.error('check failed; denying', { config_id: input.configId, error: err instanceof Error ? err.message : 'unknown error' });
      finish(authorizer.record('unavailable'));
    });
  };

  // the answers, framed once; an allow with an edge grant is encoded per call
  const framed = {} as Record<Outcome, Buffer>;
  for (const o of Object.keys(responses) as Outcome[]) framed[o] = frameMessage(responses[o]);
  const tracer = options.tracer;
  let bound: CheckServer;
  try {
    bound = await startCheckServer(options.host, options.port, {
      handle: (request, reply, _fail, call) => {
        const input = parseCheckRequest(request);
        // Settings userIdHeader: the header an allow sets to the user's id (the listener's filter names it)
        const userIdHeader = call.header(USER_ID_HEADER_METADATA);
        if (userIdHeader) input.userIdHeader = userIdHeader.toLowerCase();
        const span = tracer?.startServerSpan(CHECK_SPAN, call)?.set('legate.extauth.config_id', input.configId);
        decide(input, (o, grant) => {
          span?.set('legate.extauth.outcome', o).end(o === 'unavailable' || o === 'malformed_request' ? o : undefined);
          let shaped: Buffer | undefined;
          if (grant.answer !== undefined) {
            try {
              shaped = encodeAnswer(serialize, o, grant.answer);
            } catch (err) {
              // a step's answer that cannot be encoded is a denial, never an allow without its headers
              log.error('cannot encode a step answer; denying', {
                config_id: input.configId,
                error: err instanceof Error ? err.message : 'unknown error',
              });
              return reply(framed.unavailable);
            }
          }
          if (o !== 'allow') return reply(shaped !== undefined ? frameMessage(shaped) : framed[o]);
          if (grant.until === 0) return reply(shaped !== undefined ? frameMessage(shaped) : framed.allow);
          const ms = Math.floor(grant.until - Date.now());
          const allow = shaped ?? responses.allow;
          const edge = grant.credential !== undefined ? { credential: grant.credential, headers: grant.headers ?? '' } : undefined;
          reply(ms > 0 ? framePrefix(encodeAllowWithEdgeGrant(allow, grant.key, ms, 5, edge)) : frameMessage(allow));
        });
      },
      onError: (what, err) => perCall.error(`${what} failed`, { error: err instanceof Error ? err.message : 'unknown error' }),
      ...(options.http2 ? { http2: options.http2 } : {}),
    });
  } catch (err) {
    authorizer.stop();
    throw err;
  }
  const mode = options.http2?.tls ? 'mutual TLS' : 'insecure';
  log.info(`extauth server running in ${mode} gRPC mode, listening at ${options.host}:${bound.port}`, {
    address: `${options.host}:${bound.port}`,
    http2: options.http2?.transport ?? 'legate',
  });
  xds.start();

  return {
    port: bound.port,
    configs: () => authorizer.summaries(),
    ready: () => xds.applied > 0,
    stats: () => authorizer.stats(),
    stop: async () => {
      xds.stop();
      await bound.stop();
      authorizer.stop();
    },
  };
}
