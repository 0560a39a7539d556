// Small helpers for rendering Envoy messages (typed by envoy/types.generated.ts), shared by the core
// and the features.
import { isIP } from 'node:net';
import {
  typed,
  type Cluster,
  type DataSource,
  type Duration,
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
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: address.host, port_value: address.port } } } }] }],
    },
  };
}
