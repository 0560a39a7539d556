// The one registry of resource kinds: API group and version, the Gloo Edge groups accepted as aliases
// (spec preface), plural and short names (as users type them), and the schema a resource's spec (or,
// for core Kubernetes kinds, its body) must pass. A kind without a schema is stored and listed, but
// nothing acts on it yet. Sources, validation, the CLI and stage 1 all read this table; adding a kind
// is one entry here (see CONTRIBUTING.md).
import type { z } from 'zod';
import {
  AuthConfigSpecSchema,
  ConfigMapBodySchema,
  EndpointsBodySchema,
  GatewaySpecSchema,
  GraphQLApiSpecSchema,
  GraphQLSchemaSpecSchema,
  MatchableHttpGatewaySpecSchema,
  MatchableTcpGatewaySpecSchema,
  RateLimitConfigSpecSchema,
  SecretBodySchema,
  ServiceBodySchema,
  SettingsSpecSchema,
  UpstreamSpecSchema,
} from './schemas.js';
import {
  RouteOptionSpecSchema,
  RouteTableSpecSchema,
  UpstreamGroupSpecSchema,
  VirtualHostOptionSpecSchema,
  VirtualServiceSpecSchema,
} from './routes.js';

interface KindInfo {
  group: string;
  version: string;
  plural: string;
  aliases: readonly string[];
  shortNames: readonly string[];
  /** the schema of `spec` (custom resources) */
  spec?: z.ZodType;
  /** the schema of the whole body (core kinds such as Service, whose fields sit beside `spec`) */
  body?: z.ZodType;
}

const GATEWAY = { group: 'gateway.legate.dev', version: 'v1', aliases: ['gateway.solo.io/v1'] } as const;
const GLOO = { group: 'legate.dev', version: 'v1', aliases: ['gloo.solo.io/v1'] } as const;
const CORE = { group: '', version: 'v1', aliases: [] } as const;

export const KINDS = {
  VirtualService: { ...GATEWAY, plural: 'virtualservices', shortNames: ['vs'], spec: VirtualServiceSpecSchema },
  Gateway: { ...GATEWAY, plural: 'gateways', shortNames: ['gw'], spec: GatewaySpecSchema },
  MatchableHttpGateway: { ...GATEWAY, plural: 'httpgateways', shortNames: ['hgw'], spec: MatchableHttpGatewaySpecSchema },
  MatchableTcpGateway: { ...GATEWAY, plural: 'tcpgateways', shortNames: ['tgw'], spec: MatchableTcpGatewaySpecSchema },
  RouteTable: { ...GATEWAY, plural: 'routetables', shortNames: ['rt'], spec: RouteTableSpecSchema },
  VirtualHostOption: { ...GATEWAY, plural: 'virtualhostoptions', shortNames: ['vho', 'vhopts'], spec: VirtualHostOptionSpecSchema },
  RouteOption: { ...GATEWAY, plural: 'routeoptions', shortNames: ['rto', 'rtopts'], spec: RouteOptionSpecSchema },
  Upstream: { ...GLOO, plural: 'upstreams', shortNames: ['us'], spec: UpstreamSpecSchema },
  UpstreamGroup: { ...GLOO, plural: 'upstreamgroups', shortNames: ['ug', 'gug'], spec: UpstreamGroupSpecSchema },
  Proxy: { ...GLOO, plural: 'proxies', shortNames: ['px'] },
  Settings: { ...GLOO, plural: 'settings', shortNames: ['st'], spec: SettingsSpecSchema },
  AuthConfig: {
    group: 'enterprise.legate.dev',
    version: 'v1',
    aliases: ['enterprise.gloo.solo.io/v1'],
    plural: 'authconfigs',
    shortNames: ['ac'],
    spec: AuthConfigSpecSchema,
  },
  RateLimitConfig: {
    group: 'ratelimit.legate.dev',
    version: 'v1alpha1',
    aliases: ['ratelimit.solo.io/v1alpha1'],
    plural: 'ratelimitconfigs',
    shortNames: ['rlc'],
    spec: RateLimitConfigSpecSchema,
  },
  GraphQLApi: {
    group: 'graphql.legate.dev',
    version: 'v1beta1',
    aliases: ['graphql.gloo.solo.io/v1beta1'],
    plural: 'graphqlapis',
    shortNames: ['gql'],
    spec: GraphQLApiSpecSchema,
  },
  GraphQLSchema: {
    group: 'graphql.legate.dev',
    version: 'v1alpha1',
    aliases: ['graphql.gloo.solo.io/v1alpha1'],
    plural: 'graphqlschemas',
    shortNames: ['gqls'],
    spec: GraphQLSchemaSpecSchema,
  },
  Service: { ...CORE, plural: 'services', shortNames: ['svc'], body: ServiceBodySchema },
  Endpoints: { ...CORE, plural: 'endpoints', shortNames: ['ep'], body: EndpointsBodySchema },
  Secret: { ...CORE, plural: 'secrets', shortNames: [], body: SecretBodySchema },
  ConfigMap: { ...CORE, plural: 'configmaps', shortNames: ['cm'], body: ConfigMapBodySchema },
} as const satisfies Record<string, KindInfo>;

export type KindName = keyof typeof KINDS;

/** The validated shape of a kind's `spec` (custom kinds) or body (core kinds); unknown when stored only. */
export type ShapeOf<K extends KindName> = (typeof KINDS)[K] extends { spec: infer S extends z.ZodType }
  ? z.output<S>
  : (typeof KINDS)[K] extends { body: infer B extends z.ZodType }
    ? z.output<B>
    : unknown;

/** Kinds with a schema: Legate validates them, and some part of it acts on them. */
export type ValidatedKind = { [K in KindName]: (typeof KINDS)[K] extends { spec: z.ZodType } | { body: z.ZodType } ? K : never }[KindName];

export const KIND_NAMES = Object.keys(KINDS) as KindName[];

export function kindInfo(kind: KindName): KindInfo {
  return KINDS[kind];
}

export function isKnownKind(kind: string): kind is KindName {
  return Object.hasOwn(KINDS, kind);
}

export function isValidatedKind(kind: KindName): kind is ValidatedKind {
  const info = kindInfo(kind);
  return info.spec !== undefined || info.body !== undefined;
}

export function canonicalApiVersion(kind: KindName): string {
  const info = kindInfo(kind);
  return info.group ? `${info.group}/${info.version}` : info.version;
}

/** Whether `apiVersion` is the canonical one or an accepted alias for `kind`. */
export function acceptsApiVersion(kind: KindName, apiVersion: string): boolean {
  return apiVersion === canonicalApiVersion(kind) || kindInfo(kind).aliases.includes(apiVersion);
}

/** Resolves what a user types (`vs`, `virtualservices`, `VirtualService`, `upstream`) to a kind. */
export function kindFromUserInput(input: string): KindName | undefined {
  const lower = input.toLowerCase();
  for (const kind of KIND_NAMES) {
    const info = kindInfo(kind);
    if (info.shortNames.includes(lower)) return kind;
  }
  for (const kind of KIND_NAMES) {
    const info = kindInfo(kind);
    if (kind.toLowerCase() === lower || info.plural === lower || info.plural.replace(/s$/, '') === lower) return kind;
  }
  return undefined;
}
