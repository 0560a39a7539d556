// The extauth config the controller sends and the extauth service applies (AuthConfigConfig in
// contract.ts), as one runtime schema both sides use: the controller checks what it translated before
// serving it (so a problem is a status reason, not a NACK), the service checks what it receives (so a
// bad config is refused, never half-applied). Also the JWK checks both sides need: which keys a local
// or fetched JWK set may hold, and the algorithms a JWT may be signed with.
import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';

const STEP_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** Algorithms a JWT access token may use: asymmetric only (no `none`, no HS*, so no HS/RS confusion). */
export const JWT_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** Default of `remoteJwks.refreshInterval` (Gloo's). */
export const DEFAULT_JWKS_REFRESH_MS = 5 * 60_000;

/** Key types a JWK set or PEM may hold (asymmetric public keys jose verifies with). */
const KEY_TYPES = new Set(['rsa', 'rsa-pss', 'ec', 'ed25519']);

function isHttpUrl(value: string): boolean {
  try {
    const u = new URL(value);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}

const HttpUrl = z.string().refine(isHttpUrl, 'must be an http or https URL');
const Scopes = z.array(z.string().regex(/^[^ ]+$/, 'a scope name is one non-empty word'));
/** `configs[].name`: what booleanExpr refers to */
const StepName = z.string().regex(STEP_NAME, 'a step name is 1-64 characters [A-Za-z0-9_.-]').optional();

/** dynamicMetadataFromClaims: dynamic metadata key (namespace envoy.filters.http.ext_authz) -> claim name. */
const MetadataFromClaims = z
  .record(z.string().min(1), z.string().regex(/^[A-Za-z0-9_-]+$/, 'a claim name is alphanumeric with - or _'))
  .optional();

export const IntrospectionStepSchema = z.object({
  type: z.literal('oauth2-introspection'),
  name: StepName,
  introspectionUrl: HttpUrl,
  /** HTTP basic client authentication on the introspection call, when set */
  clientId: z.string().optional(),
  clientSecret: z.string().optional(),
  /** 0 = no cache */
  cacheTimeoutMs: z.number().finite().min(0).default(0),
  /** every one of these must be in the token's space-separated `scope` */
  requiredScopes: Scopes.default([]),
  /** the introspection response's attribute naming the user: a token whose answer lacks it is denied */
  userIdAttributeName: z.string().min(1).optional(),
  dynamicMetadataFromClaims: MetadataFromClaims,
  /** the userinfo answer for the token goes into the check's state (`introspection`), kept cacheTimeoutMs */
  userinfoUrl: HttpUrl.optional(),
});

export const JwtStepSchema = z
  .object({
    type: z.literal('oauth2-jwt'),
    name: StepName,
    /** fetched at config time and every refreshIntervalMs; a `kid` miss refetches (rate-limited) */
    remoteJwks: z.object({ url: HttpUrl, refreshIntervalMs: z.number().int().min(1000, 'must be at least 1s') }).optional(),
    /** a JWK set (JSON) or one PEM public key, as written in the AuthConfig */
    localJwks: z.object({ inlineString: z.string().superRefine(checkLocalKeys) }).optional(),
    /** when set, `iss` must equal it */
    issuer: z.string().min(1).optional(),
    /** when not empty, `aud` must hold one of them */
    audiences: z.array(z.string().min(1)).default([]),
    /** every one of these must be in `scope` (space-separated) or `scp` (array) */
    requiredScopes: Scopes.default([]),
    /**
     * how long an allow may be reused after the signature was verified, never past `exp`: by the
     * service's verification cache and by Envoy's edge cache. 0 (the default when absent, as from an
     * older controller) = every check verifies, and no edge grant
     */
    cacheTimeoutMs: z.number().finite().min(0).default(0),
    dynamicMetadataFromClaims: MetadataFromClaims,
    /** the userinfo answer for the token goes into the check's state (`introspection`), kept cacheTimeoutMs */
    userinfoUrl: HttpUrl.optional(),
  })
  .refine((s) => (s.remoteJwks === undefined) !== (s.localJwks === undefined), 'set exactly one of remoteJwks, localJwks');

/** Gloo's `jwt: {}` step: allows when Envoy's JWT filter (options.jwt / jwtStaged) verified a token of the request. */
export const EnvoyJwtStepSchema = z.object({
  type: z.literal('envoy-jwt'),
  name: StepName,
});

/** Where Envoy's JWT filter puts the payloads it verified (payload_in_metadata), sent to extauth with the check. */
export const JWT_AUTHN_METADATA = 'envoy.filters.http.jwt_authn';

/** Default of `apiKeyAuth.headerName` (Gloo's). */
export const DEFAULT_API_KEY_HEADER = 'api-key';

/**
 * apiKeyAuth: the request header `headerName` must hold one of the keys. The controller sends only
 * the keys' sha256 digests (hex), never the keys; the service compares digests in constant time.
 */
export const ApiKeyStepSchema = z.object({
  type: z.literal('api-key'),
  name: StepName,
  /** lower case: Envoy sends header names lower-cased */
  headerName: z.string().regex(/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be a lower-case HTTP header name'),
  keySha256: z.array(z.string().regex(/^[0-9a-f]{64}$/, 'must be a sha256 digest (64 hex digits)')).min(1, 'no API keys'),
  /** headersFromMetadataEntry: upstream header -> the name of the key's Secret data entry it carries */
  headersFromMetadata: z.record(z.string(), z.string()).optional(),
  /** per key digest: the Secret data entries headersFromMetadata names (only those) */
  keyMetadata: z.record(z.string(), z.record(z.string(), z.string())).optional(),
});

const HeaderName = z.string().regex(/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/, 'must be a lower-case HTTP header name');

/** basicAuth: Basic credentials checked against salted hashes (apr1 = Apache MD5, sha1 = hex sha1(password + salt)). */
export const BasicAuthStepSchema = z.object({
  type: z.literal('basic-auth'),
  name: StepName,
  /** the realm of the `WWW-Authenticate: Basic realm="…"` challenge */
  realm: z.string().default(''),
  encryption: z.enum(['apr', 'sha1']),
  users: z
    .record(z.string().min(1, 'a user name must not be empty'), z.object({ salt: z.string(), hashedPassword: z.string().min(1) }))
    .refine((u) => Object.keys(u).length > 0, 'no users'),
});

/** ldap: bind as the user of the Basic credentials, then (unless disabled) check the user's groups. */
export const LdapStepSchema = z.object({
  type: z.literal('ldap'),
  name: StepName,
  /** ldap:// or ldaps:// URL */
  url: z.string().regex(/^ldaps?:\/\/[^/\s]+\/?$/, 'must be ldap://host:port or ldaps://host:port'),
  /** one `%s`, replaced by the (DN-escaped) user name */
  userDnTemplate: z.string().refine((t) => t.split('%s').length === 2, 'must contain exactly one %s'),
  membershipAttributeName: z.string().min(1).default('memberOf'),
  allowedGroups: z.array(z.string().min(1)).default([]),
  disableGroupChecking: z.boolean().default(false),
  /** filter of the base-scope search of the user's entry */
  searchFilter: z.string().min(1).default('(uid=*)'),
  pool: z
    .object({ maxSize: z.number().int().min(1).default(5), initialSize: z.number().int().min(0).default(2) })
    .default({ maxSize: 5, initialSize: 2 }),
  /** groupLookupSettings: a service account (from a Secret) that reads the user's groups */
  serviceAccount: z.object({ username: z.string().min(1), password: z.string(), checkGroupsWithServiceAccount: z.boolean() }).optional(),
});

/** opaAuth: Rego modules (file name -> source) and a query evaluated in extauth on Gloo's input document. */
export const OpaStepSchema = z.object({
  type: z.literal('opa'),
  name: StepName,
  query: z.string().min(1, 'the query is empty'),
  modules: z.record(z.string().min(1), z.string()).default({}),
  fastInputConversion: z.boolean().default(false),
  /** options.returnDecisionReason: refused by the controller, so always false */
  returnDecisionReason: z.boolean().default(false),
  /** the request headers the policy reads (lower-case), as the controller's analysis of the Rego found; absent: any */
  headers: z.array(z.string()).optional(),
});

/** opaServerAuth: POST the input to `<url>/v1/data/<package path>/<rule>`; allowed when the result is true. */
export const OpaServerStepSchema = z.object({
  type: z.literal('opa-server'),
  name: StepName,
  url: HttpUrl,
  /** options.fastInputConversion: no effect (the input is already plain JSON); kept so the config says what was asked */
  fastInputConversion: z.boolean().default(false),
  /** options.returnDecisionReason: refused by the controller, so always false */
  returnDecisionReason: z.boolean().default(false),
});

/** passThroughAuth.grpc: ask an Envoy ext_authz (v3) gRPC server. */
export const PassThroughGrpcStepSchema = z.object({
  type: z.literal('passthrough-grpc'),
  name: StepName,
  /** host:port */
  address: z.string().regex(/^[^\s/:]+:\d{1,5}$|^\[[0-9a-fA-F:.]+\]:\d{1,5}$/, 'must be host:port'),
  timeoutMs: z.number().int().min(1).default(5000),
  /** TLS to the server, verified against the system CAs (and NODE_EXTRA_CA_CERTS) */
  tls: z.boolean().default(false),
  /** a failed call (no answer) is retried numRetries times, after a jittered exponential backoff */
  retry: z
    .object({ numRetries: z.number().int().min(0), baseIntervalMs: z.number().int().min(1), maxIntervalMs: z.number().int().min(1) })
    .optional(),
  config: z.record(z.string(), z.unknown()).optional(),
  failureModeAllow: z.boolean().default(false),
});

/** passThroughAuth.http: POST to the user's HTTP server; 200 allows. */
export const PassThroughHttpStepSchema = z.object({
  type: z.literal('passthrough-http'),
  name: StepName,
  url: HttpUrl,
  timeoutMs: z.number().int().min(1).default(5000),
  allowedHeaders: z.array(HeaderName).default([]),
  headersToAdd: z.record(HeaderName, z.string()).default({}),
  passThroughState: z.boolean().default(false),
  passThroughFilterMetadata: z.boolean().default(false),
  passThroughBody: z.boolean().default(false),
  allowedUpstreamHeaders: z.array(HeaderName).default([]),
  allowedUpstreamHeadersToOverwrite: z.array(HeaderName).default([]),
  allowedClientHeadersOnDenied: z.array(HeaderName).default([]),
  readStateFromResponse: z.boolean().default(false),
  config: z.record(z.string(), z.unknown()).optional(),
  failureModeAllow: z.boolean().default(false),
});

/** hmacAuth (parametersInHeaders): user -> shared secret, from Secrets. */
export const HmacStepSchema = z.object({
  type: z.literal('hmac'),
  name: StepName,
  credentials: z.record(z.string().min(1), z.string().min(1)).refine((c) => Object.keys(c).length > 0, 'no credentials'),
});

const CookieName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'must be a cookie name (an HTTP token)');

/**
 * oauth2.oidcAuthorizationCode (`flow: 'oidc'`) and oauth2.oauth2 (`flow: 'oauth2'`, plain OAuth2): a browser
 * login by the authorization code grant with PKCE, a session (an encrypted cookie, or a random id in a cookie
 * and the tokens in Redis), logout, refresh, and the tokens forwarded upstream in headers.
 */
export const CodeFlowStepSchema = z
  .object({
    type: z.literal('oauth2-code'),
    name: StepName,
    flow: z.enum(['oidc', 'oauth2']),
    clientId: z.string().min(1),
    /** absent: a public client (PKCE only, disableClientSecret) */
    clientSecret: z.string().min(1).optional(),
    /** oidc: `<issuerUrl>/.well-known/openid-configuration` is read (and re-read every discoveryPollIntervalMs) */
    issuerUrl: HttpUrl.optional(),
    discoveryPollIntervalMs: z
      .number()
      .int()
      .min(1000)
      .default(30 * 60_000),
    /** explicit endpoints (plain OAuth2), or overrides of discovered ones */
    authEndpoint: HttpUrl.optional(),
    tokenEndpoint: HttpUrl.optional(),
    jwksUri: HttpUrl.optional(),
    revocationEndpoint: HttpUrl.optional(),
    /** RP-initiated logout: overrides the discovered end_session_endpoint */
    endSessionEndpoint: HttpUrl.optional(),
    /** logout sends the browser to the end-session endpoint (get), or extauth POSTs to it itself (post) */
    endSessionMethod: z.enum(['get', 'post']).default('get'),
    /** ID token algorithms accepted (default: every asymmetric one) */
    idTokenAlgs: z.array(z.enum(JWT_ALGORITHMS)).default([]),
    /** token endpoint client authentication: basic (default) or the secret in the form */
    clientSecretPost: z.boolean().default(false),
    /** RFC 7523 private_key_jwt: a JWT signed with this PEM private key sent as client_assertion (no client secret) */
    privateKeyJwt: z.object({ signingKey: z.string().min(1), validForMs: z.number().int().min(1).default(5000) }).optional(),
    /** when the provider's JWK set is refetched for an unknown kid: never, always, or at most n times per poll interval */
    jwksOnDemandRefresh: z
      .union([z.literal('never'), z.literal('always'), z.object({ maxPerPollInterval: z.number().int().min(1) })])
      .default('never'),
    appUrl: HttpUrl,
    callbackPath: z.string().min(1),
    callbackPathIsRegex: z.boolean().default(false),
    logoutPath: z.string().startsWith('/').optional(),
    afterLogoutUrl: HttpUrl.optional(),
    scopes: Scopes.default([]),
    authEndpointQueryParams: z.record(z.string(), z.string()).default({}),
    tokenEndpointQueryParams: z.record(z.string(), z.string()).default({}),
    /** autoMapFromMetadata: the fields of this filter metadata namespace are added to both requests' query parameters */
    queryParamsFromMetadata: z.string().min(1).optional(),
    /** a login redirect answers 401 instead (AuthConfig failOnRedirect) */
    failOnRedirect: z.boolean().default(false),
    session: z.object({
      store: z.enum(['cookie', 'redis']),
      /** the session cookie's name (keyPrefix included) */
      cookieName: CookieName,
      /** cookie store: the 32-byte AES-GCM key (base64) that encrypts and authenticates the cookie */
      cookieKey: z.string().optional(),
      redis: z
        .object({
          host: z.string().min(1),
          port: z.number().int().min(1).max(65535),
          db: z.number().int().min(0).default(0),
          tls: z.boolean().default(false),
          /** a directory in extauth's filesystem with ca.crt (and tls.crt, tls.key for a client certificate), read at apply */
          tlsCertDir: z.string().startsWith('/').optional(),
          keyPrefix: z.string().default(''),
          /** header carrying the session id on the code exchange (Gloo's headerName) */
          sessionIdHeader: HeaderName.optional(),
        })
        .optional(),
      allowRefreshing: z.boolean(),
      preExpiryBufferMs: z.number().int().min(0).default(2000),
      /** Redis unreachable: deny (true), or start a new login (false) */
      failOnFetchFailure: z.boolean().default(false),
      /** requests for other hosts are denied (RFC 6265 domain match) */
      targetDomain: z.string().optional(),
      cookie: z.object({
        /** seconds; 0 = a browser-session cookie */
        maxAgeSeconds: z.number().int().min(0).default(2_592_000),
        secure: z.boolean().default(true),
        httpOnly: z.boolean().default(true),
        /** '' = no Path attribute */
        path: z.string().default('/'),
        sameSite: z.enum(['lax', 'strict', 'none', 'default']).default('lax'),
        domain: z.string().optional(),
      }),
    }),
    headers: z
      .object({
        idTokenHeader: HeaderName.optional(),
        accessTokenHeader: HeaderName.optional(),
        useBearerSchemaForAuthorization: z.boolean().default(false),
      })
      .default({ useBearerSchemaForAuthorization: false }),
    /** ID token claims (oidc) copied to upstream request headers */
    claimsToHeaders: z.array(z.object({ claim: z.string().min(1), header: HeaderName, append: z.boolean().default(false) })).default([]),
    /** access token claims copied to upstream request headers (when the access token is a JWT) */
    accessTokenClaimsToHeaders: z
      .array(z.object({ claim: z.string().min(1), header: HeaderName, append: z.boolean().default(false) }))
      .default([]),
    /** dynamic metadata key -> ID token claim */
    dynamicMetadataFromClaims: z.record(z.string(), z.string()).default({}),
  })
  .superRefine((s, ctx) => {
    if (s.flow === 'oidc' && s.issuerUrl === undefined) ctx.addIssue({ code: 'custom', path: ['issuerUrl'], message: 'is required' });
    if (s.flow === 'oauth2' && (s.authEndpoint === undefined || s.tokenEndpoint === undefined))
      ctx.addIssue({ code: 'custom', path: ['authEndpoint'], message: 'authEndpoint and tokenEndpoint are required' });
    if (s.session.store === 'redis' && s.session.redis === undefined)
      ctx.addIssue({ code: 'custom', path: ['session', 'redis'], message: 'is required for a Redis session' });
    if (s.session.store === 'cookie') {
      const key = s.session.cookieKey === undefined ? undefined : Buffer.from(s.session.cookieKey, 'base64');
      if (key?.length !== 32) ctx.addIssue({ code: 'custom', path: ['session', 'cookieKey'], message: 'must be 32 bytes (base64)' });
    }
    if (!s.callbackPathIsRegex && !s.callbackPath.startsWith('/'))
      ctx.addIssue({ code: 'custom', path: ['callbackPath'], message: 'must start with /' });
    if (s.callbackPathIsRegex) {
      try {
        new RegExp(s.callbackPath);
      } catch {
        ctx.addIssue({ code: 'custom', path: ['callbackPath'], message: 'is not a valid regular expression' });
      }
    }
  });

export const STEP_TYPES = [
  'oauth2-introspection',
  'oauth2-jwt',
  'api-key',
  'basic-auth',
  'ldap',
  'opa',
  'opa-server',
  'passthrough-grpc',
  'passthrough-http',
  'hmac',
  'oauth2-code',
  'envoy-jwt',
] as const;
export const AuthStepConfigSchema = z.discriminatedUnion('type', [
  IntrospectionStepSchema,
  JwtStepSchema,
  ApiKeyStepSchema,
  BasicAuthStepSchema,
  LdapStepSchema,
  OpaStepSchema,
  OpaServerStepSchema,
  PassThroughGrpcStepSchema,
  PassThroughHttpStepSchema,
  HmacStepSchema,
  CodeFlowStepSchema,
  EnvoyJwtStepSchema,
]);

/** What a step reads of the request: the bearer token, and which other headers (`'*'`: every header). */
export interface StepReads {
  bearer: boolean;
  headers: readonly string[] | '*';
  /** filter metadata namespaces ext_authz must send (metadata_context_namespaces) */
  metadata?: readonly string[];
}

/**
 * Per step type: what it reads, so the controller asks Envoy to send those headers (ext_authz
 * allowed_headers) and keeps the wasm bearer pre-check off configs that may allow without a token.
 */
export const STEP_READS: { readonly [K in AuthStepConfig['type']]: (step: Extract<AuthStepConfig, { type: K }>) => StepReads } = {
  'oauth2-introspection': () => ({ bearer: true, headers: [] }),
  'oauth2-jwt': () => ({ bearer: true, headers: [] }),
  'api-key': (s) => ({ bearer: false, headers: s.headerName === 'authorization' ? [] : [s.headerName] }),
  // Gloo's extended basicAuth also reads Proxy-Authorization
  'basic-auth': () => ({ bearer: false, headers: ['proxy-authorization'] }),
  ldap: () => ({ bearer: false, headers: [] }),
  // policies and the user's own servers may read any header (an opaAuth policy's reads, when the controller found
  // them, are listed); HMAC signs chosen ones
  opa: (s) => ({ bearer: false, headers: s.headers ?? '*' }),
  'opa-server': () => ({ bearer: false, headers: '*' }),
  'passthrough-grpc': () => ({ bearer: false, headers: '*' }),
  'passthrough-http': () => ({ bearer: false, headers: '*' }),
  hmac: () => ({ bearer: false, headers: '*' }),
  // the session cookie, and the host and path (sent anyway)
  'oauth2-code': (s) => ({
    bearer: false,
    headers: ['cookie'],
    ...(s.queryParamsFromMetadata !== undefined ? { metadata: [s.queryParamsFromMetadata] } : {}),
  }),
  'envoy-jwt': () => ({ bearer: false, headers: [], metadata: [JWT_AUTHN_METADATA] }),
};

export function stepReads(step: AuthStepConfig): StepReads {
  return (STEP_READS[step.type] as (s: AuthStepConfig) => StepReads)(step);
}

/**
 * What Envoy's edge cache may key an allow of this config on (docs/wasm.md): `bearer`, the bearer token (every
 * step judges it); `cookie`, a browser session cookie (one oidcAuthorizationCode / oauth2 step; `checkPaths`, the
 * callback and logout, always reach the extauth service); `authorization`, the whole Authorization value (ldap and
 * basicAuth steps only); undefined: nothing (booleanExpr, steps that read more of the request, a regex callback
 * path or a session target domain, which the filter cannot match).
 */
export type EdgeCredential = { kind: 'bearer' } | { kind: 'cookie'; name: string; checkPaths: string[] } | { kind: 'authorization' };

export function edgeCredential(steps: readonly AuthStepConfig[], booleanExpr: string | undefined): EdgeCredential | undefined {
  if (booleanExpr !== undefined || steps.length === 0) return undefined;
  if (steps.every((st) => stepReads(st).bearer)) return { kind: 'bearer' };
  if (steps.every((st) => st.type === 'ldap' || st.type === 'basic-auth')) return { kind: 'authorization' };
  const only = steps.length === 1 ? steps[0] : undefined;
  if (only?.type !== 'oauth2-code' || only.callbackPathIsRegex || only.session.targetDomain !== undefined) return undefined;
  const checkPaths = [only.callbackPath, ...(only.logoutPath !== undefined ? [only.logoutPath] : [])];
  // the filter reads the list space-separated
  if (checkPaths.some((p) => /\s/.test(p))) return undefined;
  return { kind: 'cookie', name: only.session.cookieName, checkPaths };
}

export const AuthConfigConfigSchema = z
  .object({
    /** `<namespace>.<name>`: the `config_id` context extension of routes using it */
    name: z.string().min(1),
    /** content hash of the steps (secrets left out), set by the controller */
    version: z
      .string()
      .regex(/^[A-Za-z0-9._-]{1,64}$/, 'version must be 1-64 characters [A-Za-z0-9._-]')
      .optional(),
    /** all steps must pass, unless booleanExpr is set */
    steps: z.array(AuthStepConfigSchema).min(1, 'config has no steps'),
    /** over the steps' names (`&&`, `||`, `!`, parentheses); when set, it decides instead of "all pass" */
    booleanExpr: z.string().optional(),
  })
  .superRefine((c, ctx) => {
    if (c.booleanExpr === undefined) return;
    try {
      parseBooleanExpr(
        c.booleanExpr,
        c.steps.map((s) => s.name),
      );
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['booleanExpr'], message: err instanceof Error ? err.message : 'invalid' });
    }
  });

export type IntrospectionStepConfig = z.infer<typeof IntrospectionStepSchema>;
export type JwtStepConfig = z.infer<typeof JwtStepSchema>;
export type ApiKeyStepConfig = z.infer<typeof ApiKeyStepSchema>;
export type BasicAuthStepConfig = z.infer<typeof BasicAuthStepSchema>;
export type LdapStepConfig = z.infer<typeof LdapStepSchema>;
export type OpaStepConfig = z.infer<typeof OpaStepSchema>;
export type OpaServerStepConfig = z.infer<typeof OpaServerStepSchema>;
export type PassThroughGrpcStepConfig = z.infer<typeof PassThroughGrpcStepSchema>;
export type PassThroughHttpStepConfig = z.infer<typeof PassThroughHttpStepSchema>;
export type HmacStepConfig = z.infer<typeof HmacStepSchema>;
export type CodeFlowStepConfig = z.infer<typeof CodeFlowStepSchema>;
export type EnvoyJwtStepConfig = z.infer<typeof EnvoyJwtStepSchema>;
export type AuthStepConfig = z.infer<typeof AuthStepConfigSchema>;
export type AuthConfigConfig = z.infer<typeof AuthConfigConfigSchema>;

/** One line per problem: `<path>: <message>`, the path in the config's own field names. */
export function describeIssues(error: z.ZodError, prefix: string): string[] {
  return error.issues.map((i) => {
    const path = i.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    return `${prefix}${path}: ${i.message}`;
  });
}

/**
 * Validates a config from the controller; throws an Error whose message lists every problem. An
 * unknown step type is named as such (a newer controller, or a bug), not as a union mismatch.
 */
export function parseAuthConfigConfig(raw: unknown): AuthConfigConfig {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('config is not an object');
  const c = raw as Record<string, unknown>;
  if (typeof c['name'] !== 'string' || c['name'] === '') throw new Error('config has no name');
  const name = c['name'];
  if (Array.isArray(c['steps'])) {
    c['steps'].forEach((s: unknown, i: number) => {
      const type = s !== null && typeof s === 'object' ? (s as Record<string, unknown>)['type'] : undefined;
      if (!(STEP_TYPES as readonly unknown[]).includes(type))
        throw new Error(`${name}: step ${i}: unsupported step type ${JSON.stringify(type) ?? 'undefined'}`);
    });
  }
  const parsed = AuthConfigConfigSchema.safeParse(raw);
  if (!parsed.success) throw new Error(describeIssues(parsed.error, name).join('; '));
  return parsed.data;
}

// ---- JWK sets

/** What a local JWK set or PEM holds, ready for jose: public keys only. */
export type LocalKeys = { kind: 'jwks'; jwks: { keys: JsonWebKey[] } } | { kind: 'pem'; key: KeyObject };

/** Why a JWK cannot verify tokens, or undefined when it can (asymmetric, public, parses). */
export function unusableJwk(jwk: unknown): string | undefined {
  if (jwk === null || typeof jwk !== 'object' || Array.isArray(jwk)) return 'is not an object';
  const k = jwk as Record<string, unknown>;
  if (typeof k['kty'] !== 'string') return 'has no kty';
  if (k['kty'] === 'oct') return 'is a symmetric (oct) key; only public keys are accepted';
  if (k['d'] !== undefined) return 'holds a private key; publish only the public part';
  if (k['use'] !== undefined && k['use'] !== 'sig') return `is for use ${JSON.stringify(k['use'])}, not sig`;
  try {
    const type = createPublicKey({ key: k as JsonWebKey, format: 'jwk' }).asymmetricKeyType;
    if (type === undefined || !KEY_TYPES.has(type)) return `has an unsupported key type ${type ?? '?'}`;
  } catch (err) {
    return `does not parse (${err instanceof Error ? err.message : 'invalid'})`;
  }
  return undefined;
}

/** Parses `localJwks.inlineString`: a JWK set, one JWK, or one PEM public key. Throws with a reason. */
export function parseLocalKeys(text: string): LocalKeys {
  const t = text.trim();
  if (t.startsWith('-----BEGIN')) {
    if (/PRIVATE KEY-----/.test(t)) throw new Error('is a PEM private key; give the public key');
    let key: KeyObject;
    try {
      key = createPublicKey(t);
    } catch (err) {
      throw new Error(`is not a PEM public key (${err instanceof Error ? err.message : 'invalid'})`, { cause: err });
    }
    if (key.asymmetricKeyType === undefined || !KEY_TYPES.has(key.asymmetricKeyType))
      throw new Error(`holds an unsupported key type ${key.asymmetricKeyType ?? '?'}`);
    return { kind: 'pem', key };
  }
  let doc: unknown;
  try {
    doc = JSON.parse(t);
  } catch {
    throw new Error('is neither a JWK set (JSON) nor a PEM public key');
  }
  const set = doc !== null && typeof doc === 'object' && !Array.isArray(doc) && 'kty' in doc ? { keys: [doc] } : doc;
  const keys = set !== null && typeof set === 'object' ? (set as Record<string, unknown>)['keys'] : undefined;
  if (!Array.isArray(keys) || keys.length === 0) throw new Error('is a JSON value without a non-empty `keys` list');
  keys.forEach((k: unknown, i: number) => {
    const why = unusableJwk(k);
    if (why !== undefined) throw new Error(`key ${i} ${why}`);
  });
  return { kind: 'jwks', jwks: { keys: keys as JsonWebKey[] } };
}

function checkLocalKeys(text: string, ctx: z.RefinementCtx): void {
  try {
    parseLocalKeys(text);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof Error ? err.message : 'invalid' });
  }
}

// ---- booleanExpr

/** A parsed booleanExpr: leaves are step indexes. */
export type BoolExpr = { op: 'step'; step: number } | { op: 'not'; expr: BoolExpr } | { op: 'and' | 'or'; left: BoolExpr; right: BoolExpr };

/**
 * Parses a booleanExpr over step names: `a && (b || !c)`; `!` binds tighter than `&&`, `&&` tighter
 * than `||`. Every name must be a step's name, and every step must be named and used (an unused step
 * would be silently skipped). Throws an Error with a reason (position, unknown name, unused step).
 */
export function parseBooleanExpr(text: string, names: readonly (string | undefined)[]): BoolExpr {
  const tokens: { t: string; at: number }[] = [];
  const re = /\s*(?:(&&|\|\||!|\(|\))|([A-Za-z0-9_.-]+)|(\S))/gy;
  let m: RegExpExecArray | null;
  while (re.lastIndex < text.length && (m = re.exec(text)) !== null) {
    if (m[3] !== undefined) throw new Error(`unexpected ${JSON.stringify(m[3])} at ${re.lastIndex - 1}`);
    if (m[1] !== undefined || m[2] !== undefined) tokens.push({ t: (m[1] ?? m[2])!, at: re.lastIndex - (m[1] ?? m[2])!.length });
  }
  if (tokens.length === 0) throw new Error('is empty');
  const used = new Set<number>();
  let i = 0;
  const peek = (): string | undefined => tokens[i]?.t;
  const where = (): string => (i < tokens.length ? `${JSON.stringify(tokens[i]!.t)} at ${tokens[i]!.at}` : 'end of expression');
  const primary = (): BoolExpr => {
    const tok = peek();
    if (tok === '!') {
      i++;
      return { op: 'not', expr: primary() };
    }
    if (tok === '(') {
      i++;
      const e = or();
      if (peek() !== ')') throw new Error(`expected ")" but found ${where()}`);
      i++;
      return e;
    }
    if (tok === undefined || tok === ')' || tok === '&&' || tok === '||') throw new Error(`expected a step name but found ${where()}`);
    const step = names.indexOf(tok);
    if (step < 0) throw new Error(`unknown step name ${JSON.stringify(tok)} (set configs[].name)`);
    i++;
    used.add(step);
    return { op: 'step', step };
  };
  const and = (): BoolExpr => {
    let left = primary();
    while (peek() === '&&') {
      i++;
      left = { op: 'and', left, right: primary() };
    }
    return left;
  };
  const or = (): BoolExpr => {
    let left = and();
    while (peek() === '||') {
      i++;
      left = { op: 'or', left, right: and() };
    }
    return left;
  };
  const expr = or();
  if (i < tokens.length) throw new Error(`unexpected ${where()}`);
  const seen = new Set<string>();
  names.forEach((n, k) => {
    if (n === undefined) throw new Error(`step ${k} has no name; with booleanExpr every step needs one`);
    if (seen.has(n)) throw new Error(`step name ${JSON.stringify(n)} is used twice`);
    seen.add(n);
    if (!used.has(k)) throw new Error(`step ${JSON.stringify(n)} is not used by the expression`);
  });
  return expr;
}
