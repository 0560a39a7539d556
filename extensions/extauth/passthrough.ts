// passThroughAuth: the user's own auth server decides.
//
// - grpc: Envoy's ext_authz v3 Check, sent the request as Envoy described it to extauth, with Gloo's filter
//   metadata added under `solo.auth.passthrough` (state of earlier steps) and `solo.auth.passthrough.config`
//   (the step's `config`). An OK allows, with the headers of its ok_response for the upstream and its
//   dynamic_metadata `solo.auth.passthrough` as state for later steps; a denial carries its own status,
//   headers and body to the client.
// - http: a POST to `url` with the request headers `allowedHeaders` names plus `headersToAdd`, and a JSON body
//   ({body, state, filterMetadata, config}, the parts the step asks for). 200 allows (response headers
//   `allowedUpstreamHeaders` appended / `allowedUpstreamHeadersToOverwrite` set upstream; with
//   readStateFromResponse the body's `state` is kept); any other status denies with that status and the
//   response headers `allowedClientHeadersOnDenied`.
// A server that cannot be reached, times out or answers 5xx (or garbage) is `error`: the step denies, or allows
// when failureModeAllow is set (as Gloo). Connections are kept per server.
import * as grpc from '@grpc/grpc-js';
import type { PassThroughGrpcStepConfig, PassThroughHttpStepConfig } from '../../common/auth-config.js';
import { loadEnvoyService, lookupService } from '../common/grpc.js';

export type PassThroughAnswer =
  | { allow: true; set: Record<string, string>; append: Record<string, string>; state?: Record<string, unknown> }
  | { allow: false; status: number; headers: Record<string, string>; body: string }
  | { error: string };

export interface PassThroughRequest {
  method: string;
  path: string;
  host: string;
  scheme: string;
  /** lower-case names */
  headers: Readonly<Record<string, string>>;
  body?: string;
  /** the filter metadata Envoy sent with the check (namespace -> fields) */
  filterMetadata?: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
}

// ---- http

export async function askHttpPassThrough(
  step: PassThroughHttpStepConfig,
  req: PassThroughRequest,
  state: Record<string, unknown>,
): Promise<PassThroughAnswer> {
  const headers: Record<string, string> = {};
  for (const h of step.allowedHeaders) {
    const v = req.headers[h];
    if (v !== undefined) headers[h] = v;
  }
  Object.assign(headers, step.headersToAdd);
  const doc: Record<string, unknown> = {};
  if (step.passThroughBody) doc['body'] = req.body ?? '';
  if (step.passThroughState) doc['state'] = state;
  if (step.passThroughFilterMetadata) doc['filterMetadata'] = req.filterMetadata ?? {};
  if (step.config) doc['config'] = step.config;
  const hasBody = Object.keys(doc).length > 0;
  if (hasBody) headers['content-type'] = 'application/json';
  let res: Response;
  let text: string;
  try {
    res = await fetch(step.url, {
      method: 'POST',
      headers,
      ...(hasBody ? { body: JSON.stringify(doc) } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(step.timeoutMs),
    });
    text = await res.text();
  } catch (err) {
    return { error: err instanceof Error ? `${err.name}: ${err.message}`.slice(0, 200) : 'error' };
  }
  if (res.status >= 500) return { error: `the passthrough server answered ${res.status}` };
  if (res.status !== 200) {
    const out: Record<string, string> = {};
    for (const h of step.allowedClientHeadersOnDenied) {
      const v = res.headers.get(h);
      if (v !== null) out[h] = v;
    }
    return { allow: false, status: res.status, headers: out, body: '' };
  }
  const set: Record<string, string> = {};
  const append: Record<string, string> = {};
  for (const h of step.allowedUpstreamHeaders) {
    const v = res.headers.get(h);
    if (v !== null) append[h] = v;
  }
  for (const h of step.allowedUpstreamHeadersToOverwrite) {
    const v = res.headers.get(h);
    if (v !== null) set[h] = v;
  }
  if (!step.readStateFromResponse) return { allow: true, set, append };
  try {
    const parsed = JSON.parse(text) as { state?: unknown };
    const s = parsed.state;
    if (s === undefined) return { allow: true, set, append };
    if (s === null || typeof s !== 'object' || Array.isArray(s)) return { error: 'the passthrough response state is not an object' };
    return { allow: true, set, append, state: s as Record<string, unknown> };
  } catch {
    return { error: 'the passthrough response is not JSON (readStateFromResponse)' };
  }
}

// ---- grpc

interface CheckClient extends grpc.Client {
  Check(
    req: object,
    meta: grpc.Metadata,
    options: grpc.CallOptions,
    cb: (err: grpc.ServiceError | null, res?: CheckResponseObject) => void,
  ): grpc.ClientUnaryCall;
}

interface HeaderOption {
  header?: { key?: string; value?: string; raw_value?: Buffer };
  append?: { value?: boolean } | boolean;
  append_action?: string;
}

interface CheckResponseObject {
  status?: { code?: number; message?: string };
  ok_response?: { headers?: HeaderOption[] };
  denied_response?: { status?: { code?: string | number }; headers?: HeaderOption[]; body?: string };
  dynamic_metadata?: { fields?: Record<string, unknown> };
}

const clients = new Map<string, CheckClient>();

function clientFor(address: string, tls: boolean): CheckClient {
  const key = tls ? `tls:${address}` : address;
  let c = clients.get(key);
  if (!c) {
    const pkg = loadEnvoyService('envoy/service/auth/v3/external_auth.proto');
    const Ctor = lookupService(pkg, 'envoy.service.auth.v3.Authorization');
    c = new Ctor(address, tls ? grpc.credentials.createSsl() : grpc.credentials.createInsecure()) as unknown as CheckClient;
    clients.set(key, c);
  }
  return c;
}

/** Closes the connections to servers no config names any more. */
export function closeUnusedPassThroughClients(inUse: ReadonlySet<string>): void {
  for (const [key, c] of clients)
    if (!inUse.has(key.replace(/^tls:/, ''))) {
      c.close();
      clients.delete(key);
    }
}

function headerValue(h: HeaderOption): [string, string] | undefined {
  const key = h.header?.key;
  if (!key) return undefined;
  const raw = h.header?.raw_value;
  const value = raw && raw.length ? raw.toString('latin1') : (h.header?.value ?? '');
  return [key.toLowerCase(), value];
}

const HTTP_STATUS: Record<string, number> = { Unauthorized: 401, Forbidden: 403, BadRequest: 400, TooManyRequests: 429 };

/** A JSON value as google.protobuf.Value (protobufjs's own well-known types: camelCase field names). */
function toValue(v: unknown): object {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'boolean') return { boolValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'string') return { stringValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toValue) } };
  return { structValue: toStruct(v as Record<string, unknown>) };
}

function toStruct(o: Record<string, unknown>): object {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)])) };
}

function fromValue(v: unknown): unknown {
  const x = (v ?? {}) as Record<string, unknown>;
  if ('stringValue' in x) return x['stringValue'];
  if ('numberValue' in x) return x['numberValue'];
  if ('boolValue' in x) return x['boolValue'];
  if ('structValue' in x) return fromStruct(x['structValue']);
  if ('listValue' in x) return ((x['listValue'] as { values?: unknown[] }).values ?? []).map(fromValue);
  return null;
}

function fromStruct(s: unknown): Record<string, unknown> {
  const fields = ((s ?? {}) as { fields?: Record<string, unknown> }).fields ?? {};
  return Object.fromEntries(Object.entries(fields).map(([k, v]) => [k, fromValue(v)]));
}

export function askGrpcPassThrough(
  step: PassThroughGrpcStepConfig,
  req: PassThroughRequest,
  state: Record<string, unknown>,
  contextExtensions: Readonly<Record<string, string>>,
): Promise<PassThroughAnswer> {
  const filterMetadata: Record<string, object> = {};
  // the request's own metadata as Envoy sent it, then Gloo's two namespaces
  for (const [ns, fields] of Object.entries(req.filterMetadata ?? {})) filterMetadata[ns] = toStruct(fields as Record<string, unknown>);
  filterMetadata['solo.auth.passthrough'] = toStruct(state);
  if (step.config) filterMetadata['solo.auth.passthrough.config'] = toStruct(step.config);
  const request = {
    attributes: {
      request: {
        http: { method: req.method, path: req.path, host: req.host, scheme: req.scheme, headers: req.headers, body: req.body ?? '' },
      },
      context_extensions: contextExtensions,
      metadata_context: { filter_metadata: filterMetadata },
    },
  };
  return checkWithRetries(step, request);
}

/** A call that got no answer (the server down, reset, too slow) is retried as retryPolicy says; a denial is an answer. */
async function checkWithRetries(step: PassThroughGrpcStepConfig, request: object): Promise<PassThroughAnswer> {
  const retry = step.retry;
  for (let attempt = 0; ; attempt++) {
    const answer = await checkOnce(step, request);
    if (!('error' in answer) || retry === undefined || attempt >= retry.numRetries) return answer;
    // fully jittered exponential backoff, as Envoy's
    const ceiling = Math.min(retry.maxIntervalMs, retry.baseIntervalMs * 2 ** attempt);
    await new Promise((r) => setTimeout(r, Math.random() * ceiling));
  }
}

function checkOnce(step: PassThroughGrpcStepConfig, request: object): Promise<PassThroughAnswer> {
  return new Promise((resolve) => {
    clientFor(step.address, step.tls).Check(request, new grpc.Metadata(), { deadline: Date.now() + step.timeoutMs }, (err, res) => {
      if (err || !res)
        return resolve({ error: err ? `gRPC ${grpc.status[err.code] ?? err.code}: ${err.details}`.slice(0, 200) : 'no response' });
      const code = res.status?.code ?? 0;
      if (code === 0) {
        const set: Record<string, string> = {};
        const append: Record<string, string> = {};
        for (const h of res.ok_response?.headers ?? []) {
          const kv = headerValue(h);
          if (!kv) continue;
          const appendFlag = typeof h.append === 'boolean' ? h.append : h.append?.value;
          (appendFlag ? append : set)[kv[0]] = kv[1];
        }
        const meta = res.dynamic_metadata?.fields?.['solo.auth.passthrough'];
        const next = meta ? (fromValue(meta) as Record<string, unknown>) : undefined;
        return resolve({ allow: true, set, append, ...(next && typeof next === 'object' ? { state: next } : {}) });
      }
      const d = res.denied_response;
      const sc = d?.status?.code;
      const status = typeof sc === 'number' && sc >= 400 ? sc : typeof sc === 'string' ? (HTTP_STATUS[sc] ?? 403) : 403;
      const headers: Record<string, string> = {};
      for (const h of d?.headers ?? []) {
        const kv = headerValue(h);
        if (kv) headers[kv[0]] = kv[1];
      }
      resolve({ allow: false, status, headers, body: d?.body ?? '' });
    });
  });
}
