// Envoy bootstrap for one proxy role: ADS to the controller, admin on loopback, and optionally a stats
// listener for Prometheus (Gloo's chart: :8081 /metrics). Pure.
import { stringify } from 'yaml';

/** Gloo's chart serves the proxy's metrics here (its gatewayProxy `stats` listener). */
export const GLOO_STATS_PORT = 8081;
/** The runtime layer the controller serves over RTDS (Settings gloo.regexMaxProgramSize); the chart's bootstrap names it too */
export const RUNTIME_LAYER = 'legate-settings';
export const STATS_LISTENER = 'legate-stats';
export const ADMIN_CLUSTER = 'legate-admin';

export interface BootstrapOptions {
  /** `<namespace>~<proxy name>`, e.g. legate-system~gateway-proxy */
  role: string;
  nodeId?: string;
  xdsHost: string;
  xdsPort: number;
  adminHost: string;
  adminPort: number;
  /** mutual TLS to the controller: a directory with ca.crt, tls.crt and tls.key (legate run --xds-tls) */
  xdsTlsDir?: string;
  /** a listener on this port (all addresses) serving GET /metrics from the admin's /stats/prometheus */
  statsPort?: number;
}

export function bootstrapConfig(o: BootstrapOptions): Record<string, unknown> {
  const proxyName = o.role.split('~')[1] ?? o.role;
  return {
    node: {
      id: o.nodeId ?? `${proxyName}~${o.role.split('~')[0] ?? ''}`,
      cluster: proxyName,
      metadata: { role: o.role },
    },
    admin: {
      address: { socket_address: { address: o.adminHost, port_value: o.adminPort } },
    },
    dynamic_resources: {
      ads_config: {
        api_type: 'GRPC',
        transport_api_version: 'V3',
        set_node_on_first_message_only: true,
        // reconnect within a second when the controller restarts
        grpc_services: [
          { envoy_grpc: { cluster_name: 'xds_cluster', retry_policy: { retry_back_off: { base_interval: '0.1s', max_interval: '1s' } } } },
        ],
      },
      cds_config: { ads: {}, resource_api_version: 'V3' },
      lds_config: { ads: {}, resource_api_version: 'V3' },
    },
    static_resources: {
      ...(o.statsPort ? { listeners: [statsListener(o.statsPort)] } : {}),
      clusters: [
        ...(o.statsPort ? [adminCluster(o.adminHost, o.adminPort)] : []),
        {
          name: 'xds_cluster',
          type: 'STRICT_DNS',
          connect_timeout: '5s',
          typed_extension_protocol_options: {
            'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
              '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
              explicit_http_config: { http2_protocol_options: {} },
            },
          },
          upstream_connection_options: { tcp_keepalive: {} },
          ...(o.xdsTlsDir ? { transport_socket: xdsTransportSocket(o.xdsTlsDir, o.xdsHost) } : {}),
          load_assignment: {
            cluster_name: 'xds_cluster',
            endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: o.xdsHost, port_value: o.xdsPort } } } }] }],
          },
        },
      ],
    },
    layered_runtime: {
      layers: [
        // what Settings set (gloo.regexMaxProgramSize), from the controller; the admin layer stays on top
        { name: RUNTIME_LAYER, rtds_layer: { name: RUNTIME_LAYER, rtds_config: { ads: {}, resource_api_version: 'V3' } } },
        { name: 'admin_layer', admin_layer: {} },
      ],
    },
    // internal listeners: an Upstream tunnelled through an HTTP CONNECT proxy (httpProxyHostname) connects through one
    bootstrap_extensions: [
      {
        name: 'envoy.bootstrap.internal_listener',
        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.bootstrap.internal_listener.v3.InternalListener' },
      },
    ],
    // a connection limit, so a flood of connections cannot exhaust the process
    overload_manager: {
      resource_monitors: [
        {
          name: 'envoy.resource_monitors.global_downstream_max_connections',
          typed_config: {
            '@type': 'type.googleapis.com/envoy.extensions.resource_monitors.downstream_connections.v3.DownstreamConnectionsConfig',
            max_active_downstream_connections: 50000,
          },
        },
      ],
    },
  };
}

/**
 * Prometheus metrics without exposing the admin (which can drain Envoy or change its log level): a listener on all
 * addresses whose only route is `GET /metrics`, rewritten to the admin's `/stats/prometheus` (as Gloo's chart
 * renders its stats listener). Anything else is a 404 from this listener; the admin stays where it is.
 */
export function statsListener(port: number | string): Record<string, unknown> {
  return {
    name: `${STATS_LISTENER}-0.0.0.0-${port}`,
    address: { socket_address: { address: '0.0.0.0', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: STATS_LISTENER,
              // `/metrics/../quitquitquit` must not reach the admin as anything but /metrics
              normalize_path: true,
              merge_slashes: true,
              route_config: {
                name: STATS_LISTENER,
                virtual_hosts: [
                  {
                    name: 'metrics',
                    domains: ['*'],
                    routes: [
                      {
                        match: { path: '/metrics', headers: [{ name: ':method', string_match: { exact: 'GET' } }] },
                        route: { cluster: ADMIN_CLUSTER, prefix_rewrite: '/stats/prometheus' },
                      },
                    ],
                  },
                ],
              },
              http_filters: [
                {
                  name: 'envoy.filters.http.router',
                  typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                },
              ],
            },
          },
        ],
      },
    ],
  };
}

/** The admin interface as a cluster, for the stats listener; an admin on all addresses is reached on loopback. */
export function adminCluster(host: string, port: number): Record<string, unknown> {
  const address = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return {
    name: ADMIN_CLUSTER,
    type: 'STATIC',
    connect_timeout: '1s',
    load_assignment: {
      cluster_name: ADMIN_CLUSTER,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address, port_value: port } } } }] }],
    },
  };
}

/** Envoy presents tls.crt and checks the controller's certificate against ca.crt and the xDS host. */
function xdsTransportSocket(dir: string, host: string): Record<string, unknown> {
  const file = (name: string) => ({ filename: `${dir.replace(/\/$/, '')}/${name}` });
  const isIp = /^[\d.]+$/.test(host) || host.includes(':');
  return {
    name: 'envoy.transport_sockets.tls',
    typed_config: {
      '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext',
      ...(isIp ? {} : { sni: host }),
      common_tls_context: {
        tls_certificates: [{ certificate_chain: file('tls.crt'), private_key: file('tls.key') }],
        validation_context: {
          trusted_ca: file('ca.crt'),
          match_typed_subject_alt_names: [{ san_type: isIp ? 'IP_ADDRESS' : 'DNS', matcher: { exact: host } }],
        },
      },
    },
  };
}

export function renderBootstrap(o: BootstrapOptions): string {
  return `# Envoy bootstrap generated by legate for role ${o.role}\n` + stringify(bootstrapConfig(o), { lineWidth: 0 });
}
