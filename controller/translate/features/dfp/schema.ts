// `routeAction.dynamicForwardProxy` (Gloo's dfp PerRouteConfig): forward to the host the request names; and
// `httpGateway.options.dynamicForwardProxy` (Gloo's dfp FilterConfig): the DNS cache those routes resolve hosts with.
import { z } from 'zod';

import { Duration, notSupported, protoEnum } from '../../../api/primitives.js';

const DynamicForwardProxyRouteSchema = z
  .strictObject({
    // the host (and port) to resolve and send instead of the request's Host
    hostRewrite: z.string().min(1).optional(),
    // the request header whose value is that host
    autoHostRewriteHeader: z.string().min(1).optional(),
  })
  .refine((d) => !(d.hostRewrite !== undefined && d.autoHostRewriteHeader !== undefined), {
    message: 'set at most one of hostRewrite, autoHostRewriteHeader',
  });

/** Route actions the dfp feature owns (a kind of routeAction destination). */
export const dfpRouteActions = { dynamicForwardProxy: DynamicForwardProxyRouteSchema.optional() };

/** Gloo's dfp DnsLookupFamily names (Envoy's). */
export const DNS_LOOKUP_FAMILIES = ['V4_PREFERRED', 'V4_ONLY', 'V6_ONLY', 'AUTO', 'ALL'] as const;

const DnsCacheConfigSchema = z.strictObject({
  dnsLookupFamily: protoEnum(DNS_LOOKUP_FAMILIES).optional(),
  dnsRefreshRate: Duration.optional(),
  hostTtl: Duration.optional(),
  maxHosts: z.number().int().min(1).max(4294967295).optional(),
  dnsFailureRefreshRate: z.strictObject({ baseInterval: Duration, maxInterval: Duration.optional() }).optional(),
  dnsCacheCircuitBreaker: z.strictObject({ maxPendingRequests: z.number().int().min(0).max(4294967295).optional() }).optional(),
  dnsQueryTimeout: Duration.optional(),
  preresolveHostnames: z
    .array(z.strictObject({ address: z.string().min(1, 'must not be empty'), portValue: z.number().int().min(0).max(65535) }))
    .optional(),
  caresDns: notSupported("custom c-ares resolvers are not rendered: Envoy resolves with the host's resolv.conf"),
  appleDns: notSupported("Apple's DNS resolver exists only in Envoy builds for Apple platforms"),
});

/** `httpGateway.options` fields this feature renders. */
export const dfpHttpListenerOptions = {
  dynamicForwardProxy: z
    .strictObject({
      dnsCacheConfig: DnsCacheConfigSchema.optional(),
      saveUpstreamAddress: z.boolean().optional(),
      sslConfig: notSupported(
        "TLS from the dynamic forward proxy's cluster is not rendered (its SNI and certificate names would come from each " +
          "request's host): hosts are reached over plain HTTP",
      ),
    })
    .optional(),
};
