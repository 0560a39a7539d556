// Access-token authentication: Envoy's ext_authz filter asks Legate's extauth service. The filter is on
// the HCM of every proxy that protects anything; each virtual host and route says which AuthConfig
// applies (context_extensions.config_id) or that auth is off there (disabled).
import { AuthContextKeys } from '../../../../common/contract.js';
import { typed, type HttpFilter, type TypedConfig } from '../../../../envoy/typed.js';
import { extensionCluster, setPerFilterConfig, type ServiceAddress } from '../../envoy-json.js';
import { FilterStage, during, type RenderPlugin } from '../../feature.js';
import type { AuthBindingIR, ProxyIR, RouteIR } from '../../ir.js';

export const EXT_AUTHZ_FILTER = 'envoy.filters.http.ext_authz';
export const EXTAUTH_CLUSTER = 'legate-extauth';
const PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute' as const;

const protecting = new WeakMap<ProxyIR, boolean>();

/** The auth bindings of a route's weighted destinations. */
function destinationAuths(route: RouteIR): AuthBindingIR[] {
  return route.action.type === 'route' ? route.action.clusters.flatMap((c) => (c.auth ? [c.auth] : [])) : [];
}

/** Whether any virtual host or route of the proxy is protected; memoised, as it is asked once per virtual host. */
function protectsAnything(proxy: ProxyIR): boolean {
  let protects = protecting.get(proxy);
  if (protects === undefined) {
    const checks = (auth: AuthBindingIR | undefined): boolean => auth !== undefined && 'configId' in auth;
    protects = proxy.listeners.some((l) =>
      l.virtualHosts.some((vh) => vh.auth || vh.routes.some((r) => checks(r.auth) || destinationAuths(r).some(checks))),
    );
    protecting.set(proxy, protects);
  }
  return protects;
}

function perFilterConfig(auth: AuthBindingIR): TypedConfig {
  if ('disabled' in auth) return typed(PER_ROUTE, { disabled: true });
  return typed(PER_ROUTE, {
    check_settings: {
      context_extensions: {
        [AuthContextKeys.configId]: auth.configId,
        [AuthContextKeys.sourceType]: auth.sourceType,
        [AuthContextKeys.sourceName]: auth.sourceName,
      },
    },
  });
}

/** ext_authz wrapped in a matcher that skips it when `skip.header` carries exactly `skip.value`. */
function skippable(filter: HttpFilter, skip: { header: string; value: string }): HttpFilter {
  const input = typed('type.googleapis.com/envoy.type.matcher.v3.HttpRequestHeaderMatchInput', { header_name: skip.header });
  const skipAction = typed('type.googleapis.com/envoy.extensions.filters.common.matcher.action.v3.SkipFilter', {});
  return {
    // the wrapper keeps the filter's name, so per-route ExtAuthzPerRoute configs still apply
    name: EXT_AUTHZ_FILTER,
    typed_config: typed('type.googleapis.com/envoy.extensions.common.matching.v3.ExtensionWithMatcher', {
      extension_config: filter,
      xds_matcher: {
        matcher_tree: {
          input: { name: 'legate-token-verified', typed_config: input },
          exact_match_map: { map: { [skip.value]: { action: { name: 'skip-ext-authz', typed_config: skipAction } } } },
        },
      },
    }),
  };
}

/** The headers the AuthConfigs bound on the proxy read besides `authorization` (API keys), sorted. */
function extraHeaders(proxy: ProxyIR): string[] {
  const names = new Set<string>();
  const add = (auth: AuthBindingIR | undefined): void => {
    if (auth && 'configId' in auth) for (const h of auth.headers ?? []) names.add(h);
  };
  for (const l of proxy.listeners)
    for (const vh of l.virtualHosts) {
      add(vh.auth);
      for (const r of vh.routes) {
        add(r.auth);
        for (const a of destinationAuths(r)) add(a);
      }
    }
  return [...names].sort();
}

/** `skip`: the wasm edge cache's verified header (docs/wasm.md); requests carrying it skip the check. */
export function extauthRender(service: ServiceAddress, skip?: { header: string; value: string }): RenderPlugin {
  return {
    httpFilters(proxy) {
      if (!protectsAnything(proxy)) return [];
      const filter: HttpFilter = {
        name: EXT_AUTHZ_FILTER,
        typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', {
          transport_api_version: 'V3',
          // longer than the service's own introspection timeout, so it can answer (deny) itself
          grpc_service: { envoy_grpc: { cluster_name: EXTAUTH_CLUSTER }, timeout: { seconds: 3 } },
          failure_mode_allow: false,
          status_on_error: { code: 'Forbidden' },
          // the service reads only the bearer token (and API key headers): sending those instead of
          // all headers halves what Envoy encodes and the service decodes per check
          allowed_headers: { patterns: [{ exact: 'authorization' }, ...extraHeaders(proxy).map((h) => ({ exact: h }))] },
        }),
      };
      return [{ position: during(FilterStage.AuthN), filter: skip ? skippable(filter, skip) : filter }];
    },
    proxyContext: protectsAnything,
    patchVirtualHost(ir, vhost, proxy) {
      if (!protectsAnything(proxy)) return;
      // a virtual host without an AuthConfig turns the filter off; its routes may still turn it on
      setPerFilterConfig(vhost, EXT_AUTHZ_FILTER, perFilterConfig(ir.auth ?? { disabled: true }));
    },
    patchRoute(ir, route) {
      const clusters = ir.action.type === 'route' ? ir.action.clusters : [];
      const weighted = route.route?.weighted_clusters?.clusters;
      // one destination left is rendered as a plain cluster: its binding, the more specific, is the route's
      const only = weighted ? undefined : clusters.length === 1 ? clusters[0]?.auth : undefined;
      const auth = only ?? ir.auth;
      if (auth) setPerFilterConfig(route, EXT_AUTHZ_FILTER, perFilterConfig(auth));
      // a weighted cluster's config is the most specific when it is picked (routing keeps the IR's order)
      if (weighted)
        clusters.forEach((c, i) => {
          const w = weighted[i];
          if (c.auth && w) setPerFilterConfig(w, EXT_AUTHZ_FILTER, perFilterConfig(c.auth));
        });
    },
    extraClusters(proxy) {
      return protectsAnything(proxy) ? [extensionCluster(EXTAUTH_CLUSTER, service)] : [];
    },
  };
}
