// `options.lbHash` on routes (Gloo's RouteActionHashConfig): what a hashing load balancer hashes.
import { z } from 'zod';
import { Duration } from '../../../api/primitives.js';

const HeaderName = z.string().regex(/^[0-9A-Za-z!#$%&'*+\-.^_`|~]+$/, 'expected an HTTP header name');

const HashPolicySchema = z
  .strictObject({
    header: HeaderName.optional(),
    cookie: z
      .strictObject({
        name: z.string().regex(/^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/, 'expected a cookie name'),
        ttl: Duration.optional(),
        path: z.string().optional(),
      })
      .optional(),
    sourceIp: z.literal(true, { message: 'sourceIp hashes only when true' }).optional(),
    terminal: z.boolean().optional(),
  })
  .refine((p) => [p.header, p.cookie, p.sourceIp].filter((k) => k !== undefined).length === 1, {
    message: 'set exactly one of header, cookie, sourceIp',
  });
export type HashPolicy = z.infer<typeof HashPolicySchema>;

export const lbHashOptions = {
  lbHash: z.strictObject({ hashPolicies: z.array(HashPolicySchema).min(1, 'needs at least one hash policy') }).optional(),
};
