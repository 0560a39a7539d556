// Envoy's API protos, pinned: the .proto files shipped in @grpc/grpc-js-xds (about the Envoy 1.30 API,
// enough for ADS, ext_authz, buffered ext_proc and wasm). One protobufjs Root holds every type Legate
// encodes, so google.protobuf.Any values written as {'@type': …} resolve inside it.
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import protobuf from 'protobufjs';

const require = createRequire(import.meta.url);

export const TYPE_URL_PREFIX = 'type.googleapis.com/';

export const TypeUrls = {
  cluster: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  endpoint: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  listener: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  route: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  /** SDS: TLS certificates of the ssl listener, by name, so a rotation does not change the listener */
  secret: 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.Secret',
  /** RTDS: the runtime layer Settings set (the RE2 program size limit) */
  runtime: 'type.googleapis.com/envoy.service.runtime.v3.Runtime',
} as const;

/** The files whose types (and their imports) Legate puts on the wire or into Any fields. */
export const ENVOY_PROTO_FILES = [
  'envoy/service/discovery/v3/ads.proto',
  'envoy/config/bootstrap/v3/bootstrap.proto',
  'envoy/config/cluster/v3/cluster.proto',
  'envoy/config/endpoint/v3/endpoint.proto',
  'envoy/config/listener/v3/listener.proto',
  'envoy/config/route/v3/route.proto',
  'envoy/extensions/filters/network/http_connection_manager/v3/http_connection_manager.proto',
  'envoy/extensions/http/early_header_mutation/header_mutation/v3/header_mutation.proto',
  'envoy/extensions/filters/http/router/v3/router.proto',
  'envoy/extensions/filters/http/ext_authz/v3/ext_authz.proto',
  'envoy/extensions/filters/http/ext_proc/v3/ext_proc.proto',
  'envoy/extensions/filters/http/buffer/v3/buffer.proto',
  'envoy/extensions/filters/http/dynamic_forward_proxy/v3/dynamic_forward_proxy.proto',
  'envoy/extensions/clusters/dynamic_forward_proxy/v3/cluster.proto',
  'envoy/extensions/filters/http/wasm/v3/wasm.proto',
  'envoy/extensions/filters/http/ratelimit/v3/rate_limit.proto',
  'envoy/extensions/filters/http/local_ratelimit/v3/local_rate_limit.proto',
  'envoy/extensions/filters/http/cors/v3/cors.proto',
  'envoy/extensions/filters/http/csrf/v3/csrf.proto',
  'envoy/extensions/filters/http/aws_lambda/v3/aws_lambda.proto',
  'envoy/extensions/filters/http/fault/v3/fault.proto',
  'envoy/extensions/filters/http/compressor/v3/compressor.proto',
  'envoy/extensions/compression/gzip/compressor/v3/gzip.proto',
  'envoy/extensions/filters/http/health_check/v3/health_check.proto',
  'envoy/extensions/filters/http/grpc_web/v3/grpc_web.proto',
  'envoy/extensions/request_id/uuid/v3/uuid.proto',
  'envoy/extensions/filters/http/grpc_json_transcoder/v3/transcoder.proto',
  'envoy/extensions/filters/http/jwt_authn/v3/config.proto',
  'envoy/extensions/filters/http/rbac/v3/rbac.proto',
  'envoy/extensions/retry/priority/previous_priorities/v3/previous_priorities_config.proto',
  'envoy/extensions/common/matching/v3/extension_matcher.proto',
  'envoy/type/matcher/v3/http_inputs.proto',
  'envoy/extensions/filters/common/matcher/action/v3/skip_action.proto',
  'envoy/extensions/transport_sockets/tls/v3/tls.proto',
  'envoy/extensions/filters/listener/tls_inspector/v3/tls_inspector.proto',
  'envoy/extensions/filters/listener/proxy_protocol/v3/proxy_protocol.proto',
  'envoy/extensions/filters/network/tcp_proxy/v3/tcp_proxy.proto',
  'envoy/extensions/filters/network/sni_cluster/v3/sni_cluster.proto',
  'envoy/extensions/filters/network/connection_limit/v3/connection_limit.proto',
  'envoy/extensions/filters/network/local_ratelimit/v3/local_rate_limit.proto',
  'envoy/extensions/upstreams/http/v3/http_protocol_options.proto',
  'envoy/extensions/transport_sockets/proxy_protocol/v3/upstream_proxy_protocol.proto',
  'envoy/extensions/transport_sockets/raw_buffer/v3/raw_buffer.proto',
  'envoy/extensions/http/header_formatters/preserve_case/v3/preserve_case.proto',
  'envoy/extensions/filters/http/stateful_session/v3/stateful_session.proto',
  'envoy/extensions/http/stateful_session/cookie/v3/cookie.proto',
  'envoy/extensions/http/stateful_session/header/v3/header.proto',
  'envoy/extensions/access_loggers/stream/v3/stream.proto',
  'envoy/extensions/access_loggers/file/v3/file.proto',
  'envoy/extensions/access_loggers/grpc/v3/als.proto',
  'envoy/config/trace/v3/opentelemetry.proto',
  'envoy/config/trace/v3/zipkin.proto',
  'envoy/config/trace/v3/datadog.proto',
  'envoy/service/auth/v3/external_auth.proto',
  'envoy/service/ext_proc/v3/external_processor.proto',
  'envoy/service/ratelimit/v3/rls.proto',
  'envoy/service/runtime/v3/rtds.proto',
  'google/protobuf/wrappers.proto',
  'google/protobuf/struct.proto',
] as const;

/** Include directories of the pinned protos inside node_modules. */
export function protoIncludeDirs(): string[] {
  const pkg = path.dirname(require.resolve('@grpc/grpc-js-xds/package.json'));
  const deps = path.join(pkg, 'deps');
  return ['envoy-api', 'xds', 'googleapis', 'protoc-gen-validate'].map((d) => path.join(deps, d));
}

/** Options for @grpc/proto-loader so gRPC services see the same field names as protobufjs below. */
export function protoLoaderOptions(): {
  keepCase: boolean;
  longs: StringConstructor;
  enums: StringConstructor;
  defaults: boolean;
  oneofs: boolean;
  includeDirs: string[];
} {
  return { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: protoIncludeDirs() };
}

let cachedRoot: protobuf.Root | undefined;

/** A protobufjs Root with all ENVOY_PROTO_FILES loaded, snake_case field names (as in Envoy's YAML). */
export function envoyRoot(): protobuf.Root {
  if (cachedRoot) return cachedRoot;
  const root = new protobuf.Root();
  const dirs = protoIncludeDirs();
  root.resolvePath = (_origin: string, target: string): string | null => {
    if (path.isAbsolute(target)) return target;
    for (const dir of dirs) {
      const candidate = path.join(dir, target);
      if (fs.existsSync(candidate)) return candidate;
    }
    // well-known types (google/protobuf/*): common ones are built into protobufjs, the rest ship with it
    const bundled = path.join(path.dirname(require.resolve('protobufjs/package.json')), target);
    return fs.existsSync(bundled) ? bundled : target;
  };
  root.loadSync([...ENVOY_PROTO_FILES], { keepCase: true });
  root.resolveAll();
  cachedRoot = root;
  return root;
}

/** Looks up a message type by its full name or type URL. */
export function envoyType(nameOrUrl: string): protobuf.Type {
  const name = nameOrUrl.startsWith(TYPE_URL_PREFIX) ? nameOrUrl.slice(TYPE_URL_PREFIX.length) : nameOrUrl;
  return envoyRoot().lookupType(name);
}

const WRAPPERS = new Set(
  ['Bool', 'String', 'Bytes', 'Int32', 'UInt32', 'Int64', 'UInt64', 'Float', 'Double'].map((w) => `.google.protobuf.${w}Value`),
);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);
}

/**
 * protobufjs wants wrapper types (BoolValue, UInt32Value, …) as {value} and Struct as {fields}; Envoy's
 * JSON writes them bare. Walk the message type and convert on the way in (encode) or out (decode),
 * descending into Any values.
 */
function convertWrappers(type: protobuf.Type, obj: Record<string, unknown>, wrap: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    const field = type.fields[key];
    const resolved = field?.resolve().resolvedType;
    if (!field || !(resolved instanceof protobuf.Type) || value === undefined || value === null) {
      out[key] = value;
      continue;
    }
    const one = (v: unknown): unknown => convertValue(resolved, v, wrap);
    if (field.map) out[key] = isPlainObject(value) ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, one(v)])) : value;
    else if (field.repeated && Array.isArray(value)) out[key] = value.map(one);
    else out[key] = one(value);
  }
  return out;
}

function convertValue(type: protobuf.Type, value: unknown, wrap: boolean): unknown {
  const name = type.fullName;
  if (WRAPPERS.has(name)) {
    if (wrap) return isPlainObject(value) ? value : { value };
    return isPlainObject(value) && 'value' in value ? value['value'] : value;
  }
  if (!isPlainObject(value)) return value;
  if (name === '.google.protobuf.Any') {
    const anyType =
      typeof value['@type'] === 'string' ? envoyRoot().lookup(value['@type'].slice(value['@type'].lastIndexOf('/') + 1)) : null;
    if (!(anyType instanceof protobuf.Type)) return value;
    const { '@type': t, ...rest } = value;
    return { '@type': t, ...convertWrappers(anyType, rest, wrap) };
  }
  // Struct is a plain JSON object in Envoy's JSON; protobufjs's built-in struct.proto wants
  // {fields: {k: {stringValue|numberValue|…}}} (camelCase even with keepCase).
  if (name === '.google.protobuf.Struct') return wrap ? (isStructForm(value) ? value : toStruct(value)) : fromStruct(value);
  if (name === '.google.protobuf.Duration') return value;
  return convertWrappers(type, value, wrap);
}

function isStructForm(v: Record<string, unknown>): boolean {
  return Object.keys(v).length === 1 && isPlainObject(v['fields']);
}

function toStructValue(v: unknown): Record<string, unknown> {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toStructValue) } };
  if (isPlainObject(v)) return { structValue: toStruct(v) };
  return { stringValue: String(v) };
}

function toStruct(obj: Record<string, unknown>): Record<string, unknown> {
  return { fields: Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, toStructValue(v)])) };
}

function fromStructValue(v: unknown): unknown {
  if (!isPlainObject(v)) return v;
  if ('stringValue' in v) return v['stringValue'];
  if ('numberValue' in v) return v['numberValue'];
  if ('boolValue' in v) return v['boolValue'];
  if ('nullValue' in v) return null;
  if (isPlainObject(v['listValue'])) return ((v['listValue']['values'] as unknown[] | undefined) ?? []).map(fromStructValue);
  if (isPlainObject(v['structValue'])) return fromStruct(v['structValue']);
  return v;
}

function fromStruct(v: Record<string, unknown>): Record<string, unknown> {
  const fields = isPlainObject(v['fields']) ? v['fields'] : {};
  return Object.fromEntries(Object.entries(fields).map(([k, x]) => [k, fromStructValue(x)]));
}

/** Encodes a JSON-shaped Envoy resource (snake_case, Any as {'@type': …}) into a protobuf Any. */
export function encodeAny(typeUrl: string, value: object): { type_url: string; value: Buffer } {
  return { type_url: typeUrl, value: encodeMessage(typeUrl, value) };
}

/** Encodes a JSON-shaped Envoy message to protobuf bytes. */
export function encodeMessage(nameOrUrl: string, value: object): Buffer {
  const type = envoyType(nameOrUrl);
  const message = type.fromObject(convertWrappers(type, value as Record<string, unknown>, true));
  return Buffer.from(type.encode(message).finish());
}

/** Decodes an Any back to JSON shape (used by tests to prove nothing was dropped on encoding). */
export function decodeAny(typeUrl: string, bytes: Uint8Array): Record<string, unknown> {
  const type = envoyType(typeUrl);
  const obj = type.toObject(type.decode(bytes), { longs: Number, enums: String, defaults: false, json: true, oneofs: false }) as Record<
    string,
    unknown
  >;
  return convertWrappers(type, obj, false);
}
