// The hook interface of stage-2 feature plugins. Plugins never import each other; the order they run
// in is the explicit list in ../render.ts.
import type { DurationIR, ListenerIR, ProxyIR, RouteIR, UpstreamIR, VirtualHostIR } from '../ir.js';

/** An Envoy message in JSON form (snake_case; Any as {'@type': …}). */
export type EnvoyJson = Record<string, unknown>;

/** Named filter stages keep HTTP filters in a stable order whatever the plugin order. */
export const FilterStage = {
  /** cheap checks that reject early (wasm) */
  Early: 100,
  /** authentication (ext_authz) */
  AuthN: 200,
  /** request processing that answers itself (ext_proc GraphQL) */
  Processing: 300,
  /** always last */
  Route: 1000,
} as const;

export interface StagedHttpFilter {
  stage: number;
  filter: EnvoyJson;
}

export interface RenderPlugin {
  readonly name: string;
  /** HTTP filters this plugin needs on every HCM of the proxy (usually disabled, enabled per route). */
  httpFilters?(proxy: ProxyIR, listener: ListenerIR): StagedHttpFilter[];
  /** Fill in or adjust an Envoy virtual host rendered from `ir`. */
  patchVirtualHost?(ir: VirtualHostIR, vhost: EnvoyJson, proxy: ProxyIR): void;
  /** Fill in or adjust an Envoy route rendered from `ir` (in virtual host `vh`). */
  patchRoute?(ir: RouteIR, route: EnvoyJson, vh: VirtualHostIR): void;
  /** Fill in or adjust an Envoy cluster rendered from `ir`. */
  patchCluster?(ir: UpstreamIR, cluster: EnvoyJson): void;
  /** Extra clusters (e.g. for extension services). */
  extraClusters?(proxy: ProxyIR): EnvoyJson[];
}

/** A Duration in Envoy's JSON form. */
export function duration(d: DurationIR): EnvoyJson {
  return d.nanos ? { seconds: d.seconds, nanos: d.nanos } : { seconds: d.seconds };
}

export interface ServiceAddress {
  host: string;
  port: number;
}

/** A cluster for a Legate extension service (gRPC: HTTP/2, generous limits: one stream per request). */
export function extensionCluster(name: string, address: ServiceAddress): EnvoyJson {
  return {
    name,
    type: 'STATIC',
    connect_timeout: { seconds: 1 },
    typed_extension_protocol_options: {
      'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
        '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
        explicit_http_config: { http2_protocol_options: {} },
        // Envoy resets each ext_proc stream after an immediate response; Node's HTTP/2 server sends
        // GOAWAY after 1000 resets on one connection (rapid-reset protection, CVE-2023-44487) and
        // refuses the streams in flight. New connections well before that keep every request whole.
        common_http_protocol_options: { max_requests_per_connection: 500 },
      },
    },
    circuit_breakers: { thresholds: [{ max_connections: 100000, max_pending_requests: 100000, max_requests: 100000 }] },
    load_assignment: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: address.host, port_value: address.port } } } }] }],
    },
  };
}

