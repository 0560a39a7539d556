// JWT verification and claims-based RBAC options (Gloo Enterprise's jwt.options.gloo.solo.io and
// rbac.options.gloo.solo.io): `jwt` / `jwtStaged` and `rbac` on virtual hosts and routes. A virtual
// host declares providers; a route can only turn a stage off (Gloo 1.17 has no route-level providers).
// controller/api/routes.ts composes them into the option schemas.
import { z } from 'zod';
import { Duration, Name, ResourceRefSchema, protoEnum } from '../../../api/primitives.js';

export const VALIDATION_POLICIES = ['REQUIRE_VALID', 'ALLOW_MISSING', 'ALLOW_MISSING_OR_FAILED'] as const;
export const CLAIM_MATCHERS = ['EXACT_STRING', 'BOOLEAN', 'LIST_CONTAINS'] as const;

const JwksSchema = z
  .strictObject({
    remote: z
      .strictObject({
        url: z.string().min(1, 'must not be empty'),
        upstreamRef: ResourceRefSchema.optional(),
        cacheDuration: Duration.optional(),
        asyncFetch: z.strictObject({ fastListener: z.boolean().optional() }).optional(),
      })
      .optional(),
    local: z.strictObject({ key: z.string().min(1, 'must not be empty') }).optional(),
  })
  .refine((j) => (j.remote ? 1 : 0) + (j.local ? 1 : 0) === 1, { message: 'set exactly one of remote, local' });

/** jwt.options.gloo.solo.io.Provider */
const ProviderSchema = z.strictObject({
  jwks: JwksSchema,
  audiences: z.array(z.string().min(1, 'must not be empty')).optional(),
  issuer: z.string().optional(),
  tokenSource: z
    .strictObject({
      headers: z.array(z.strictObject({ header: Name, prefix: z.string().optional() })).optional(),
      queryParams: z.array(Name).optional(),
    })
    .optional(),
  keepToken: z.boolean().optional(),
  claimsToHeaders: z.array(z.strictObject({ claim: Name, header: Name, append: z.boolean().optional() })).optional(),
  clockSkewSeconds: z.number().int().min(0).optional(),
  attachFailedStatusToMetadata: z.string().optional(),
});
export type JwtProvider = z.infer<typeof ProviderSchema>;

/** jwt.options.gloo.solo.io.VhostExtension */
const VhostExtensionSchema = z.strictObject({
  providers: z.record(z.string().min(1, 'must not be empty'), ProviderSchema).optional(),
  allowMissingOrFailedJwt: z.boolean().optional(),
  validationPolicy: protoEnum(VALIDATION_POLICIES).optional(),
});
export type JwtVhostExtension = z.infer<typeof VhostExtensionSchema>;

/** jwt.options.gloo.solo.io.RouteExtension */
const RouteExtensionSchema = z.strictObject({ disable: z.boolean().optional() });

/** rbac.options.gloo.solo.io.ExtensionSettings */
const RbacSchema = z.strictObject({
  disable: z.boolean().optional(),
  policies: z
    .record(
      z.string().min(1, 'must not be empty'),
      z.strictObject({
        principals: z
          .array(
            z.strictObject({
              jwtPrincipal: z
                .strictObject({
                  // Gloo's docs write `email_verified: true` (a YAML boolean) for the BOOLEAN matcher
                  claims: z.record(z.string().min(1, 'must not be empty'), z.union([z.string(), z.boolean(), z.number()])).optional(),
                  provider: z.string().optional(),
                  matcher: protoEnum(CLAIM_MATCHERS).optional(),
                })
                .optional(),
            }),
          )
          .optional(),
        permissions: z.strictObject({ pathPrefix: z.string().optional(), methods: z.array(Name).optional() }).optional(),
        nestedClaimDelimiter: z.string().optional(),
      }),
    )
    .optional(),
});
export type RbacSettings = z.infer<typeof RbacSchema>;

/** Virtual-host options this feature renders (`jwt` and `jwtStaged` are one oneof in Gloo). */
export const jwtVirtualHostOptions = {
  jwt: VhostExtensionSchema.optional(),
  jwtStaged: z.strictObject({ beforeExtAuth: VhostExtensionSchema.optional(), afterExtAuth: VhostExtensionSchema.optional() }).optional(),
  rbac: RbacSchema.optional(),
};

/** Route options this feature renders. */
export const jwtRouteOptions = {
  jwt: RouteExtensionSchema.optional(),
  jwtStaged: z.strictObject({ beforeExtAuth: RouteExtensionSchema.optional(), afterExtAuth: RouteExtensionSchema.optional() }).optional(),
  rbac: RbacSchema.optional(),
};
