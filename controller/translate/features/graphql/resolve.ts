// Stage 1 for GraphQL APIs: GraphQLApi / GraphQLSchema -> the GraphQLApiConfig the graphql extension
// executes. Every problem that would otherwise be a 503 at request time is found here (Gloo #9643,
// #9595): SDL errors, @resolve names without a resolution, resolutions for missing fields, unknown or
// rejected upstreams, templates naming arguments the field does not have, mock values that do not fit
// the field, gRPC services, methods and message fields the descriptors do not have. What is sent is
// checked against the schema the graphql service applies (common/graphql-config.ts), so a config the
// service would refuse is a status reason here.
import { createHash } from 'node:crypto';
import { stitchSchemas } from '@graphql-tools/stitch';
import {
  GraphQLError,
  buildSchema,
  printSchema,
  isInterfaceType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  type GraphQLField,
  type GraphQLOutputType,
  type GraphQLSchema as Schema,
} from 'graphql';
import type protobuf from 'protobufjs';
import type { GraphQLApiConfig, MockResolverConfig, ResolverConfig } from '../../../../common/contract.js';
import {
  MAX_MOCK_DELAY_MS,
  checkGraphQLApiConfigShape,
  type GrpcResolverConfig,
  type RemoteExecutorConfig,
  type ResolverUpstream,
} from '../../../../common/graphql-config.js';
import { checkMessageJson, findGrpcMethod, loadDescriptorSet } from '../../../../common/grpc-descriptors.js';
import type { GraphQLApi, GraphQLSchema } from '../../../api/resources.js';
import type { GrpcResolver, MockResolver, RemoteExecutor, Resolution, ResourceRef, StitchedSchema } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem, Resolved, UpstreamLookup } from '../../feature.js';
import { nsName } from '../../names.js';

/** Directives Legate understands; declared for the user when the SDL does not declare them. */
const DIRECTIVES: Record<string, string> = {
  resolve: 'directive @resolve(name: String!) on FIELD_DEFINITION',
  cacheControl:
    'directive @cacheControl(maxAge: Int, inheritMaxAge: Boolean, scope: String) on FIELD_DEFINITION | OBJECT | INTERFACE | UNION',
};

/** The SDL with Legate's directives declared where it does not; `added` lines come before the user's. */
function withDirectiveDeclarations(sdl: string): { sdl: string; added: number } {
  const missing = Object.entries(DIRECTIVES)
    .filter(([name]) => !new RegExp(`directive\\s+@${name}\\b`).test(sdl))
    .map(([, decl]) => decl);
  return missing.length ? { sdl: `${missing.join('\n')}\n${sdl}`, added: missing.length } : { sdl, added: 0 };
}

/** A schema error as the user can find it: its message and where in their SDL (line, column). */
function sdlProblem(err: unknown, added: number): string {
  if (!(err instanceof GraphQLError)) return err instanceof Error ? err.message.replace(/\s+/g, ' ') : String(err);
  // graphql-js puts the position in `locations` and a source excerpt in the message's later lines
  const message = err.message.split('\n')[0]!.trim();
  const where = (err.locations ?? []).map((l) => `line ${l.line - added}, column ${l.column}`);
  return where.length ? `${message} (${where.join('; ')})` : message;
}

const TEMPLATE = /\{\$(parent|args|headers|body)(?:\.([^}]*))?\}/g;

function templatesIn(value: unknown, out: string[] = []): string[] {
  if (typeof value === 'string') {
    for (const m of value.matchAll(TEMPLATE)) out.push(m[0]);
  } else if (Array.isArray(value)) {
    for (const v of value) templatesIn(v, out);
  } else if (value && typeof value === 'object') {
    for (const v of Object.values(value)) templatesIn(v, out);
  }
  return out;
}

interface Normalized {
  sdl: string;
  resolutions: Record<string, Resolution>;
  enableIntrospection: boolean;
  maxDepth: number;
  maxAliases: number | undefined;
  maxFields: number | undefined;
  remote: RemoteExecutor | undefined;
  descriptors: { protoDescriptorBin?: string | undefined } | undefined;
  persistedQueryCacheSize: number | undefined;
  allowedQueryHashes: string[] | undefined;
}

function normalize(api: GraphQLApi | GraphQLSchema): Normalized {
  if (api.kind === 'GraphQLSchema') {
    const s = api.spec;
    return {
      sdl: s.schemaDefinition,
      // the flat kind refuses grpcResolver (schemas.ts), so its resolutions are Resolutions without one
      resolutions: (s.resolutions ?? {}) as Record<string, Resolution>,
      enableIntrospection: s.enableIntrospection ?? false,
      maxDepth: s.options?.maxDepth ?? 0,
      maxAliases: s.options?.maxAliases,
      maxFields: s.options?.maxFields,
      remote: undefined,
      descriptors: undefined,
      persistedQueryCacheSize: undefined,
      allowedQueryHashes: undefined,
    };
  }
  // a GraphQLApi without executableSchema is stitched, translated by translateStitched
  const exe = api.spec.executableSchema!;
  const local = exe.executor.local;
  return {
    sdl: exe.schemaDefinition,
    resolutions: local?.resolutions ?? {},
    enableIntrospection: local?.enableIntrospection ?? false,
    maxDepth: local?.options?.maxDepth ?? 0,
    maxAliases: local?.options?.maxAliases,
    maxFields: local?.options?.maxFields,
    remote: exe.executor.remote,
    descriptors: exe.grpcDescriptorRegistry,
    persistedQueryCacheSize: api.spec.persistedQueryCacheConfig?.cacheSize,
    allowedQueryHashes: api.spec.allowedQueryHashes,
  };
}

interface Binding {
  typeName: string;
  field: GraphQLField<unknown, unknown>;
}

/** Fields carrying @resolve(name: …), by resolution name. */
function resolveBindings(schema: Schema): Map<string, Binding[]> {
  const bindings = new Map<string, Binding[]>();
  for (const type of Object.values(schema.getTypeMap())) {
    if (type.name.startsWith('__') || !(isObjectType(type) || isInterfaceType(type))) continue;
    for (const field of Object.values(type.getFields())) {
      for (const d of field.astNode?.directives ?? []) {
        if (d.name.value !== 'resolve') continue;
        const arg = d.arguments?.find((a) => a.name.value === 'name');
        if (arg?.value.kind !== 'StringValue') continue;
        bindings.set(arg.value.value, [...(bindings.get(arg.value.value) ?? []), { typeName: type.name, field }]);
      }
    }
  }
  return bindings;
}

/** Why a mock value cannot be the value of a field of this type (its top level and list items; an object's
 * own fields may have resolvers of their own), or undefined when it fits. */
function mockMismatch(type: GraphQLOutputType, value: unknown, path: string): string | undefined {
  if (isNonNullType(type)) {
    if (value === null || value === undefined) return `${path} is null but the type ${String(type)} is non-null`;
    return mockMismatch(type.ofType, value, path);
  }
  if (value === null || value === undefined) return undefined;
  if (isListType(type)) {
    if (!Array.isArray(value)) return `${path} is not a list but the type is ${String(type)}`;
    for (let i = 0; i < value.length; i++) {
      const m = mockMismatch(type.ofType, value[i], `${path}[${i}]`);
      if (m !== undefined) return m;
    }
    return undefined;
  }
  if (isLeafType(type)) return typeof value === 'object' ? `${path} is an object or list but ${type.name} is a scalar or enum` : undefined;
  return typeof value !== 'object' || Array.isArray(value) ? `${path} is not an object but ${type.name} is an object type` : undefined;
}

function translateMock(where: string, mock: MockResolver, bound: Binding[], problems: Problem[]): MockResolverConfig | undefined {
  const at = `${where}.mockResolver`;
  const set = (['syncResponse', 'asyncResponse', 'errorResponse'] as const).filter((k) => Object.hasOwn(mock, k) && mock[k] !== undefined);
  if (set.length !== 1) {
    const have = set.length ? ` (has ${set.join(', ')})` : '';
    problems.push({ code: 'InvalidSpec', message: `${at}: set exactly one of syncResponse, asyncResponse, errorResponse${have}` });
    return undefined;
  }
  const before = problems.length;
  const fits = (value: unknown, field: string): void => {
    for (const b of bound) {
      const m = mockMismatch(b.field.type, value, `${at}.${field}`);
      if (m !== undefined) problems.push({ code: 'InvalidSpec', message: `${m} (field ${b.typeName}.${b.field.name})` });
    }
  };
  let config: MockResolverConfig;
  if (set[0] === 'errorResponse') {
    if (typeof mock.errorResponse !== 'string' || mock.errorResponse.trim() === '')
      problems.push({ code: 'InvalidSpec', message: `${at}.errorResponse: must be a non-empty message` });
    config = { errorResponse: mock.errorResponse ?? '' };
  } else if (set[0] === 'asyncResponse') {
    const a = mock.asyncResponse!;
    const d = a.delay ? parseDuration(a.delay) : { seconds: 0 };
    const delayMs = Math.round(d.seconds * 1000 + (d.nanos ?? 0) / 1e6);
    if (delayMs > MAX_MOCK_DELAY_MS)
      problems.push({
        code: 'InvalidSpec',
        message: `${at}.asyncResponse.delay: ${a.delay} exceeds ${MAX_MOCK_DELAY_MS / 1000}s (the proxy waits 10s for the whole query)`,
      });
    fits(a.response ?? null, 'asyncResponse.response');
    config = { asyncResponse: { response: a.response ?? null, delayMs } };
  } else {
    fits(mock.syncResponse, 'syncResponse');
    config = { syncResponse: mock.syncResponse };
  }
  return problems.length === before ? config : undefined;
}

/** The Upstream a resolver or executor calls, as the graphql service needs it (endpoints, TLS PEMs). */
function resolveUpstream(
  at: string,
  ref: ResourceRef,
  ns: string,
  upstreams: UpstreamLookup,
  problems: Problem[],
): ResolverUpstream | undefined {
  const upNs = ref.namespace ?? ns;
  const upKey = nsName(upNs, ref.name);
  if (upstreams.rejected.has(upKey)) {
    problems.push({ code: 'UpstreamRejected', message: `${at}.upstreamRef: Upstream ${upNs}.${ref.name} is rejected` });
    return undefined;
  }
  const upstream = upstreams.resolved.get(upKey);
  if (!upstream) {
    problems.push({ code: 'UpstreamNotFound', message: `${at}.upstreamRef: Upstream ${upNs}.${ref.name} not found` });
    return undefined;
  }
  const tls = upstream.tls;
  if (tls && [tls.rootCa, tls.certChain, tls.privateKey].some((d) => d && 'filename' in d)) {
    problems.push({
      code: 'NotSupported',
      message: `${at}.upstreamRef: resolvers need the upstream's TLS material from a Secret, not sslFiles`,
    });
    return undefined;
  }
  const pem = (d: { inline: string } | { filename: string } | undefined): string | undefined => (d && 'inline' in d ? d.inline : undefined);
  const resolverTls: NonNullable<ResolverUpstream['tls']> = {};
  if (tls?.sni) resolverTls.sni = tls.sni;
  const ca = pem(tls?.rootCa);
  if (ca) resolverTls.rootCa = ca;
  const cert = pem(tls?.certChain);
  const key = pem(tls?.privateKey);
  if (cert && key) {
    resolverTls.certChain = cert;
    resolverTls.privateKey = key;
  }
  return {
    name: `${upNs}.${ref.name}`,
    endpoints: upstream.endpoints.map((e) => ({ address: e.address, port: e.port })),
    ...(tls ? { tls: resolverTls } : {}),
  };
}

/** Request templates of a resolver: `$body` is not available, `$args.x` must name an argument of every bound field. */
function checkRequestTemplates(at: string, value: unknown, bound: Binding[], problems: Problem[]): void {
  for (const t of templatesIn(value)) {
    const m = /^\{\$(\w+)(?:\.([^}]*))?\}$/.exec(t);
    const source = m?.[1];
    if (source === 'body') {
      problems.push({ code: 'InvalidTemplate', message: `${at}: ${t}: $body is only available in response setters` });
      continue;
    }
    if (source !== 'args') continue;
    const arg = (m?.[2] ?? '').split(/[.[]/)[0] ?? '';
    for (const b of bound) {
      if (!b.field.args.some((a) => a.name === arg)) {
        const have = b.field.args.map((a) => a.name).join(', ') || 'none';
        problems.push({
          code: 'InvalidTemplate',
          message: `${at}: ${t} names an argument ${b.typeName}.${b.field.name} does not have (arguments: ${have})`,
        });
      }
    }
  }
}

const durationMs = (d: string | undefined, fallbackMs: number): number => {
  if (!d) return fallbackMs;
  const p = parseDuration(d);
  return Math.round(p.seconds * 1000 + (p.nanos ?? 0) / 1e6);
};

/** The API's gRPC descriptors, decoded once per translation; a problem (reported once) when unusable. */
interface Descriptors {
  bin: string | undefined;
  root(problems: Problem[]): protobuf.Root | undefined;
}

function descriptorsOf(n: Normalized): Descriptors {
  let decoded: protobuf.Root | null | undefined;
  const bin = n.descriptors?.protoDescriptorBin;
  return {
    bin,
    root(problems) {
      if (decoded !== undefined) return decoded ?? undefined;
      decoded = null;
      if (!bin) {
        problems.push({
          code: 'InvalidSpec',
          message:
            'executableSchema.grpcDescriptorRegistry.protoDescriptorBin: gRPC resolvers need the descriptors of their services ' +
            '(a base64 FileDescriptorSet)',
        });
      } else {
        try {
          decoded = loadDescriptorSet(bin);
        } catch (err) {
          problems.push({
            code: 'InvalidSpec',
            message: `executableSchema.grpcDescriptorRegistry.${err instanceof Error ? err.message : String(err)}`,
          });
        }
      }
      return decoded ?? undefined;
    },
  };
}

function translateGrpc(
  at: string,
  grpc: GrpcResolver,
  bound: Binding[],
  ns: string,
  upstreams: UpstreamLookup,
  descriptors: Descriptors,
  problems: Problem[],
): GrpcResolverConfig | undefined {
  const before = problems.length;
  const t = grpc.requestTransform;
  const root = descriptors.root(problems);
  if (root) {
    try {
      const method = findGrpcMethod(root, t.serviceName, t.methodName);
      for (const p of checkMessageJson(method.requestType, t.outgoingMessageJson))
        problems.push({ code: 'InvalidSpec', message: `${at}.requestTransform.outgoingMessageJson.${p}` });
    } catch (err) {
      problems.push({ code: 'InvalidSpec', message: `${at}.requestTransform: ${err instanceof Error ? err.message : String(err)}` });
    }
  }
  checkRequestTemplates(`${at}.requestTransform`, [t.outgoingMessageJson, t.requestMetadata], bound, problems);
  const upstream = resolveUpstream(at, grpc.upstreamRef, ns, upstreams, problems);
  if (!upstream || problems.length !== before) return undefined;
  return {
    upstream,
    serviceName: t.serviceName,
    methodName: t.methodName,
    ...(t.outgoingMessageJson !== undefined ? { outgoingMessageJson: t.outgoingMessageJson } : {}),
    requestMetadata: t.requestMetadata ?? {},
    timeoutMs: durationMs(grpc.timeout, 1000),
  };
}

function translateRemote(
  remote: RemoteExecutor,
  ns: string,
  upstreams: UpstreamLookup,
  problems: Problem[],
): RemoteExecutorConfig | undefined {
  const at = 'executableSchema.executor.remote';
  const before = problems.length;
  for (const t of templatesIn([remote.headers, remote.queryParams])) {
    if (!/^\{\$headers\.[^}]+\}$/.test(t))
      problems.push({ code: 'InvalidTemplate', message: `${at}: ${t}: only {$headers.<name>} is available to a remote executor` });
  }
  for (const name of Object.keys(remote.headers ?? {})) {
    if (name.startsWith(':') && name !== ':path')
      problems.push({
        code: 'InvalidSpec',
        message: `${at}.headers: ${name}: only the :path pseudo-header can be set (the method is POST)`,
      });
  }
  const path = remote.headers?.[':path'];
  if (path !== undefined && !path.startsWith('/'))
    problems.push({ code: 'InvalidSpec', message: `${at}.headers: :path must start with "/", got ${JSON.stringify(path)}` });
  const upstream = resolveUpstream(at, remote.upstreamRef, ns, upstreams, problems);
  if (!upstream || problems.length !== before) return undefined;
  // Gloo has no timeout here; below the 10 s the proxy waits for the graphql service, so the client gets a GraphQL error
  return { upstream, headers: remote.headers ?? {}, queryParams: remote.queryParams ?? {}, timeoutMs: 9_000 };
}

/** The persisted-query and allow-list settings of a GraphQLApi, as the config carries them. */
function persistenceOf(n: Pick<Normalized, 'persistedQueryCacheSize' | 'allowedQueryHashes'>, problems: Problem[]) {
  for (const [i, h] of (n.allowedQueryHashes ?? []).entries()) {
    if (!/^[0-9a-fA-F]{64}$/.test(h))
      problems.push({ code: 'InvalidSpec', message: `allowedQueryHashes[${i}]: ${JSON.stringify(h)} is not a hex sha256 (64 hex digits)` });
  }
  return {
    ...(n.persistedQueryCacheSize !== undefined ? { persistedQueryCacheSize: n.persistedQueryCacheSize } : {}),
    ...(n.allowedQueryHashes !== undefined ? { allowedQueryHashes: n.allowedQueryHashes.map((h) => h.toLowerCase()) } : {}),
  };
}

/** A stitched GraphQLApi: its subschemas are other GraphQLApis, already translated (`apis`); the stitched
 * SDL (built here with @graphql-tools/stitch, as the engine builds it) becomes the config's schemaDefinition. */
function translateStitched(
  api: GraphQLApi,
  stitched: StitchedSchema,
  apis: Resolved<GraphQLApiConfig> | undefined,
): Attempt<GraphQLApiConfig> {
  const problems: Problem[] = [];
  const ns = api.metadata.namespace;
  if (apis === undefined) {
    problems.push({ code: 'NotSupported', message: 'stitchedSchema: its subschemas (other GraphQLApis) were not given here' });
    return { problems };
  }
  const subschemas: NonNullable<GraphQLApiConfig['stitched']>['subschemas'] = [];
  const built: Parameters<typeof stitchSchemas>[0]['subschemas'] = [];
  for (const [i, sub] of stitched.subschemas.entries()) {
    const at = `stitchedSchema.subschemas[${i}]`;
    const subNs = sub.namespace ?? ns;
    const key = nsName(subNs, sub.name);
    if (key === nsName(ns, api.metadata.name)) {
      problems.push({ code: 'InvalidSpec', message: `${at}: a GraphQLApi cannot stitch itself` });
      continue;
    }
    if (apis.rejected.has(key)) {
      problems.push({ code: 'GraphQLApiRejected', message: `${at}: GraphQLApi ${subNs}.${sub.name} is rejected` });
      continue;
    }
    const config = apis.results.get(key);
    if (!config) {
      problems.push({ code: 'GraphQLApiNotFound', message: `${at}: GraphQLApi ${subNs}.${sub.name} not found (or is itself stitched)` });
      continue;
    }
    if (config.remote) {
      problems.push({
        code: 'NotSupported',
        message: `${at}: GraphQLApi ${subNs}.${sub.name} has a remote executor; it cannot be stitched yet`,
      });
      continue;
    }
    let schema: Schema;
    try {
      schema = buildSchema(withDirectiveDeclarations(config.schemaDefinition).sdl);
    } catch (err) {
      problems.push({ code: 'InvalidGraphQLSchema', message: `${at}: ${sdlProblem(err, 0)}` });
      continue;
    }
    const typeMerge: Record<string, { selectionSet?: string; queryName: string; args: Record<string, string> }> = {};
    const merge: Record<string, { selectionSet?: string; fieldName: string; args: () => Record<string, unknown> }> = {};
    for (const [typeName, m] of Object.entries(sub.typeMerge ?? {})) {
      const where = `${at}.typeMerge.${typeName}`;
      if (!schema.getType(typeName))
        problems.push({ code: 'InvalidSpec', message: `${where}: ${subNs}.${sub.name} has no type ${typeName}` });
      const field = schema.getQueryType()?.getFields()[m.queryName];
      if (!field)
        problems.push({ code: 'InvalidSpec', message: `${where}.queryName: ${subNs}.${sub.name} has no field Query.${m.queryName}` });
      for (const arg of Object.keys(m.args ?? {})) {
        if (field && !field.args.some((a) => a.name === arg))
          problems.push({ code: 'InvalidSpec', message: `${where}.args: Query.${m.queryName} has no argument ${arg}` });
      }
      typeMerge[typeName] = { ...(m.selectionSet ? { selectionSet: m.selectionSet } : {}), queryName: m.queryName, args: m.args ?? {} };
      merge[typeName] = { ...(m.selectionSet ? { selectionSet: m.selectionSet } : {}), fieldName: m.queryName, args: () => ({}) };
    }
    built.push({ schema, merge });
    subschemas.push({ name: `${subNs}.${sub.name}`, config, typeMerge });
  }
  if (problems.length) return { problems };
  let sdl: string;
  try {
    sdl = printSchema(stitchSchemas({ subschemas: built }));
  } catch (err) {
    problems.push({
      code: 'InvalidGraphQLSchema',
      message: `stitchedSchema: ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`,
    });
    return { problems };
  }
  const body = {
    name: `${ns}.${api.metadata.name}`,
    schemaDefinition: sdl,
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: {},
    stitched: { subschemas },
    ...persistenceOf(
      { persistedQueryCacheSize: api.spec.persistedQueryCacheConfig?.cacheSize, allowedQueryHashes: api.spec.allowedQueryHashes },
      problems,
    ),
  };
  const version = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
  const config: GraphQLApiConfig = { ...body, version };
  for (const p of checkGraphQLApiConfigShape(JSON.parse(JSON.stringify(config)))) problems.push({ code: 'InvalidSpec', message: p });
  if (problems.length) return { problems };
  return { ir: config, problems };
}

/** `apis`: the GraphQLApis translated so far, which a stitched API's subschemas name; without it a stitched
 * API is reported as not supported. */
export function translateGraphQLApi(
  api: GraphQLApi | GraphQLSchema,
  upstreams: UpstreamLookup,
  apis?: Resolved<GraphQLApiConfig>,
): Attempt<GraphQLApiConfig> {
  if (api.kind === 'GraphQLApi' && api.spec.stitchedSchema) return translateStitched(api, api.spec.stitchedSchema, apis);
  const problems: Problem[] = [];
  const n = normalize(api);
  const ns = api.metadata.namespace;
  let schema: Schema;
  const declared = withDirectiveDeclarations(n.sdl);
  try {
    schema = buildSchema(declared.sdl);
  } catch (err) {
    problems.push({ code: 'InvalidGraphQLSchema', message: `schemaDefinition: ${sdlProblem(err, declared.added)}` });
    return { problems };
  }
  if (!schema.getQueryType())
    problems.push({ code: 'InvalidGraphQLSchema', message: 'schemaDefinition: a Query type with at least one field is required' });

  const extras = {
    ...(n.maxAliases !== undefined ? { maxAliases: n.maxAliases } : {}),
    ...(n.maxFields !== undefined ? { maxFields: n.maxFields } : {}),
    ...persistenceOf(n, problems),
  };

  const resolutions: Record<string, ResolverConfig> = {};
  let descriptorSet: string | undefined;
  let remote: RemoteExecutorConfig | undefined;
  if (n.remote) {
    remote = translateRemote(n.remote, ns, upstreams, problems);
  } else {
    descriptorSet = translateResolutions(n, schema, ns, upstreams, resolutions, problems);
  }
  if (problems.length) return { problems };

  const body = {
    name: `${ns}.${api.metadata.name}`,
    schemaDefinition: n.sdl,
    enableIntrospection: n.enableIntrospection,
    maxDepth: n.maxDepth,
    resolutions,
    ...(descriptorSet !== undefined ? { grpcDescriptorSet: descriptorSet } : {}),
    ...(remote !== undefined ? { remote } : {}),
    ...extras,
  };
  const version = createHash('sha256').update(JSON.stringify(body)).digest('hex').slice(0, 16);
  const config: GraphQLApiConfig = { ...body, version };
  // what the graphql service will check again; a failure here is a translation bug, reported, not served
  for (const p of checkGraphQLApiConfigShape(JSON.parse(JSON.stringify(config)))) problems.push({ code: 'InvalidSpec', message: p });
  if (problems.length) return { problems };
  return { ir: config, problems };
}

/** The local executor's resolutions into `out`; returns the descriptor set when a gRPC resolver uses it. */
function translateResolutions(
  n: Normalized,
  schema: Schema,
  ns: string,
  upstreams: UpstreamLookup,
  out: Record<string, ResolverConfig>,
  problems: Problem[],
): string | undefined {
  const bindings = resolveBindings(schema);
  for (const [name, fields] of bindings) {
    if (!Object.hasOwn(n.resolutions, name)) {
      const where = fields.map((b) => `${b.typeName}.${b.field.name}`).join(', ');
      problems.push({
        code: 'ResolutionNotFound',
        message: `schemaDefinition: @resolve(name: ${JSON.stringify(name)}) on ${where} names no resolution`,
      });
    }
  }
  const descriptors = descriptorsOf(n);
  let usesDescriptors = false;
  for (const [name, resolution] of Object.entries(n.resolutions).sort(([a], [b]) => a.localeCompare(b))) {
    const where = `resolutions[${JSON.stringify(name)}]`;
    let bound = bindings.get(name) ?? [];
    if (name.includes('|')) {
      const [typeName = '', fieldName = ''] = name.split('|');
      const type = schema.getType(typeName);
      const field = type && (isObjectType(type) || isInterfaceType(type)) ? type.getFields()[fieldName] : undefined;
      if (!field) {
        problems.push({ code: 'ResolutionNotFound', message: `${where}: the schema has no field ${typeName}.${fieldName}` });
        continue;
      }
      if (!bound.length) bound = [{ typeName, field }];
    }
    const kinds = (['restResolver', 'grpcResolver', 'mockResolver'] as const).filter((k) => resolution[k] !== undefined);
    if (kinds.length !== 1) {
      problems.push({
        code: 'InvalidSpec',
        message: kinds.length
          ? `${where}: set one of restResolver, grpcResolver, mockResolver, not ${kinds.join(' and ')}`
          : `${where}: set restResolver, grpcResolver or mockResolver`,
      });
      continue;
    }
    if (resolution.mockResolver) {
      const mock = translateMock(where, resolution.mockResolver, bound, problems);
      if (mock) out[name] = { mock };
      continue;
    }
    if (resolution.grpcResolver) {
      usesDescriptors = true;
      const grpc = translateGrpc(`${where}.grpcResolver`, resolution.grpcResolver, bound, ns, upstreams, descriptors, problems);
      if (grpc) out[name] = { grpc };
      continue;
    }
    const rest = resolution.restResolver!;
    const before = problems.length;
    checkRequestTemplates(
      `${where}.restResolver.request`,
      [rest.request?.headers, rest.request?.queryParams, rest.request?.body],
      bound,
      problems,
    );
    const upstream = resolveUpstream(`${where}.restResolver`, rest.upstreamRef, ns, upstreams, problems);
    if (!upstream || problems.length !== before) continue;
    out[name] = {
      rest: {
        upstream,
        request: {
          headers: rest.request?.headers ?? {},
          queryParams: rest.request?.queryParams ?? {},
          ...(rest.request?.body !== undefined ? { body: rest.request.body } : {}),
        },
        response: {
          ...(rest.response?.resultRoot !== undefined ? { resultRoot: rest.response.resultRoot } : {}),
          setters: rest.response?.setters ?? {},
        },
        timeoutMs: durationMs(rest.timeout, 1000),
      },
    };
  }
  return usesDescriptors ? descriptors.bin : undefined;
}
