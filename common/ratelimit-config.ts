// The rate-limit config the controller sends and the ratelimit service applies (one resource per
// RateLimitConfig, role `ratelimit`), as one runtime schema both sides use: the controller checks what
// it translated before serving it, the service checks what it receives. Also the descriptor keys
// Legate itself puts in front of the user's (docs/ratelimit.md):
//
// - every rate_limits entry rendered from a RateLimitConfig starts with `legate_config=<ns>.<name>`,
//   so configs never share counters or collide on a key, and the service finds the config's tree;
// - `options.ratelimitBasic` needs no config on the service: its descriptors carry their own limit,
//   `legate_basic=<scope>|<requestsPerUnit>/<UNIT>`, followed by `legate_auth=anonymous` and
//   `remote_address`, or by `legate_credential=<authorization header>` (hashed by the service before it
//   becomes part of a counter key, and never logged).
// - Gloo's raw actions (`options.ratelimit.rateLimits`, `ratelimitEarly`, `ratelimitRegular`) send their
//   descriptors as they are, in their own domain (`custom`, Gloo's), matched against the Settings'
//   `ratelimit.descriptors`: a config with a `domain` is the tree of every request in that domain.
import { z } from 'zod';

export const RATE_LIMIT_UNITS = ['SECOND', 'MINUTE', 'HOUR', 'DAY'] as const;
export type RateLimitUnit = (typeof RATE_LIMIT_UNITS)[number];

export const UNIT_MS: Readonly<Record<RateLimitUnit, number>> = {
  SECOND: 1000,
  MINUTE: 60_000,
  HOUR: 3_600_000,
  DAY: 86_400_000,
};

/** The `domain` of Legate's ratelimit filter. */
export const RATE_LIMIT_DOMAIN = 'legate';

/** The domain of raw actions, whose descriptors are the Settings' (Gloo's `custom`). */
export const RAW_RATE_LIMIT_DOMAIN = 'custom';

export const RateLimitKeys = {
  /** first entry of a RateLimitConfig's descriptors: `<namespace>.<name>` */
  config: 'legate_config',
  /** first entry of a basic limit's descriptors: `<scope>|<requestsPerUnit>/<UNIT>` */
  basic: 'legate_basic',
  /** basic: `anonymous` for requests without an authorization header */
  auth: 'legate_auth',
  /** basic: the authorization header (hashed before use) */
  credential: 'legate_credential',
} as const;

/** The generic_key value that marks a set-style descriptor (setActions), Gloo's: its entries are matched as a set. */
export const SET_DESCRIPTOR_VALUE = 'solo.setDescriptor.uniqueValue';

export const LimitSchema = z.strictObject({
  requestsPerUnit: z.number().int().min(1, 'must be at least 1 (use unlimited: true for no limit)'),
  unit: z.enum(RATE_LIMIT_UNITS, { message: `expected one of ${RATE_LIMIT_UNITS.join(', ')}` }),
});
export type Limit = z.infer<typeof LimitSchema>;

export interface DescriptorConfig {
  key: string;
  /** unset: any value matches, and each value counts on its own */
  value?: string | undefined;
  limit?: Limit | undefined;
  /** matches, and is never limited (Envoy's reference service `unlimited`) */
  unlimited?: boolean | undefined;
  /** counted and reported, never enforced */
  shadowMode?: boolean | undefined;
  descriptors?: DescriptorConfig[] | undefined;
  /** only the matched rules of the highest weight apply (Gloo's rule priority); default 0 */
  weight?: number | undefined;
  /** applies whatever its weight */
  alwaysApply?: boolean | undefined;
}

export const DescriptorConfigSchema: z.ZodType<DescriptorConfig> = z.lazy(() =>
  z
    .strictObject({
      key: z.string().min(1, 'must not be empty'),
      value: z.string().optional(),
      limit: LimitSchema.optional(),
      unlimited: z.boolean().optional(),
      shadowMode: z.boolean().optional(),
      descriptors: z.array(DescriptorConfigSchema).optional(),
      weight: z.number().int().min(0).optional(),
      alwaysApply: z.boolean().optional(),
    })
    .refine((d) => !(d.unlimited && d.limit), { message: 'set at most one of a limit and unlimited' }),
);

/** Gloo's set descriptor: matches a set-style descriptor holding every simple descriptor, in any order. */
export const SetDescriptorConfigSchema = z
  .strictObject({
    simpleDescriptors: z.array(z.strictObject({ key: z.string().min(1), value: z.string().optional() })),
    limit: LimitSchema.optional(),
    unlimited: z.boolean().optional(),
    alwaysApply: z.boolean().optional(),
  })
  .refine((d) => !(d.unlimited && d.limit), { message: 'set at most one of a limit and unlimited' });
export type SetDescriptorConfig = z.infer<typeof SetDescriptorConfigSchema>;

export const RateLimitServiceConfigSchema = z.strictObject({
  /** `<namespace>.<name>` of the RateLimitConfig: the value of the `legate_config` entry */
  name: z.string().min(1),
  /** set: the descriptors of every request in this domain (the Settings'), matched from the first entry */
  domain: z.string().min(1).optional(),
  descriptors: z.array(DescriptorConfigSchema),
  setDescriptors: z.array(SetDescriptorConfigSchema).optional(),
});
export type RateLimitServiceConfig = z.infer<typeof RateLimitServiceConfigSchema>;

export function describeRateLimitIssues(error: z.ZodError, prefix: string): string[] {
  return error.issues.map((i) => {
    const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    return `${prefix}${path}: ${i.message}`;
  });
}

/** Validates a config from the controller; throws an Error listing every problem. */
export function parseRateLimitServiceConfig(raw: unknown): RateLimitServiceConfig {
  const parsed = RateLimitServiceConfigSchema.safeParse(raw);
  if (parsed.success) return parsed.data;
  const name =
    raw !== null && typeof raw === 'object' && typeof (raw as { name?: unknown }).name === 'string' ? (raw as { name: string }).name : '?';
  throw new Error(describeRateLimitIssues(parsed.error, name).join('; '));
}

/** The value of a basic limit's `legate_basic` entry. */
export function basicDescriptorValue(scope: string, limit: Limit): string {
  return `${scope}|${limit.requestsPerUnit}/${limit.unit}`;
}

/** The limit a `legate_basic` value carries; undefined when it carries none that is valid. */
export function parseBasicDescriptorValue(value: string): Limit | undefined {
  const bar = value.lastIndexOf('|');
  const slash = value.lastIndexOf('/');
  if (bar < 0 || slash < bar) return undefined;
  const n = Number(value.slice(bar + 1, slash));
  const unit = value.slice(slash + 1);
  if (!Number.isInteger(n) || n < 1 || !(RATE_LIMIT_UNITS as readonly string[]).includes(unit)) return undefined;
  return { requestsPerUnit: n, unit: unit as RateLimitUnit };
}
