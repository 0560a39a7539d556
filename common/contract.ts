// The contract between the controller and the extension services (DESIGN.md §1): xDS roles, type
// URLs, metadata and context-extension keys, and the shapes of the configs the controller serves.
// Extension configs travel as google.protobuf.Any whose `value` is the UTF-8 JSON of the shapes below.

/** xDS node roles of the extension services. */
export const ExtensionRoles = {
  graphql: 'graphql',
  extauth: 'extauth',
} as const;

/** Type URLs of extension configs served over ADS. */
export const ExtensionTypeUrls = {
  graphqlApi: 'type.googleapis.com/legate.graphql.v1.GraphQLApiConfig',
  authConfig: 'type.googleapis.com/legate.extauth.v1.AuthConfig',
} as const;

/** gRPC initial metadata key naming the GraphQL API of a route (`<namespace>.<name>`). */
export const GRAPHQL_API_METADATA_KEY = 'x-legate-graphql-api';

/** ext_authz context-extension keys (as Gloo's ext-auth service reads them). */
export const AuthContextKeys = {
  configId: 'config_id',
  sourceType: 'source_type',
  sourceName: 'source_name',
} as const;

export function encodeExtensionConfig(resource: object): Uint8Array {
  return Buffer.from(JSON.stringify(resource), 'utf8');
}

export function decodeExtensionConfig<T>(bytes: Uint8Array): T {
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as T;
}

// ---- GraphQL ----

export interface UpstreamEndpoint {
  address: string;
  port: number;
}

/** Where a resolver sends its calls: the Upstream's endpoints, resolved by the controller. */
export interface ResolverUpstream {
  /** `<namespace>.<name>` of the Upstream, for errors and metrics */
  name: string;
  endpoints: UpstreamEndpoint[];
  tls?: {
    sni?: string;
    /** PEM; when absent the upstream certificate is not verified at all (as Envoy does without a validation context) */
    rootCa?: string;
    certChain?: string;
    privateKey?: string;
  };
}

export interface RestResolverConfig {
  upstream: ResolverUpstream;
  request: {
    /** includes the pseudo-headers `:method` (default GET) and `:path`; values may hold templates */
    headers: Record<string, string>;
    queryParams: Record<string, string>;
    /** JSON value whose strings may hold templates; sent as application/json */
    body?: unknown;
  };
  response: {
    /** a template path into the response body, e.g. `{$body.data}` or `data.items` */
    resultRoot?: string;
    /** field -> template over the (rooted) body, e.g. `{$body.details.lastname}` */
    setters: Record<string, string>;
  };
  timeoutMs: number;
}

export interface ResolverConfig {
  rest?: RestResolverConfig;
}

export interface GraphQLApiConfig {
  /** `<namespace>.<name>` */
  name: string;
  /** changes whenever anything below changes; part of the document-cache key */
  version: string;
  /** the SDL as written, with `@resolve(name: …)` directives */
  schemaDefinition: string;
  enableIntrospection: boolean;
  /** 0 = unbounded */
  maxDepth: number;
  /** `<Type>|<field>` -> resolver */
  resolutions: Record<string, ResolverConfig>;
}

// ---- extauth ----

// The AuthConfig shapes (introspection and JWT steps) are defined with their runtime schema, which the
// controller and the extauth service both validate against, in ./auth-config.ts.
export type { AuthConfigConfig, AuthStepConfig, IntrospectionStepConfig, JwtStepConfig } from './auth-config.js';
