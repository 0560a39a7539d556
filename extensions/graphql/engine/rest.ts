// REST resolvers (the `rest` kind behind the resolver interface, resolver.ts): a RestResolverConfig
// compiled (once per config) into a request builder and a response shaper; each engine instantiates it with
// a pool of the upstream's connections. Calls within one GraphQL request are memoised by (upstream, method, URL, headers, body),
// so identical calls are made once even when fired concurrently by sibling fields or list items.

import { X509Certificate } from 'node:crypto';
import tls from 'node:tls';
import type { GraphQLFieldResolver } from 'graphql';
import type { ResolverUpstream, RestResolverConfig } from '../../../common/contract.js';
import type { Logger } from '../../../common/log.js';
import { CallError, UpstreamError } from './errors.js';
import {
  compileBodyPath,
  compileJson,
  compileSetter,
  compileString,
  type CompiledJson,
  type CompiledString,
  type Getter,
  type Placeholder,
  type TemplateContext,
} from './templates.js';
import type { CompiledResolver, RequestContext, ResolverFactory } from './resolver.js';
import type { CallSpec, UpstreamPool } from './upstream.js';

export type { RequestContext } from './resolver.js';

export const DEFAULT_TIMEOUT_MS = 1_000;

export interface CompiledRest {
  readonly resolverName: string;
  readonly method: string;
  readonly path: CompiledString;
  readonly query: readonly { name: string; value: CompiledString }[];
  readonly headers: readonly { name: string; value: CompiledString }[];
  readonly body: CompiledJson | undefined;
  readonly timeoutMs: number;
  readonly resultRoot: Getter | undefined;
  readonly setters: readonly { field: string; get: Getter }[];
  /** every request-side placeholder, for config checks (e.g. `$args` naming a real argument) */
  readonly placeholders: readonly Placeholder[];
}

const REQUEST_SOURCES = ['parent', 'args', 'headers'] as const;

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Throws (TemplateError or Error) with a message naming the resolver and the place of the problem. */
export function compileRest(resolverName: string, config: RestResolverConfig): CompiledRest {
  const where = `resolution "${resolverName}"`;
  if (!isRecord(config)) throw new Error(`${where}: restResolver must be an object`);
  const request: unknown = config.request ?? {};
  if (!isRecord(request)) throw new Error(`${where}: request must be an object`);
  const rawHeaders: unknown = request['headers'] ?? {};
  const rawQuery: unknown = request['queryParams'] ?? {};
  if (!isRecord(rawHeaders)) throw new Error(`${where}: request.headers must be a map of strings`);
  if (!isRecord(rawQuery)) throw new Error(`${where}: request.queryParams must be a map of strings`);

  const placeholders: Placeholder[] = [];
  let method = 'GET';
  let path: CompiledString | undefined;
  const headers: { name: string; value: CompiledString }[] = [];
  for (const [name, value] of Object.entries(rawHeaders)) {
    if (typeof value !== 'string') throw new Error(`${where}: request.headers["${name}"] must be a string`);
    const lname = name.toLowerCase();
    if (lname === ':method') {
      if (!/^[A-Za-z]+$/.test(value.trim())) throw new Error(`${where}: ":method" must be an HTTP method name, got "${value}"`);
      method = value.trim().toUpperCase();
    } else if (lname === ':path') {
      path = compileString(value, REQUEST_SOURCES, `${where} :path`);
      placeholders.push(...path.placeholders);
    } else if (lname === ':authority') {
      const c = compileString(value, REQUEST_SOURCES, `${where} :authority`);
      placeholders.push(...c.placeholders);
      headers.push({ name: 'host', value: c });
    } else if (lname.startsWith(':')) {
      // other pseudo-headers (:scheme) have no meaning for a call we make ourselves
      continue;
    } else {
      if (!/^[a-z0-9!#$%&'*+\-.^_`|~]+$/.test(lname)) throw new Error(`${where}: "${name}" is not a valid header name`);
      if (lname === 'content-length' || lname === 'connection' || lname === 'transfer-encoding') continue;
      const c = compileString(value, REQUEST_SOURCES, `${where} header ${lname}`);
      placeholders.push(...c.placeholders);
      headers.push({ name: lname, value: c });
    }
  }
  if (path === undefined) throw new Error(`${where}: request.headers has no ":path"`);
  if (!path.raw.startsWith('/')) throw new Error(`${where}: ":path" must start with "/", got "${path.raw}"`);
  headers.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));

  const query: { name: string; value: CompiledString }[] = [];
  for (const [name, value] of Object.entries(rawQuery)) {
    if (typeof value !== 'string') throw new Error(`${where}: request.queryParams["${name}"] must be a string`);
    const c = compileString(value, REQUEST_SOURCES, `${where} query parameter ${name}`);
    placeholders.push(...c.placeholders);
    query.push({ name, value: c });
  }

  let body: CompiledJson | undefined;
  if (request['body'] !== undefined && request['body'] !== null) {
    body = compileJson(request['body'], REQUEST_SOURCES, `${where} body`);
    placeholders.push(...body.placeholders);
  }

  const response: unknown = config.response ?? {};
  if (!isRecord(response)) throw new Error(`${where}: response must be an object`);
  let resultRoot: Getter | undefined;
  const rr = response['resultRoot'];
  if (rr !== undefined && rr !== null && rr !== '') {
    if (typeof rr !== 'string') throw new Error(`${where}: response.resultRoot must be a string`);
    resultRoot = compileBodyPath(rr, `${where} response.resultRoot`);
  }
  const setters: { field: string; get: Getter }[] = [];
  const rawSetters: unknown = response['setters'] ?? {};
  if (!isRecord(rawSetters)) throw new Error(`${where}: response.setters must be a map of strings`);
  for (const [field, value] of Object.entries(rawSetters)) {
    if (typeof value !== 'string') throw new Error(`${where}: response.setters["${field}"] must be a string`);
    setters.push({ field, get: compileSetter(value, `${where} response.setters.${field}`) });
  }

  const t = config.timeoutMs;
  const timeoutMs = typeof t === 'number' && Number.isFinite(t) && t > 0 ? Math.min(t, 2_147_000_000) : DEFAULT_TIMEOUT_MS;

  return { resolverName, method, path, query, headers, body, timeoutMs, resultRoot, setters, placeholders };
}

// Substituted values in `:path` are encoded as path segments; query parameter names and values are encoded whole.
const encodePathValue = encodeURIComponent;
const encodeQueryValue = encodeURIComponent;

/** One field resolution's call, rendered: enough to tell identical calls apart (its key) without building
 * the request (a deduplicated resolution never does). */
export interface RenderedCall {
  /** method, path, headers and body: identical calls of one request share it */
  key: string;
  path: string;
  /** rendered values of c.headers, in order; '' for a header left out */
  headerValues: string[];
  body: string | undefined;
}

export function renderCall(c: CompiledRest, ctx: TemplateContext): RenderedCall {
  let path = c.path.constant ? c.path.raw : c.path.render(ctx, encodePathValue);
  if (c.query.length > 0) {
    let qs = '';
    for (const q of c.query) {
      let v: string;
      if (q.value.whole !== undefined) {
        // a parameter that is just one missing value (an optional argument not given) is left out
        const raw = q.value.whole.get(ctx);
        if (raw === undefined || raw === null) continue;
        v = q.value.render(ctx);
      } else {
        v = q.value.render(ctx);
      }
      qs += (qs.length === 0 ? '' : '&') + encodeQueryValue(q.name) + '=' + encodeQueryValue(v);
    }
    if (qs.length > 0) path += (path.includes('?') ? '&' : '?') + qs;
  }
  let key = c.method + ' ' + path;
  const headerValues = new Array<string>(c.headers.length);
  for (let i = 0; i < c.headers.length; i++) {
    const h = c.headers[i]!;
    const v = h.value.constant ? h.value.raw : h.value.render(ctx);
    headerValues[i] = v;
    // a header that renders empty (e.g. {$headers.authorization} the client did not send) is left out
    if (v !== '') key += '\n' + h.name + ':' + v;
  }
  let body: string | undefined;
  if (c.body !== undefined) {
    body = JSON.stringify(c.body.value(ctx));
    key += '\n\n' + body;
  }
  return { key, path, headerValues, body };
}

/** The request of a rendered call. */
export function callSpec(c: CompiledRest, call: RenderedCall): CallSpec {
  const headers: Record<string, string> = {};
  for (let i = 0; i < c.headers.length; i++) {
    const v = call.headerValues[i]!;
    if (v !== '') headers[c.headers[i]!.name] = v;
  }
  if (headers['accept'] === undefined) headers['accept'] = 'application/json';
  if (call.body !== undefined) {
    if (headers['content-type'] === undefined) headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(call.body));
  }
  return { method: c.method, path: call.path, headers, body: call.body, timeoutMs: c.timeoutMs };
}

/** Builds the concrete call for one field resolution. Returns the spec and its memo key. */
export function buildCall(c: CompiledRest, ctx: TemplateContext): { spec: CallSpec; key: string } {
  const call = renderCall(c, ctx);
  return { spec: callSpec(c, call), key: call.key };
}

/** Applies resultRoot and setters to a backend body. */
export function shapeResult(c: CompiledRest, body: unknown): unknown {
  const rooted = c.resultRoot === undefined ? body : c.resultRoot({ body });
  if (c.setters.length === 0) return rooted;
  if (Array.isArray(rooted)) return rooted.map((el) => applySetters(c, el));
  return applySetters(c, rooted);
}

function applySetters(c: CompiledRest, element: unknown): unknown {
  if (element === null || element === undefined) return element;
  // setters override (or add to) the element's own attributes; unmapped attributes stay readable
  const out: Record<string, unknown> = isRecord(element) ? { ...element } : {};
  const ctx = { body: element };
  for (const s of c.setters) out[s.field] = s.get(ctx);
  return out;
}

export function toUpstreamError(c: CompiledRest, err: unknown): UpstreamError {
  if (err instanceof CallError) {
    const extensions = {
      code: err.code,
      resolver: c.resolverName,
      ...(err.status !== undefined && err.code === 'UPSTREAM_HTTP_ERROR' ? { http: { status: err.status } } : {}),
    };
    const message =
      err.code === 'UPSTREAM_HTTP_ERROR'
        ? `${c.resolverName}: upstream answered HTTP ${err.status}`
        : err.code === 'UPSTREAM_TIMEOUT'
          ? `${c.resolverName}: upstream did not answer within ${c.timeoutMs} ms`
          : err.code === 'UPSTREAM_BAD_RESPONSE'
            ? `${c.resolverName}: upstream answered with an unusable body`
            : `${c.resolverName}: upstream unavailable`;
    return new UpstreamError(message, extensions, { cause: err });
  }
  return new UpstreamError(
    `${c.resolverName}: internal error`,
    { code: 'INTERNAL_SERVER_ERROR', resolver: c.resolverName },
    { cause: err },
  );
}

/** The graphql-js resolver for a field bound with @resolve to this REST resolution. */
export function makeRestResolver(c: CompiledRest, pool: UpstreamPool, log: Logger): GraphQLFieldResolver<unknown, RequestContext> {
  return (parent, args, context) => {
    let call: RenderedCall;
    try {
      call = renderCall(c, { parent, args, headers: context.headers });
    } catch (err) {
      throw toUpstreamError(c, err);
    }
    // the pool's short id, not its key (which holds the TLS material): the map hashes this per resolution
    const memoKey = pool.id + '\n' + call.key;
    let pending = context.memo.get(memoKey);
    if (pending === undefined) {
      context.calls++;
      const spec = callSpec(c, call);
      if (context.traceHeaders) Object.assign(spec.headers, context.traceHeaders);
      pending = pool.call(spec);
      context.memo.set(memoKey, pending);
    } else {
      context.deduplicated++;
    }
    return pending.then(
      (body) => shapeResult(c, body),
      (err: unknown) => {
        const e = toUpstreamError(c, err);
        if (log.enabled('debug')) {
          log.debug('resolver call failed', {
            resolver: c.resolverName,
            upstream: pool.name,
            method: c.method,
            path: call.path,
            code: e.extensions.code,
            reason: err instanceof Error ? err.message : String(err),
          });
        }
        throw e;
      },
    );
  };
}

/** Throws when the upstream's TLS material is unusable (the shared schema checked its shape already). */
export function checkUpstreamTls(resolverName: string, u: ResolverUpstream): void {
  const t = u.tls;
  if (t === undefined) return;
  try {
    // createSecureContext ignores a `ca` without any PEM block; check that one ourselves
    if (t.rootCa !== undefined) {
      const blocks = t.rootCa.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
      if (blocks.length === 0) throw new Error('rootCa holds no PEM certificate');
      for (const b of blocks) new X509Certificate(b);
    }
    tls.createSecureContext({
      ...(t.rootCa !== undefined ? { ca: t.rootCa } : {}),
      ...(t.certChain !== undefined ? { cert: t.certChain } : {}),
      ...(t.privateKey !== undefined ? { key: t.privateKey } : {}),
    });
  } catch (err) {
    throw new Error(
      `resolution "${resolverName}" upstream ${u.name}: unusable TLS material (${err instanceof Error ? err.message : String(err)})`,
      { cause: err },
    );
  }
}

/** The `rest` kind: compiled once per config; each engine acquires a pool of the upstream's connections. */
export interface CompiledRestResolver extends CompiledResolver {
  readonly kind: 'rest';
  readonly rest: CompiledRest;
  readonly upstream: ResolverUpstream;
}

export const restResolver: ResolverFactory<RestResolverConfig> = (name, config): CompiledRestResolver => {
  checkUpstreamTls(name, config.upstream);
  const rest = compileRest(name, config);
  return {
    kind: 'rest',
    name,
    rest,
    upstream: config.upstream,
    placeholders: rest.placeholders,
    instantiate({ upstreamPools, log }) {
      const pool = upstreamPools.acquire(config.upstream);
      return { resolve: makeRestResolver(rest, pool, log), release: () => upstreamPools.release(pool) };
    },
  };
};
