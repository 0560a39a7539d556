// Stage 2 for the dynamic forward proxy: the filter (before the router), the cluster, both on one DNS
// cache (Envoy requires the same cache config on both), and each route's host rewrite.
import { createHash } from 'node:crypto';
import { typed, type Cluster, type HttpFilter } from '../../../../envoy/typed.js';
import type { envoy_extensions_common_dynamic_forward_proxy_v3_DnsCacheConfig } from '../../../../envoy/types.generated.js';
import { duration, setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, before, type RenderPlugin } from '../../feature.js';
import type { ListenerIR } from '../../ir.js';
import { perProxy, someRoute } from '../../proxy-facts.js';

export const DFP_FILTER = 'envoy.filters.http.dynamic_forward_proxy';
export const DFP_CLUSTER = 'legate-dynamic-forward-proxy';

type DnsCacheConfig = envoy_extensions_common_dynamic_forward_proxy_v3_DnsCacheConfig;

/**
 * The proxy's one DNS cache (Envoy wants the filter's and the cluster's alike): Gloo's defaults, or the settings of
 * the first listener with httpGateway.options.dynamicForwardProxy.
 */
const dnsCache = perProxy((proxy): DnsCacheConfig => {
  const c = proxy.listeners.find((l) => l.dynamicForwardProxy)?.dynamicForwardProxy?.dnsCache;
  const settings = dnsCacheSettings(c);
  // Envoy keeps a DNS cache by name and refuses other settings under it: new settings, new name
  const name = c
    ? `legate_dynamic_forward_proxy_${createHash('sha256').update(JSON.stringify(settings)).digest('hex').slice(0, 12)}`
    : DNS_CACHE_NAME;
  return { name, ...settings };
});

const DNS_CACHE_NAME = 'legate_dynamic_forward_proxy';

function dnsCacheSettings(c: NonNullable<ListenerIR['dynamicForwardProxy']>['dnsCache'] | undefined): Omit<DnsCacheConfig, 'name'> {
  return {
    // Gloo's default lookup family
    dns_lookup_family: (c?.lookupFamily ?? 'V4_PREFERRED') as NonNullable<DnsCacheConfig['dns_lookup_family']>,
    ...(c?.refreshRate ? { dns_refresh_rate: duration(c.refreshRate) } : {}),
    ...(c?.hostTtl ? { host_ttl: duration(c.hostTtl) } : {}),
    ...(c?.maxHosts !== undefined ? { max_hosts: c.maxHosts } : {}),
    ...(c?.failureRefresh
      ? {
          dns_failure_refresh_rate: {
            base_interval: duration(c.failureRefresh.base),
            ...(c.failureRefresh.max ? { max_interval: duration(c.failureRefresh.max) } : {}),
          },
        }
      : {}),
    ...(c?.maxPendingRequests !== undefined ? { dns_cache_circuit_breaker: { max_pending_requests: c.maxPendingRequests } } : {}),
    ...(c?.queryTimeout ? { dns_query_timeout: duration(c.queryTimeout) } : {}),
    ...(c?.preresolve.length ? { preresolve_hostnames: c.preresolve.map((h) => ({ address: h.address, port_value: h.port })) } : {}),
  };
}

const forwardsDynamically = perProxy((proxy) => someRoute(proxy, (r) => r.dynamicForwardProxy !== undefined));

export const dfpRender: RenderPlugin = {
  httpFilters(proxy, listener) {
    if (!forwardsDynamically(proxy)) return [];
    // routes to other clusters pass through it untouched
    const filter: HttpFilter = {
      name: DFP_FILTER,
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig', {
        dns_cache_config: dnsCache(proxy),
        ...(listener.dynamicForwardProxy?.saveUpstreamAddress ? { save_upstream_address: true } : {}),
      }),
    };
    return [{ position: before(FilterStage.Route), filter }];
  },
  patchRoute(ir, route) {
    const dfp = ir.dynamicForwardProxy;
    if (!dfp || (dfp.hostRewrite === undefined && dfp.hostRewriteHeader === undefined)) return;
    const perRoute =
      dfp.hostRewrite !== undefined ? { host_rewrite_literal: dfp.hostRewrite } : { host_rewrite_header: dfp.hostRewriteHeader ?? '' };
    setPerFilterConfig(
      route,
      DFP_FILTER,
      typed('type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.PerRouteConfig', perRoute),
    );
  },
  extraClusters(proxy) {
    if (!forwardsDynamically(proxy)) return [];
    const cluster: Cluster = {
      name: DFP_CLUSTER,
      connect_timeout: { seconds: 5 },
      lb_policy: 'CLUSTER_PROVIDED',
      cluster_type: {
        name: 'envoy.clusters.dynamic_forward_proxy',
        typed_config: typed('type.googleapis.com/envoy.extensions.clusters.dynamic_forward_proxy.v3.ClusterConfig', {
          dns_cache_config: dnsCache(proxy),
        }),
      },
    };
    return [cluster];
  },
};
