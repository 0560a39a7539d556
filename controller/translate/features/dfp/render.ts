// Stage 2 for the dynamic forward proxy: the filter (before the router), the cluster, both on one DNS
// cache (Envoy requires the same cache config on both), and each route's host rewrite.
import { typed, type Cluster, type HttpFilter } from '../../../../envoy/typed.js';
import type { envoy_extensions_common_dynamic_forward_proxy_v3_DnsCacheConfig } from '../../../../envoy/types.generated.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, before, type RenderPlugin } from '../../feature.js';
import { perProxy, someRoute } from '../../proxy-facts.js';

export const DFP_FILTER = 'envoy.filters.http.dynamic_forward_proxy';
export const DFP_CLUSTER = 'legate-dynamic-forward-proxy';

const DNS_CACHE: envoy_extensions_common_dynamic_forward_proxy_v3_DnsCacheConfig = {
  name: 'legate_dynamic_forward_proxy',
  // Gloo's default lookup family
  dns_lookup_family: 'V4_PREFERRED',
};

const forwardsDynamically = perProxy((proxy) => someRoute(proxy, (r) => r.dynamicForwardProxy !== undefined));

export const dfpRender: RenderPlugin = {
  httpFilters(proxy) {
    if (!forwardsDynamically(proxy)) return [];
    // routes to other clusters pass through it untouched
    const filter: HttpFilter = {
      name: DFP_FILTER,
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.dynamic_forward_proxy.v3.FilterConfig', {
        dns_cache_config: DNS_CACHE,
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
          dns_cache_config: DNS_CACHE,
        }),
      },
    };
    return [cluster];
  },
};
