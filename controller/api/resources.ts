// Typed resources: a RawResource whose spec passed its kind's schema (controller/api/kinds.ts).
// `validateResource` is pure.
import type { z } from 'zod';
import { KIND_NAMES, acceptsApiVersion, canonicalApiVersion, isKnownKind, kindInfo, type KindName, type ShapeOf } from './kinds.js';
import { resourceKey, type ObjectMeta, type RawResource } from './meta.js';
import { formatIssues } from './schemas.js';
import { suggestion } from './issues.js';

interface Typed<K extends KindName, S> {
  readonly kind: K;
  readonly apiVersion: string;
  readonly metadata: ObjectMeta;
  readonly spec: S;
  readonly raw: RawResource;
}

/** A validated resource of kind K; `spec` is what the kind's schema produced (unknown for stored-only kinds). */
export type ResourceOf<K extends KindName> = Typed<K, ShapeOf<K>>;

/** Any validated resource, discriminated by `kind`. */
export type LegateResource = { [K in KindName]: ResourceOf<K> }[KindName];

export type VirtualService = ResourceOf<'VirtualService'>;
export type RouteTable = ResourceOf<'RouteTable'>;
export type Gateway = ResourceOf<'Gateway'>;
export type Upstream = ResourceOf<'Upstream'>;
export type Settings = ResourceOf<'Settings'>;
export type Service = ResourceOf<'Service'>;
export type Endpoints = ResourceOf<'Endpoints'>;
export type Secret = ResourceOf<'Secret'>;
export type ConfigMap = ResourceOf<'ConfigMap'>;
export type GraphQLApi = ResourceOf<'GraphQLApi'>;
export type GraphQLSchema = ResourceOf<'GraphQLSchema'>;
export type AuthConfig = ResourceOf<'AuthConfig'>;
export type RateLimitConfig = ResourceOf<'RateLimitConfig'>;
export type UpstreamGroup = ResourceOf<'UpstreamGroup'>;
export type VirtualHostOption = ResourceOf<'VirtualHostOption'>;
export type RouteOption = ResourceOf<'RouteOption'>;

export type ValidationResult = { ok: true; resource: LegateResource } | { ok: false; reason: string };

// Resources are not changed once read: each one's key is made once, and being the same string run after
// run, maps keyed by it find it without hashing and comparing a new string each time.
const keys = new WeakMap<object, string>();

export function keyOf(r: { kind: string; metadata: { namespace: string; name: string } }): string {
  let key = keys.get(r);
  if (key === undefined) keys.set(r, (key = resourceKey(r.kind, r.metadata.namespace, r.metadata.name)));
  return key;
}

/** Checks apiVersion, kind and the spec's shape. Never throws: a bad resource yields a reason. */
export function validateResource(raw: RawResource): ValidationResult {
  const { kind } = raw;
  if (!isKnownKind(kind)) {
    const where = raw.origin ? ` (in ${raw.origin})` : '';
    return { ok: false, reason: `unknown kind ${JSON.stringify(kind)}${where}${suggestion(kind, KIND_NAMES)}` };
  }
  if (!acceptsApiVersion(kind, raw.apiVersion)) {
    return {
      ok: false,
      reason: `apiVersion ${JSON.stringify(raw.apiVersion)} is not valid for ${kind} (use ${canonicalApiVersion(kind)})`,
    };
  }
  const base = { apiVersion: raw.apiVersion, metadata: raw.metadata, raw };
  const info = kindInfo(kind);
  if (info.spec) {
    if (raw.spec === undefined) return { ok: false, reason: 'spec: required' };
    const parsed = (info.spec as z.ZodType).safeParse(raw.spec);
    if (!parsed.success) return { ok: false, reason: formatIssues('spec', parsed.error, info.spec) };
    return { ok: true, resource: { ...base, kind, spec: parsed.data } as LegateResource };
  }
  if (info.body) {
    const parsed = (info.body as z.ZodType).safeParse(raw.spec === undefined ? raw.body : { ...raw.body, spec: raw.spec });
    if (!parsed.success) return { ok: false, reason: formatIssues('', parsed.error, info.body) };
    return { ok: true, resource: { ...base, kind, spec: parsed.data } as LegateResource };
  }
  return { ok: true, resource: { ...base, kind, spec: raw.spec } as LegateResource };
}

export function isKind<K extends KindName>(kind: K) {
  return (r: LegateResource): r is Extract<LegateResource, { kind: K }> => r.kind === kind;
}
