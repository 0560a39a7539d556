// Dynamic forward proxy (Gloo's routeAction.dynamicForwardProxy): the route forwards to the host named
// by the request (its Host, or `hostRewrite`, or the `autoHostRewriteHeader` header), resolved by
// Envoy's DNS cache. Envoy's dynamic_forward_proxy filter and a dynamic_forward_proxy cluster sharing
// one DNS cache are added to a proxy with such a route. Gloo asks for a Gateway-level
// `httpGateway.options.dynamicForwardProxy` first; here the route alone is enough (Gloo's default DNS cache), and a
// Gateway's dynamicForwardProxy sets the DNS cache (one per proxy: the first listener's that has one).
import { parseDuration } from '../../duration.js';
import { enumName, type Feature } from '../../feature.js';
import type { ListenerIR } from '../../ir.js';
import { DFP_CLUSTER, dfpRender } from './render.js';
import { DNS_LOOKUP_FAMILIES } from './schema.js';

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
      bindGateway(gw, ir) {
        const o = gw.spec.httpGateway?.options?.dynamicForwardProxy;
        if (!o) return;
        const c = o.dnsCacheConfig ?? {};
        const cache: NonNullable<ListenerIR['dynamicForwardProxy']>['dnsCache'] = {
          preresolve: (c.preresolveHostnames ?? []).map((h) => ({ address: h.address, port: h.portValue })),
        };
        const family = enumName(DNS_LOOKUP_FAMILIES, c.dnsLookupFamily);
        if (family !== undefined) cache.lookupFamily = family;
        if (c.dnsRefreshRate !== undefined) cache.refreshRate = parseDuration(c.dnsRefreshRate);
        if (c.hostTtl !== undefined) cache.hostTtl = parseDuration(c.hostTtl);
        if (c.maxHosts !== undefined) cache.maxHosts = c.maxHosts;
        const f = c.dnsFailureRefreshRate;
        if (f)
          cache.failureRefresh = { base: parseDuration(f.baseInterval), ...(f.maxInterval ? { max: parseDuration(f.maxInterval) } : {}) };
        if (c.dnsCacheCircuitBreaker?.maxPendingRequests !== undefined)
          cache.maxPendingRequests = c.dnsCacheCircuitBreaker.maxPendingRequests;
        if (c.dnsQueryTimeout !== undefined) cache.queryTimeout = parseDuration(c.dnsQueryTimeout);
        ir.dynamicForwardProxy = {
          dnsCache: cache,
          ...(o.saveUpstreamAddress !== undefined ? { saveUpstreamAddress: o.saveUpstreamAddress } : {}),
        };
      },
    };
  },
  render: dfpRender,
};
