// Generates envoy/types.generated.ts: TypeScript interfaces for the Envoy messages Legate writes, in
// the JSON form Legate writes them (snake_case names as in Envoy's YAML; Any as {'@type': …} with
// its fields inline; wrappers bare; Duration {seconds, nanos}; Struct a plain object). Only messages
// reachable from ROOTS are emitted, and Any fields are not followed (their type is named by
// '@type'), which keeps the file to what Legate uses.
//
//   node --import tsx scripts/gen-envoy-types.ts [--check]    (make envoy-types)
//
// Why not @grpc/proto-loader's proto-loader-gen-types: it types the protobuf object form
// (google.protobuf.Any as {type_url, value: Buffer}, wrappers as {value}), not Envoy's JSON form.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';
import { envoyRoot } from '../envoy/protos.js';

/** Messages Legate puts on the wire or in typed_config; their type URLs go in TypeUrlMap. */
export const ROOTS = [
  'envoy.config.listener.v3.Listener',
  'envoy.config.route.v3.RouteConfiguration',
  'envoy.config.cluster.v3.Cluster',
  'envoy.config.endpoint.v3.ClusterLoadAssignment',
  'envoy.config.bootstrap.v3.Bootstrap',
  'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  'envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation',
  'envoy.extensions.filters.http.router.v3.Router',
  'envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
  'envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute',
  'envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor',
  'envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute',
  'envoy.extensions.filters.http.buffer.v3.Buffer',
  'envoy.extensions.filters.http.buffer.v3.BufferPerRoute',
  'envoy.extensions.filters.http.wasm.v3.Wasm',
  'envoy.extensions.filters.http.ratelimit.v3.RateLimit',
  'envoy.extensions.filters.http.ratelimit.v3.RateLimitPerRoute',
  'envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit',
  'envoy.extensions.filters.http.compressor.v3.Compressor',
  'envoy.extensions.compression.gzip.compressor.v3.Gzip',
  'envoy.extensions.filters.http.health_check.v3.HealthCheck',
  'envoy.extensions.filters.http.grpc_web.v3.GrpcWeb',
  'envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig',
  'envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder',
  'envoy.extensions.filters.http.cors.v3.Cors',
  'envoy.extensions.filters.http.cors.v3.CorsPolicy',
  'envoy.extensions.filters.http.csrf.v3.CsrfPolicy',
  'envoy.extensions.filters.http.aws_lambda.v3.Config',
  'envoy.extensions.filters.http.aws_lambda.v3.PerRouteConfig',
  'envoy.extensions.filters.http.fault.v3.HTTPFault',
  'envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication',
  'envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig',
  'envoy.extensions.filters.http.rbac.v3.RBAC',
  'envoy.extensions.filters.http.rbac.v3.RBACPerRoute',
  'envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig',
  'envoy.config.route.v3.FilterConfig',
  'envoy.extensions.common.matching.v3.ExtensionWithMatcher',
  'envoy.type.matcher.v3.HttpRequestHeaderMatchInput',
  'envoy.extensions.filters.common.matcher.action.v3.SkipFilter',
  'envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
  'envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
  'envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
  'envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport',
  'envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer',
  'envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig',
  'envoy.extensions.filters.http.stateful_session.v3.StatefulSession',
  'envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState',
  'envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState',
  'envoy.extensions.transport_sockets.tls.v3.Secret',
  'envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector',
  'envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol',
  'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
  'envoy.extensions.filters.network.sni_cluster.v3.SniCluster',
  'envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit',
  'envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit',
  'envoy.extensions.access_loggers.stream.v3.StdoutAccessLog',
  'envoy.extensions.access_loggers.stream.v3.StderrAccessLog',
  'envoy.extensions.access_loggers.file.v3.FileAccessLog',
  'envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig',
  'envoy.config.trace.v3.OpenTelemetryConfig',
  'envoy.config.trace.v3.ZipkinConfig',
  'envoy.config.trace.v3.DatadogConfig',
  'envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig',
  'envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig',
  'envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig',
  'google.protobuf.StringValue',
  'google.protobuf.BytesValue',
] as const;

const SCALARS: Record<string, string> = {
  double: 'number',
  float: 'number',
  int32: 'number',
  uint32: 'number',
  sint32: 'number',
  fixed32: 'number',
  sfixed32: 'number',
  int64: 'number | string',
  uint64: 'number | string',
  sint64: 'number | string',
  fixed64: 'number | string',
  sfixed64: 'number | string',
  bool: 'boolean',
  string: 'string',
  bytes: 'string',
};

/** Well-known types in Envoy's JSON form. */
const WELL_KNOWN: Record<string, string> = {
  '.google.protobuf.Any': 'TypedConfig',
  '.google.protobuf.Duration': 'Duration',
  '.google.protobuf.Timestamp': 'string',
  '.google.protobuf.Struct': 'Record<string, unknown>',
  '.google.protobuf.Value': 'unknown',
  '.google.protobuf.ListValue': 'unknown[]',
  '.google.protobuf.Empty': 'Record<string, never>',
  '.google.protobuf.BoolValue': 'boolean',
  '.google.protobuf.StringValue': 'string',
  '.google.protobuf.BytesValue': 'string',
  '.google.protobuf.Int32Value': 'number',
  '.google.protobuf.UInt32Value': 'number',
  '.google.protobuf.Int64Value': 'number | string',
  '.google.protobuf.UInt64Value': 'number | string',
  '.google.protobuf.FloatValue': 'number',
  '.google.protobuf.DoubleValue': 'number',
};

/** `.envoy.config.cluster.v3.Cluster.LbPolicy` -> `envoy_config_cluster_v3_Cluster_LbPolicy` */
function tsName(fullName: string): string {
  return fullName.replace(/^\./, '').replace(/\./g, '_');
}

function shortName(fullName: string): string {
  return fullName.slice(fullName.lastIndexOf('.') + 1);
}

export function generate(): string {
  const root = envoyRoot();
  const emitted = new Map<string, string>();
  const queue: protobuf.ReflectionObject[] = ROOTS.map((name) => root.lookup(name)).filter(
    (t): t is protobuf.Type => t instanceof protobuf.Type,
  );

  const typeRef = (field: protobuf.Field): string => {
    const resolved = field.resolve().resolvedType;
    if (resolved instanceof protobuf.Enum) {
      queue.push(resolved);
      return tsName(resolved.fullName);
    }
    if (resolved instanceof protobuf.Type) {
      const known = WELL_KNOWN[resolved.fullName];
      if (known) return known;
      queue.push(resolved);
      return tsName(resolved.fullName);
    }
    return SCALARS[field.type] ?? 'unknown';
  };

  while (queue.length) {
    const item = queue.shift();
    if (!item || emitted.has(item.fullName) || WELL_KNOWN[item.fullName]) continue;
    if (item instanceof protobuf.Enum) {
      const names = Object.keys(item.values).map((v) => JSON.stringify(v));
      emitted.set(item.fullName, `export type ${tsName(item.fullName)} = ${names.join(' | ')};\n`);
      continue;
    }
    if (!(item instanceof protobuf.Type)) continue;
    emitted.set(item.fullName, ''); // reserve: recursive types
    const lines = [`/** ${item.fullName.slice(1)} */`, `export interface ${tsName(item.fullName)} {`];
    for (const field of item.fieldsArray) {
      let t = typeRef(field);
      if (field.map) t = `Record<string, ${t}>`;
      else if (field.repeated) t = /[ |]/.test(t) ? `(${t})[]` : `${t}[]`;
      const deprecated = field.options?.['deprecated'] ? ' /** deprecated in Envoy */' : '';
      lines.push(`  ${field.name}?: ${t};${deprecated}`);
    }
    lines.push('}\n');
    emitted.set(item.fullName, lines.join('\n'));
  }

  const header = [
    '// Generated by scripts/gen-envoy-types.ts from the pinned Envoy protos (envoy/protos.ts); do not edit.',
    '// `make envoy-types` regenerates it; test/unit/envoy-types.test.ts fails when it is stale.',
    '// Envoy messages in the JSON form Legate writes: snake_case, every field optional, Any as TypedConfig.',
    '',
    "/** google.protobuf.Any in JSON form: the message's type URL and its fields inline. */",
    "export type TypedConfig = { '@type': string } & Record<string, unknown>;",
    '',
    '/** google.protobuf.Duration in the form Legate writes (protobufjs also accepts a string of seconds). */',
    'export interface Duration {',
    '  seconds?: number | string;',
    '  nanos?: number;',
    '}',
    '',
  ];
  const aliases = ['/** Short names for the root messages. */'];
  const map = ['/** Type URL -> message, for typed() in envoy/typed.ts. */', 'export interface TypeUrlMap {'];
  const aliased = new Set<string>();
  for (const name of ROOTS) {
    const full = `.${name}`;
    const t = WELL_KNOWN[full] ?? tsName(full);
    // a short name two roots share (FilterConfig) stays the first one's
    if (!WELL_KNOWN[full] && !aliased.has(shortName(full))) {
      aliased.add(shortName(full));
      aliases.push(`export type ${shortName(full)} = ${t};`);
    }
    map.push(`  ${JSON.stringify(`type.googleapis.com/${name}`)}: ${WELL_KNOWN[full] ? `{ value: ${t} }` : t};`);
  }
  map.push('}', '');
  aliases.push('');
  const body = [...emitted.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([, text]) => text);
  return [...header, ...aliases, ...map, ...body].join('\n');
}

const OUT = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'envoy', 'types.generated.ts');

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const text = generate();
  if (process.argv.includes('--check')) {
    const current = fs.existsSync(OUT) ? fs.readFileSync(OUT, 'utf8') : '';
    if (current !== text) {
      console.error('envoy/types.generated.ts is stale: run make envoy-types');
      process.exit(1);
    }
  } else {
    fs.writeFileSync(OUT, text);
    console.log(`wrote ${path.relative(process.cwd(), OUT)}: ${text.split('\n').length} lines`);
  }
}
