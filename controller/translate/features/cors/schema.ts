// The browser-facing options: `cors` (Gloo's CorsPolicy) on virtual hosts and routes, with the virtual
// host's `corsPolicyMergeSettings`, and `csrf` (Gloo's copy of Envoy's CsrfPolicy) on virtual hosts,
// routes and weighted destinations. controller/api/routes.ts composes them into the option schemas.
import { z } from 'zod';
import { protoEnum } from '../../../api/primitives.js';

/** Gloo passes maxAge to the header verbatim; Legate takes seconds or a duration and sends seconds. */
export const MAX_AGE_PATTERN = /^(\d+)$|^(\d+(?:\.\d+)?)(s|m|h|d)$/;

/** `options.cors` (cors.options.gloo.solo.io.CorsPolicy). */
export const CorsPolicySchema = z.strictObject({
  allowOrigin: z.array(z.string().min(1, 'must not be empty')).optional(),
  allowOriginRegex: z.array(z.string().min(1, 'must not be empty')).optional(),
  allowMethods: z.array(z.string().min(1, 'must not be empty')).optional(),
  allowHeaders: z.array(z.string().min(1, 'must not be empty')).optional(),
  exposeHeaders: z.array(z.string().min(1, 'must not be empty')).optional(),
  maxAge: z.string().regex(MAX_AGE_PATTERN, 'expected seconds ("86400") or a duration such as "1d", "12h", "10m", "30s"').optional(),
  allowCredentials: z.boolean().optional(),
  disableForRoute: z.boolean().optional(),
});
export type CorsPolicy = z.infer<typeof CorsPolicySchema>;

export const MERGE_STRATEGIES = ['DEFAULT', 'UNION'] as const;

/** `virtualHost.options.corsPolicyMergeSettings`: only exposeHeaders is configurable in Gloo. */
const CorsPolicyMergeSettingsSchema = z.strictObject({ exposeHeaders: protoEnum(MERGE_STRATEGIES).optional() });

export const DENOMINATORS = ['HUNDRED', 'TEN_THOUSAND', 'MILLION'] as const;

/** Envoy's RuntimeFractionalPercent as Gloo copies it. */
const RuntimeFractionalPercentSchema = z.strictObject({
  defaultValue: z
    .strictObject({
      numerator: z.number().int().min(0).optional(),
      denominator: protoEnum(DENOMINATORS).optional(),
    })
    .optional(),
  runtimeKey: z.string().optional(),
});
export type RuntimeFractionalPercent = z.infer<typeof RuntimeFractionalPercentSchema>;

/** Gloo's copy of Envoy's StringMatcher (no `contains`): exactly one pattern. */
const StringMatcherSchema = z
  .strictObject({
    exact: z.string().optional(),
    prefix: z.string().min(1, 'must not be empty').optional(),
    suffix: z.string().min(1, 'must not be empty').optional(),
    safeRegex: z
      .strictObject({
        googleRe2: z.strictObject({ maxProgramSize: z.number().int().min(0).optional() }).optional(),
        regex: z.string().min(1, 'must not be empty'),
      })
      .optional(),
    ignoreCase: z.boolean().optional(),
  })
  .refine((m) => [m.exact, m.prefix, m.suffix, m.safeRegex].filter((p) => p !== undefined).length === 1, {
    message: 'set exactly one of exact, prefix, suffix, safeRegex',
  });
export type StringMatcher = z.infer<typeof StringMatcherSchema>;

/** `options.csrf` (solo.io.envoy.extensions.filters.http.csrf.v3.CsrfPolicy). */
export const CsrfPolicySchema = z.strictObject({
  filterEnabled: RuntimeFractionalPercentSchema.optional(),
  shadowEnabled: RuntimeFractionalPercentSchema.optional(),
  additionalOrigins: z.array(StringMatcherSchema).optional(),
});
export type CsrfPolicy = z.infer<typeof CsrfPolicySchema>;

/** `httpGateway.options` of a Gateway this feature renders: a listener-wide CSRF policy. */
export const corsHttpListenerOptions = { csrf: CsrfPolicySchema.optional() };

/** Route options this feature renders. */
export const corsRouteOptions = {
  cors: CorsPolicySchema.optional(),
  csrf: CsrfPolicySchema.optional(),
};

/** Virtual-host options this feature renders. */
export const corsVirtualHostOptions = {
  ...corsRouteOptions,
  corsPolicyMergeSettings: CorsPolicyMergeSettingsSchema.optional(),
};

/** Weighted-destination options this feature renders. */
export const corsDestinationOptions = {
  csrf: CsrfPolicySchema.optional(),
};
