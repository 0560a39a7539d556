// The route fields routing owns: what a route does (forward, answer, redirect) and how it forwards
// (rewrites, timeouts, retries, shadowing). controller/api/routes.ts composes them into the Route schema.
import { z } from 'zod';
import { Duration, Name, Percentage, ResourceRefSchema, notSupported, protoEnum } from '../../../api/primitives.js';

const GLOO_TRANSFORMATION = "Gloo's transformation filter, which is not part of upstream Envoy";

/** An HTTP header name (a token; Envoy compares it in lower case). */
const HeaderName = z.string().regex(/^[0-9A-Za-z!#$%&'*+\-.^_`|~]+$/, 'expected an HTTP header name');

/** Gloo's RegexMatchAndSubstitute (`regexRewrite` of routes and redirects). */
export const RegexRewriteSchema = z.strictObject({
  pattern: z.strictObject({
    regex: z.string().min(1, 'must not be empty'),
    googleRe2: z
      .strictObject({
        maxProgramSize: notSupported("Envoy 1.40 sets RE2's program size limits in its runtime, not per regex"),
      })
      .optional(),
  }),
  substitution: z.string().optional(),
});
export type RegexRewrite = z.infer<typeof RegexRewriteSchema>;

const KubeDestinationSchema = z.strictObject({
  ref: ResourceRefSchema,
  port: z.number().int().min(1).max(65535),
});

/** Gloo's aws DestinationSpec (aws.proto): which function of an AWS Lambda Upstream, and how (features/functions). */
export const AwsDestinationSpecSchema = z.strictObject({
  logicalName: z.string().optional(),
  invocationStyle: protoEnum(['SYNC', 'ASYNC']).optional(),
  requestTransformation: z.boolean().optional(),
  /** deprecated in Gloo for unwrapAsApiGateway */
  responseTransformation: z.boolean().optional(),
  unwrapAsAlb: z.boolean().optional(),
  unwrapAsApiGateway: z.boolean().optional(),
  wrapAsApiGateway: z.boolean().optional(),
});
export type AwsDestinationSpec = z.infer<typeof AwsDestinationSpecSchema>;

/** Gloo's azure DestinationSpec (azure.proto): which function of an Azure Functions Upstream (features/functions). */
export const AzureDestinationSpecSchema = z.strictObject({ functionName: Name });

export const DestinationSchema = z
  .strictObject({
    upstream: ResourceRefSchema.optional(),
    kube: KubeDestinationSchema.optional(),
    consul: notSupported('Legate has no Consul service discovery; route to an upstream or a kube Service'),
    /** the endpoints of the upstream's subsetSpec whose `envoy.lb` metadata has these values */
    subset: z.strictObject({ values: z.record(Name, z.string()) }).optional(),
    destinationSpec: z
      .strictObject({
        aws: AwsDestinationSpecSchema.optional(),
        azure: AzureDestinationSpecSchema.optional(),
        rest: notSupported(`REST function routing needs ${GLOO_TRANSFORMATION}`),
        grpc: notSupported(`gRPC function routing needs ${GLOO_TRANSFORMATION}`),
      })
      .optional(),
  })
  // (a consul destination is refused as such, not also as a missing upstream)
  .refine((d) => d.consul !== undefined || (d.upstream ? 1 : 0) + (d.kube ? 1 : 0) === 1, { message: 'set exactly one of upstream, kube' });
export type Destination = z.infer<typeof DestinationSchema>;

/** A weighted destination (routeAction.multi and UpstreamGroup), with the options other features own. */
export function weightedDestinationSchema<O extends z.ZodType>(destinationOptions: O) {
  return z.strictObject({
    destination: DestinationSchema,
    weight: z.number().int().min(0).optional(),
    options: destinationOptions.optional(),
  });
}

/**
 * `routeAction`, whose weighted destinations carry the options other features own (`destinationOptions`),
 * and the kinds of destination other features own (`otherActions`, e.g. dynamicForwardProxy).
 */
export function routeActionSchema<O extends z.ZodType, A extends Record<string, z.ZodOptional<z.ZodType>>>(
  destinationOptions: O,
  otherActions: A,
) {
  const kinds = ['single', 'multi', 'clusterHeader', 'upstreamGroup', ...Object.keys(otherActions)];
  return z
    .strictObject({
      single: DestinationSchema.optional(),
      multi: z
        .strictObject({
          destinations: z.array(weightedDestinationSchema(destinationOptions)).min(1, 'needs at least one destination'),
        })
        .optional(),
      /** the request header that names the Envoy cluster (`<upstream>_<namespace>`) to route to */
      clusterHeader: HeaderName.optional(),
      /** an UpstreamGroup (its destinations, as if they were written in `multi`) */
      upstreamGroup: ResourceRefSchema.optional(),
      ...otherActions,
    })
    .refine((a) => kinds.filter((k) => (a as Record<string, unknown>)[k] !== undefined).length === 1, {
      message: `set exactly one of ${kinds.join(', ')}`,
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
    regexRewrite: RegexRewriteSchema.optional(),
  })
  .refine((r) => [r.pathRedirect, r.prefixRewrite, r.regexRewrite].filter((v) => v !== undefined).length <= 1, {
    message: 'set at most one of pathRedirect, prefixRewrite, regexRewrite',
  });
export type RedirectAction = z.infer<typeof RedirectActionSchema>;

/** Gloo's RetryPolicy (route and virtual host). */
const RetriesSchema = z.strictObject({
  retryOn: z.string().optional(),
  numRetries: z.number().int().min(0).optional(),
  perTryTimeout: Duration.optional(),
  retryBackOff: z.strictObject({ baseInterval: Duration.optional(), maxInterval: Duration.optional() }).optional(),
  previousPriorities: z.strictObject({ updateFrequency: z.number().int().min(1).optional() }).optional(),
});
export type Retries = z.infer<typeof RetriesSchema>;

/** Route options routing renders. */
export const routingRouteOptions = {
  prefixRewrite: z.string().optional(),
  regexRewrite: RegexRewriteSchema.optional(),
  timeout: Duration.optional(),
  idleTimeout: Duration.optional(),
  maxStreamDuration: z
    .strictObject({
      maxStreamDuration: Duration.optional(),
      grpcTimeoutHeaderMax: Duration.optional(),
      grpcTimeoutHeaderOffset: Duration.optional(),
    })
    .optional(),
  retries: RetriesSchema.optional(),
  shadowing: z.strictObject({ upstream: ResourceRefSchema, percentage: Percentage.optional() }).optional(),
};

/** Virtual host options routing renders. */
export const routingVirtualHostOptions = {
  retries: RetriesSchema.optional(),
};
