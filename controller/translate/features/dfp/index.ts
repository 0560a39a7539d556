// Dynamic forward proxy (Gloo's routeAction.dynamicForwardProxy): the route forwards to the host named
// by the request (its Host, or `hostRewrite`, or the `autoHostRewriteHeader` header), resolved by
// Envoy's DNS cache. Envoy's dynamic_forward_proxy filter and a dynamic_forward_proxy cluster sharing
// one DNS cache are added to a proxy with such a route. Gloo asks for a Gateway-level
// `httpGateway.options.dynamicForwardProxy` first; here the route alone is enough (default DNS cache).
import type { Feature } from '../../feature.js';
import { DFP_CLUSTER, dfpRender } from './render.js';

export const dfpFeature: Feature = {
  name: 'dfp',
  kinds: [],
  resolve() {
    return {
      routeAction(route) {
        if (!route.routeAction?.dynamicForwardProxy) return undefined;
        return { type: 'route', clusters: [{ cluster: DFP_CLUSTER, weight: 1 }] };
      },
      bindRoute(route, ir) {
        const dfp = route.routeAction?.dynamicForwardProxy;
        if (!dfp) return;
        ir.dynamicForwardProxy = {};
        if (dfp.hostRewrite !== undefined) ir.dynamicForwardProxy.hostRewrite = dfp.hostRewrite;
        if (dfp.autoHostRewriteHeader !== undefined) ir.dynamicForwardProxy.hostRewriteHeader = dfp.autoHostRewriteHeader;
      },
    };
  },
  render: dfpRender,
};
