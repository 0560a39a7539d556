// A Gateway's listener-level fields: `useProxyProto` and `options.proxyProtocol` (Envoy's proxy_protocol listener
// filter, in front of tls_inspector), `options.accessLoggingService` (the HCM's access logs: files with Envoy's format
// strings or JSON dictionaries, or gRPC ALS to an Upstream's cluster, with Gloo's filters),
// `listenerAccessLoggingService` (the listener's own), `perConnectionBufferLimitBytes`, `socketOptions`,
// `connectionBalanceConfig`, and `routeOptions` on the listener's RouteConfiguration.
import type { Gateway } from '../../../api/resources.js';
import type { GatewaySpec } from '../../../api/schemas.js';
import {
  typed,
  type HeaderMatcher,
  type HttpConnectionManager,
  type Listener,
  type TcpProxy,
  type TypedConfig,
  type envoy_config_accesslog_v3_AccessLog,
  type envoy_config_accesslog_v3_AccessLogFilter,
  type envoy_config_accesslog_v3_ComparisonFilter,
} from '../../../../envoy/typed.js';
import type { BindSink, Feature, UpstreamLookup } from '../../feature.js';
import type { AccessLogComparisonIR, AccessLogFilterIR, AccessLogIR, ListenerOptionsIR } from '../../ir.js';
import { GRPC_STATUSES, type AccessLog, type AccessLogFilter } from './schema.js';

const HCM_FILTER = 'envoy.filters.network.http_connection_manager';
const TCP_PROXY_FILTER = 'envoy.filters.network.tcp_proxy';
const DENOMINATORS = ['HUNDRED', 'TEN_THOUSAND', 'MILLION'] as const;
const OPS = ['EQ', 'GE', 'LE'] as const;
const SOCKET_STATES = ['STATE_PREBIND', 'STATE_BOUND', 'STATE_LISTENING'] as const;

type Spec = Gateway['spec'];

/**
 * The fields of Legate's default access log line, named as in Envoy's default format: what an operator reads (time,
 * request, answer, flags, bytes, duration, upstream, request id, client headers). Each operator costs Envoy on every
 * request; docs/benchmarks.md "Access logs on the hot path" measured the choice.
 */
export const DEFAULT_ACCESS_LOG_FORMAT: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  method: '%REQ(:METHOD)%',
  path: '%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%',
  response_code: '%RESPONSE_CODE%',
  response_flags: '%RESPONSE_FLAGS%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  duration: '%DURATION%',
  x_forwarded_for: '%REQ(X-FORWARDED-FOR)%',
  user_agent: '%REQ(USER-AGENT)%',
  request_id: '%REQ(X-REQUEST-ID)%',
  authority: '%REQ(:AUTHORITY)%',
  upstream_host: '%UPSTREAM_HOST%',
};

/** The options of the default Gateways (no Gateway resource): a JSON access log line per request to `path`. */
export function defaultAccessLog(path: string): NonNullable<GatewaySpec['options']> {
  return { accessLoggingService: { accessLog: [{ fileSink: { path, jsonFormat: { ...DEFAULT_ACCESS_LOG_FORMAT } } }] } };
}

export const listenerFeature: Feature = {
  name: 'listener',
  kinds: [],
  resolve(ctx) {
    return {
      bindGateway(gw, ir, sink) {
        const options = bindListenerOptions(gw.spec, sink, ctx.upstreams());
        if (options) ir.options = options;
      },
    };
  },
  render: {
    patchListener(ir, listener) {
      const o = ir.options;
      if (!o) return;
      if (o.proxyProtocol) {
        const pp = o.proxyProtocol;
        const filter = {
          name: 'envoy.filters.listener.proxy_protocol',
          typed_config: typed('type.googleapis.com/envoy.extensions.filters.listener.proxy_protocol.v3.ProxyProtocol', {
            ...(pp.rules.length
              ? {
                  rules: pp.rules.map((r) => ({
                    tlv_type: r.tlvType,
                    ...(r.key !== undefined
                      ? { on_tlv_present: { key: r.key, ...(r.metadataNamespace ? { metadata_namespace: r.metadataNamespace } : {}) } }
                      : {}),
                  })),
                }
              : {}),
            ...(pp.allowWithout ? { allow_requests_without_proxy_protocol: true } : {}),
          }),
        };
        // first: the PROXY header comes before the TLS ClientHello tls_inspector reads
        const chains = listener.filter_chains;
        delete listener.filter_chains;
        listener.listener_filters = [filter, ...(listener.listener_filters ?? [])];
        listener.filter_chains = chains;
      }
      if (o.perConnectionBufferLimitBytes !== undefined) listener.per_connection_buffer_limit_bytes = o.perConnectionBufferLimitBytes;
      if (o.socketOptions) {
        listener.socket_options = o.socketOptions.map((s) => ({
          ...(s.description !== undefined ? { description: s.description } : {}),
          level: s.level,
          name: s.name,
          ...(s.intValue !== undefined ? { int_value: s.intValue } : { buf_value: s.bufValue }),
          state: s.state as (typeof SOCKET_STATES)[number],
        }));
      }
      if (o.exactBalance) listener.connection_balance_config = { exact_balance: {} };
      if (o.listenerAccessLogs?.length) listener.access_log = o.listenerAccessLogs.map(renderAccessLog);
      if (o.accessLogs?.length) {
        const logs = o.accessLogs.map(renderAccessLog);
        for (const hcm of hcmsOf(listener)) hcm.access_log = [...(hcm.access_log ?? []), ...logs];
        // a tcpGateway's connections: file logs (Legate's gRPC access log is HTTP's; the tcp feature says so)
        const files = o.accessLogs.filter((l) => l.file).map(renderAccessLog);
        for (const tcp of tcpProxiesOf(listener)) if (files.length) tcp.access_log = [...(tcp.access_log ?? []), ...files];
      }
    },
    patchRouteConfig(ir, config) {
      const rc = ir.options?.routeConfig;
      if (rc?.maxDirectResponseBodySizeBytes !== undefined) config.max_direct_response_body_size_bytes = rc.maxDirectResponseBodySizeBytes;
      if (rc?.mostSpecificHeaderMutationsWins !== undefined)
        config.most_specific_header_mutations_wins = rc.mostSpecificHeaderMutationsWins;
    },
  },
};

/** Every HCM of the listener, once (TLS filter chains may share one). */
function hcmsOf(listener: Listener): (TypedConfig & HttpConnectionManager)[] {
  const seen = new Set<TypedConfig>();
  for (const chain of listener.filter_chains ?? []) {
    for (const f of chain.filters ?? []) if (f.name === HCM_FILTER && f.typed_config) seen.add(f.typed_config);
  }
  return [...seen] as (TypedConfig & HttpConnectionManager)[];
}

/** Every tcp_proxy of the listener (tcpGateway filter chains). */
function tcpProxiesOf(listener: Listener): (TypedConfig & TcpProxy)[] {
  return (listener.filter_chains ?? []).flatMap((chain) =>
    (chain.filters ?? []).flatMap((f) => (f.name === TCP_PROXY_FILTER && f.typed_config ? [f.typed_config as TypedConfig & TcpProxy] : [])),
  );
}

// ---- stage 1 ----

function bindListenerOptions(spec: Spec, sink: BindSink, upstreams: UpstreamLookup): ListenerOptionsIR | undefined {
  const o = spec.options;
  const ir: ListenerOptionsIR = {};
  if (spec.useProxyProto || o?.proxyProtocol) {
    const pp = o?.proxyProtocol;
    ir.proxyProtocol = {
      rules: (pp?.rules ?? []).map((r) => ({
        tlvType: r.tlvType,
        ...(r.onTlvPresent ? { key: r.onTlvPresent.key } : {}),
        ...(r.onTlvPresent?.metadataNamespace ? { metadataNamespace: r.onTlvPresent.metadataNamespace } : {}),
      })),
      allowWithout: pp?.allowRequestsWithoutProxyProtocol ?? false,
    };
  }
  const logs = (field: 'accessLoggingService' | 'listenerAccessLoggingService'): AccessLogIR[] =>
    (o?.[field]?.accessLog ?? []).flatMap((log, i) => bindAccessLog(log, `spec.options.${field}.accessLog[${i}]`, sink, upstreams) ?? []);
  const accessLogs = logs('accessLoggingService');
  if (accessLogs.length) ir.accessLogs = accessLogs;
  const listenerLogs = logs('listenerAccessLoggingService');
  if (listenerLogs.length) ir.listenerAccessLogs = listenerLogs;
  if (o?.perConnectionBufferLimitBytes !== undefined) ir.perConnectionBufferLimitBytes = o.perConnectionBufferLimitBytes;
  if (o?.socketOptions?.length) {
    ir.socketOptions = o.socketOptions.map((s) => ({
      ...(s.description !== undefined ? { description: s.description } : {}),
      level: s.level,
      name: s.name,
      ...(s.intValue !== undefined ? { intValue: s.intValue } : { bufValue: s.bufValue }),
      state: typeof s.state === 'number' ? SOCKET_STATES[s.state]! : (s.state ?? 'STATE_PREBIND'),
    }));
  }
  if (o?.connectionBalanceConfig?.exactBalance) ir.exactBalance = true;
  const ro = spec.routeOptions;
  if (ro && (ro.maxDirectResponseBodySizeBytes !== undefined || ro.mostSpecificHeaderMutationsWins !== undefined)) {
    ir.routeConfig = { ...ro };
  }
  return Object.keys(ir).length ? ir : undefined;
}

function bindAccessLog(log: AccessLog, where: string, sink: BindSink, upstreams: UpstreamLookup): AccessLogIR | undefined {
  const ir: AccessLogIR = {};
  if (log.fileSink) {
    const f = log.fileSink;
    ir.file = { path: f.path };
    // "" is Gloo's way of asking for Envoy's default format
    if (f.stringFormat) ir.file.text = f.stringFormat;
    if (f.jsonFormat !== undefined) ir.file.json = f.jsonFormat;
  } else if (log.grpcService) {
    const g = log.grpcService;
    const upstream = [...upstreams.resolved.values()].find((u) => u.cluster === g.staticClusterName);
    if (!upstream) {
      const message =
        `${where}.grpcService.staticClusterName: no Upstream renders cluster "${g.staticClusterName}" ` +
        '(Legate names an Upstream\'s cluster "<name>_<namespace>"); this access log is not rendered';
      sink.warnings.push({ code: 'InvalidSpec', message });
      return undefined;
    }
    if (!upstream.http2) {
      const { namespace, name } = upstream.source;
      const message =
        `${where}.grpcService.staticClusterName: Upstream ${namespace}/${name} speaks gRPC only with useHttp2: true; ` +
        'this access log is not rendered';
      sink.warnings.push({ code: 'InvalidSpec', message });
      return undefined;
    }
    ir.grpc = { logName: g.logName, cluster: g.staticClusterName };
    if (g.additionalRequestHeadersToLog?.length) ir.grpc.requestHeaders = g.additionalRequestHeadersToLog;
    if (g.additionalResponseHeadersToLog?.length) ir.grpc.responseHeaders = g.additionalResponseHeadersToLog;
    if (g.additionalResponseTrailersToLog?.length) ir.grpc.responseTrailers = g.additionalResponseTrailersToLog;
    if (g.filterStateObjectsToLog?.length) ir.grpc.filterStateObjects = g.filterStateObjectsToLog;
  }
  if (log.filter) ir.filter = bindFilter(log.filter);
  return ir;
}

const comparison = (c: { op?: string | number; value: { defaultValue?: number; runtimeKey: string } }): AccessLogComparisonIR => ({
  op: typeof c.op === 'number' ? OPS[c.op]! : ((c.op ?? 'EQ') as AccessLogComparisonIR['op']),
  value: c.value.defaultValue ?? 0,
  runtimeKey: c.value.runtimeKey,
});

function bindFilter(f: AccessLogFilter): AccessLogFilterIR {
  if (f.statusCodeFilter) return { statusCode: comparison(f.statusCodeFilter.comparison) };
  if (f.durationFilter) return { duration: comparison(f.durationFilter.comparison) };
  if (f.notHealthCheckFilter) return { notHealthCheck: true };
  if (f.traceableFilter) return { traceable: true };
  if (f.runtimeFilter) {
    const r = f.runtimeFilter;
    const d = r.percentSampled?.denominator ?? 'HUNDRED';
    return {
      runtime: {
        runtimeKey: r.runtimeKey,
        numerator: r.percentSampled?.numerator ?? 0,
        denominator: typeof d === 'number' ? DENOMINATORS[d]! : d,
        independent: r.useIndependentRandomness ?? false,
      },
    };
  }
  if (f.andFilter) return { and: f.andFilter.filters.map(bindFilter) };
  if (f.orFilter) return { or: f.orFilter.filters.map(bindFilter) };
  if (f.headerFilter) {
    const h = f.headerFilter.header;
    const header: Extract<AccessLogFilterIR, { header: unknown }>['header'] = { name: h.name, invert: h.invertMatch ?? false };
    if (h.exactMatch !== undefined) header.match = { exact: h.exactMatch };
    else if (h.prefixMatch !== undefined) header.match = { prefix: h.prefixMatch };
    else if (h.suffixMatch !== undefined) header.match = { suffix: h.suffixMatch };
    else if (h.containsMatch !== undefined) header.match = { contains: h.containsMatch };
    else if (h.safeRegexMatch !== undefined) header.match = { regex: h.safeRegexMatch.regex };
    else if (h.rangeMatch !== undefined) header.range = h.rangeMatch;
    else header.match = { present: h.presentMatch ?? true };
    return { header };
  }
  if (f.responseFlagFilter) return { responseFlags: f.responseFlagFilter.flags ?? [] };
  const g = f.grpcStatusFilter ?? {};
  return {
    grpcStatus: {
      statuses: (g.statuses ?? []).map((s) => (typeof s === 'number' ? GRPC_STATUSES[s]! : s)),
      exclude: g.exclude ?? false,
    },
  };
}

// ---- stage 2 ----

function renderAccessLog(log: AccessLogIR): envoy_config_accesslog_v3_AccessLog {
  const out: envoy_config_accesslog_v3_AccessLog = {};
  if (log.file) {
    const f = log.file;
    out.name = 'envoy.access_loggers.file';
    out.typed_config = typed('type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog', {
      path: f.path,
      ...(f.text !== undefined ? { log_format: { text_format_source: { inline_string: f.text } } } : {}),
      ...(f.json !== undefined ? { log_format: { json_format: f.json } } : {}),
    });
  } else if (log.grpc) {
    const g = log.grpc;
    out.name = 'envoy.access_loggers.http_grpc';
    out.typed_config = typed('type.googleapis.com/envoy.extensions.access_loggers.grpc.v3.HttpGrpcAccessLogConfig', {
      common_config: {
        log_name: g.logName,
        grpc_service: { envoy_grpc: { cluster_name: g.cluster } },
        transport_api_version: 'V3',
        ...(g.filterStateObjects ? { filter_state_objects_to_log: g.filterStateObjects } : {}),
      },
      ...(g.requestHeaders ? { additional_request_headers_to_log: g.requestHeaders } : {}),
      ...(g.responseHeaders ? { additional_response_headers_to_log: g.responseHeaders } : {}),
      ...(g.responseTrailers ? { additional_response_trailers_to_log: g.responseTrailers } : {}),
    });
  }
  if (log.filter) out.filter = renderFilter(log.filter);
  return out;
}

const renderComparison = (c: AccessLogComparisonIR): envoy_config_accesslog_v3_ComparisonFilter => ({
  op: c.op,
  value: { default_value: c.value, runtime_key: c.runtimeKey },
});

function renderFilter(f: AccessLogFilterIR): envoy_config_accesslog_v3_AccessLogFilter {
  if ('statusCode' in f) return { status_code_filter: { comparison: renderComparison(f.statusCode) } };
  if ('duration' in f) return { duration_filter: { comparison: renderComparison(f.duration) } };
  if ('notHealthCheck' in f) return { not_health_check_filter: {} };
  if ('traceable' in f) return { traceable_filter: {} };
  if ('runtime' in f) {
    const r = f.runtime;
    return {
      runtime_filter: {
        runtime_key: r.runtimeKey,
        percent_sampled: { numerator: r.numerator, denominator: r.denominator },
        ...(r.independent ? { use_independent_randomness: true } : {}),
      },
    };
  }
  if ('and' in f) return { and_filter: { filters: f.and.map(renderFilter) } };
  if ('or' in f) return { or_filter: { filters: f.or.map(renderFilter) } };
  if ('header' in f) {
    const h = f.header;
    const header: HeaderMatcher = { name: h.name };
    const m = h.match;
    if (h.range) header.range_match = { start: h.range.start, end: h.range.end };
    else if (m?.present !== undefined) header.present_match = m.present;
    else if (m?.exact !== undefined) header.string_match = { exact: m.exact };
    else if (m?.prefix !== undefined) header.string_match = { prefix: m.prefix };
    else if (m?.suffix !== undefined) header.string_match = { suffix: m.suffix };
    else if (m?.contains !== undefined) header.string_match = { contains: m.contains };
    else if (m?.regex !== undefined) header.string_match = { safe_regex: { regex: m.regex } };
    if (h.invert) header.invert_match = true;
    return { header_filter: { header } };
  }
  if ('responseFlags' in f) return { response_flag_filter: f.responseFlags.length ? { flags: f.responseFlags } : {} };
  return {
    grpc_status_filter: {
      ...(f.grpcStatus.statuses.length ? { statuses: f.grpcStatus.statuses as (typeof GRPC_STATUSES)[number][] } : {}),
      ...(f.grpcStatus.exclude ? { exclude: true } : {}),
    },
  };
}
