// Stage 2 for jwt: one Envoy jwt_authn filter per stage a listener uses (beforeExtAuth just before
// ext_authz, afterExtAuth just after it), holding every provider of its virtual hosts and one
// requirement per virtual host; the virtual host selects its requirement (PerRouteConfig) and a route
// may turn the stage off. A verified payload goes to dynamic metadata (`envoy.filters.http.jwt_authn`,
// one key per provider), which the RBAC filter (during AuthZ) matches claims against.
import {
  typed,
  type envoy_config_rbac_v3_Permission as Permission,
  type envoy_config_rbac_v3_Principal as Principal,
  type envoy_extensions_filters_http_jwt_authn_v3_JwtProvider as EnvoyJwtProvider,
  type envoy_extensions_filters_http_jwt_authn_v3_JwtRequirement as JwtRequirement,
  type envoy_type_matcher_v3_ValueMatcher as ValueMatcher,
  type TypedConfig,
} from '../../../../envoy/typed.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, after, before, during, type RenderPlugin, type StagedHttpFilter } from '../../feature.js';
import type { ClaimMatchIR, JwtProviderIR, JwtStage, JwtStageIR, ListenerIR, RbacIR, RbacPrincipalIR, VirtualHostIR } from '../../ir.js';

export const JWT_FILTERS: Record<JwtStage, string> = {
  beforeExtAuth: 'legate.jwt_authn.before_ext_auth',
  afterExtAuth: 'envoy.filters.http.jwt_authn',
};
export const RBAC_FILTER = 'envoy.filters.http.rbac';
/** Envoy's jwt_authn writes payloads under this dynamic-metadata namespace, whatever the filter's name. */
const JWT_METADATA = 'envoy.filters.http.jwt_authn';
const JWT_AUTHN = 'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.JwtAuthentication' as const;
const JWT_PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.jwt_authn.v3.PerRouteConfig' as const;
const RBAC = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBAC' as const;
const RBAC_PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.rbac.v3.RBACPerRoute' as const;
/** Verified JWTs Envoy keeps per provider and worker when the key set is local (Envoy's default size is 100). */
const JWT_CACHE_SIZE = 1000;
/** How long Envoy waits for a remote JWKS (Gloo does not expose it). */
const JWKS_FETCH_TIMEOUT = { seconds: 5 };

/** The provider's name in the filter, also its payload's key in the metadata: unique per virtual host and stage. */
export function jwtProviderKey(vhost: string, stage: JwtStage, provider: string): string {
  return `${vhost}/${stage}/${provider}`;
}

function envoyProvider(p: JwtProviderIR, key: string): EnvoyJwtProvider {
  const out: EnvoyJwtProvider = {};
  if (p.issuer) out.issuer = p.issuer;
  if (p.audiences) out.audiences = p.audiences;
  if (p.localJwks !== undefined) {
    out.local_jwks = { inline_string: p.localJwks };
    // verified tokens are kept (exp is still checked on every use): a local key set changes only with the config,
    // and a new config is a new filter with an empty cache, so no token outlives the key that signed it
    out.jwt_cache_config = { jwt_cache_size: JWT_CACHE_SIZE };
  }
  if (p.remoteJwks) {
    const r = p.remoteJwks;
    out.remote_jwks = {
      http_uri: { uri: r.url, cluster: r.cluster, timeout: JWKS_FETCH_TIMEOUT },
      cache_duration: r.cacheDuration,
      ...(r.asyncFetch ? { async_fetch: r.asyncFetch.fastListener !== undefined ? { fast_listener: r.asyncFetch.fastListener } : {} } : {}),
    };
  }
  out.forward = p.keepToken;
  if (p.tokenSource) {
    if (p.tokenSource.headers.length) {
      out.from_headers = p.tokenSource.headers.map((h) => (h.prefix ? { name: h.name, value_prefix: h.prefix } : { name: h.name }));
    }
    if (p.tokenSource.queryParams.length) out.from_params = p.tokenSource.queryParams;
  }
  out.payload_in_metadata = key;
  if (p.claimsToHeaders.length) out.claim_to_headers = p.claimsToHeaders.map((c) => ({ header_name: c.header, claim_name: c.claim }));
  if (p.clockSkewSeconds !== undefined) out.clock_skew_seconds = p.clockSkewSeconds;
  if (p.failedStatusInMetadata) out.failed_status_in_metadata = p.failedStatusInMetadata;
  return out;
}

/** Any one provider's token passes; the validation policy may let a missing (or bad) token through. */
function requirement(vhost: string, stage: JwtStage, s: JwtStageIR): JwtRequirement {
  const alternatives: JwtRequirement[] = Object.keys(s.providers).map((name) => ({ provider_name: jwtProviderKey(vhost, stage, name) }));
  if (s.validationPolicy === 'ALLOW_MISSING') alternatives.push({ allow_missing: {} });
  if (s.validationPolicy === 'ALLOW_MISSING_OR_FAILED') alternatives.push({ allow_missing_or_failed: {} });
  return alternatives.length === 1 && alternatives[0] ? alternatives[0] : { requires_any: { requirements: alternatives } };
}

function jwtFilter(listener: ListenerIR, stage: JwtStage): StagedHttpFilter | undefined {
  const providers: Record<string, EnvoyJwtProvider> = {};
  const requirements: Record<string, JwtRequirement> = {};
  for (const vh of listener.virtualHosts) {
    const s = vh.jwt?.[stage];
    if (!s) continue;
    for (const [name, p] of Object.entries(s.providers)) {
      const key = jwtProviderKey(vh.name, stage, name);
      providers[key] = envoyProvider(p, key);
    }
    requirements[vh.name] = requirement(vh.name, stage, s);
  }
  if (!Object.keys(requirements).length) return undefined;
  // no rules: a request is checked only where its virtual host names its requirement
  const filter = { name: JWT_FILTERS[stage], typed_config: typed(JWT_AUTHN, { providers, requirement_map: requirements }) };
  return { position: stage === 'beforeExtAuth' ? before(FilterStage.AuthN) : after(FilterStage.AuthN), filter };
}

const usesRbac = (l: ListenerIR): boolean => l.virtualHosts.some((vh) => vh.rbac || vh.routes.some((r) => r.rbac));

function claimValue(m: ClaimMatchIR): ValueMatcher {
  if ('exact' in m) return { string_match: { exact: m.exact } };
  if ('bool' in m) return { bool_match: m.bool };
  return { list_match: { one_of: { string_match: { exact: m.listContains } } } };
}

function oneOf(ids: Principal[]): Principal {
  return ids.length === 1 && ids[0] ? ids[0] : { or_ids: { ids } };
}

function principal(vhost: string, p: RbacPrincipalIR): Principal {
  return oneOf(
    p.providers.map(({ stage, name }) => {
      const key = jwtProviderKey(vhost, stage, name);
      // no claims: any token this provider verified
      if (!p.claims.length) return { metadata: { filter: JWT_METADATA, path: [{ key }], value: { present_match: true } } };
      const ids: Principal[] = p.claims.map((c) => ({
        metadata: { filter: JWT_METADATA, path: [{ key }, ...c.path.map((k) => ({ key: k }))], value: claimValue(c.match) },
      }));
      return ids.length === 1 && ids[0] ? ids[0] : { and_ids: { ids } };
    }),
  );
}

function permission(policy: { pathPrefix?: string; methods?: string[] }): Permission {
  const rules: Permission[] = [];
  if (policy.pathPrefix) rules.push({ url_path: { path: { prefix: policy.pathPrefix } } });
  if (policy.methods) {
    const methods: Permission[] = policy.methods.map((m) => ({ header: { name: ':method', string_match: { exact: m } } }));
    rules.push(methods.length === 1 && methods[0] ? methods[0] : { or_rules: { rules: methods } });
  }
  if (!rules.length) return { any: true };
  return rules.length === 1 && rules[0] ? rules[0] : { and_rules: { rules } };
}

function rbacPerRoute(vhost: string, ir: RbacIR): TypedConfig {
  if ('disabled' in ir) return typed(RBAC_PER_ROUTE, {});
  const policies = Object.fromEntries(
    Object.entries(ir.policies).map(([name, p]) => [
      name,
      { permissions: [permission(p)], principals: p.principals.map((pr) => principal(vhost, pr)) },
    ]),
  );
  // ALLOW without policies refuses every request
  return typed(RBAC_PER_ROUTE, { rbac: { rules: { action: 'ALLOW', ...(Object.keys(policies).length ? { policies } : {}) } } });
}

/** `requireRbac` (Settings rbac.requireRbac): the filter's own rules deny all, so only an rbac option lets a request in. */
export const jwtRender = (requireRbac: boolean): RenderPlugin => ({
  httpFilters(_proxy, listener) {
    const filters: StagedHttpFilter[] = [];
    for (const stage of ['beforeExtAuth', 'afterExtAuth'] as const) {
      const f = jwtFilter(listener, stage);
      if (f) filters.push(f);
    }
    // on the HCM it enforces nothing (or, with requireRbac, ALLOW without policies: deny all); the virtual hosts' and
    // routes' rbac options override it
    if (requireRbac) {
      const denyAll = typed(RBAC, { rules: { action: 'ALLOW' } });
      filters.push({ position: during(FilterStage.AuthZ), filter: { name: RBAC_FILTER, typed_config: denyAll } });
    } else if (usesRbac(listener))
      filters.push({ position: during(FilterStage.AuthZ), filter: { name: RBAC_FILTER, typed_config: typed(RBAC, {}) } });
    return filters;
  },
  // patchVirtualHost reads only the virtual host's own IR
  proxyContext: () => null,
  patchVirtualHost(ir: VirtualHostIR, vhost) {
    for (const stage of ['beforeExtAuth', 'afterExtAuth'] as const) {
      if (ir.jwt?.[stage]) setPerFilterConfig(vhost, JWT_FILTERS[stage], typed(JWT_PER_ROUTE, { requirement_name: ir.name }));
    }
    if (ir.rbac) setPerFilterConfig(vhost, RBAC_FILTER, rbacPerRoute(ir.name, ir.rbac));
  },
  patchRoute(ir, route, vh) {
    for (const stage of ir.jwtDisabled ?? []) {
      if (vh.jwt?.[stage]) setPerFilterConfig(route, JWT_FILTERS[stage], typed(JWT_PER_ROUTE, { disabled: true }));
    }
    if (ir.rbac) setPerFilterConfig(route, RBAC_FILTER, rbacPerRoute(vh.name, ir.rbac));
  },
});
