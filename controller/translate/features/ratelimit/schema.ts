// The rate-limit options on virtual hosts and routes: RateLimitConfig references, Gloo's
// ratelimitBasic, and Envoy's local token bucket.
import { z } from 'zod';
import { Duration, ResourceRefSchema, notSupported } from '../../../api/primitives.js';
import { RateLimitValueSchema } from '../../../api/schemas.js';

/** `options.ratelimitBasic` (Gloo's IngressRateLimit): per client address, or per credential when authenticated. */
const RatelimitBasicSchema = z.strictObject({
  anonymousLimits: RateLimitValueSchema.optional(),
  authorizedLimits: RateLimitValueSchema.optional(),
});
export type RatelimitBasic = z.infer<typeof RatelimitBasicSchema>;

/** Envoy's local_ratelimit token bucket, per Envoy: Gloo's `options.ratelimit.localRatelimit` (TokenBucket), or
 * Legate's older spelling `options.localRatelimit`. */
const LocalRatelimitSchema = z.strictObject({
  maxTokens: z.number().int().min(0),
  tokensPerFill: z.number().int().min(0).optional(),
  fillInterval: Duration.optional(),
});
export type LocalRatelimit = z.infer<typeof LocalRatelimitSchema>;

const RAW_ACTIONS =
  'raw rate-limit actions need descriptors in settings.ratelimit, which Legate does not read; put the descriptors and ' +
  'actions in a RateLimitConfig and refer to it with options.rateLimitConfigs';

/** Gloo's `options.ratelimit` (RateLimitVhostExtension / RateLimitRouteExtension): Legate renders its local bucket. */
const GlooRatelimitSchema = z.strictObject({
  localRatelimit: LocalRatelimitSchema.optional(),
  rateLimits: notSupported(RAW_ACTIONS),
  includeVhRateLimits: notSupported(RAW_ACTIONS),
});

export const rateLimitOptions = {
  ratelimit: GlooRatelimitSchema.optional(),
  rateLimitConfigs: z.strictObject({ refs: z.array(ResourceRefSchema).min(1, 'needs at least one ref') }).optional(),
  ratelimitBasic: RatelimitBasicSchema.optional(),
  localRatelimit: LocalRatelimitSchema.optional(),
};

export interface RateLimitOptions {
  ratelimit?: { localRatelimit?: LocalRatelimit | undefined } | undefined;
  rateLimitConfigs?: { refs: { name: string; namespace?: string | undefined }[] } | undefined;
  ratelimitBasic?: RatelimitBasic | undefined;
  localRatelimit?: LocalRatelimit | undefined;
}
