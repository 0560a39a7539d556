// Stage 2: IR -> Envoy xDS resources per proxy role. Pure rendering through the plugin list below.
import { TypeUrls } from '../../envoy/protos.js';
import type { XdsResource, XdsSnapshot } from '../xds/types.js';
import type { DataSourceIR, ListenerIR, ProxyIR, RouteIR, UpstreamIR, VirtualHostIR } from './ir.js';
import { loadAssignment, upstreamsPlugin } from './plugins/upstreams.js';
import { extauthPlugin } from './plugins/extauth.js';
import { graphqlPlugin } from './plugins/graphql.js';
import { matchFor, routingPlugin } from './plugins/routing.js';
import { DEFAULT_WASM_OPTIONS, edgeCacheSkip, wasmPlugin, type WasmOptions } from './plugins/wasm.js';
import { FilterStage, type EnvoyJson, type RenderPlugin, type ServiceAddress, type StagedHttpFilter } from './plugins/types.js';

export interface RenderOptions {
  /** Where Envoy reaches Legate's extension services. */
  graphql: ServiceAddress;
  extauth: ServiceAddress;
  wasm: WasmOptions;
}

export const DEFAULT_RENDER_OPTIONS: RenderOptions = {
  graphql: { host: '127.0.0.1', port: 8084 },
  extauth: { host: '127.0.0.1', port: 8083 },
  wasm: DEFAULT_WASM_OPTIONS,
};

/** The frozen, ordered list of stage-2 plugins. */
export function renderPlugins(options: RenderOptions = DEFAULT_RENDER_OPTIONS): readonly RenderPlugin[] {
  return Object.freeze([
    routingPlugin,
    upstreamsPlugin,
    wasmPlugin(options.wasm),
    extauthPlugin(options.extauth, edgeCacheSkip(options.wasm)),
    graphqlPlugin(options.graphql),
  ]);
}

export const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager';
const ADS_SOURCE = { ads: {}, resource_api_version: 'V3' };

/** Node role of a proxy, matched against Envoy's node.metadata.role: `<namespace>~<name>`. */
export function proxyRole(proxy: { namespace: string; name: string }): string {
  return `${proxy.namespace}~${proxy.name}`;
}

export function routeConfigName(listener: ListenerIR): string {
  return `${listener.name}-routes`;
}

export function renderProxy(proxy: ProxyIR, upstreams: readonly UpstreamIR[], plugins: readonly RenderPlugin[] = renderPlugins()): XdsSnapshot {
  const clusters: XdsResource[] = [];
  const endpoints: XdsResource[] = [];
  for (const up of upstreams) {
    const cluster: EnvoyJson = { name: up.cluster };
    for (const p of plugins) p.patchCluster?.(up, cluster);
    clusters.push({ name: up.cluster, resource: cluster });
    if (up.discovery === 'EDS') endpoints.push({ name: up.cluster, resource: loadAssignment(up) });
  }
  for (const p of plugins) for (const c of p.extraClusters?.(proxy) ?? []) clusters.push({ name: String(c['name']), resource: c });

  const listeners: XdsResource[] = [];
  const routes: XdsResource[] = [];
  for (const listener of proxy.listeners) {
    // An ssl listener without certificates would have no filter chain, which Envoy refuses.
    if (listener.ssl && !listener.virtualHosts.some((vh) => vh.tls)) continue;
    listeners.push({ name: listener.name, resource: renderListener(proxy, listener, plugins) });
    routes.push({ name: routeConfigName(listener), resource: renderRouteConfig(proxy, listener, plugins) });
  }
  const byName = (a: XdsResource, b: XdsResource): number => a.name.localeCompare(b.name);
  return new Map([
    [TypeUrls.cluster, clusters.sort(byName)],
    [TypeUrls.endpoint, endpoints.sort(byName)],
    [TypeUrls.listener, listeners.sort(byName)],
    [TypeUrls.route, routes.sort(byName)],
  ]);
}

function renderListener(proxy: ProxyIR, listener: ListenerIR, plugins: readonly RenderPlugin[]): EnvoyJson {
  const staged: StagedHttpFilter[] = [];
  for (const p of plugins) staged.push(...(p.httpFilters?.(proxy, listener) ?? []));
  staged.push({
    stage: FilterStage.Route,
    filter: { name: 'envoy.filters.http.router', typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' } },
  });
  staged.sort((a, b) => a.stage - b.stage);
  const hcm: EnvoyJson = {
    '@type': HCM_TYPE,
    stat_prefix: 'http',
    codec_type: 'AUTO',
    // Match virtual hosts on the host name alone, so `Host: example.com:8080` finds `example.com`.
    strip_any_host_port: true,
    rds: { route_config_name: routeConfigName(listener), config_source: ADS_SOURCE },
    http_filters: staged.map((s) => s.filter),
  };
  const socket: EnvoyJson = { address: listener.bindAddress, port_value: listener.bindPort };
  if (listener.bindAddress === '::') socket['ipv4_compat'] = true;
  const filters = [{ name: 'envoy.filters.network.http_connection_manager', typed_config: hcm }];
  if (!listener.ssl) return { name: listener.name, address: { socket_address: socket }, filter_chains: [{ filters }] };
  // ssl: one filter chain per certificate, chosen by SNI; all share the listener's route config.
  return {
    name: listener.name,
    address: { socket_address: socket },
    listener_filters: [
      {
        name: 'envoy.filters.listener.tls_inspector',
        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.listener.tls_inspector.v3.TlsInspector' },
      },
    ],
    filter_chains: tlsFilterChains(listener, filters),
  };
}

function dataSource(d: DataSourceIR): EnvoyJson {
  return 'inline' in d ? { inline_string: d.inline } : { filename: d.filename };
}

function tlsFilterChains(listener: ListenerIR, filters: EnvoyJson[]): EnvoyJson[] {
  const chains = new Map<string, EnvoyJson>();
  for (const vh of listener.virtualHosts) {
    if (!vh.tls) continue;
    const serverNames = [...new Set(vh.tls.sniDomains)].sort();
    const key = JSON.stringify([serverNames, vh.tls.certChain, vh.tls.privateKey]);
    if (chains.has(key)) continue;
    const chain: EnvoyJson = {
      name: `${vh.name}-tls`,
      filters,
      transport_socket: {
        name: 'envoy.transport_sockets.tls',
        typed_config: {
          '@type': 'type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.DownstreamTlsContext',
          common_tls_context: {
            tls_certificates: [{ certificate_chain: dataSource(vh.tls.certChain), private_key: dataSource(vh.tls.privateKey) }],
            alpn_protocols: ['h2', 'http/1.1'],
          },
        },
      },
    };
    if (serverNames.length) chain['filter_chain_match'] = { server_names: serverNames };
    chains.set(key, chain);
  }
  return [...chains.values()];
}

function renderRouteConfig(proxy: ProxyIR, listener: ListenerIR, plugins: readonly RenderPlugin[]): EnvoyJson {
  return {
    name: routeConfigName(listener),
    virtual_hosts: listener.virtualHosts.map((vh) => {
      const vhost: EnvoyJson = { name: vh.name, domains: vh.domains, routes: vh.routes.flatMap((r) => renderRoutes(r, vh, plugins)) };
      for (const p of plugins) p.patchVirtualHost?.(vh, vhost, proxy);
      return vhost;
    }),
  };
}

/** One Envoy route per matcher, all sharing the action. */
function renderRoutes(ir: RouteIR, vh: VirtualHostIR, plugins: readonly RenderPlugin[]): EnvoyJson[] {
  const single = (matcherIndex: number): EnvoyJson => {
    const route: EnvoyJson = { name: ir.matchers.length > 1 ? `${ir.name}-${matcherIndex}` : ir.name };
    for (const p of plugins) p.patchRoute?.(ir, route, vh);
    route['match'] = matchFor(ir.matchers[matcherIndex]);
    return route;
  };
  return ir.matchers.map((_, i) => single(i));
}
