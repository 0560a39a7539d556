// The header options: `headerManipulation` (Gloo's HeaderManipulation) on virtual hosts, routes and
// weighted destinations, and the route options that rewrite the Host header on the way upstream.
// controller/api/routes.ts composes them into the option schemas.
import { z } from 'zod';
import { ResourceRefSchema, notSupported } from '../../../api/primitives.js';

const HeaderValueSchema = z.strictObject({ key: z.string(), value: z.string().optional() });

/** A request header: a key and value, or every key of a Secret (`headerSecretRef`); `append` defaults to true. */
const RequestHeaderValueOptionSchema = z
  .strictObject({
    header: HeaderValueSchema.optional(),
    headerSecretRef: ResourceRefSchema.optional(),
    append: z.boolean().optional(),
  })
  .refine((o) => (o.header ? 1 : 0) + (o.headerSecretRef ? 1 : 0) === 1, { message: 'set exactly one of header, headerSecretRef' });

const ResponseHeaderValueOptionSchema = z.strictObject({ header: HeaderValueSchema, append: z.boolean().optional() });

export const HeaderManipulationSchema = z.strictObject({
  requestHeadersToAdd: z.array(RequestHeaderValueOptionSchema).optional(),
  requestHeadersToRemove: z.array(z.string()).optional(),
  responseHeadersToAdd: z.array(ResponseHeaderValueOptionSchema).optional(),
  responseHeadersToRemove: z.array(z.string()).optional(),
});
export type HeaderManipulation = z.infer<typeof HeaderManipulationSchema>;

/** Gloo's RegexMatchAndSubstitute; RE2 is Envoy's only engine, so `googleRe2: {}` changes nothing. */
const RegexMatchAndSubstituteSchema = z.strictObject({
  pattern: z.strictObject({
    regex: z.string(),
    googleRe2: z
      .strictObject({ maxProgramSize: notSupported("Envoy deprecated RE2's max_program_size; its runtime limits apply instead") })
      .optional(),
  }),
  substitution: z.string(),
});

export const headersVirtualHostOptions = { headerManipulation: HeaderManipulationSchema.optional() };

export const headersDestinationOptions = { headerManipulation: HeaderManipulationSchema.optional() };

/** Route options: headers, and the Host rewrites (Gloo's oneof host_rewrite_type, checked when binding). */
export const headersRouteOptions = {
  headerManipulation: HeaderManipulationSchema.optional(),
  hostRewrite: z.string().optional(),
  autoHostRewrite: z.boolean().optional(),
  hostRewriteHeader: z.string().optional(),
  hostRewritePathRegex: RegexMatchAndSubstituteSchema.optional(),
  appendXForwardedHost: z.boolean().optional(),
};
