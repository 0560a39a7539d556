// Stage 2: IR -> Envoy xDS resources per proxy role. Pure. The core renders the skeleton (clusters,
// listeners with one HCM, route configs, one route per matcher); each feature's RenderPlugin fills in
// its part, in the order of features/index.ts.
import { TypeUrls } from '../../envoy/protos.js';
import type { XdsResource, XdsSnapshot } from '../xds/types.js';
import {
  typed,
  type Cluster,
  type EnvoyRoute,
  type HttpConnectionManager,
  type Listener,
  type NetworkFilter,
  type RouteConfiguration,
  type SocketAddress,
  type VirtualHost,
  type envoy_config_core_v3_ConfigSource,
} from '../../envoy/typed.js';
import { FilterStage, comparePositions, during, type Feature, type RenderPlugin, type StagedHttpFilter } from './feature.js';
import { DEFAULT_RENDER_OPTIONS, features, type RenderOptions } from './features/index.js';
import type { ChainMatchIR, ListenerIR, ProxyIR, RouteIR, UpstreamIR, VirtualHostIR } from './ir.js';
import { matchFor } from './matchers.js';

export { DEFAULT_RENDER_OPTIONS, type RenderOptions } from './features/index.js';

/** The stage-2 plugins of a feature list, in its order. */
export function renderPlugins(from: readonly Feature[] | RenderOptions = DEFAULT_RENDER_OPTIONS): readonly RenderPlugin[] {
  const list = Array.isArray(from) ? (from as readonly Feature[]) : features(from as RenderOptions);
  return Object.freeze(list.flatMap((f) => (f.render ? [f.render] : [])));
}

export const HCM_TYPE = 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager' as const;
const ADS_SOURCE: envoy_config_core_v3_ConfigSource = { ads: {}, resource_api_version: 'V3' };

export { proxyRole } from './names.js';

export function routeConfigName(listener: ListenerIR): string {
  // a hybridGateway's HTTP chains each have their own
  return listener.chain ? `${listener.name}-${listener.chain.name}-routes` : `${listener.name}-routes`;
}

export function renderProxy(
  proxy: ProxyIR,
  upstreams: readonly UpstreamIR[],
  plugins: readonly RenderPlugin[] = renderPlugins(),
): XdsSnapshot {
  return render(proxy, upstreams, plugins, undefined);
}

/**
 * What one rendering of a proxy made of each virtual host, for the next rendering to reuse: a virtual
 * host of the IR that is the same object as last time (stage 1 hands back the same object for a
 * VirtualService it did not translate again) renders to the same Envoy virtual host, as long as the
 * plugins are the same (`key`) and so is what their patchVirtualHost reads from the proxy
 * (RenderPlugin.proxyContext).
 */
export interface RenderMemo {
  readonly key: string;
  readonly virtualHosts: ReadonlyMap<VirtualHostIR, VirtualHost>;
}

/**
 * renderProxy, reusing the Envoy virtual hosts of an earlier rendering (`previous`) whose IR did not
 * change. `pluginsKey` must be equal between two calls only when `plugins` render the same. Returns
 * the same snapshot as renderProxy, and the memo for next time (unset when a plugin's patchVirtualHost
 * reads the proxy without saying what: then nothing is reused).
 */
export function renderProxyReusing(
  proxy: ProxyIR,
  upstreams: readonly UpstreamIR[],
  plugins: readonly RenderPlugin[],
  pluginsKey: string,
  previous: RenderMemo | undefined,
): { snapshot: XdsSnapshot; memo: RenderMemo | undefined } {
  let key: string | undefined = pluginsKey;
  const contexts: unknown[] = [];
  for (const p of plugins) {
    if (!p.patchVirtualHost) continue;
    if (!p.proxyContext) {
      key = undefined;
      break;
    }
    contexts.push(p.proxyContext(proxy));
  }
  if (key === undefined) return { snapshot: render(proxy, upstreams, plugins, undefined), memo: undefined };
  key = JSON.stringify([key, contexts]);
  const memo = { key, virtualHosts: new Map<VirtualHostIR, VirtualHost>() };
  const reuse = previous?.key === key ? previous.virtualHosts : undefined;
  return { snapshot: render(proxy, upstreams, plugins, { reuse, memo: memo.virtualHosts }), memo };
}

interface VirtualHostReuse {
  reuse: ReadonlyMap<VirtualHostIR, VirtualHost> | undefined;
  memo: Map<VirtualHostIR, VirtualHost>;
}

function render(
  proxy: ProxyIR,
  upstreams: readonly UpstreamIR[],
  plugins: readonly RenderPlugin[],
  vhosts: VirtualHostReuse | undefined,
): XdsSnapshot {
  const clusters: XdsResource[] = [];
  const endpoints: XdsResource[] = [];
  for (const up of upstreams) {
    const cluster: Cluster = { name: up.cluster };
    for (const p of plugins) p.patchCluster?.(up, cluster);
    if (cluster.load_assignment) for (const p of plugins) p.patchLoadAssignment?.(up, cluster.load_assignment);
    clusters.push({ name: up.cluster, resource: cluster });
    if (up.discovery !== 'EDS') continue;
    for (const p of plugins) {
      const assignment = p.loadAssignment?.(up);
      if (!assignment) continue;
      for (const q of plugins) q.patchLoadAssignment?.(up, assignment);
      endpoints.push({ name: up.cluster, resource: assignment });
    }
  }
  for (const p of plugins) for (const c of p.extraClusters?.(proxy, upstreams) ?? []) clusters.push({ name: c.name ?? '', resource: c });

  // the chains of a hybridGateway are ListenerIRs of one name: one Envoy listener with all their filter chains
  const byName = new Map<string, Listener>();
  const routes: XdsResource[] = [];
  for (const [i, listener] of proxy.listeners.entries()) {
    // An ssl listener without certificates would have no filter chain, which Envoy refuses.
    if (listener.ssl && !listener.virtualHosts.some((vh) => vh.tls)) continue;
    const rendered = renderListener(proxy, listener, plugins);
    if (listener.chain) matchChain(rendered, listener.chain);
    const key = listener.chain ? listener.name : `${listener.name}\u0000${i}`;
    const same = byName.get(key);
    if (same) mergeListener(same, rendered);
    else byName.set(key, rendered);
    if (!listener.tcp) routes.push({ name: routeConfigName(listener), resource: renderRouteConfig(proxy, listener, plugins, vhosts) });
  }
  // Envoy refuses a listener without filter chains
  const listeners: XdsResource[] = [...byName.values()].flatMap((resource) =>
    resource.filter_chains?.length ? [{ name: resource.name ?? '', resource }] : [],
  );
  for (const p of plugins) for (const l of p.extraListeners?.(proxy, upstreams) ?? []) listeners.push({ name: l.name ?? '', resource: l });
  const secrets: XdsResource[] = [];
  const secretNames = new Set<string>();
  for (const p of plugins) {
    for (const s of p.secrets?.(proxy) ?? []) {
      // two features may terminate TLS with one Secret
      if (secretNames.has(s.name ?? '')) continue;
      secretNames.add(s.name ?? '');
      secrets.push({ name: s.name ?? '', resource: s });
    }
  }
  const ordered = (a: XdsResource, b: XdsResource): number => a.name.localeCompare(b.name);
  const snapshot = new Map<string, readonly XdsResource[]>([
    [TypeUrls.cluster, clusters.sort(ordered)],
    [TypeUrls.endpoint, endpoints.sort(ordered)],
    [TypeUrls.listener, listeners.sort(ordered)],
    [TypeUrls.route, routes.sort(ordered)],
  ]);
  // only when some listener or cluster needs one: a proxy without TLS certificates serves no secret type at all
  if (secrets.length > 0) snapshot.set(TypeUrls.secret, secrets.sort(ordered));
  return snapshot;
}

function renderListener(proxy: ProxyIR, listener: ListenerIR, plugins: readonly RenderPlugin[]): Listener {
  const staged: StagedHttpFilter[] = [];
  for (const p of plugins) staged.push(...(p.httpFilters?.(proxy, listener) ?? []));
  staged.push({
    position: during(FilterStage.Route),
    filter: {
      name: 'envoy.filters.http.router',
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.router.v3.Router', {}),
    },
  });
  // stable: filters at one position keep the feature order
  staged.sort((a, b) => comparePositions(a.position, b.position));
  const hcm: HttpConnectionManager = {
    stat_prefix: 'http',
    codec_type: 'AUTO',
    rds: { route_config_name: routeConfigName(listener), config_source: ADS_SOURCE },
    http_filters: staged.map((s) => s.filter),
  };
  const socket: SocketAddress = { address: listener.bindAddress, port_value: listener.bindPort };
  if (listener.bindAddress === '::') socket.ipv4_compat = true;
  const filters: NetworkFilter[] = [{ name: 'envoy.filters.network.http_connection_manager', typed_config: typed(HCM_TYPE, hcm) }];
  const rendered: Listener = { name: listener.name, address: { socket_address: socket }, filter_chains: [{ filters }] };
  for (const p of plugins) p.patchListener?.(listener, rendered, filters);
  return rendered;
}

/** A hybridGateway chain's filter chains also match its source ranges, and are named after it (names are unique per listener). */
function matchChain(listener: Listener, chain: ChainMatchIR): void {
  const ranges = chain.sourcePrefixRanges.map((r) => ({ address_prefix: r.addressPrefix, prefix_len: r.prefixLen }));
  listener.filter_chains = (listener.filter_chains ?? []).map(({ name, filter_chain_match: match, ...rest }) => ({
    name: name ? `${chain.name}-${name}` : chain.name,
    ...(ranges.length ? { filter_chain_match: { ...match, source_prefix_ranges: ranges } } : match ? { filter_chain_match: match } : {}),
    ...rest,
  }));
}

/** Adds `other`'s filter chains and listener filters (once each, by name) to `into`, rendered from the same Gateway. */
function mergeListener(into: Listener, other: Listener): void {
  const chains = into.filter_chains ?? [];
  delete into.filter_chains;
  const filters = [...(into.listener_filters ?? [])];
  for (const f of other.listener_filters ?? []) if (!filters.some((g) => g.name === f.name)) filters.push(f);
  if (filters.length) into.listener_filters = filters;
  into.filter_chains = [...chains, ...(other.filter_chains ?? [])];
}

function renderRouteConfig(
  proxy: ProxyIR,
  listener: ListenerIR,
  plugins: readonly RenderPlugin[],
  vhosts: VirtualHostReuse | undefined,
): RouteConfiguration {
  const config: RouteConfiguration = {
    name: routeConfigName(listener),
    // Match virtual hosts on the host name alone, so `Host: example.com:8080` finds `example.com`,
    // without rewriting the Host (HCM strip_any_host_port would, and redirects would lose the port:
    // envoyproxy/envoy#19589).
    ignore_port_in_host_matching: true,
    virtual_hosts: listener.virtualHosts.map((vh) => {
      let vhost = vhosts?.reuse?.get(vh);
      if (!vhost) {
        vhost = { name: vh.name, domains: vh.domains, routes: vh.routes.flatMap((r) => renderRoutes(r, vh, plugins)) };
        for (const p of plugins) p.patchVirtualHost?.(vh, vhost, proxy);
      }
      vhosts?.memo.set(vh, vhost);
      return vhost;
    }),
  };
  for (const p of plugins) p.patchRouteConfig?.(listener, config);
  return config;
}

/** One Envoy route per matcher, all sharing the action. */
function renderRoutes(ir: RouteIR, vh: VirtualHostIR, plugins: readonly RenderPlugin[]): EnvoyRoute[] {
  const single = (matcherIndex: number): EnvoyRoute => {
    const route: EnvoyRoute = { name: ir.matchers.length > 1 ? `${ir.name}-${matcherIndex}` : ir.name };
    for (const p of plugins) p.patchRoute?.(ir, route, vh);
    route.match = matchFor(ir.matchers[matcherIndex]);
    return route;
  };
  const routes = ir.matchers.map((_, i) => single(i));
  for (const p of plugins) {
    if (p.expandRoute === undefined) continue;
    for (let i = routes.length - 1; i >= 0; i--) {
      const expanded = p.expandRoute(ir, routes[i]!);
      if (expanded !== undefined) routes.splice(i, 1, ...expanded);
    }
  }
  return routes;
}
