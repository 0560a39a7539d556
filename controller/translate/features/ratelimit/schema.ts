// The rate-limit options on virtual hosts and routes: RateLimitConfig references, Gloo's
// ratelimitBasic, and Envoy's local token bucket.
import { z } from 'zod';
import { Duration, ResourceRefSchema } from '../../../api/primitives.js';
import { RateLimitValueSchema } from '../../../api/schemas.js';

/** `options.ratelimitBasic` (Gloo's IngressRateLimit): per client address, or per credential when authenticated. */
const RatelimitBasicSchema = z.strictObject({
  anonymousLimits: RateLimitValueSchema.optional(),
  authorizedLimits: RateLimitValueSchema.optional(),
});
export type RatelimitBasic = z.infer<typeof RatelimitBasicSchema>;

/** `options.localRatelimit`: Envoy's local_ratelimit token bucket, per Envoy. */
const LocalRatelimitSchema = z.strictObject({
  maxTokens: z.number().int().min(0),
  tokensPerFill: z.number().int().min(0).optional(),
  fillInterval: Duration.optional(),
});
export type LocalRatelimit = z.infer<typeof LocalRatelimitSchema>;

export const rateLimitOptions = {
  rateLimitConfigs: z.strictObject({ refs: z.array(ResourceRefSchema).min(1, 'needs at least one ref') }).optional(),
  ratelimitBasic: RatelimitBasicSchema.optional(),
  localRatelimit: LocalRatelimitSchema.optional(),
};

export interface RateLimitOptions {
  rateLimitConfigs?: { refs: { name: string; namespace?: string | undefined }[] } | undefined;
  ratelimitBasic?: RatelimitBasic | undefined;
  localRatelimit?: LocalRatelimit | undefined;
}
