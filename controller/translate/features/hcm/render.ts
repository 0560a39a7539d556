// Stage 2 for the hcm feature: the listener's HCM settings and Gloo's HCM defaults, and the gzip,
// health_check and grpc_web filters.
import { typed, type HttpConnectionManager, type HttpFilter, type NetworkFilter, type TypedConfig } from '../../../../envoy/typed.js';
import { duration } from '../../envoy-json.js';
import { transcoderConfig } from '../../grpc-transcoder.js';
import { FilterStage, after, before, type RenderPlugin, type StagedHttpFilter } from '../../feature.js';
import type { HcmSettingsIR, HttpListenerIR } from '../../ir.js';

const HCM_FILTER = 'envoy.filters.network.http_connection_manager';

type Hcm = TypedConfig & HttpConnectionManager;

// by the names protobuf gives back (BEST_COMPRESSION and BEST_SPEED are aliases of these)
const GZIP_LEVELS: Record<string, 'DEFAULT_COMPRESSION' | 'COMPRESSION_LEVEL_9' | 'COMPRESSION_LEVEL_1'> = {
  DEFAULT: 'DEFAULT_COMPRESSION',
  BEST: 'COMPRESSION_LEVEL_9',
  SPEED: 'COMPRESSION_LEVEL_1',
};
const GZIP_STRATEGIES: Record<string, 'DEFAULT_STRATEGY' | 'FILTERED' | 'HUFFMAN_ONLY' | 'RLE'> = {
  DEFAULT: 'DEFAULT_STRATEGY',
  FILTERED: 'FILTERED',
  HUFFMAN: 'HUFFMAN_ONLY',
  RLE: 'RLE',
};

function gzipFilter(g: NonNullable<HttpListenerIR['gzip']>): HttpFilter {
  const gzip = typed('type.googleapis.com/envoy.extensions.compression.gzip.compressor.v3.Gzip', {
    ...(g.memoryLevel !== undefined ? { memory_level: g.memoryLevel } : {}),
    ...(g.compressionLevel !== undefined ? { compression_level: GZIP_LEVELS[g.compressionLevel] ?? 'DEFAULT_COMPRESSION' } : {}),
    ...(g.compressionStrategy !== undefined ? { compression_strategy: GZIP_STRATEGIES[g.compressionStrategy] ?? 'DEFAULT_STRATEGY' } : {}),
    ...(g.windowBits !== undefined ? { window_bits: g.windowBits } : {}),
  });
  return {
    name: 'envoy.filters.http.compressor',
    typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.compressor.v3.Compressor', {
      compressor_library: { name: 'gzip', typed_config: gzip },
      response_direction_config: {
        common_config: {
          ...(g.contentLength !== undefined ? { min_content_length: g.contentLength } : {}),
          ...(g.contentType.length ? { content_type: g.contentType } : {}),
        },
        ...(g.disableOnEtagHeader ? { disable_on_etag_header: true } : {}),
        ...(g.removeAcceptEncodingHeader ? { remove_accept_encoding_header: true } : {}),
      },
    }),
  };
}

const UNDERSCORES: Record<string, 'ALLOW' | 'REJECT_REQUEST' | 'DROP_HEADER'> = {
  ALLOW: 'ALLOW',
  REJECT_CLIENT_REQUEST: 'REJECT_REQUEST',
  DROP_HEADER: 'DROP_HEADER',
};

/** Gloo's settings onto the HCM; each unset one keeps Envoy's default. */
function applySettings(hcm: HttpConnectionManager, s: HcmSettingsIR): void {
  const set = <K extends keyof HttpConnectionManager>(k: K, v: HttpConnectionManager[K] | undefined): void => {
    if (v !== undefined) hcm[k] = v;
  };
  set('skip_xff_append', s.skipXffAppend);
  if (s.via) hcm.via = s.via;
  set('xff_num_trusted_hops', s.xffNumTrustedHops);
  set('use_remote_address', s.useRemoteAddress);
  set('generate_request_id', s.generateRequestId);
  set('proxy_100_continue', s.proxy100Continue);
  set('max_request_headers_kb', s.maxRequestHeadersKb);
  if (s.serverName) hcm.server_name = s.serverName;
  set('strip_any_host_port', s.stripAnyHostPort);
  set('preserve_external_request_id', s.preserveExternalRequestId);
  set('merge_slashes', s.mergeSlashes);
  set('append_x_forwarded_port', s.appendXForwardedPort);
  set('stream_idle_timeout', s.streamIdleTimeout && duration(s.streamIdleTimeout));
  set('request_timeout', s.requestTimeout && duration(s.requestTimeout));
  set('request_headers_timeout', s.requestHeadersTimeout && duration(s.requestHeadersTimeout));
  set('drain_timeout', s.drainTimeout && duration(s.drainTimeout));
  set('delayed_close_timeout', s.delayedCloseTimeout && duration(s.delayedCloseTimeout));
  set('forward_client_cert_details', s.forwardClientCertDetails as HttpConnectionManager['forward_client_cert_details']);
  set('server_header_transformation', s.serverHeaderTransformation as HttpConnectionManager['server_header_transformation']);
  set('path_with_escaped_slashes_action', s.pathWithEscapedSlashesAction as HttpConnectionManager['path_with_escaped_slashes_action']);
  set('codec_type', s.codecType as HttpConnectionManager['codec_type']);
  if (s.setCurrentClientCertDetails) {
    const d = s.setCurrentClientCertDetails;
    hcm.set_current_client_cert_details = {
      ...(d.subject !== undefined ? { subject: d.subject } : {}),
      ...(d.cert ? { cert: true } : {}),
      ...(d.chain ? { chain: true } : {}),
      ...(d.dns ? { dns: true } : {}),
      ...(d.uri ? { uri: true } : {}),
    };
  }
  const common: NonNullable<HttpConnectionManager['common_http_protocol_options']> = {};
  if (s.idleTimeout) common.idle_timeout = duration(s.idleTimeout);
  if (s.maxConnectionDuration) common.max_connection_duration = duration(s.maxConnectionDuration);
  if (s.maxStreamDuration) common.max_stream_duration = duration(s.maxStreamDuration);
  if (s.maxHeadersCount !== undefined) common.max_headers_count = s.maxHeadersCount;
  if (s.headersWithUnderscoresAction) common.headers_with_underscores_action = UNDERSCORES[s.headersWithUnderscoresAction] ?? 'ALLOW';
  if (s.maxRequestsPerConnection !== undefined) common.max_requests_per_connection = s.maxRequestsPerConnection;
  if (Object.keys(common).length) hcm.common_http_protocol_options = common;
  const http1: NonNullable<HttpConnectionManager['http_protocol_options']> = {};
  if (s.acceptHttp10 !== undefined) http1.accept_http_10 = s.acceptHttp10;
  if (s.defaultHostForHttp10) http1.default_host_for_http_10 = s.defaultHostForHttp10;
  if (s.allowChunkedLength !== undefined) http1.allow_chunked_length = s.allowChunkedLength;
  if (s.enableTrailers !== undefined) http1.enable_trailers = s.enableTrailers;
  if (s.headerKeyFormat === 'properCase') http1.header_key_format = { proper_case_words: {} };
  if (s.headerKeyFormat === 'preserveCase') {
    http1.header_key_format = {
      stateful_formatter: {
        name: 'preserve_case',
        typed_config: typed('type.googleapis.com/envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig', {}),
      },
    };
  }
  if (Object.keys(http1).length) hcm.http_protocol_options = http1;
  if (s.http2) {
    const h = s.http2;
    hcm.http2_protocol_options = {
      ...(h.maxConcurrentStreams !== undefined ? { max_concurrent_streams: h.maxConcurrentStreams } : {}),
      ...(h.initialStreamWindowSize !== undefined ? { initial_stream_window_size: h.initialStreamWindowSize } : {}),
      ...(h.initialConnectionWindowSize !== undefined ? { initial_connection_window_size: h.initialConnectionWindowSize } : {}),
      ...(h.overrideStreamErrorOnInvalidHttpMessage !== undefined
        ? { override_stream_error_on_invalid_http_message: h.overrideStreamErrorOnInvalidHttpMessage }
        : {}),
    };
  }
  if (s.internalAddresses) {
    hcm.internal_address_config = {
      ...(s.internalAddresses.unixSockets !== undefined ? { unix_sockets: s.internalAddresses.unixSockets } : {}),
      cidr_ranges: s.internalAddresses.cidrRanges.map((c) => ({ address_prefix: c.addressPrefix, prefix_len: c.prefixLen })),
    };
  }
  if (s.uuidRequestIdConfig) {
    const u = s.uuidRequestIdConfig;
    hcm.request_id_extension = {
      typed_config: typed('type.googleapis.com/envoy.extensions.request_id.uuid.v3.UuidRequestIdConfig', {
        ...(u.packTraceReason !== undefined ? { pack_trace_reason: u.packTraceReason } : {}),
        ...(u.useRequestIdForTraceSampling !== undefined ? { use_request_id_for_trace_sampling: u.useRequestIdForTraceSampling } : {}),
      }),
    };
  }
  if (s.earlyHeaders && (s.earlyHeaders.add.length || s.earlyHeaders.remove.length)) {
    const mutations = [
      ...s.earlyHeaders.add.map((h) => ({
        append: {
          header: { key: h.key, value: h.value },
          append_action: h.append ? ('APPEND_IF_EXISTS_OR_ADD' as const) : ('OVERWRITE_IF_EXISTS_OR_ADD' as const),
        },
      })),
      ...s.earlyHeaders.remove.map((name) => ({ remove: name })),
    ];
    (hcm.early_header_mutation_extensions ??= []).push({
      name: 'envoy.http.early_header_mutation.header_mutation',
      typed_config: typed('type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation', {
        mutations,
      }),
    });
  }
  // the listener's own entries come first; the upgrades feature adds WebSocket only when none is there
  if (s.upgrades?.length) {
    hcm.upgrade_configs = s.upgrades.map((u) => ({ upgrade_type: u.type, ...(u.enabled !== undefined ? { enabled: u.enabled } : {}) }));
  }
}

/** connectionLimit and networkLocalRatelimit: Envoy's network filters, as a tcpGateway renders them. */
function networkFilters(http: HttpListenerIR | undefined, listenerName: string): NetworkFilter[] {
  const out: NetworkFilter[] = [];
  const c = http?.connectionLimit;
  if (c) {
    out.push({
      name: 'envoy.filters.network.connection_limit',
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.connection_limit.v3.ConnectionLimit', {
        stat_prefix: 'connection_limit',
        max_connections: c.maxActiveConnections,
        ...(c.delayBeforeClose ? { delay: duration(c.delayBeforeClose) } : {}),
      }),
    });
  }
  const r = http?.networkLocalRatelimit;
  if (r) {
    out.push({
      name: 'envoy.filters.network.local_ratelimit',
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit', {
        stat_prefix: 'network_local_ratelimit',
        // one bucket for the listener's filter chains
        share_key: listenerName,
        token_bucket: { max_tokens: r.maxTokens, tokens_per_fill: r.tokensPerFill, fill_interval: duration(r.fillInterval) },
      }),
    });
  }
  return out;
}

function statefulSessionFilter(s: NonNullable<HttpListenerIR['statefulSession']>): HttpFilter {
  const state = s.cookie
    ? {
        name: 'envoy.http.stateful_session.cookie',
        typed_config: typed('type.googleapis.com/envoy.extensions.http.stateful_session.cookie.v3.CookieBasedSessionState', {
          cookie: {
            name: s.cookie.name,
            ...(s.cookie.ttl ? { ttl: duration(s.cookie.ttl) } : {}),
            ...(s.cookie.path ? { path: s.cookie.path } : {}),
          },
        }),
      }
    : {
        name: 'envoy.http.stateful_session.header',
        typed_config: typed('type.googleapis.com/envoy.extensions.http.stateful_session.header.v3.HeaderBasedSessionState', {
          name: s.header ?? '',
        }),
      };
  return {
    name: 'envoy.filters.http.stateful_session',
    typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.stateful_session.v3.StatefulSession', {
      session_state: state,
      ...(s.strict ? { strict: true } : {}),
    }),
  };
}

export interface HcmOptions {
  /** Settings gloo.disableGrpcWeb: no grpc_web filter on any listener */
  disableGrpcWeb?: boolean;
}

export function hcmRender(options: HcmOptions): RenderPlugin {
  return {
    httpFilters(_proxy, listener) {
      const http = listener.http;
      const out: StagedHttpFilter[] = [];
      if (http?.healthCheckPath !== undefined) {
        // answers the load balancer's checks itself, before anything else looks at the request
        const filter: HttpFilter = {
          name: 'envoy.filters.http.health_check',
          typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.health_check.v3.HealthCheck', {
            pass_through_mode: false,
            headers: [{ name: ':path', string_match: { exact: http.healthCheckPath } }],
          }),
        };
        out.push({ position: before(FilterStage.Fault), filter });
      }
      if (!options.disableGrpcWeb && !http?.grpcWebDisabled) {
        const filter: HttpFilter = {
          name: 'envoy.filters.http.grpc_web',
          typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.grpc_web.v3.GrpcWeb', {}),
        };
        // after CORS, which answers grpc-web preflights
        out.push({ position: after(FilterStage.Fault), filter });
      }
      const t = http?.grpcJsonTranscoder;
      if (t) {
        const filter: HttpFilter = {
          name: 'envoy.filters.http.grpc_json_transcoder',
          typed_config: typed(
            'type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder',
            transcoderConfig(t),
          ),
        };
        // after authentication and rate limits, as the last step before routing to the gRPC upstream
        out.push({ position: before(FilterStage.Route), filter });
      }
      // compresses what every filter after it answers, the router's responses included
      if (http?.gzip) out.push({ position: before(FilterStage.Fault), filter: gzipFilter(http.gzip) });
      if (http?.statefulSession) out.push({ position: before(FilterStage.Route), filter: statefulSessionFilter(http.statefulSession) });
      return out;
    },
    patchListener(ir, listener, filters) {
      // connections are limited and rate limited before the HCM reads a byte (and before TLS, on an ssl listener)
      filters.unshift(...networkFilters(ir.http, listener.name ?? ''));
      for (const f of filters) {
        if (f.name !== HCM_FILTER || !f.typed_config) continue;
        const hcm = f.typed_config as Hcm;
        // Gloo's default (its hcm plugin): paths normalised (RFC 3986) before routing
        hcm.normalize_path = ir.http?.hcm?.normalizePath ?? true;
        if (ir.http?.hcm) applySettings(hcm, ir.http.hcm);
        const router = ir.http?.router;
        const routerFilter = hcm.http_filters?.find((h) => h.name === 'envoy.filters.http.router');
        if (router && routerFilter) {
          routerFilter.typed_config = typed('type.googleapis.com/envoy.extensions.filters.http.router.v3.Router', {
            ...(router.dynamicStats !== undefined ? { dynamic_stats: router.dynamicStats } : {}),
            ...(router.suppressEnvoyHeaders ? { suppress_envoy_headers: true } : {}),
          });
        }
      }
    },
  };
}
