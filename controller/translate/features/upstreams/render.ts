// Stage 2 for upstreams: clusters and endpoints, including upstream TLS.
import {
  typed,
  type Cluster,
  type ClusterLoadAssignment,
  type CommonTlsContext,
  type LbEndpoint,
  type TransportSocket,
  type UpstreamTlsContext,
  type envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext as CertificateValidationContext,
  type envoy_config_cluster_v3_Cluster_SlowStartConfig as SlowStartConfig,
} from '../../../../envoy/typed.js';
import { dataSource, duration } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { LoadBalancerIR, UpstreamIR } from '../../ir.js';

export const upstreamsRender: RenderPlugin = {
  loadAssignment,
  patchCluster(ir, cluster) {
    cluster.connect_timeout = duration(ir.connectTimeout);
    if (ir.discovery === 'EDS') {
      cluster.type = 'EDS';
      cluster.eds_cluster_config = { eds_config: { ads: {}, resource_api_version: 'V3' } };
    } else {
      cluster.type = 'STRICT_DNS';
      cluster.dns_lookup_family = 'V4_PREFERRED';
      cluster.load_assignment = loadAssignment(ir);
    }
    if (ir.http2) {
      cluster.typed_extension_protocol_options = {
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': typed(
          'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
          {
            explicit_http_config: { http2_protocol_options: {} },
          },
        ),
      };
    }
    if (ir.tls) cluster.transport_socket = upstreamTls(ir);
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

function loadAssignment(ir: UpstreamIR): ClusterLoadAssignment {
  return {
    cluster_name: ir.cluster,
    endpoints: ir.endpoints.length
      ? [
          {
            lb_endpoints: ir.endpoints.map((e) => {
              const lb: LbEndpoint = { endpoint: { address: { socket_address: { address: e.address, port_value: e.port } } } };
              // what useHostnameForHashing hashes: without it every IP endpoint would hash alike (an empty name)
              if (ir.loadBalancer?.useHostnameForHashing && lb.endpoint) lb.endpoint.hostname = e.address;
              if (e.weight !== undefined) lb.load_balancing_weight = e.weight;
              if (e.metadata) lb.metadata = { filter_metadata: e.metadata };
              return lb;
            }),
            // locality-weighted balancing gives a locality without a weight no traffic
            ...(ir.loadBalancer?.localityWeighted ? { load_balancing_weight: 1 } : {}),
          },
        ]
      : [],
  };
}

function upstreamTls(ir: UpstreamIR): TransportSocket {
  const tls = ir.tls;
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
  const context: UpstreamTlsContext = { common_tls_context: common };
  if (tls?.sni) context.sni = tls.sni;
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', context),
  };
}
