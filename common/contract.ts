// The contract between the controller and the extension services (DESIGN.md §1): xDS roles, type
// URLs, metadata and context-extension keys, and the shapes of the configs the controller serves.
// Extension configs travel as google.protobuf.Any whose `value` is the UTF-8 JSON of the shapes below.

/** xDS node roles of the extension services. */
export const ExtensionRoles = {
  graphql: 'graphql',
  extauth: 'extauth',
  ratelimit: 'ratelimit',
} as const;

/** Type URLs of extension configs served over ADS. */
export const ExtensionTypeUrls = {
  graphqlApi: 'type.googleapis.com/legate.graphql.v1.GraphQLApiConfig',
  authConfig: 'type.googleapis.com/legate.extauth.v1.AuthConfig',
  rateLimitConfig: 'type.googleapis.com/legate.ratelimit.v1.RateLimitConfig',
} as const;

/** gRPC initial metadata key naming the GraphQL API of a route (`<namespace>.<name>`). */
export const GRAPHQL_API_METADATA_KEY = 'x-legate-graphql-api';

/** ext_authz context-extension keys (as Gloo's ext-auth service reads them). */
export const AuthContextKeys = {
  configId: 'config_id',
  sourceType: 'source_type',
  sourceName: 'source_name',
} as const;

/** gRPC metadata on each Check: the header Legate's extauth service sets to the user id on an allow (Settings userIdHeader) */
export const USER_ID_HEADER_METADATA = 'legate-user-id-header';

export function encodeExtensionConfig(resource: object): Uint8Array {
  return Buffer.from(JSON.stringify(resource), 'utf8');
}

export function decodeExtensionConfig<T>(bytes: Uint8Array): T {
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as T;
}

// ---- GraphQL ----

// The GraphQLApi shapes (the API, its resolvers keyed by kind: rest, mock) are defined with their runtime
// schema, which the controller and the graphql service both validate against, in ./graphql-config.ts.
export type {
  GraphQLApiConfig,
  MockResolverConfig,
  ResolverConfig,
  ResolverKind,
  ResolverUpstream,
  RestResolverConfig,
  UpstreamEndpoint,
} from './graphql-config.js';

// ---- extauth ----

// The AuthConfig shapes (introspection and JWT steps) are defined with their runtime schema, which the
// controller and the extauth service both validate against, in ./auth-config.ts.
export type { AuthConfigConfig, AuthStepConfig, IntrospectionStepConfig, JwtStepConfig } from './auth-config.js';

// ---- ratelimit ----

// The RateLimitConfig shape (descriptor trees) and the descriptor keys Legate adds are defined with their
// runtime schema, which the controller and the ratelimit service both validate against, in ./ratelimit-config.ts.
export type { DescriptorConfig, Limit, RateLimitServiceConfig } from './ratelimit-config.js';
