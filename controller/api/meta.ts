// Resource envelope, status and API-group aliases shared by every kind.

export const LEGATE_NAMESPACE = 'legate-system';
export const REPORTER = 'legate';

export type ResourceState = 'Pending' | 'Accepted' | 'Rejected' | 'Warning';

export interface ResourceStatus {
  state: ResourceState;
  reason?: string;
  reportedBy: string;
  subresourceStatuses?: Record<string, ResourceStatus>;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** A parsed resource as read from a source, before kind-specific validation. */
export interface RawResource {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  /** Core kinds (Secret, Endpoints) keep other top-level fields here. */
  body: Record<string, unknown>;
  /** Where it came from, e.g. `examples/petstore.yaml#2`. */
  origin: string;
}

/** Identity of a resource: kind (canonical) + namespace + name. */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

interface KindInfo {
  group: string;
  version: string;
  plural: string;
  aliases: string[];
}

/** Canonical group/version per kind and the Gloo Edge groups accepted as aliases (spec preface). */
export const KINDS = {
  VirtualService: { group: 'gateway.legate.dev', version: 'v1', plural: 'virtualservices', aliases: ['gateway.solo.io/v1'] },
  Gateway: { group: 'gateway.legate.dev', version: 'v1', plural: 'gateways', aliases: ['gateway.solo.io/v1'] },
  RouteTable: { group: 'gateway.legate.dev', version: 'v1', plural: 'routetables', aliases: ['gateway.solo.io/v1'] },
  VirtualHostOption: { group: 'gateway.legate.dev', version: 'v1', plural: 'virtualhostoptions', aliases: ['gateway.solo.io/v1'] },
  RouteOption: { group: 'gateway.legate.dev', version: 'v1', plural: 'routeoptions', aliases: ['gateway.solo.io/v1'] },
  Upstream: { group: 'legate.dev', version: 'v1', plural: 'upstreams', aliases: ['gloo.solo.io/v1'] },
  UpstreamGroup: { group: 'legate.dev', version: 'v1', plural: 'upstreamgroups', aliases: ['gloo.solo.io/v1'] },
  Proxy: { group: 'legate.dev', version: 'v1', plural: 'proxies', aliases: ['gloo.solo.io/v1'] },
  Settings: { group: 'legate.dev', version: 'v1', plural: 'settings', aliases: ['gloo.solo.io/v1'] },
  AuthConfig: { group: 'enterprise.legate.dev', version: 'v1', plural: 'authconfigs', aliases: ['enterprise.gloo.solo.io/v1'] },
  RateLimitConfig: { group: 'ratelimit.legate.dev', version: 'v1alpha1', plural: 'ratelimitconfigs', aliases: ['ratelimit.solo.io/v1alpha1'] },
  GraphQLApi: { group: 'graphql.legate.dev', version: 'v1beta1', plural: 'graphqlapis', aliases: ['graphql.gloo.solo.io/v1beta1'] },
  GraphQLSchema: { group: 'graphql.legate.dev', version: 'v1alpha1', plural: 'graphqlschemas', aliases: ['graphql.gloo.solo.io/v1alpha1'] },
  Service: { group: '', version: 'v1', plural: 'services', aliases: [] },
  Endpoints: { group: '', version: 'v1', plural: 'endpoints', aliases: [] },
  Secret: { group: '', version: 'v1', plural: 'secrets', aliases: [] },
} as const satisfies Record<string, KindInfo>;

export type KindName = keyof typeof KINDS;

export function isKnownKind(kind: string): kind is KindName {
  return Object.hasOwn(KINDS, kind);
}

export function canonicalApiVersion(kind: KindName): string {
  const info: KindInfo = KINDS[kind];
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** Whether `apiVersion` is the canonical one or an accepted alias for `kind`. */
export function acceptsApiVersion(kind: KindName, apiVersion: string): boolean {
  const info: KindInfo = KINDS[kind];
  return apiVersion === canonicalApiVersion(kind) || info.aliases.includes(apiVersion);
}

/** Resolves what a user types (`vs`, `virtualservices`, `VirtualService`, `upstream`) to a kind. */
export function kindFromUserInput(input: string): KindName | undefined {
  const lower = input.toLowerCase();
  const short: Record<string, KindName> = {
    vs: 'VirtualService',
    us: 'Upstream',
    ug: 'UpstreamGroup',
    gw: 'Gateway',
    rt: 'RouteTable',
    px: 'Proxy',
    ac: 'AuthConfig',
    gql: 'GraphQLApi',
    svc: 'Service',
    ep: 'Endpoints',
  };
  if (short[lower]) return short[lower];
  for (const [kind, info] of Object.entries(KINDS) as [KindName, KindInfo][]) {
    if (kind.toLowerCase() === lower || info.plural === lower || info.plural.replace(/s$/, '') === lower) return kind;
  }
  return undefined;
}
