// Stage 2 for upstreams: clusters and endpoints, including upstream TLS.
import {
  typed,
  type ClusterLoadAssignment,
  type CommonTlsContext,
  type LbEndpoint,
  type TransportSocket,
  type UpstreamTlsContext,
  type envoy_extensions_transport_sockets_tls_v3_CertificateValidationContext as CertificateValidationContext,
} from '../../../../envoy/typed.js';
import { dataSource, duration } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { UpstreamIR } from '../../ir.js';

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
  },
};

function loadAssignment(ir: UpstreamIR): ClusterLoadAssignment {
  return {
    cluster_name: ir.cluster,
    endpoints: ir.endpoints.length
      ? [
          {
            lb_endpoints: ir.endpoints.map((e) => {
              const lb: LbEndpoint = { endpoint: { address: { socket_address: { address: e.address, port_value: e.port } } } };
              if (e.weight !== undefined) lb.load_balancing_weight = e.weight;
              return lb;
            }),
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
