// The rate-limit options on virtual hosts and routes: RateLimitConfig references and Gloo's raw actions,
// unstaged and staged (early: before ext_authz, regular: after it), Gloo's ratelimitBasic, and Envoy's
// local token bucket.
import { z } from 'zod';
import { Duration, ResourceRefSchema, notSupported } from '../../../api/primitives.js';
import { RateLimitActionsSchema, RateLimitValueSchema, type RateLimitActions } from '../../../api/schemas.js';

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

/** Gloo's `options.ratelimit` (RateLimitVhostExtension / RateLimitRouteExtension): raw actions, whose descriptors
 * are the Settings' `ratelimit.descriptors`; on a route, whether the virtual host's limits apply too; the local bucket. */
const GlooRatelimitSchema = z.strictObject({
  localRatelimit: LocalRatelimitSchema.optional(),
  rateLimits: z.array(RateLimitActionsSchema).optional(),
  includeVhRateLimits: z.boolean().optional(),
});

/** `ratelimitEarly` / `ratelimitRegular`: the same, in one stage; Gloo reads the local bucket only from `ratelimit`. */
const GlooStagedRatelimitSchema = z.strictObject({
  rateLimits: z.array(RateLimitActionsSchema).optional(),
  includeVhRateLimits: z.boolean().optional(),
  localRatelimit: notSupported('Gloo reads the local token bucket only from options.ratelimit.localRatelimit'),
});

const ConfigRefsSchema = z.strictObject({ refs: z.array(ResourceRefSchema).min(1, 'needs at least one ref') });

export const rateLimitOptions = {
  ratelimit: GlooRatelimitSchema.optional(),
  rateLimitConfigs: ConfigRefsSchema.optional(),
  ratelimitEarly: GlooStagedRatelimitSchema.optional(),
  ratelimitRegular: GlooStagedRatelimitSchema.optional(),
  rateLimitEarlyConfigs: ConfigRefsSchema.optional(),
  rateLimitRegularConfigs: ConfigRefsSchema.optional(),
  ratelimitBasic: RatelimitBasicSchema.optional(),
  localRatelimit: LocalRatelimitSchema.optional(),
};

export interface RawRatelimit {
  rateLimits?: RateLimitActions[] | undefined;
  includeVhRateLimits?: boolean | undefined;
}

type ConfigRefs = { refs: { name: string; namespace?: string | undefined }[] };

export interface RateLimitOptions {
  ratelimit?: (RawRatelimit & { localRatelimit?: LocalRatelimit | undefined }) | undefined;
  rateLimitConfigs?: ConfigRefs | undefined;
  ratelimitEarly?: RawRatelimit | undefined;
  ratelimitRegular?: RawRatelimit | undefined;
  rateLimitEarlyConfigs?: ConfigRefs | undefined;
  rateLimitRegularConfigs?: ConfigRefs | undefined;
  ratelimitBasic?: RatelimitBasic | undefined;
  localRatelimit?: LocalRatelimit | undefined;
}
