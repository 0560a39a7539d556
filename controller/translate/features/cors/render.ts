// Stage 2 for cors: Envoy's CORS and CSRF filters on the HCM of a listener that uses them, and their
// policies in typed_per_filter_config on virtual hosts, routes and weighted clusters (route.cors is
// deprecated in Envoy). A route that answers directly is not seen by the CORS filter (it has no route
// entry), so there, as Gloo does, its own policy becomes fixed response headers.
import { typed, type EnvoyRoute, type StringMatcher, type TypedConfig } from '../../../../envoy/typed.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, after, before, type RenderPlugin, type StagedHttpFilter } from '../../feature.js';
import type { CorsIR, CsrfIR, ListenerIR, RouteIR, RuntimeFractionIR } from '../../ir.js';

export const CORS_FILTER = 'envoy.filters.http.cors';
export const CSRF_FILTER = 'envoy.filters.http.csrf';
const CORS_POLICY = 'type.googleapis.com/envoy.extensions.filters.http.cors.v3.CorsPolicy' as const;
const CSRF_POLICY = 'type.googleapis.com/envoy.extensions.filters.http.csrf.v3.CsrfPolicy' as const;
const NEVER: RuntimeFractionIR = { numerator: 0, denominator: 'HUNDRED' };

const usesCors = (l: ListenerIR): boolean =>
  l.virtualHosts.some((vh) => vh.cors || vh.routes.some((r) => r.cors && r.action.type !== 'directResponse'));

const usesCsrf = (l: ListenerIR): boolean =>
  l.virtualHosts.some(
    (vh) => vh.csrf || vh.routes.some((r) => r.csrf || (r.action.type === 'route' && r.action.clusters.some((c) => c.csrf))),
  );

function fraction(f: RuntimeFractionIR): { default_value: { numerator: number; denominator: RuntimeFractionIR['denominator'] } } {
  const out = { default_value: { numerator: f.numerator, denominator: f.denominator } };
  return f.runtimeKey ? Object.assign(out, { runtime_key: f.runtimeKey }) : out;
}

function corsPolicy(ir: CorsIR): TypedConfig {
  if (ir.disabled) return typed(CORS_POLICY, { filter_enabled: fraction(NEVER) });
  const origins: StringMatcher[] = [
    ...(ir.allowOrigin ?? []).map((exact) => ({ exact })),
    ...(ir.allowOriginRegex ?? []).map((regex) => ({ safe_regex: { regex } })),
  ];
  return typed(CORS_POLICY, {
    ...(origins.length ? { allow_origin_string_match: origins } : {}),
    ...(ir.allowMethods ? { allow_methods: ir.allowMethods.join(',') } : {}),
    ...(ir.allowHeaders ? { allow_headers: ir.allowHeaders.join(',') } : {}),
    ...(ir.exposeHeaders ? { expose_headers: ir.exposeHeaders.join(',') } : {}),
    ...(ir.maxAge !== undefined ? { max_age: String(ir.maxAge) } : {}),
    ...(ir.allowCredentials ? { allow_credentials: true } : {}),
  });
}

function csrfPolicy(ir: CsrfIR): TypedConfig {
  const origins: StringMatcher[] = ir.additionalOrigins.map((m) => {
    const pattern: StringMatcher =
      m.regex !== undefined
        ? { safe_regex: { regex: m.regex } }
        : m.prefix !== undefined
          ? { prefix: m.prefix }
          : m.suffix !== undefined
            ? { suffix: m.suffix }
            : { exact: m.exact ?? '' };
    return m.ignoreCase ? { ...pattern, ignore_case: true } : pattern;
  });
  return typed(CSRF_POLICY, {
    filter_enabled: fraction(ir.filterEnabled),
    ...(ir.shadowEnabled ? { shadow_enabled: fraction(ir.shadowEnabled) } : {}),
    ...(origins.length ? { additional_origins: origins } : {}),
  });
}

/** Gloo's answer for a direct response: the route's policy as fixed headers (exact origins only). */
function directResponseHeaders(ir: CorsIR, route: EnvoyRoute): void {
  if (ir.disabled) return;
  const headers: [string, string | undefined][] = [
    ['access-control-allow-origin', ir.allowOrigin?.join(',')],
    ['access-control-allow-methods', ir.allowMethods?.join(',')],
    ['access-control-allow-headers', ir.allowHeaders?.join(',')],
    ['access-control-expose-headers', ir.exposeHeaders?.join(',')],
    ['access-control-max-age', ir.maxAge === undefined ? undefined : String(ir.maxAge)],
    ['access-control-allow-credentials', ir.allowCredentials ? 'true' : undefined],
  ];
  for (const [key, value] of headers) {
    if (value) (route.response_headers_to_add ??= []).push({ header: { key, value }, append_action: 'OVERWRITE_IF_EXISTS_OR_ADD' });
  }
}

function patchRoute(ir: RouteIR, route: EnvoyRoute): void {
  if (ir.cors) {
    if (ir.action.type === 'directResponse') directResponseHeaders(ir.cors, route);
    else setPerFilterConfig(route, CORS_FILTER, corsPolicy(ir.cors));
  }
  if (ir.csrf) setPerFilterConfig(route, CSRF_FILTER, csrfPolicy(ir.csrf));
  if (ir.action.type !== 'route') return;
  const weighted = route.route?.weighted_clusters?.clusters;
  ir.action.clusters.forEach((c, i) => {
    if (!c.csrf) return;
    // one cluster is rendered as route.cluster: its destination's policy is then the route's
    const target = weighted?.[i] ?? (ir.action.type === 'route' && ir.action.clusters.length === 1 ? route : undefined);
    if (target) setPerFilterConfig(target, CSRF_FILTER, csrfPolicy(c.csrf));
  });
}

export const corsRender: RenderPlugin = {
  httpFilters(_proxy, listener) {
    const filters: StagedHttpFilter[] = [];
    if (usesCors(listener)) {
      filters.push({
        position: after(FilterStage.Fault),
        filter: { name: CORS_FILTER, typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.cors.v3.Cors', {}) },
      });
    }
    if (usesCsrf(listener) || listener.csrf) {
      // on the HCM it checks nothing (or the Gateway's policy); each virtual host, route or destination with a
      // policy of its own replaces that
      const policy = listener.csrf ?? { filterEnabled: NEVER, additionalOrigins: [] };
      filters.push({ position: before(FilterStage.Early), filter: { name: CSRF_FILTER, typed_config: csrfPolicy(policy) } });
    }
    return filters;
  },
  // patchVirtualHost reads only the virtual host's own IR
  proxyContext: () => null,
  patchVirtualHost(ir, vhost) {
    if (ir.cors) setPerFilterConfig(vhost, CORS_FILTER, corsPolicy(ir.cors));
    if (ir.csrf) setPerFilterConfig(vhost, CSRF_FILTER, csrfPolicy(ir.csrf));
  },
  patchRoute,
};
