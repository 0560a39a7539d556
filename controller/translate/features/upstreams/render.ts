// Stage 2 for upstreams: clusters and endpoints, including upstream TLS.
import { isIP } from 'node:net';
import {
  typed,
  type Cluster,
  type Listener,
  type ClusterLoadAssignment,
  type CommonTlsContext,
  type HttpProtocolOptions,
  type LbEndpoint,
  type TransportSocket,
  type UpstreamTlsContext,
  type envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext as CertificateValidationContext,
  type envoy_config_cluster_v3_Cluster_SlowStartConfig as SlowStartConfig,
  type envoy_config_core_v3_Http1ProtocolOptions as Http1ProtocolOptions,
  type envoy_config_core_v3_Http2ProtocolOptions as Http2ProtocolOptions,
  type envoy_config_core_v3_HttpProtocolOptions as CommonHttpProtocolOptions,
  type envoy_config_endpoint_v3_LocalityLbEndpoints as LocalityLbEndpoints,
} from '../../../../envoy/typed.js';
import { dataSource, duration, setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, before, type RenderPlugin } from '../../feature.js';
import { transcoderConfig } from '../../grpc-transcoder.js';
import { perProxy, someRoute } from '../../proxy-facts.js';
import type { EndpointIR, FailoverPriorityIR, LoadBalancerIR, UpstreamConnectionIR, UpstreamIR, UpstreamTlsIR } from '../../ir.js';

/** The internal listener an upstream tunnelled through a CONNECT proxy connects to, and the cluster of that proxy. */
const tunnelListener = (ir: UpstreamIR): string => `legate-connect-${ir.cluster}`;
const tunnelProxyCluster = (ir: UpstreamIR): string => `${ir.cluster}-connect-proxy`;

/**
 * httpProxyHostname, as Gloo renders it: the upstream's cluster (what routes name) connects to an internal listener,
 * with httpConnectSslConfig's TLS inside the tunnel; that listener's tcp_proxy sends CONNECT hostname (with
 * httpConnectHeaders) over a cluster of the upstream's hosts, the proxy, with the upstream's own sslConfig to it.
 */
function tunnelEntry(ir: UpstreamIR, cluster: Cluster): void {
  if (!ir.tunnel) return;
  delete cluster.eds_cluster_config;
  delete cluster.dns_lookup_family;
  delete cluster.dns_refresh_rate;
  delete cluster.respect_dns_ttl;
  delete cluster.transport_socket;
  cluster.type = 'STATIC';
  const address = { envoy_internal_address: { server_listener_name: tunnelListener(ir) } };
  cluster.load_assignment = { cluster_name: ir.cluster, endpoints: [{ lb_endpoints: [{ endpoint: { address } }] }] };
  if (ir.tunnel.tls) cluster.transport_socket = upstreamTls(ir.tunnel.tls);
}

function tunnelClusters(upstreams: readonly UpstreamIR[]): Cluster[] {
  return upstreams.flatMap((ir) => {
    if (!ir.tunnel) return [];
    const name = tunnelProxyCluster(ir);
    const names = ir.endpoints.some((e) => !e.pipe && isIP(e.address) === 0);
    const endpoints = ir.endpoints.map((e) => ({
      endpoint: { address: e.pipe ? { pipe: { path: e.address } } : { socket_address: { address: e.address, port_value: e.port } } },
      ...(e.weight !== undefined ? { load_balancing_weight: e.weight } : {}),
    }));
    const cluster: Cluster = {
      name,
      connect_timeout: duration(ir.connectTimeout),
      ...(names ? { type: 'STRICT_DNS' as const, dns_lookup_family: 'V4_PREFERRED' as const } : { type: 'STATIC' as const }),
      load_assignment: { cluster_name: name, endpoints: [{ lb_endpoints: endpoints }] },
      ...(ir.tls ? { transport_socket: upstreamTls(ir.tls) } : {}),
    };
    return [cluster];
  });
}

function tunnelListeners(upstreams: readonly UpstreamIR[]): Listener[] {
  return upstreams.flatMap((ir) => {
    const t = ir.tunnel;
    if (!t) return [];
    const proxy = typed('type.googleapis.com/envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy', {
      stat_prefix: 'connect',
      cluster: tunnelProxyCluster(ir),
      tunneling_config: {
        hostname: t.hostname,
        ...(t.headers.length
          ? {
              headers_to_add: t.headers.map((h) => ({
                header: { key: h.key, value: h.value },
                append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' as const,
              })),
            }
          : {}),
      },
    });
    const listener: Listener = {
      name: tunnelListener(ir),
      internal_listener: {},
      filter_chains: [{ filters: [{ name: 'envoy.filters.network.tcp_proxy', typed_config: proxy }] }],
    };
    return [listener];
  });
}

/** The transcoder of the routes to Upstreams with serviceSpec.grpcJsonTranscoder: off on the HCM, on per route. */
const UPSTREAM_TRANSCODER = 'envoy.filters.http.grpc_json_transcoder.upstream';
const transcodesPerRoute = perProxy((proxy) => someRoute(proxy, (r) => r.grpcJsonTranscoder !== undefined));

export const upstreamsRender: RenderPlugin = {
  loadAssignment,
  httpFilters(proxy) {
    if (!transcodesPerRoute(proxy)) return [];
    // no services: off, except where a route's config names the Upstream's
    const off = typed('type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder', {
      proto_descriptor_bin: '',
      services: [],
    });
    return [{ position: before(FilterStage.Route), filter: { name: UPSTREAM_TRANSCODER, typed_config: off } }];
  },
  patchRoute(ir, route) {
    if (!ir.grpcJsonTranscoder) return;
    const config = typed(
      'type.googleapis.com/envoy.extensions.filters.http.grpc_json_transcoder.v3.GrpcJsonTranscoder',
      transcoderConfig(ir.grpcJsonTranscoder),
    );
    setPerFilterConfig(route, UPSTREAM_TRANSCODER, config);
  },
  extraClusters: (_proxy, upstreams) => tunnelClusters(upstreams),
  extraListeners: (_proxy, upstreams) => tunnelListeners(upstreams),
  patchCluster(ir, cluster) {
    cluster.connect_timeout = duration(ir.connectTimeout);
    if (ir.discovery === 'EDS') {
      cluster.type = 'EDS';
      cluster.eds_cluster_config = { eds_config: { ads: {}, resource_api_version: 'V3' } };
    } else {
      cluster.type = 'STRICT_DNS';
      cluster.dns_lookup_family = 'V4_PREFERRED';
      cluster.load_assignment = loadAssignment(ir);
      if (ir.dnsRefreshRate) cluster.dns_refresh_rate = duration(ir.dnsRefreshRate);
      if (ir.respectDnsTtl !== undefined) cluster.respect_dns_ttl = ir.respectDnsTtl;
    }
    const http = httpProtocolOptions(ir.http2, ir.connection);
    if (http) {
      cluster.typed_extension_protocol_options = {
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': typed(
          'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
          http,
        ),
      };
    }
    const conn = ir.connection;
    if (conn?.perConnectionBufferLimitBytes !== undefined) cluster.per_connection_buffer_limit_bytes = conn.perConnectionBufferLimitBytes;
    if (conn?.tcpKeepalive) {
      const ka = conn.tcpKeepalive;
      cluster.upstream_connection_options = {
        tcp_keepalive: {
          ...(ka.probes !== undefined ? { keepalive_probes: ka.probes } : {}),
          ...(ka.timeSeconds !== undefined ? { keepalive_time: ka.timeSeconds } : {}),
          ...(ka.intervalSeconds !== undefined ? { keepalive_interval: ka.intervalSeconds } : {}),
        },
      };
    }
    if (ir.preconnect) {
      cluster.preconnect_policy = {
        ...(ir.preconnect.perUpstreamRatio !== undefined ? { per_upstream_preconnect_ratio: ir.preconnect.perUpstreamRatio } : {}),
        ...(ir.preconnect.predictiveRatio !== undefined ? { predictive_preconnect_ratio: ir.preconnect.predictiveRatio } : {}),
      };
    }
    if (ir.tls) cluster.transport_socket = upstreamTls(ir.tls);
    const matches = failoverTlsMatches(ir);
    if (matches.length) cluster.transport_socket_matches = matches;
    if (ir.proxyProtocol) {
      // the PROXY header goes first on the connection, then the TLS handshake (if any) inside it
      cluster.transport_socket = {
        name: 'envoy.transport_sockets.upstream_proxy_protocol',
        typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport', {
          config: { version: ir.proxyProtocol },
          transport_socket: cluster.transport_socket ?? RAW_BUFFER,
        }),
      };
    }
    if (ir.loadBalancer) loadBalancer(ir.cluster, ir.loadBalancer, cluster);
    if (ir.subsets) {
      const subsets: NonNullable<Cluster['lb_subset_config']> = {
        fallback_policy: ir.subsets.fallbackPolicy,
        subset_selectors: ir.subsets.selectors.map((s) => ({
          keys: s.keys,
          ...(s.singleHostPerSubset ? { single_host_per_subset: true } : {}),
        })),
      };
      if (ir.subsets.defaultSubset) subsets.default_subset = ir.subsets.defaultSubset;
      cluster.lb_subset_config = subsets;
    }
    tunnelEntry(ir, cluster);
  },
};

const LB_POLICIES = {
  roundRobin: 'ROUND_ROBIN',
  leastRequest: 'LEAST_REQUEST',
  random: 'RANDOM',
  ringHash: 'RING_HASH',
  maglev: 'MAGLEV',
} as const;

function loadBalancer(name: string, lb: LoadBalancerIR, cluster: Cluster): void {
  if (lb.policy) cluster.lb_policy = LB_POLICIES[lb.policy];
  const slowStart = lb.slowStart && slowStartConfig(name, lb.slowStart);
  if (lb.policy === 'roundRobin' && slowStart) cluster.round_robin_lb_config = { slow_start_config: slowStart };
  if (lb.policy === 'leastRequest' && (slowStart || lb.choiceCount !== undefined)) {
    cluster.least_request_lb_config = {
      ...(lb.choiceCount !== undefined ? { choice_count: lb.choiceCount } : {}),
      ...(slowStart ? { slow_start_config: slowStart } : {}),
    };
  }
  if (lb.policy === 'ringHash' && (lb.minimumRingSize !== undefined || lb.maximumRingSize !== undefined)) {
    cluster.ring_hash_lb_config = {
      ...(lb.minimumRingSize !== undefined ? { minimum_ring_size: lb.minimumRingSize } : {}),
      ...(lb.maximumRingSize !== undefined ? { maximum_ring_size: lb.maximumRingSize } : {}),
    };
  }
  const common: NonNullable<Cluster['common_lb_config']> = {};
  if (lb.healthyPanicThreshold !== undefined) common.healthy_panic_threshold = { value: lb.healthyPanicThreshold };
  if (lb.updateMergeWindow) common.update_merge_window = duration(lb.updateMergeWindow);
  if (lb.localityWeighted) common.locality_weighted_lb_config = {};
  if (lb.useHostnameForHashing) common.consistent_hashing_lb_config = { use_hostname_for_hashing: true };
  if (lb.closeConnectionsOnHostSetChange) common.close_connections_on_host_set_change = true;
  if (Object.keys(common).length) cluster.common_lb_config = common;
}

function slowStartConfig(cluster: string, s: NonNullable<LoadBalancerIR['slowStart']>): SlowStartConfig | undefined {
  const config: SlowStartConfig = {};
  if (s.window) config.slow_start_window = duration(s.window);
  // Envoy reads aggression from the runtime, falling back to this value.
  if (s.aggression !== undefined)
    config.aggression = { default_value: s.aggression, runtime_key: `upstream.${cluster}.slow_start.aggression` };
  if (s.minWeightPercent !== undefined) config.min_weight_percent = { value: s.minWeightPercent };
  return Object.keys(config).length ? config : undefined;
}

const RAW_BUFFER: TransportSocket = {
  name: 'envoy.transport_sockets.raw_buffer',
  typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.raw_buffer.v3.RawBuffer', {}),
};

function loadAssignment(ir: UpstreamIR): ClusterLoadAssignment {
  const lbEndpoint = (e: EndpointIR & { healthCheck?: { port?: number; hostname?: string } }): LbEndpoint => {
    const address = e.pipe ? { pipe: { path: e.address } } : { socket_address: { address: e.address, port_value: e.port } };
    const lb: LbEndpoint = { endpoint: { address } };
    // what useHostnameForHashing hashes: without it every IP endpoint would hash alike (an empty name)
    if (ir.loadBalancer?.useHostnameForHashing && lb.endpoint) lb.endpoint.hostname = e.address;
    if (e.healthCheck && lb.endpoint) {
      lb.endpoint.health_check_config = {
        ...(e.healthCheck.port !== undefined ? { port_value: e.healthCheck.port } : {}),
        ...(e.healthCheck.hostname !== undefined ? { hostname: e.healthCheck.hostname } : {}),
      };
    }
    if (e.weight !== undefined) lb.load_balancing_weight = e.weight;
    if (e.metadata) lb.metadata = { filter_metadata: e.metadata };
    return lb;
  };
  // locality-weighted balancing gives a locality without a weight no traffic
  const localityWeight = ir.loadBalancer?.localityWeighted ? { load_balancing_weight: 1 } : {};
  const endpoints: LocalityLbEndpoints[] =
    ir.endpoints.length || ir.failover ? [{ lb_endpoints: ir.endpoints.map(lbEndpoint), ...localityWeight }] : [];
  (ir.failover ?? []).forEach((p: FailoverPriorityIR, i) => {
    for (const [j, l] of p.localities.entries()) {
      const tlsMatch = (e: (typeof l.endpoints)[number], k: number): LbEndpoint => {
        const lb = lbEndpoint(e);
        if (e.tls) {
          const metadata = lb.metadata?.filter_metadata ?? {};
          lb.metadata = { filter_metadata: { ...metadata, 'envoy.transport_socket_match': { [TLS_MATCH_KEY]: failoverTlsName(i, j, k) } } };
        }
        return lb;
      };
      const group: LocalityLbEndpoints = { lb_endpoints: l.endpoints.map(tlsMatch), priority: i + 1 };
      if (l.locality) {
        group.locality = {
          ...(l.locality.region ? { region: l.locality.region } : {}),
          ...(l.locality.zone ? { zone: l.locality.zone } : {}),
          ...(l.locality.subZone ? { sub_zone: l.locality.subZone } : {}),
        };
      }
      if (l.weight !== undefined) group.load_balancing_weight = l.weight;
      else Object.assign(group, localityWeight);
      endpoints.push(group);
    }
  });
  return { cluster_name: ir.cluster, endpoints };
}

/** The cluster's HttpProtocolOptions, or undefined when Envoy's defaults (HTTP/1.1, no options) stand. */
function httpProtocolOptions(useHttp2: boolean, c: UpstreamConnectionIR | undefined): HttpProtocolOptions | undefined {
  const common: CommonHttpProtocolOptions = {};
  if (c?.idleTimeout) common.idle_timeout = duration(c.idleTimeout);
  if (c?.maxHeadersCount !== undefined) common.max_headers_count = c.maxHeadersCount;
  if (c?.maxStreamDuration) common.max_stream_duration = duration(c.maxStreamDuration);
  if (c?.headersWithUnderscoresAction) common.headers_with_underscores_action = c.headersWithUnderscoresAction;
  if (c?.maxRequestsPerConnection !== undefined) common.max_requests_per_connection = c.maxRequestsPerConnection;
  const h1: Http1ProtocolOptions = {};
  if (c?.http1?.enableTrailers) h1.enable_trailers = true;
  if (c?.http1?.headerKeyFormat === 'properCase') h1.header_key_format = { proper_case_words: {} };
  if (c?.http1?.headerKeyFormat === 'preserveCase') {
    h1.header_key_format = {
      stateful_formatter: {
        name: 'preserve_case',
        typed_config: typed('type.googleapis.com/envoy.extensions.http.header_formatters.preserve_case.v3.PreserveCaseFormatterConfig', {}),
      },
    };
  }
  if (c?.http1?.overrideStreamErrorOnInvalidHttpMessage !== undefined) {
    h1.override_stream_error_on_invalid_http_message = c.http1.overrideStreamErrorOnInvalidHttpMessage;
  }
  const h2: Http2ProtocolOptions = {};
  const o = c?.http2;
  if (o?.initialStreamWindowSize !== undefined) h2.initial_stream_window_size = o.initialStreamWindowSize;
  if (o?.initialConnectionWindowSize !== undefined) h2.initial_connection_window_size = o.initialConnectionWindowSize;
  if (o?.maxConcurrentStreams !== undefined) h2.max_concurrent_streams = o.maxConcurrentStreams;
  if (o?.overrideStreamErrorOnInvalidHttpMessage !== undefined) {
    h2.override_stream_error_on_invalid_http_message = o.overrideStreamErrorOnInvalidHttpMessage;
  }
  const set = (x: object): boolean => Object.keys(x).length > 0;
  const options: HttpProtocolOptions = set(common) ? { common_http_protocol_options: common } : {};
  if (c?.useDownstreamProtocol) {
    options.use_downstream_protocol_config = { http_protocol_options: h1, http2_protocol_options: h2 };
  } else if (useHttp2) {
    options.explicit_http_config = { http2_protocol_options: h2 };
  } else if (set(common) || set(h1)) {
    options.explicit_http_config = { http_protocol_options: h1 };
  } else {
    return undefined;
  }
  return options;
}

/** The name of failover endpoint k of locality j at priority i+1: its metadata and its transport socket match carry it. */
const failoverTlsName = (i: number, j: number, k: number): string => `failover-${i}-${j}-${k}`;
/** The key in an endpoint's envoy.transport_socket_match metadata that picks its match. */
const TLS_MATCH_KEY = 'legate-tls';

/** A transport socket match per failover endpoint with its own upstreamSslConfig (with the PROXY header when asked). */
function failoverTlsMatches(ir: UpstreamIR): NonNullable<Cluster['transport_socket_matches']> {
  const out: NonNullable<Cluster['transport_socket_matches']> = [];
  (ir.failover ?? []).forEach((p, i) =>
    p.localities.forEach((l, j) =>
      l.endpoints.forEach((e, k) => {
        if (!e.tls) return;
        const name = failoverTlsName(i, j, k);
        let socket = upstreamTls(e.tls);
        if (ir.proxyProtocol) {
          socket = {
            name: 'envoy.transport_sockets.upstream_proxy_protocol',
            typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.proxy_protocol.v3.ProxyProtocolUpstreamTransport', {
              config: { version: ir.proxyProtocol },
              transport_socket: socket,
            }),
          };
        }
        out.push({ name, match: { [TLS_MATCH_KEY]: name }, transport_socket: socket });
      }),
    ),
  );
  return out;
}

function upstreamTls(tls: UpstreamTlsIR | undefined): TransportSocket {
  const common: CommonTlsContext = {};
  if (tls?.certChain && tls.privateKey) {
    common.tls_certificates = [{ certificate_chain: dataSource(tls.certChain), private_key: dataSource(tls.privateKey) }];
  }
  if (tls?.rootCa) {
    const validation: CertificateValidationContext = { trusted_ca: dataSource(tls.rootCa) };
    if (tls.verifySubjectAltName.length) {
      validation.match_typed_subject_alt_names = tls.verifySubjectAltName.map((san) => ({ san_type: 'DNS', matcher: { exact: san } }));
    }
    common.validation_context = validation;
  }
  if (tls?.alpnProtocols.length) common.alpn_protocols = tls.alpnProtocols;
  const params: NonNullable<CommonTlsContext['tls_params']> = {};
  if (tls?.minimumVersion) params.tls_minimum_protocol_version = tls.minimumVersion;
  if (tls?.maximumVersion) params.tls_maximum_protocol_version = tls.maximumVersion;
  // Envoy's client default maximum is below TLSv1_3 in older releases: a TLSv1_3 floor alone must not leave no version
  else if (tls?.minimumVersion === 'TLSv1_3') params.tls_maximum_protocol_version = 'TLSv1_3';
  if (tls?.cipherSuites) params.cipher_suites = tls.cipherSuites;
  if (tls?.ecdhCurves) params.ecdh_curves = tls.ecdhCurves;
  if (Object.keys(params).length) common.tls_params = params;
  const context: UpstreamTlsContext = { common_tls_context: common };
  if (tls?.allowRenegotiation) context.allow_renegotiation = true;
  if (tls?.sni) context.sni = tls.sni;
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', context),
  };
}
