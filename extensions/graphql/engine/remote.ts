// The remote executor (Gloo's executor.remote): the GraphQL request, once parsed (and its persisted query
// looked up), is POSTed as JSON to a GraphQL server upstream and its answer relayed as it is: status, body,
// content-type. Headers and query parameters sent upstream may carry `{$headers.x}` of the client request.
// Connections come from the same keep-alive pools as REST resolvers (upstream.ts).

import type { RemoteExecutorConfig } from '../../../common/graphql-config.js';
import type { GraphQLParams } from './http.js';
import { compileString, type CompiledString } from './templates.js';
import type { UpstreamPool, UpstreamPools } from './upstream.js';

export const DEFAULT_REMOTE_PATH = '/graphql';
/** Largest answer relayed (the whole body is held before Envoy gets it). */
const MAX_REMOTE_RESPONSE_BYTES = 32 * 1024 * 1024;
/** Hop-by-hop and framing headers are never forwarded as configured. */
const DROPPED = new Set(['content-length', 'connection', 'transfer-encoding', 'keep-alive', 'upgrade', 'host']);

export interface RemoteResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface RemoteExecutor {
  forward(
    params: GraphQLParams,
    headers: Readonly<Record<string, string>>,
    trace?: Readonly<Record<string, string>>,
  ): Promise<RemoteResponse>;
  release(): void;
}

interface CompiledRemote {
  path: CompiledString;
  headers: { name: string; value: CompiledString }[];
  query: { name: string; value: CompiledString }[];
  timeoutMs: number;
}

/** Throws an Error naming the problem (a bad template, header name or path). */
export function compileRemote(config: RemoteExecutorConfig): CompiledRemote {
  const where = 'remote executor';
  let path = compileString(DEFAULT_REMOTE_PATH, ['headers'], `${where} :path`);
  const headers: { name: string; value: CompiledString }[] = [];
  for (const [name, value] of Object.entries(config.headers)) {
    const lname = name.toLowerCase();
    if (lname === ':path') {
      if (!value.startsWith('/')) throw new Error(`${where}: ":path" must start with "/", got "${value}"`);
      path = compileString(value, ['headers'], `${where} :path`);
      continue;
    }
    if (lname.startsWith(':')) throw new Error(`${where}: "${name}": only the :path pseudo-header can be set (the method is POST)`);
    if (!/^[a-z0-9!#$%&'*+\-.^_`|~]+$/.test(lname)) throw new Error(`${where}: "${name}" is not a valid header name`);
    if (DROPPED.has(lname)) continue;
    headers.push({ name: lname, value: compileString(value, ['headers'], `${where} header ${lname}`) });
  }
  const query = Object.entries(config.queryParams).map(([name, value]) => ({
    name,
    value: compileString(value, ['headers'], `${where} query parameter ${name}`),
  }));
  return { path, headers, query, timeoutMs: config.timeoutMs };
}

function errorBody(message: string, code: string): string {
  return JSON.stringify({ errors: [{ message, extensions: { code } }] });
}

export function createRemoteExecutor(config: RemoteExecutorConfig, pools: UpstreamPools): RemoteExecutor {
  const compiled = compileRemote(config);
  const pool: UpstreamPool = pools.acquire(config.upstream);
  return {
    forward: (params, clientHeaders, trace) => forward(compiled, pool, params, clientHeaders, trace),
    release: () => pools.release(pool),
  };
}

async function forward(
  c: CompiledRemote,
  pool: UpstreamPool,
  params: GraphQLParams,
  clientHeaders: Readonly<Record<string, string>>,
  trace: Readonly<Record<string, string>> | undefined,
): Promise<RemoteResponse> {
  const json = { 'content-type': 'application/json; charset=utf-8' };
  if (pool.endpointCount === 0)
    return { status: 503, headers: json, body: errorBody('The GraphQL server has no endpoints.', 'UPSTREAM_UNAVAILABLE') };
  const ctx = { headers: clientHeaders };
  let path = c.path.constant ? c.path.raw : c.path.render(ctx, encodeURIComponent);
  let qs = '';
  for (const q of c.query) {
    const v = q.value.constant ? q.value.raw : q.value.render(ctx);
    if (v === '') continue; // a header the client did not send
    qs += (qs === '' ? '' : '&') + encodeURIComponent(q.name) + '=' + encodeURIComponent(v);
  }
  if (qs !== '') path += (path.includes('?') ? '&' : '?') + qs;
  const ep = pool.pick();
  const headers: Record<string, string> = {
    host: ep.hostHeader,
    'content-type': 'application/json',
    // the client's media type choice goes upstream, so the server's status rules apply as negotiated
    accept: clientHeaders['accept'] ?? 'application/graphql-response+json, application/json',
  };
  for (const h of c.headers) {
    const v = h.value.constant ? h.value.raw : h.value.render(ctx);
    if (v !== '') headers[h.name] = v;
  }
  if (trace) Object.assign(headers, trace);
  const body = JSON.stringify({
    query: params.query,
    ...(params.operationName !== undefined ? { operationName: params.operationName } : {}),
    ...(params.variables !== undefined ? { variables: params.variables } : {}),
    ...(params.extensions !== undefined ? { extensions: params.extensions } : {}),
  });
  try {
    const res = await ep.pool.request({
      method: 'POST',
      path,
      headers,
      body,
      headersTimeout: c.timeoutMs,
      bodyTimeout: c.timeoutMs,
      signal: AbortSignal.timeout(c.timeoutMs),
    });
    let size = 0;
    const chunks: Buffer[] = [];
    for await (const chunk of res.body as AsyncIterable<Buffer>) {
      size += chunk.length;
      if (size > MAX_REMOTE_RESPONSE_BYTES) {
        res.body.destroy();
        return {
          status: 502,
          headers: json,
          body: errorBody('The GraphQL server answered with a body too large.', 'UPSTREAM_BAD_RESPONSE'),
        };
      }
      chunks.push(chunk);
    }
    const type = res.headers['content-type'];
    return {
      status: res.statusCode,
      headers: {
        'content-type': typeof type === 'string' ? type : Array.isArray(type) ? (type[0] ?? 'application/json') : 'application/json',
      },
      body: Buffer.concat(chunks).toString('utf8'),
    };
  } catch (err) {
    const timedOut = err instanceof Error && (err.name === 'TimeoutError' || /timeout/i.test((err as { code?: string }).code ?? err.name));
    return timedOut
      ? { status: 504, headers: json, body: errorBody(`The GraphQL server did not answer within ${c.timeoutMs} ms.`, 'UPSTREAM_TIMEOUT') }
      : { status: 502, headers: json, body: errorBody('The GraphQL server is unavailable.', 'UPSTREAM_UNAVAILABLE') };
  }
}
