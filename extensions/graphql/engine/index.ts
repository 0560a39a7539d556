// The GraphQL execution engine the ext_proc service calls: one Engine per (API, config version), built
// from the controller's GraphQLApiConfig. handle() takes a buffered HTTP request and returns the HTTP
// response to send back (Envoy immediate_response). docs/graphql.md describes the behaviour.

import {
  GraphQLError,
  execute,
  getOperationAST,
  parse,
  specifiedRules,
  validate,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type ValidationRule,
} from 'graphql';
import { compileQuery, isCompiledQuery, type CompiledQuery } from 'graphql-jit';
import type { GraphQLApiConfig } from '../../../common/contract.js';
import type { Logger } from '../../../common/log.js';
import {
  APPLICATION_JSON,
  CONTENT_TYPE,
  GRAPHQL_RESPONSE_JSON,
  isRejection,
  negotiate,
  paramsFromGet,
  paramsFromPost,
  type GraphQLParams,
  type MediaType,
} from './http.js';
import { defaultGrpcChannels, type GrpcChannels } from './grpc-channels.js';
import { Lru } from './lru.js';
import { DEFAULT_PERSISTED_QUERY_CACHE_SIZE, PersistedQueries, hashOnlyParams } from './persisted.js';
import { createRemoteExecutor, type RemoteExecutor } from './remote.js';
import { checkStitched, stitchedSchema } from './stitch.js';
import type { RequestContext, ResolverInstance } from './resolver.js';
import { DEFAULT_MAX_ALIASES, DEFAULT_MAX_FIELDS, maxDepthRule, NoIntrospectionRule, queryLimitsRule } from './rules.js';
import { prepareApi } from './schema.js';
import { defaultUpstreamPools, type UpstreamPools } from './upstream.js';

export { UpstreamPools, defaultUpstreamPools } from './upstream.js';
export { GrpcChannels, defaultGrpcChannels } from './grpc-channels.js';
export { UpstreamError, type UpstreamErrorCode } from './errors.js';
export { negotiate, type MediaType } from './http.js';
export { DEFAULT_MAX_ALIASES, DEFAULT_MAX_FIELDS } from './rules.js';
export { DEFAULT_PERSISTED_QUERY_CACHE_SIZE, sha256Hex } from './persisted.js';

export interface GraphQLHttpRequest {
  method: string;
  /** with query string */
  path: string;
  /** lowercased names */
  headers: Record<string, string>;
  body: Buffer;
  /** the trace context every backend call carries (the graphql service's span), when the request is traced */
  traceHeaders?: Readonly<Record<string, string>>;
}

export interface GraphQLHttpResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export interface EngineStats {
  requests: number;
  /** parsed+validated documents served from the cache */
  documentCacheHits: number;
  /** documents parsed and validated (cache misses that were valid or not) */
  validations: number;
  /** invalid documents answered from the error cache */
  errorCacheHits: number;
  /** backend calls made (after per-request dedup) */
  upstreamCalls: number;
  /** backend calls saved by per-request dedup */
  upstreamCallsDeduplicated: number;
  /** operations compiled by graphql-jit */
  compilations: number;
  /** operations graphql-jit could not compile (they run on graphql-js) */
  compileFailures: number;
  /** requests executed by graphql-jit compiled code (the others by graphql-js execute) */
  jitExecutions: number;
  documentCacheSize: number;
  errorCacheSize: number;
}

export interface Engine {
  readonly name: string;
  readonly version: string;
  handle(req: GraphQLHttpRequest): Promise<GraphQLHttpResponse>;
  /** counters, for metrics and tests */
  stats(): EngineStats;
  /** Releases the engine's upstream pools (kept warm for a successor using the same endpoints; calls in flight
   * complete within the pools' linger time) and empties its caches. */
  close(): void;
}

export interface EngineOptions {
  logger?: Logger;
  /** parsed+validated documents kept (LRU); 0 disables caching. Default 1000. */
  documentCacheSize?: number;
  /** Default 1 MiB. Larger POST bodies get 413. */
  maxBodyBytes?: number;
  /** Aliased field selections an operation may have (fragments counted where spread); 0 = no limit. Default 50.
   * The config's `maxAliases` (set per API) wins over this. */
  maxAliases?: number;
  /** Field selections an operation may have (fragments counted where spread); 0 = no limit. Default 1000.
   * The config's `maxFields` (set per API) wins over this. */
  maxFields?: number;
  /** Pool registry shared across engines; default: a process-wide one. */
  upstreamPools?: UpstreamPools;
  /** gRPC channel registry shared across engines; default: a process-wide one. */
  grpcChannels?: GrpcChannels;
  /** Executions of a cached operation on graphql-js before it is compiled with graphql-jit: 0 compiles on
   * first use; default 1 (a one-off query never pays for a compilation); a negative value never compiles. */
  compileAfter?: number;
}

export const DEFAULT_DOCUMENT_CACHE_SIZE = 1000;
export const DEFAULT_MAX_BODY_BYTES = 1024 * 1024;
export const DEFAULT_COMPILE_AFTER = 1;
/** Total query text held by the document cache (its ASTs are roughly ten times bigger). */
const DOCUMENT_CACHE_MAX_CHARS = 8 * 1024 * 1024;
/** Parser token limit: a guard against pathological documents before validation even starts. */
const MAX_TOKENS = 20_000;
/** Bracket nesting ({ [ () a document may have: graphql-js parses recursively, so a deeper document would
 * be refused only by a stack overflow. Far above any real operation (and above maxDepth settings). */
const MAX_NESTING = 256;
const BLOCK_QUOTE = '"""';

/** The deepest bracket nesting of a document, outside strings and comments; one pass, no allocation. */
export function nestingOf(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x7b || c === 0x5b || c === 0x28) {
      if (++depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d || c === 0x29) {
      if (depth > 0) depth--;
    } else if (c === 0x23) {
      // a comment runs to the end of the line
      while (i + 1 < text.length && text.charCodeAt(i + 1) !== 0x0a && text.charCodeAt(i + 1) !== 0x0d) i++;
    } else if (c === 0x22) {
      if (text.startsWith(BLOCK_QUOTE, i)) {
        // a block string ends at the next unescaped """ (escaped as \""")
        let end = text.indexOf(BLOCK_QUOTE, i + 3);
        while (end > 0 && text.charCodeAt(end - 1) === 0x5c) end = text.indexOf(BLOCK_QUOTE, end + 3);
        i = end < 0 ? text.length : end + 2;
      } else {
        // a string ends at the next unescaped quote or at the end of the line (then the parser refuses it)
        i++;
        while (i < text.length && text.charCodeAt(i) !== 0x22 && text.charCodeAt(i) !== 0x0a) {
          if (text.charCodeAt(i) === 0x5c) i++;
          i++;
        }
      }
    }
  }
  return max;
}

/** Config-time problems, as the engine sees them (an empty list means createEngine will accept the config). */
export function checkApiConfig(config: GraphQLApiConfig): string[] {
  const problems = prepareApi(config).problems;
  return problems.length === 0 && config.stitched !== undefined ? checkStitched(config) : problems;
}

const silentLogger: Logger = {
  component: 'graphql-engine',
  level: 'error',
  enabled: () => false,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  child: () => silentLogger,
};

/** How one operation of a cached document executes: on graphql-js until it has been used `compileAfter`
 * times, then with its graphql-jit compiled query (or on graphql-js for good when compiling failed). */
interface OperationPlan {
  uses: number;
  /** undefined: not compiled (yet); null: graphql-jit refused it */
  compiled: CompiledQuery | null | undefined;
}

type CachedDocument =
  | { document: DocumentNode; errors?: undefined; operations: Map<OperationDefinitionNode, OperationPlan> }
  | { document?: undefined; errors: readonly GraphQLError[] };

export function createEngine(config: GraphQLApiConfig, options: EngineOptions = {}): Engine {
  const prepared = prepareApi(config);
  const label = `GraphQL API "${String(config?.name)}" (version ${String(config?.version)})`;
  if (prepared.problems.length > 0 || prepared.schema === undefined) {
    const problems = prepared.problems.length > 0 ? prepared.problems : ['the schema could not be built'];
    throw new Error(`${label} is unusable: ${problems.join('; ')}`);
  }
  const log = options.logger ?? silentLogger;
  const registry = options.upstreamPools ?? defaultUpstreamPools;
  const instances: ResolverInstance[] = [];
  const instanceFor = new Map<string, ResolverInstance>();
  let remote: RemoteExecutor | undefined;
  let schema: GraphQLSchema = prepared.schema;
  const env = { upstreamPools: registry, grpcChannels: options.grpcChannels ?? defaultGrpcChannels, log };
  try {
    for (const b of prepared.bindings) {
      const resolver = prepared.resolvers.get(b.resolution);
      if (resolver === undefined) continue; // not reachable: reported as a problem
      let instance = instanceFor.get(b.resolution);
      if (instance === undefined) {
        instance = resolver.instantiate(env);
        instances.push(instance);
        instanceFor.set(b.resolution, instance);
      }
      b.field.resolve = instance.resolve as typeof b.field.resolve;
    }
    if (config.stitched !== undefined) schema = stitchedSchema(config, env, instances);
    if (config.remote !== undefined) {
      remote = createRemoteExecutor(config.remote, registry);
      instances.push({ resolve: () => undefined, release: remote.release });
    }
  } catch (err) {
    for (const i of instances) i.release();
    throw new Error(`${label} is unusable: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const rules: ValidationRule[] = [...specifiedRules];
  if (config.enableIntrospection !== true) rules.push(NoIntrospectionRule);
  if (typeof config.maxDepth === 'number' && config.maxDepth > 0) rules.push(maxDepthRule(config.maxDepth));

  // the API's own limits (GraphQLApi executor.local.options) win over the service-wide defaults
  const limits = {
    ...options,
    ...(config.maxAliases !== undefined ? { maxAliases: config.maxAliases } : {}),
    ...(config.maxFields !== undefined ? { maxFields: config.maxFields } : {}),
  };
  return new GraphQLEngine(String(config.name), String(config.version), schema, rules, instances, log, limits, remote, {
    cacheSize: config.persistedQueryCacheSize,
    allowedHashes: config.allowedQueryHashes,
  });
}

class GraphQLEngine implements Engine {
  private readonly documents: Lru<CachedDocument>;
  private readonly failures: Lru<CachedDocument>;
  private readonly maxBodyBytes: number;
  /** size limits, checked before the other rules: a hostile document costs one walk, not a full validation */
  private readonly limitRules: readonly ValidationRule[];
  private closed = false;
  private readonly compileAfter: number;
  private readonly persisted: PersistedQueries;
  /** an allow-list is set: every request goes through `persisted`, not only those with extensions */
  private readonly allowList: boolean;
  private readonly counters = {
    requests: 0,
    documentCacheHits: 0,
    validations: 0,
    errorCacheHits: 0,
    upstreamCalls: 0,
    upstreamCallsDeduplicated: 0,
    compilations: 0,
    compileFailures: 0,
    jitExecutions: 0,
  };

  constructor(
    readonly name: string,
    readonly version: string,
    private readonly schema: GraphQLSchema,
    private readonly rules: readonly ValidationRule[],
    private readonly resolvers: readonly ResolverInstance[],
    private readonly log: Logger,
    options: EngineOptions,
    /** set: requests are forwarded to a GraphQL server instead of executed here */
    private readonly remote: RemoteExecutor | undefined,
    persistence: { cacheSize: number | undefined; allowedHashes: readonly string[] | undefined },
  ) {
    this.persisted = new PersistedQueries(persistence.cacheSize ?? DEFAULT_PERSISTED_QUERY_CACHE_SIZE, persistence.allowedHashes);
    this.allowList = persistence.allowedHashes !== undefined;
    const size = options.documentCacheSize ?? DEFAULT_DOCUMENT_CACHE_SIZE;
    const entries = Number.isFinite(size) && size > 0 ? Math.floor(size) : 0;
    this.documents = new Lru(entries, DOCUMENT_CACHE_MAX_CHARS);
    // invalid documents: a smaller cache, so a client repeating a bad query costs a map lookup
    this.failures = new Lru(entries === 0 ? 0 : Math.max(16, Math.floor(entries / 10)), DOCUMENT_CACHE_MAX_CHARS / 8);
    const max = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES;
    this.maxBodyBytes = Number.isFinite(max) && max > 0 ? max : DEFAULT_MAX_BODY_BYTES;
    const limit = (v: number | undefined, d: number): number => (v === undefined || !Number.isFinite(v) || v < 0 ? d : Math.floor(v));
    const maxAliases = limit(options.maxAliases, DEFAULT_MAX_ALIASES);
    const maxFields = limit(options.maxFields, DEFAULT_MAX_FIELDS);
    this.limitRules = maxAliases > 0 || maxFields > 0 ? [queryLimitsRule({ maxAliases, maxFields })] : [];
    const after = options.compileAfter ?? DEFAULT_COMPILE_AFTER;
    this.compileAfter = after < 0 ? Number.POSITIVE_INFINITY : Number.isFinite(after) ? Math.floor(after) : DEFAULT_COMPILE_AFTER;
  }

  stats(): EngineStats {
    return { ...this.counters, documentCacheSize: this.documents.size, errorCacheSize: this.failures.size };
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const r of this.resolvers) r.release();
    this.documents.clear();
    this.failures.clear();
  }

  async handle(req: GraphQLHttpRequest): Promise<GraphQLHttpResponse> {
    this.counters.requests++;
    try {
      return await this.handleInner(req);
    } catch (err) {
      this.log.error('GraphQL request failed unexpectedly', { api: this.name, version: this.version, err });
      return reply(500, APPLICATION_JSON, { errors: [{ message: 'Internal server error' }] });
    }
  }

  private getDocument(query: string): CachedDocument {
    const hit = this.documents.get(query);
    if (hit !== undefined) {
      this.counters.documentCacheHits++;
      return hit;
    }
    const failed = this.failures.get(query);
    if (failed !== undefined) {
      this.counters.errorCacheHits++;
      return failed;
    }
    this.counters.validations++;
    const nesting = nestingOf(query);
    if (nesting > MAX_NESTING) {
      const entry = {
        errors: [new GraphQLError(`Syntax Error: the document nests ${nesting} levels deep, over the limit of ${MAX_NESTING}.`)],
      };
      this.failures.set(query, entry);
      return entry;
    }
    let document: DocumentNode;
    try {
      document = parse(query, { maxTokens: MAX_TOKENS });
    } catch (err) {
      const e = err instanceof GraphQLError ? err : new GraphQLError(`Syntax Error: ${err instanceof Error ? err.message : String(err)}`);
      const entry = { errors: [e] };
      this.failures.set(query, entry);
      return entry;
    }
    let errors = this.limitRules.length > 0 ? validate(this.schema, document, this.limitRules) : [];
    if (errors.length === 0) errors = validate(this.schema, document, this.rules);
    if (errors.length > 0) {
      const entry = { errors };
      this.failures.set(query, entry);
      return entry;
    }
    const entry = { document, operations: new Map<OperationDefinitionNode, OperationPlan>() };
    this.documents.set(query, entry);
    return entry;
  }

  private async handleInner(req: GraphQLHttpRequest): Promise<GraphQLHttpResponse> {
    const method = req.method.toUpperCase();
    if (method !== 'GET' && method !== 'POST') {
      return reply(
        405,
        APPLICATION_JSON,
        { errors: [{ message: `Method ${req.method} is not allowed: use GET or POST.` }] },
        { allow: 'GET, POST' },
      );
    }
    const media = negotiate(req.headers['accept']);
    if (media === null) {
      return reply(406, APPLICATION_JSON, {
        errors: [{ message: 'Not Acceptable: accept application/graphql-response+json or application/json.' }],
      });
    }
    let params = method === 'GET' ? paramsFromGet(req.path) : paramsFromPost(req.headers['content-type'], req.body, this.maxBodyBytes);
    let hashOnly = false;
    if (isRejection(params)) {
      // an APQ request by hash alone has no query: read its parameters again (http.ts requires a query)
      const apq = params.missingQuery === true ? hashOnlyParams(method, req.path, req.body) : undefined;
      if (apq === undefined) return reply(params.status, media, { errors: [{ message: params.message }] }, params.headers);
      params = apq;
      hashOnly = true;
    }
    if (hashOnly || this.allowList || params.extensions !== undefined) {
      const refusal = this.persisted.apply(params, hashOnly);
      if (refusal !== undefined) {
        const error = { message: refusal.message, extensions: { code: refusal.code } };
        return refusal.status === null
          ? reply(media === GRAPHQL_RESPONSE_JSON ? 400 : 200, media, { errors: [error] })
          : reply(refusal.status, media, { errors: [error] });
      }
    }

    if (this.remote !== undefined) return this.forward(this.remote, method, params, req, media);

    const doc = this.getDocument(params.query);
    if (doc.errors !== undefined) return requestErrors(media, doc.errors);
    const document = doc.document;

    const operation = getOperationAST(document, params.operationName);
    let plan: OperationPlan | undefined;
    if (operation !== null && operation !== undefined) {
      if (operation.operation === 'mutation' && method === 'GET') {
        return reply(405, media, { errors: [{ message: 'Mutations are not allowed over GET: use POST.' }] }, { allow: 'POST' });
      }
      if (operation.operation === 'subscription') {
        return requestErrors(media, [new GraphQLError('Subscriptions are not supported by this API.', { nodes: operation })]);
      }
      // keyed by the operation node, so the plans of a document are bounded by its operations (an unknown
      // operationName finds no operation and runs on graphql-js, which reports it)
      plan = doc.operations.get(operation);
      if (plan === undefined) {
        plan = { uses: 0, compiled: undefined };
        doc.operations.set(operation, plan);
      }
    }
    return this.execute(document, plan, params, req, media);
  }

  /** Remote execution: the request goes to the GraphQL server, which validates it against its own schema. A GET
   * is parsed here so a mutation cannot reach the server through a GET (it is forwarded as a POST). */
  private async forward(
    remote: RemoteExecutor,
    method: string,
    params: GraphQLParams,
    req: GraphQLHttpRequest,
    media: MediaType,
  ): Promise<GraphQLHttpResponse> {
    if (method === 'GET') {
      let operation: OperationDefinitionNode | null | undefined;
      try {
        operation = getOperationAST(parse(params.query, { maxTokens: MAX_TOKENS }), params.operationName);
      } catch (err) {
        return requestErrors(media, [err instanceof GraphQLError ? err : new GraphQLError(String(err))]);
      }
      if (operation?.operation === 'mutation') {
        return reply(405, media, { errors: [{ message: 'Mutations are not allowed over GET: use POST.' }] }, { allow: 'POST' });
      }
    }
    this.counters.upstreamCalls++;
    return remote.forward(params, req.headers, req.traceHeaders);
  }

  /** The plan's compiled query, compiling it once the operation has been used often enough; null: use graphql-js. */
  private compiledFor(document: DocumentNode, plan: OperationPlan | undefined, operationName: string | undefined): CompiledQuery | null {
    if (plan === undefined) return null;
    if (plan.compiled !== undefined) return plan.compiled;
    if (plan.uses++ < this.compileAfter) return null;
    try {
      const compiled = compileQuery(this.schema, document, operationName, { disablingCapturingStackErrors: true });
      if (isCompiledQuery(compiled)) {
        this.counters.compilations++;
        plan.compiled = compiled;
        return compiled;
      }
      this.compileRefused(operationName, compiled.errors);
    } catch (err) {
      this.compileRefused(operationName, err);
    }
    plan.compiled = null;
    return null;
  }

  private compileRefused(operationName: string | undefined, reason: unknown): void {
    this.counters.compileFailures++;
    this.log.warn('graphql-jit cannot compile an operation; it runs on graphql-js', {
      api: this.name,
      operationName,
      reason: reason instanceof Error ? reason.message : JSON.stringify(reason),
    });
  }

  private executeOnGraphqlJs(
    document: DocumentNode,
    context: RequestContext,
    params: GraphQLParams,
  ): Promise<ExecutionResult> | ExecutionResult {
    return execute({
      schema: this.schema,
      document,
      contextValue: context,
      variableValues: params.variables,
      operationName: params.operationName,
    });
  }

  private async execute(
    document: DocumentNode,
    plan: OperationPlan | undefined,
    params: GraphQLParams,
    req: GraphQLHttpRequest,
    media: MediaType,
  ): Promise<GraphQLHttpResponse> {
    const context: RequestContext = { headers: req.headers, memo: new Map(), calls: 0, deduplicated: 0 };
    if (req.traceHeaders) context.traceHeaders = req.traceHeaders;
    const started = this.log.enabled('debug') ? process.hrtime.bigint() : 0n;
    const compiled = this.compiledFor(document, plan, params.operationName);
    let result: ExecutionResult;
    if (compiled !== null) {
      this.counters.jitExecutions++;
      result = await compiled.query(undefined, context, params.variables);
      // no data: nothing ran (the variables did not coerce); graphql-js words these errors as clients have
      // seen them so far (graphql-jit adds "Expected type ...;"), and runs the operation if it accepts them
      if (result.data === undefined) result = await this.executeOnGraphqlJs(document, context, params);
    } else {
      result = await this.executeOnGraphqlJs(document, context, params);
    }
    this.counters.upstreamCalls += context.calls;
    this.counters.upstreamCallsDeduplicated += context.deduplicated;
    if (result.data === undefined) {
      // nothing executed: variable coercion or operation selection failed
      return requestErrors(media, result.errors ?? []);
    }
    if (this.log.enabled('debug')) {
      this.log.debug('graphql request', {
        api: this.name,
        operationName: params.operationName,
        upstreamCalls: context.calls,
        errors: result.errors?.length ?? 0,
        micros: Number((process.hrtime.bigint() - started) / 1000n),
      });
    }
    // errors first when present, as graphql-js orders them (graphql-jit puts data first)
    result = result.errors !== undefined ? { errors: result.errors, data: result.data } : { data: result.data };
    // 200 also for partial results ({data, errors}); see docs/graphql.md for why not 294
    return { status: 200, headers: { 'content-type': CONTENT_TYPE[media] }, body: JSON.stringify(result) };
  }
}

/** Errors of a well-formed request that could not execute (parse, validation, coercion, operation selection):
 * application/json -> 200, application/graphql-response+json -> 400; never a `data` key. */
function requestErrors(media: MediaType, errors: readonly GraphQLError[]): GraphQLHttpResponse {
  return reply(media === GRAPHQL_RESPONSE_JSON ? 400 : 200, media, { errors });
}

function reply(status: number, media: MediaType, body: unknown, extraHeaders?: Record<string, string>): GraphQLHttpResponse {
  return { status, headers: { 'content-type': CONTENT_TYPE[media], ...extraHeaders }, body: JSON.stringify(body) };
}
