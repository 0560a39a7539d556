// `routeAction.dynamicForwardProxy` (Gloo's dfp PerRouteConfig): forward to the host the request names.
import { z } from 'zod';

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
