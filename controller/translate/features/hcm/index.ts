// The HTTP connection manager of a Gateway's listener: `httpGateway.options.httpConnectionManagerSettings`
// (Gloo's hcm.proto) onto Envoy's HCM, Gloo's defaults where it has them (normalize_path on, grpc_web on
// unless Settings gloo.disableGrpcWeb or grpcWeb.disable), and the listener-wide filters gzip (Envoy's
// compressor with gzip) and healthCheck (Envoy's health_check filter, answering itself). The listener's
// buffer and httpLocalRatelimit are bound here and rendered by the buffer and ratelimit features, which
// own those filters; csrf is the cors feature's.
import type { ConfigMap, Gateway } from '../../../api/resources.js';
import { parseDuration } from '../../duration.js';
import { enumName, type BindSink, type Feature } from '../../feature.js';
import type { HcmSettingsIR, HttpListenerIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { hcmRender, type HcmOptions } from './render.js';

export type { HcmOptions } from './render.js';
import {
  CODEC_TYPES,
  FORWARD_CLIENT_CERT_DETAILS,
  GZIP_COMPRESSION_LEVELS,
  GZIP_COMPRESSION_STRATEGIES,
  HEADERS_WITH_UNDERSCORES_ACTIONS,
  PATH_WITH_ESCAPED_SLASHES_ACTIONS,
  SERVER_HEADER_TRANSFORMATIONS,
  type HttpConnectionManagerSettings,
} from './schema.js';

function durations<K extends string>(
  s: Partial<Record<K, string>>,
  keys: readonly K[],
): Partial<Record<K, ReturnType<typeof parseDuration>>> {
  const out: Partial<Record<K, ReturnType<typeof parseDuration>>> = {};
  for (const k of keys) {
    const v = s[k];
    if (v !== undefined) out[k] = parseDuration(v);
  }
  return out;
}

const DURATIONS = [
  'streamIdleTimeout',
  'idleTimeout',
  'requestTimeout',
  'requestHeadersTimeout',
  'drainTimeout',
  'delayedCloseTimeout',
  'maxConnectionDuration',
  'maxStreamDuration',
] as const;

function hcmSettings(s: HttpConnectionManagerSettings, where: string, sink: BindSink): HcmSettingsIR {
  const {
    upgrades,
    forwardClientCertDetails,
    headersWithUnderscoresAction,
    serverHeaderTransformation,
    pathWithEscapedSlashesAction,
    codecType,
    properCaseHeaderKeyFormat,
    http2ProtocolOptions,
    internalAddressConfig,
    ...plain
  } = s;
  const ir: HcmSettingsIR = {};
  const copy = [
    'skipXffAppend',
    'via',
    'xffNumTrustedHops',
    'useRemoteAddress',
    'generateRequestId',
    'proxy100Continue',
    'maxRequestHeadersKb',
    'serverName',
    'stripAnyHostPort',
    'acceptHttp10',
    'defaultHostForHttp10',
    'allowChunkedLength',
    'enableTrailers',
    'setCurrentClientCertDetails',
    'preserveExternalRequestId',
    'maxHeadersCount',
    'maxRequestsPerConnection',
    'mergeSlashes',
    'normalizePath',
    'uuidRequestIdConfig',
    'appendXForwardedPort',
  ] as const;
  for (const k of copy) if (plain[k] !== undefined) Object.assign(ir, { [k]: plain[k] });
  Object.assign(ir, durations(plain, DURATIONS));
  if (properCaseHeaderKeyFormat) ir.headerKeyFormat = 'properCase';
  const names: [keyof HcmSettingsIR, readonly string[], string | number | undefined][] = [
    ['forwardClientCertDetails', FORWARD_CLIENT_CERT_DETAILS, forwardClientCertDetails],
    ['headersWithUnderscoresAction', HEADERS_WITH_UNDERSCORES_ACTIONS, headersWithUnderscoresAction],
    ['serverHeaderTransformation', SERVER_HEADER_TRANSFORMATIONS, serverHeaderTransformation],
    ['pathWithEscapedSlashesAction', PATH_WITH_ESCAPED_SLASHES_ACTIONS, pathWithEscapedSlashesAction],
    ['codecType', CODEC_TYPES, codecType],
  ];
  for (const [k, list, v] of names) {
    const name = enumName(list, v);
    if (name !== undefined) Object.assign(ir, { [k]: name });
  }
  if (http2ProtocolOptions) ir.http2 = { ...http2ProtocolOptions };
  if (internalAddressConfig) {
    ir.internalAddresses = {
      ...(internalAddressConfig.unixSockets !== undefined ? { unixSockets: internalAddressConfig.unixSockets } : {}),
      cidrRanges: (internalAddressConfig.cidrRanges ?? []).map((c) => ({ addressPrefix: c.addressPrefix, prefixLen: c.prefixLen ?? 0 })),
    };
  }
  if (upgrades) {
    const seen = new Set<string>();
    ir.upgrades = [];
    upgrades.forEach((u, i) => {
      const type = u.websocket ? 'websocket' : 'CONNECT';
      if (seen.has(type)) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${where}.upgrades[${i}]: upgrade config ${u.websocket ? 'websocket' : 'connect'} is not unique`,
        });
        return;
      }
      seen.add(type);
      const enabled = (u.websocket ?? u.connect)?.enabled;
      ir.upgrades!.push(enabled === undefined ? { type } : { type, enabled });
    });
  }
  return ir;
}

/** The base64 FileDescriptorSet of protoDescriptorConfigMap (Gloo reads `data`; `binaryData` is base64 already). */
function descriptorFromConfigMap(
  ref: { configMapRef: { name: string; namespace?: string | undefined }; key?: string | undefined },
  gwNamespace: string,
  configMaps: ReadonlyMap<string, ConfigMap>,
  where: string,
  sink: BindSink,
): string | undefined {
  const ns = ref.configMapRef.namespace || gwNamespace;
  const cm = configMaps.get(nsName(ns, ref.configMapRef.name));
  const name = `ConfigMap ${ns}.${ref.configMapRef.name}`;
  if (!cm) {
    sink.problems.push({ code: 'ConfigMapNotFound', message: `${where}.configMapRef: ${name} not found` });
    return undefined;
  }
  const entries = { ...(cm.spec.binaryData ?? {}), ...(cm.spec.data ?? {}) };
  const keys = Object.keys(entries);
  let key = ref.key;
  if (!key) {
    if (keys.length !== 1) {
      const what = keys.length ? `has ${keys.length} keys (${keys.join(', ')})` : 'has no data';
      sink.problems.push({ code: 'InvalidSpec', message: `${where}: ${name} ${what}; name the descriptor's with key` });
      return undefined;
    }
    key = keys[0]!;
  }
  const value = entries[key]?.replace(/\s+/g, '');
  if (value === undefined) {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}.key: ${name} has no key ${key}` });
    return undefined;
  }
  if (!value || !/^[A-Za-z0-9+/]+={0,2}$/.test(value) || value.length % 4 !== 0) {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}: ${name} key ${key} is not a base64 FileDescriptorSet` });
    return undefined;
  }
  return value;
}

function bindHttpListener(gw: Gateway, configMaps: ReadonlyMap<string, ConfigMap>, sink: BindSink): HttpListenerIR | undefined {
  const o = gw.spec.httpGateway?.options;
  if (!o) return undefined;
  const where = 'httpGateway.options';
  const ir: HttpListenerIR = {};
  if (o.httpConnectionManagerSettings)
    ir.hcm = hcmSettings(o.httpConnectionManagerSettings, `${where}.httpConnectionManagerSettings`, sink);
  if (o.gzip) {
    const { compressionLevel, compressionStrategy, contentType, ...rest } = o.gzip;
    ir.gzip = { ...rest, contentType: contentType ?? [] };
    const level = enumName(GZIP_COMPRESSION_LEVELS, compressionLevel);
    const strategy = enumName(GZIP_COMPRESSION_STRATEGIES, compressionStrategy);
    if (level !== undefined) ir.gzip.compressionLevel = level;
    if (strategy !== undefined) ir.gzip.compressionStrategy = strategy;
  }
  if (o.healthCheck) ir.healthCheckPath = o.healthCheck.path;
  if (o.grpcWeb?.disable) ir.grpcWebDisabled = true;
  if (o.buffer) ir.bufferMaxRequestBytes = o.buffer.maxRequestBytes;
  const t = o.grpcJsonTranscoder;
  if (t) {
    const { protoDescriptor, protoDescriptorBin, protoDescriptorConfigMap, services, ignoredQueryParameters, ...flags } = t;
    const fromConfigMap =
      protoDescriptorConfigMap &&
      descriptorFromConfigMap(protoDescriptorConfigMap, gw.metadata.namespace, configMaps, `${where}.grpcJsonTranscoder.protoDescriptorConfigMap`, sink);
    ir.grpcJsonTranscoder = {
      descriptor: protoDescriptor !== undefined ? { filename: protoDescriptor } : { base64: protoDescriptorBin ?? fromConfigMap ?? '' },
      services,
      ignoredQueryParameters: ignoredQueryParameters ?? [],
      ...flags,
    };
  }
  const rl = o.httpLocalRatelimit;
  if (rl) {
    if (!rl.defaultLimit) {
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${where}.httpLocalRatelimit: has no defaultLimit; only routes' own limits apply`,
      });
    } else {
      ir.localRatelimit = {
        maxTokens: rl.defaultLimit.maxTokens,
        tokensPerFill: rl.defaultLimit.tokensPerFill ?? 1,
        fillInterval: parseDuration(rl.defaultLimit.fillInterval),
        perConnection: rl.localRateLimitPerDownstreamConnection ?? false,
        rateLimitHeaders: rl.enableXRatelimitHeaders ?? false,
      };
    }
  }
  return ir;
}

export function hcmFeature(options: HcmOptions = {}): Feature {
  return {
    name: 'hcm',
    kinds: [],
    resolve(ctx) {
      return {
        bindGateway(gw, ir, sink) {
          const http = bindHttpListener(gw, ctx.index.configMaps, sink);
          if (http) ir.http = http;
        },
      };
    },
    render: hcmRender(options),
  };
}
