// The HTTP connection manager of a Gateway's listener: `httpGateway.options.httpConnectionManagerSettings`
// (Gloo's hcm.proto) onto Envoy's HCM, Gloo's defaults where it has them (normalize_path on, grpc_web on
// unless Settings gloo.disableGrpcWeb or grpcWeb.disable), and the listener-wide filters gzip (Envoy's
// compressor with gzip) and healthCheck (Envoy's health_check filter, answering itself). The listener's
// buffer and httpLocalRatelimit are bound here and rendered by the buffer and ratelimit features, which
// own those filters; csrf is the cors feature's.
import type { ConfigMap, Gateway, Secret } from '../../../api/resources.js';
import { parseDuration } from '../../duration.js';
import { enumName, type BindSink, type Feature } from '../../feature.js';
import type { HcmSettingsIR, HttpListenerIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { secretValue } from '../../secrets.js';
import { resolveTranscoder } from '../../grpc-transcoder.js';
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

/** Envoy's %…% command operators: NAME, NAME(args), NAME(args):LENGTH; `%%` is a literal %. */
const OPERATOR = /%(%|[A-Z_][A-Z0-9_]*(\([^)]*\))?(:\d+)?%)/g;

/** Gloo reads header secrets of these types (a Secret without a type is Opaque). */
const HEADER_SECRET_TYPES = ['gloo.solo.io/header', 'Opaque'];

/** earlyHeaderManipulation: each header, or every key of a Secret; `append` defaults to true, as in Gloo. */
function earlyHeaders(
  e: NonNullable<HttpConnectionManagerSettings['earlyHeaderManipulation']>,
  where: string,
  refs: Refs,
  sink: BindSink,
): NonNullable<HcmSettingsIR['earlyHeaders']> {
  const add: NonNullable<HcmSettingsIR['earlyHeaders']>['add'] = [];
  (e.headersToAdd ?? []).forEach((o, i) => {
    const at = `${where}.headersToAdd[${i}]`;
    const append = o.append ?? true;
    if (o.header) {
      const value = o.header.value ?? '';
      if (/[\0\r\n]/.test(value)) sink.problems.push({ code: 'InvalidSpec', message: `${at}.header.value: has a line break or NUL` });
      else if (value.replace(OPERATOR, '').includes('%')) {
        const message = `${at}.header.value: a % starts one of Envoy's %OPERATOR% values; write a literal % as %%`;
        sink.problems.push({ code: 'InvalidSpec', message });
      } else add.push({ key: o.header.key, value, append });
      return;
    }
    const ref = o.headerSecretRef;
    if (!ref) return;
    const ns = ref.namespace || refs.namespace;
    const name = `${ns}.${ref.name}`;
    const secret = refs.secrets.get(nsName(ns, ref.name));
    if (!secret) {
      sink.problems.push({ code: 'SecretNotFound', message: `${at}.headerSecretRef: Secret ${name} not found` });
      return;
    }
    const type = secret.spec.type ?? 'Opaque';
    if (!HEADER_SECRET_TYPES.includes(type)) {
      const message = `${at}.headerSecretRef: Secret ${name} has type ${type}; header secrets have type gloo.solo.io/header or Opaque`;
      sink.problems.push({ code: 'InvalidSpec', message });
      return;
    }
    const keys = [...new Set([...Object.keys(secret.spec.data ?? {}), ...Object.keys(secret.spec.stringData ?? {})])].sort();
    if (!keys.length)
      sink.problems.push({ code: 'InvalidSpec', message: `${at}.headerSecretRef: Secret ${name} has no data: no header to add` });
    for (const key of keys) {
      const value = secretValue(secret, key) ?? '';
      if (/[\0\r\n]/.test(value)) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${at}.headerSecretRef: the value of Secret ${name} key ${key} has a line break or NUL`,
        });
        continue;
      }
      // Envoy formats these values: a Secret's % is a literal one
      add.push({ key, value: value.replaceAll('%', '%%'), append });
    }
  });
  return { add, remove: e.headersToRemove ?? [] };
}

/** What a Gateway's options may name: its namespace's Secrets and ConfigMaps. */
interface Refs {
  namespace: string;
  secrets: ReadonlyMap<string, Secret>;
  configMaps: ReadonlyMap<string, ConfigMap>;
}

function hcmSettings(s: HttpConnectionManagerSettings, where: string, refs: Refs, sink: BindSink): HcmSettingsIR {
  const {
    upgrades,
    forwardClientCertDetails,
    headersWithUnderscoresAction,
    serverHeaderTransformation,
    pathWithEscapedSlashesAction,
    codecType,
    properCaseHeaderKeyFormat,
    preserveCaseHeaderKeyFormat,
    earlyHeaderManipulation,
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
  if (properCaseHeaderKeyFormat && preserveCaseHeaderKeyFormat) {
    const message = `${where}: set at most one of properCaseHeaderKeyFormat, preserveCaseHeaderKeyFormat`;
    sink.problems.push({ code: 'InvalidSpec', message });
  }
  if (properCaseHeaderKeyFormat) ir.headerKeyFormat = 'properCase';
  else if (preserveCaseHeaderKeyFormat) ir.headerKeyFormat = 'preserveCase';
  if (earlyHeaderManipulation) ir.earlyHeaders = earlyHeaders(earlyHeaderManipulation, `${where}.earlyHeaderManipulation`, refs, sink);
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

function bindHttpListener(gw: Gateway, refs: Refs, sink: BindSink): HttpListenerIR | undefined {
  const o = gw.spec.httpGateway?.options;
  if (!o) return undefined;
  const where = 'httpGateway.options';
  const ir: HttpListenerIR = {};
  if (o.httpConnectionManagerSettings)
    ir.hcm = hcmSettings(o.httpConnectionManagerSettings, `${where}.httpConnectionManagerSettings`, refs, sink);
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
    const transcoder = resolveTranscoder(t, `${where}.grpcJsonTranscoder`, refs.namespace, refs.configMaps, sink.problems);
    if (transcoder) ir.grpcJsonTranscoder = transcoder;
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
  if (o.connectionLimit) {
    const c = o.connectionLimit;
    ir.connectionLimit = { maxActiveConnections: c.maxActiveConnections };
    if (c.delayBeforeClose !== undefined) ir.connectionLimit.delayBeforeClose = parseDuration(c.delayBeforeClose);
  }
  if (o.networkLocalRatelimit) {
    const r = o.networkLocalRatelimit;
    // as on a tcpGateway: without tokensPerFill the bucket refills to full
    ir.networkLocalRatelimit = {
      maxTokens: r.maxTokens,
      tokensPerFill: r.tokensPerFill ?? r.maxTokens,
      fillInterval: parseDuration(r.fillInterval),
    };
  }
  const ss = o.statefulSession;
  if (ss) {
    ir.statefulSession = { strict: ss.strict ?? false };
    if (ss.cookieBased) {
      const c = ss.cookieBased.cookie;
      ir.statefulSession.cookie = { name: c.name };
      if (c.ttl !== undefined) ir.statefulSession.cookie.ttl = parseDuration(c.ttl);
      if (c.path) ir.statefulSession.cookie.path = c.path;
    }
    if (ss.headerBased) ir.statefulSession.header = ss.headerBased.headerName;
  }
  if (o.router) {
    ir.router = {};
    if (o.router.suppressEnvoyHeaders !== undefined) ir.router.suppressEnvoyHeaders = o.router.suppressEnvoyHeaders;
    if (o.router.dynamicStats !== undefined) ir.router.dynamicStats = o.router.dynamicStats;
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
          const refs = { namespace: gw.metadata.namespace, secrets: ctx.index.secrets, configMaps: ctx.index.configMaps };
          const http = bindHttpListener(gw, refs, sink);
          if (http) ir.http = http;
        },
      };
    },
    render: hcmRender(options),
  };
}
