// Stage 2 for headers: request/response headers to add and remove on the Envoy virtual host, route and
// weighted cluster (Envoy applies a weighted cluster's, then the route's, then the virtual host's, so
// where both overwrite a header the virtual host's value wins, as in Gloo), and the Host rewrites on
// the route action routing rendered.
import type { EnvoyRoute, RouteAction, envoy_config_core_v3_HeaderValueOption as HeaderValueOption } from '../../../../envoy/typed.js';
import type { RenderPlugin } from '../../feature.js';
import type { HeaderAddIR, HeaderManipulationIR, HostRewriteIR } from '../../ir.js';

interface HeaderTarget {
  request_headers_to_add?: HeaderValueOption[];
  request_headers_to_remove?: string[];
  response_headers_to_add?: HeaderValueOption[];
  response_headers_to_remove?: string[];
}

function option(h: HeaderAddIR): HeaderValueOption {
  // a Secret's value is data, not a format string: its % are escaped for Envoy's formatter
  const value = 'value' in h ? h.value : h.secretValue.replaceAll('%', '%%');
  // APPEND_IF_EXISTS_OR_ADD is Envoy's default (and Gloo's for an unset append)
  return h.append ? { header: { key: h.key, value } } : { header: { key: h.key, value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' };
}

/** Adds `h` to what `target` already has (another plugin may have put entries there); `first` puts it in front. */
function apply(target: HeaderTarget, h: HeaderManipulationIR, first = false): void {
  const join = <T>(have: T[] | undefined, add: T[]): T[] => (first ? [...add, ...(have ?? [])] : [...(have ?? []), ...add]);
  if (h.requestHeadersToAdd) target.request_headers_to_add = join(target.request_headers_to_add, h.requestHeadersToAdd.map(option));
  if (h.requestHeadersToRemove) target.request_headers_to_remove = join(target.request_headers_to_remove, h.requestHeadersToRemove);
  if (h.responseHeadersToAdd) target.response_headers_to_add = join(target.response_headers_to_add, h.responseHeadersToAdd.map(option));
  if (h.responseHeadersToRemove) target.response_headers_to_remove = join(target.response_headers_to_remove, h.responseHeadersToRemove);
}

function setHostRewrite(action: RouteAction, r: HostRewriteIR): void {
  if ('literal' in r) action.host_rewrite_literal = r.literal;
  else if ('auto' in r) action.auto_host_rewrite = true;
  else if ('header' in r) action.host_rewrite_header = r.header;
  else action.host_rewrite_path_regex = { pattern: { regex: r.pathRegex.regex }, substitution: r.pathRegex.substitution };
}

export const headersRender: RenderPlugin = {
  // reads nothing of the proxy: virtual hosts rendered earlier from the same IR stay reusable
  proxyContext: () => null,
  patchVirtualHost(ir, vhost) {
    if (ir.headers) apply(vhost, ir.headers);
  },
  patchRoute(ir, route: EnvoyRoute) {
    if (ir.headers) apply(route, ir.headers);
    const action = route.route;
    if (!action || ir.action.type !== 'route') return;
    const clusters = ir.action.clusters;
    const weighted = action.weighted_clusters?.clusters;
    if (weighted) {
      // routing renders weighted_clusters in the IR's order
      clusters.forEach((c, i) => {
        const w = weighted[i];
        if (c.headers && w) apply(w, c.headers);
      });
    } else if (clusters.length === 1 && clusters[0]?.headers) {
      // one destination left (the others weigh 0) is rendered as a plain cluster: its headers go on the
      // route, in front of the route's own, which is the order Envoy would have applied them in
      apply(route, clusters[0].headers, true);
    }
    if (ir.hostRewrite) setHostRewrite(action, ir.hostRewrite);
    if (ir.appendXForwardedHost) action.append_x_forwarded_host = true;
  },
};
