// Small helpers for rendering Envoy messages (typed by envoy/types.generated.ts), shared by the core
// and the features.
import { isIP } from 'node:net';
import {
  typed,
  type Cluster,
  type DataSource,
  type Duration,
  type TlsSecret,
  type TransportSocket,
  type TypedConfig,
  type envoy_type_v3_FractionalPercent as FractionalPercent,
} from '../../envoy/typed.js';
import type { DataSourceIR, DurationIR } from './ir.js';

/** A Duration in Envoy's JSON form. */
export function duration(d: DurationIR): Duration {
  return d.nanos ? { seconds: d.seconds, nanos: d.nanos } : { seconds: d.seconds };
}

/** A Gloo percentage (0-100, up to 6 significant digits) as Envoy's FractionalPercent, in millionths as Gloo does. */
export function fractionalPercent(percentage: number): FractionalPercent {
  return { numerator: Math.round(percentage * 10_000), denominator: 'MILLION' };
}

export function dataSource(d: DataSourceIR): DataSource {
  return 'inline' in d ? { inline_string: d.inline } : { filename: d.filename };
}

/** Adds `config` under `name` in the object's typed_per_filter_config. */
export function setPerFilterConfig(
  target: { typed_per_filter_config?: Record<string, TypedConfig> },
  name: string,
  config: TypedConfig,
): void {
  (target.typed_per_filter_config ??= {})[name] = config;
}

export interface ServiceAddress {
  host: string;
  port: number;
  /** mutual TLS to the service (its --tls-cert, --tls-key, --tls-client-ca); default cleartext HTTP/2 */
  tls?: ExtensionTls;
}

/** Files as Envoy reads them (a mounted TLS Secret, or `legate run --extensions-mtls`'s state dir), not the controller. */
export interface ExtensionTls {
  /** Envoy's client certificate and its key */
  certFile: string;
  keyFile: string;
  /** the CA the service's certificate must chain to */
  caFile: string;
}

/**
 * The discovery of a cluster with one fixed address: STATIC for an IP, STRICT_DNS (IPv4 first) for a
 * name such as a Kubernetes Service's `extauth.legate-system.svc.cluster.local`, which Envoy refuses
 * in a STATIC cluster.
 */
export function fixedAddressDiscovery(host: string): Pick<Cluster, 'type' | 'dns_lookup_family'> {
  return isIP(host) === 0 ? { type: 'STRICT_DNS', dns_lookup_family: 'V4_PREFERRED' } : { type: 'STATIC' };
}

/**
 * A cluster for a Legate extension service (gRPC: HTTP/2, generous limits: one stream per request, one
 * connection kept for good: the services' HTTP/2 server has no reset limit that would call for recycling).
 */
export function extensionCluster(name: string, address: ServiceAddress): Cluster {
  return {
    name,
    ...fixedAddressDiscovery(address.host),
    connect_timeout: { seconds: 1 },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': typed(
        'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        {
          explicit_http_config: { http2_protocol_options: {} },
        },
      ),
    },
    circuit_breakers: { thresholds: [{ max_connections: 100000, max_pending_requests: 100000, max_requests: 100000 }] },
    ...(address.tls ? { transport_socket: extensionTransportSocket(address.host, address.tls) } : {}),
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: address.host, port_value: address.port } } } }] }],
    },
  };
}

const ADS = { ads: {}, resource_api_version: 'V3' } as const;

/** The SDS names of an extension's client certificate and CA (by file: services given other files get their own). */
const clientSecretName = (tls: ExtensionTls): string => `legate-extensions-client:${tls.certFile}`;
const caSecretName = (tls: ExtensionTls): string => `legate-extensions-ca:${tls.caFile}`;

/**
 * Mutual TLS to an extension: Envoy presents its client certificate, checks the service's against the CA and its
 * name (the address Envoy dials: a DNS SAN, sent as SNI too, or an IP SAN), and offers only h2 (ALPN). The files
 * come as SDS secrets (extensionSecrets) so that Envoy reads them again when they change (a rotated Secret).
 */
function extensionTransportSocket(host: string, tls: ExtensionTls): TransportSocket {
  const ip = isIP(host) !== 0;
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', {
      ...(ip ? {} : { sni: host }),
      common_tls_context: {
        tls_certificate_sds_secret_configs: [{ name: clientSecretName(tls), sds_config: ADS }],
        combined_validation_context: {
          default_validation_context: {
            match_typed_subject_alt_names: [{ san_type: ip ? 'IP_ADDRESS' : 'DNS', matcher: { exact: host } }],
          },
          validation_context_sds_secret_config: { name: caSecretName(tls), sds_config: ADS },
        },
        alpn_protocols: ['h2'],
      },
    }),
  };
}

/**
 * The SDS secrets of an extension cluster with mutual TLS: Envoy's certificate and key, the CA, as files. Envoy
 * watches the files of secrets delivered so (their directories) and reloads them when they change.
 */
export function extensionSecrets(address: ServiceAddress): TlsSecret[] {
  const tls = address.tls;
  if (!tls) return [];
  return [
    {
      name: clientSecretName(tls),
      tls_certificate: { certificate_chain: { filename: tls.certFile }, private_key: { filename: tls.keyFile } },
    },
    { name: caSecretName(tls), validation_context: { trusted_ca: { filename: tls.caFile } } },
  ];
}
