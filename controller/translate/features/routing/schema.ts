// The route fields routing owns: what a route does (forward, answer, redirect) and how it forwards
// (prefix rewrite, timeout, retries). controller/api/routes.ts composes them into the Route schema.
import { z } from 'zod';
import { Duration, ResourceRefSchema } from '../../../api/primitives.js';

const KubeDestinationSchema = z.strictObject({
  ref: ResourceRefSchema,
  port: z.number().int().min(1).max(65535),
});

export const DestinationSchema = z
  .strictObject({
    upstream: ResourceRefSchema.optional(),
    kube: KubeDestinationSchema.optional(),
  })
  .refine((d) => (d.upstream ? 1 : 0) + (d.kube ? 1 : 0) === 1, { message: 'set exactly one of upstream, kube' });
export type Destination = z.infer<typeof DestinationSchema>;

/** A weighted destination (routeAction.multi and UpstreamGroup), with the options other features own. */
export function weightedDestinationSchema<O extends z.ZodType>(destinationOptions: O) {
  return z.strictObject({
    destination: DestinationSchema,
    weight: z.number().int().min(0).optional(),
    options: destinationOptions.optional(),
  });
}

/** `routeAction`, whose weighted destinations carry the options other features own (`destinationOptions`). */
export function routeActionSchema<O extends z.ZodType>(destinationOptions: O) {
  return z
    .strictObject({
      single: DestinationSchema.optional(),
      multi: z
        .strictObject({
          destinations: z.array(weightedDestinationSchema(destinationOptions)).min(1, 'needs at least one destination'),
        })
        .optional(),
      /** an UpstreamGroup (its destinations, as if they were written in `multi`) */
      upstreamGroup: ResourceRefSchema.optional(),
    })
    .refine((a) => (a.single ? 1 : 0) + (a.multi ? 1 : 0) + (a.upstreamGroup ? 1 : 0) === 1, {
      message: 'set exactly one of single, multi, upstreamGroup',
    });
}

export const DirectResponseActionSchema = z.strictObject({
  status: z.number().int().min(200).max(599),
  body: z.string().optional(),
});

export const REDIRECT_CODES = ['MOVED_PERMANENTLY', 'FOUND', 'SEE_OTHER', 'TEMPORARY_REDIRECT', 'PERMANENT_REDIRECT'] as const;

export const RedirectActionSchema = z
  .strictObject({
    hostRedirect: z.string().optional(),
    portRedirect: z.number().int().min(1).max(65535).optional(),
    pathRedirect: z.string().optional(),
    prefixRewrite: z.string().optional(),
    httpsRedirect: z.boolean().optional(),
    stripQuery: z.boolean().optional(),
    responseCode: z.enum(REDIRECT_CODES).optional(),
  })
  .refine((r) => !(r.pathRedirect !== undefined && r.prefixRewrite !== undefined), {
    message: 'set at most one of pathRedirect, prefixRewrite',
  });
export type RedirectAction = z.infer<typeof RedirectActionSchema>;

const RetriesSchema = z.strictObject({
  retryOn: z.string().optional(),
  numRetries: z.number().int().min(0).optional(),
  perTryTimeout: Duration.optional(),
});

/** Route options routing renders. */
export const routingRouteOptions = {
  prefixRewrite: z.string().optional(),
  timeout: Duration.optional(),
  retries: RetriesSchema.optional(),
};
