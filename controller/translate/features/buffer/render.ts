// Stage 2 for bufferPerRoute: the buffer filter (disabled on the HCM, just before the router, where
// Gloo stages it) and its per-filter config on virtual hosts, routes and weighted clusters.
import { typed, type HttpFilter, type TypedConfig } from '../../../../envoy/typed.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, before, type RenderPlugin } from '../../feature.js';
import type { BufferIR } from '../../ir.js';
import { perProxy, someVirtualHost } from '../../proxy-facts.js';

/** Not `envoy.filters.http.buffer`: the graphql feature's own buffer filter has that name, and a per-route
 * config applies to every filter of the name it is set under. */
export const BUFFER_PER_ROUTE_FILTER = 'legate.buffer_per_route';
const FILTER_CONFIG = 'type.googleapis.com/envoy.config.route.v3.FilterConfig';
const BUFFER_PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.buffer.v3.BufferPerRoute';

/** Whether anything in the proxy configures buffering (asked per listener). */
const buffersAnything = perProxy((proxy) =>
  someVirtualHost(
    proxy,
    (vh) =>
      vh.buffer !== undefined ||
      vh.routes.some((r) => r.buffer !== undefined || (r.action.type === 'route' && r.action.clusters.some((c) => c.buffer))),
  ),
);

function perFilterConfig(b: BufferIR): TypedConfig {
  if ('disabled' in b) return typed(FILTER_CONFIG, { disabled: true });
  return typed(FILTER_CONFIG, { disabled: false, config: typed(BUFFER_PER_ROUTE, { buffer: { max_request_bytes: b.maxRequestBytes } }) });
}

export const bufferRender: RenderPlugin = {
  httpFilters(proxy, listener) {
    const listenerWide = listener.http?.bufferMaxRequestBytes;
    if (listenerWide !== undefined) {
      // httpGateway.options.buffer: every request, unless a bufferPerRoute turns it off or sets its own limit
      const typed_config = typed('type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer', { max_request_bytes: listenerWide });
      return [{ position: before(FilterStage.Route), filter: { name: BUFFER_PER_ROUTE_FILTER, typed_config } }];
    }
    if (!buffersAnything(proxy)) return [];
    const filter: HttpFilter = {
      name: BUFFER_PER_ROUTE_FILTER,
      disabled: true,
      // never used as it is: whatever enables the filter brings its own limit
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer', { max_request_bytes: 1024 * 1024 }),
    };
    return [{ position: before(FilterStage.Route), filter }];
  },
  // patchVirtualHost reads nothing of the proxy
  proxyContext: () => null,
  patchVirtualHost(ir, vhost) {
    if (ir.buffer) setPerFilterConfig(vhost, BUFFER_PER_ROUTE_FILTER, perFilterConfig(ir.buffer));
  },
  patchRoute(ir, route) {
    if (ir.buffer) setPerFilterConfig(route, BUFFER_PER_ROUTE_FILTER, perFilterConfig(ir.buffer));
    if (ir.action.type !== 'route') return;
    // routing renders weighted_clusters in the order of the IR's clusters, and a lone one as `cluster`
    const weighted = route.route?.weighted_clusters?.clusters;
    const only = ir.action.clusters.length === 1 ? ir.action.clusters[0] : undefined;
    if (!weighted) {
      if (only?.buffer) setPerFilterConfig(route, BUFFER_PER_ROUTE_FILTER, perFilterConfig(only.buffer));
      return;
    }
    ir.action.clusters.forEach((c, i) => {
      const target = weighted[i];
      if (c.buffer && target) setPerFilterConfig(target, BUFFER_PER_ROUTE_FILTER, perFilterConfig(c.buffer));
    });
  },
};
