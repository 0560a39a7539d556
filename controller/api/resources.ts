// Typed resources: a RawResource whose spec passed its kind's schema. `validateResource` is pure.
import { z } from 'zod';
import {
  acceptsApiVersion,
  canonicalApiVersion,
  isKnownKind,
  resourceKey,
  type KindName,
  type ObjectMeta,
  type RawResource,
} from './meta.js';
import {
  AuthConfigSpecSchema,
  EndpointsBodySchema,
  GatewaySpecSchema,
  GraphQLApiSpecSchema,
  GraphQLSchemaSpecSchema,
  SecretBodySchema,
  ServiceBodySchema,
  SettingsSpecSchema,
  UpstreamSpecSchema,
  VirtualServiceSpecSchema,
  formatIssues,
  type AuthConfigSpec,
  type EndpointsBody,
  type GatewaySpec,
  type GraphQLApiSpec,
  type GraphQLSchemaSpec,
  type SecretBody,
  type ServiceBody,
  type SettingsSpec,
  type UpstreamSpec,
  type VirtualServiceSpec,
} from './schemas.js';

interface Typed<K extends KindName, S> {
  readonly kind: K;
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: S;
  readonly raw: RawResource;
}

export type VirtualService = Typed<'VirtualService', VirtualServiceSpec>;
export type Gateway = Typed<'Gateway', GatewaySpec>;
export type Upstream = Typed<'Upstream', UpstreamSpec>;
export type Settings = Typed<'Settings', SettingsSpec>;
export type Service = Typed<'Service', ServiceBody>;
export type Endpoints = Typed<'Endpoints', EndpointsBody>;
export type Secret = Typed<'Secret', SecretBody>;
export type GraphQLApi = Typed<'GraphQLApi', GraphQLApiSpec>;
export type GraphQLSchema = Typed<'GraphQLSchema', GraphQLSchemaSpec>;
export type AuthConfig = Typed<'AuthConfig', AuthConfigSpec>;
/** A kind Legate stores and lists but does not act on yet. */
export type StoredOnly = Typed<Exclude<KindName, TypedKind>, unknown>;

type TypedKind = 'VirtualService' | 'Gateway' | 'Upstream' | 'Settings' | 'Service' | 'Endpoints' | 'Secret' | 'GraphQLApi' | 'GraphQLSchema' | 'AuthConfig';

export type LegateResource =
  | VirtualService
  | Gateway
  | Upstream
  | Settings
  | Service
  | Endpoints
  | Secret
  | GraphQLApi
  | GraphQLSchema
  | AuthConfig
  | StoredOnly;

export type ValidationResult = { ok: true; resource: LegateResource } | { ok: false; reason: string };

const specSchemas = {
  VirtualService: VirtualServiceSpecSchema,
  Gateway: GatewaySpecSchema,
  Upstream: UpstreamSpecSchema,
  Settings: SettingsSpecSchema,
  GraphQLApi: GraphQLApiSpecSchema,
  GraphQLSchema: GraphQLSchemaSpecSchema,
  AuthConfig: AuthConfigSpecSchema,
} as const;

const bodySchemas = {
  Service: ServiceBodySchema,
  Endpoints: EndpointsBodySchema,
  Secret: SecretBodySchema,
} as const;

export function keyOf(r: { kind: string; metadata: { namespace: string; name: string } }): string {
  return resourceKey(r.kind, r.metadata.namespace, r.metadata.name);
}

/** Checks apiVersion, kind and the spec's shape. Never throws: a bad resource yields a reason. */
export function validateResource(raw: RawResource): ValidationResult {
  const { kind } = raw;
  if (!isKnownKind(kind)) return { ok: false, reason: `unknown kind ${JSON.stringify(kind)}` };
  if (!acceptsApiVersion(kind, raw.apiVersion)) {
    return { ok: false, reason: `apiVersion ${JSON.stringify(raw.apiVersion)} is not valid for ${kind} (use ${canonicalApiVersion(kind)})` };
  }
  const base = { apiVersion: raw.apiVersion, metadata: raw.metadata, raw };
  if (kind in specSchemas) {
    const schema = specSchemas[kind as keyof typeof specSchemas];
    if (raw.spec === undefined) return { ok: false, reason: 'spec: required' };
    const parsed = (schema as z.ZodType).safeParse(raw.spec);
    if (!parsed.success) return { ok: false, reason: formatIssues('spec', parsed.error) };
    return { ok: true, resource: { ...base, kind, spec: parsed.data } as LegateResource };
  }
  if (kind in bodySchemas) {
    const schema = bodySchemas[kind as keyof typeof bodySchemas];
    const parsed = (schema as z.ZodType).safeParse(raw.spec === undefined ? raw.body : { ...raw.body, spec: raw.spec });
    if (!parsed.success) return { ok: false, reason: formatIssues('', parsed.error) };
    return { ok: true, resource: { ...base, kind, spec: parsed.data } as LegateResource };
  }
  return { ok: true, resource: { ...base, kind, spec: raw.spec } as StoredOnly };
}

export function isKind<K extends LegateResource['kind']>(kind: K) {
  return (r: LegateResource): r is Extract<LegateResource, { kind: K }> => r.kind === kind;
}
