// Access-token authentication: Envoy's ext_authz filter asks Legate's extauth service. The filter is on
// the HCM of every proxy that protects anything; each virtual host and route says which AuthConfig
// applies (context_extensions.config_id) or that auth is off there (disabled).
// A user's own servers (Settings namedExtauth, options.extauth.customAuth; the one of Settings extauth for a
// customAuth without a name) get one ext_authz filter each,
// disabled on the HCM and enabled where a virtual host or route names it; at most one filter checks a request.
import { AuthContextKeys, USER_ID_HEADER_METADATA } from '../../../../common/contract.js';
import { typed, type HttpFilter, type TypedConfig, type envoy_type_v3_StatusCode as StatusCode } from '../../../../envoy/typed.js';
import type { ExtauthServerSettings } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import { extensionCluster, extensionSecrets, setPerFilterConfig, type ServiceAddress } from '../../envoy-json.js';
import { FilterStage, during, type RenderPlugin } from '../../feature.js';
import type { AuthBindingIR, DurationIR, ExtauthHttpIR, ProxyIR, RouteIR } from '../../ir.js';
import { perProxy } from '../../proxy-facts.js';

export const EXT_AUTHZ_FILTER = 'envoy.filters.http.ext_authz';
export const EXTAUTH_CLUSTER = 'legate-extauth';
const PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthzPerRoute' as const;
const FILTER_CONFIG = 'type.googleapis.com/envoy.config.route.v3.FilterConfig' as const;
const EXT_AUTHZ = 'type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz' as const;
const HEADER_MUTATION = 'type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation' as const;

/** A server of Settings namedExtauth as the pipeline resolved it: its Upstream's cluster, `missing` when there is none. */
export interface CustomAuthServer {
  settings: ExtauthServerSettings;
  cluster: string;
  missing?: true;
  /** settings.httpService, its regexes checked */
  http?: ExtauthHttpIR;
}

/**
 * The key of the server of Settings `extauth` (its extauthzServerRef, a user's own server) among the custom servers:
 * the one `customAuth` without a name asks. Settings namedExtauth names are never empty.
 */
export const SETTINGS_EXTAUTH_SERVER = '';

/** The ext_authz filter of the user's server `name` (Gloo names them all alike and picks one by metadata). */
export function customAuthFilterName(name: string): string {
  return name === SETTINGS_EXTAUTH_SERVER ? `${EXT_AUTHZ_FILTER}.settings` : `${EXT_AUTHZ_FILTER}.custom.${name}`;
}

/** Envoy's StatusCode names by number (the statuses Settings statusOnError may name). */
const STATUS_NAMES: Record<number, StatusCode> = {
  100: 'Continue',
  200: 'OK',
  201: 'Created',
  202: 'Accepted',
  203: 'NonAuthoritativeInformation',
  204: 'NoContent',
  205: 'ResetContent',
  206: 'PartialContent',
  207: 'MultiStatus',
  208: 'AlreadyReported',
  226: 'IMUsed',
  300: 'MultipleChoices',
  301: 'MovedPermanently',
  302: 'Found',
  303: 'SeeOther',
  304: 'NotModified',
  305: 'UseProxy',
  307: 'TemporaryRedirect',
  308: 'PermanentRedirect',
  400: 'BadRequest',
  401: 'Unauthorized',
  402: 'PaymentRequired',
  403: 'Forbidden',
  404: 'NotFound',
  405: 'MethodNotAllowed',
  406: 'NotAcceptable',
  407: 'ProxyAuthenticationRequired',
  408: 'RequestTimeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'LengthRequired',
  412: 'PreconditionFailed',
  413: 'PayloadTooLarge',
  414: 'URITooLong',
  415: 'UnsupportedMediaType',
  416: 'RangeNotSatisfiable',
  417: 'ExpectationFailed',
  421: 'MisdirectedRequest',
  422: 'UnprocessableEntity',
  423: 'Locked',
  424: 'FailedDependency',
  426: 'UpgradeRequired',
  428: 'PreconditionRequired',
  429: 'TooManyRequests',
  431: 'RequestHeaderFieldsTooLarge',
  500: 'InternalServerError',
  501: 'NotImplemented',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'GatewayTimeout',
  505: 'HTTPVersionNotSupported',
  506: 'VariantAlsoNegotiates',
  507: 'InsufficientStorage',
  508: 'LoopDetected',
  510: 'NotExtended',
  511: 'NetworkAuthenticationRequired',
};

/** The auth bindings of a route's weighted destinations. */
function destinationAuths(route: RouteIR): AuthBindingIR[] {
  return route.action.type === 'route' ? route.action.clusters.flatMap((c) => (c.auth ? [c.auth] : [])) : [];
}

/** Every auth binding of the proxy: virtual hosts', routes' and weighted destinations'. */
function allAuthBindings(proxy: ProxyIR): AuthBindingIR[] {
  const out: AuthBindingIR[] = [];
  for (const l of proxy.listeners)
    for (const vh of l.virtualHosts) {
      if (vh.auth) out.push(vh.auth);
      for (const r of vh.routes) {
        if (r.auth) out.push(r.auth);
        out.push(...destinationAuths(r));
      }
    }
  return out;
}

/** Whether any virtual host or route of the proxy is protected by an AuthConfig (asked once per virtual host). */
const protectsAnything = perProxy((proxy) => allAuthBindings(proxy).some((auth) => 'configId' in auth));

function perFilterConfig(auth: AuthBindingIR): TypedConfig {
  // a user's own server checks there instead (customAuth)
  if (!('configId' in auth)) return typed(PER_ROUTE, { disabled: true });
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

/** The uri Envoy requires beside the cluster of an http_service; only the cluster is used (as Gloo renders it). */
const HTTP_SERVER_URI = 'http://not-used.example.com/';

const exactMatchers = (names: readonly string[]): object[] => names.map((h) => ({ exact: h, ignore_case: true }));

/**
 * How the filter reaches its server: gRPC, or over HTTP (Gloo's httpService, as its extauth plugin renders it:
 * the path prefix, the request headers sent and added, the response headers kept for the upstream and the client).
 */
function serverOf(
  cluster: string,
  authority: string | undefined,
  timeout: DurationIR | { nanos: number },
  http: ExtauthHttpIR | undefined,
  userIdHeader?: string,
): object {
  if (!http) {
    const metadata = userIdHeader ? { initial_metadata: [{ key: USER_ID_HEADER_METADATA, value: userIdHeader }] } : {};
    return { grpc_service: { envoy_grpc: { cluster_name: cluster, ...(authority ? { authority } : {}) }, timeout, ...metadata } };
  }
  const sent = [
    ...exactMatchers(http.allowedHeaders ?? []),
    ...(http.allowedHeadersRegex ?? []).map((regex) => ({ safe_regex: { regex } })),
  ];
  const list = (names: readonly string[] | undefined): object | undefined =>
    names?.length ? { patterns: exactMatchers(names) } : undefined;
  const response = {
    ...(list(http.allowedUpstreamHeaders) ? { allowed_upstream_headers: list(http.allowedUpstreamHeaders) } : {}),
    ...(list(http.allowedUpstreamHeadersToAppend) ? { allowed_upstream_headers_to_append: list(http.allowedUpstreamHeadersToAppend) } : {}),
    ...(list(http.allowedClientHeaders) ? { allowed_client_headers: list(http.allowedClientHeaders) } : {}),
  };
  const added = Object.entries(http.headersToAdd ?? {}).sort(([a], [b]) => a.localeCompare(b));
  return {
    http_service: {
      server_uri: { uri: HTTP_SERVER_URI, cluster, timeout },
      ...(http.pathPrefix ? { path_prefix: http.pathPrefix } : {}),
      ...(added.length ? { authorization_request: { headers_to_add: added.map(([key, value]) => ({ key, value })) } } : {}),
      ...(Object.keys(response).length ? { authorization_response: response } : {}),
    },
    // Envoy always sends Host, Method, Path and Content-Length (and Authorization) to an HTTP server besides these
    ...(sent.length ? { allowed_headers: { patterns: sent } } : {}),
  };
}

/** The ext_authz filter for a user's server, as Gloo's generateEnvoyConfigForFilter renders it (gRPC or HTTP). */
function customAuthFilter(name: string, server: CustomAuthServer): HttpFilter {
  const s = server.settings;
  const body = s.requestBody;
  const status = s.statusOnError ? STATUS_NAMES[s.statusOnError] : undefined;
  const timeout = s.requestTimeout !== undefined ? parseDuration(s.requestTimeout) : { nanos: 200_000_000 };
  return {
    name: customAuthFilterName(name),
    disabled: true,
    typed_config: typed(EXT_AUTHZ, {
      transport_api_version: 'V3',
      ...serverOf(server.cluster, s.grpcService?.authority, timeout, server.http),
      // a server whose Upstream is missing cannot answer: its routes are denied, whatever failureModeAllow says
      failure_mode_allow: server.missing ? false : (s.failureModeAllow ?? false),
      ...(body
        ? {
            with_request_body: {
              max_request_bytes: body.maxRequestBytes || 4096,
              allow_partial_message: body.allowPartialMessage ?? false,
              pack_as_bytes: body.packAsBytes ?? false,
            },
          }
        : {}),
      ...(s.clearRouteCache ? { clear_route_cache: true } : {}),
      ...(status ? { status_on_error: { code: status } } : {}),
      ...(s.statPrefix ? { stat_prefix: s.statPrefix } : {}),
    }),
  };
}

/** The cluster (never rendered) a filter asks whose server Settings no longer has. */
const NO_SERVER = 'legate-custom-auth-unknown';

/** The user's servers the proxy's bindings name, sorted (asked once per virtual host and route). */
const customAuthsUsed = perProxy((proxy) => {
  const names = new Set<string>();
  for (const auth of allAuthBindings(proxy)) if ('customAuth' in auth) names.add(auth.customAuth);
  return [...names].sort();
});

/** Per-route config that turns a user's server's filter (off on the HCM) on, with the binding's context extensions. */
function customFilterConfig(auth: Extract<AuthBindingIR, { customAuth: string }>): TypedConfig {
  const ext = auth.contextExtensions ? { context_extensions: { ...auth.contextExtensions } } : {};
  const check = typed(PER_ROUTE, { check_settings: ext });
  return typed(FILTER_CONFIG, { config: check });
}

/**
 * The ext_authz configs of a route or weighted cluster with binding `auth`, inside `outer` (the binding it overrides):
 * exactly one filter checks, the one `auth` names; a filter `outer` turned on is turned off again.
 */
function bindAuth(
  target: { typed_per_filter_config?: Record<string, TypedConfig> },
  auth: AuthBindingIR,
  outer: AuthBindingIR | undefined,
): void {
  if (!('customAuth' in auth)) setPerFilterConfig(target, EXT_AUTHZ_FILTER, perFilterConfig(auth));
  else {
    // Legate's own filter is off by default wherever it is not bound (the virtual host turns it off)
    if (outer && 'configId' in outer) setPerFilterConfig(target, EXT_AUTHZ_FILTER, perFilterConfig(auth));
    setPerFilterConfig(target, customAuthFilterName(auth.customAuth), customFilterConfig(auth));
  }
  if (outer && 'customAuth' in outer && !('customAuth' in auth && auth.customAuth === outer.customAuth))
    setPerFilterConfig(target, customAuthFilterName(outer.customAuth), typed(FILTER_CONFIG, { disabled: true }));
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

/** The headers the AuthConfigs bound on the proxy read besides `authorization` (API keys), sorted; '*' = all. */
function extraHeaders(proxy: ProxyIR): string[] | '*' {
  const names = new Set<string>();
  for (const auth of allAuthBindings(proxy)) {
    if (!('configId' in auth)) continue;
    if (auth.allHeaders) return '*';
    for (const h of auth.headers ?? []) names.add(h);
  }
  names.delete('authorization');
  return [...names].sort();
}

/** ext_authz metadata_context_namespaces: the filter metadata the bound configs read (Gloo's `jwt: {}` step), sorted. */
function metadataNamespaces(proxy: ProxyIR): object {
  const names = new Set<string>();
  for (const auth of allAuthBindings(proxy)) if ('configId' in auth) for (const n of auth.metadataNamespaces ?? []) names.add(n);
  return names.size ? { metadata_context_namespaces: [...names].sort() } : {};
}

/** ext_authz allowed_headers: `authorization` and the headers the bound configs read; none (every header) for '*'. */
function allowedHeaders(proxy: ProxyIR): object {
  const extra = extraHeaders(proxy);
  if (extra === '*') return {};
  return { allowed_headers: { patterns: [{ exact: 'authorization' }, ...extra.map((h) => ({ exact: h }))] } };
}

/** `skip`: the wasm edge cache's verified header (docs/wasm.md); requests carrying it skip the check. */
export function extauthRender(
  service: ServiceAddress,
  skip: { header: string; value: string } | undefined,
  servers: Readonly<Record<string, CustomAuthServer>>,
): RenderPlugin {
  // the user id headers of the user's own servers (Settings namedExtauth): removed from every client request too
  const namedUserIdHeaders = Object.values(servers).flatMap((s) =>
    s.settings.userIdHeader ? [s.settings.userIdHeader.toLowerCase()] : [],
  );
  return {
    httpFilters(proxy, listener) {
      const custom = customAuthsUsed(proxy).map((n) => ({
        position: during(FilterStage.AuthN),
        // a virtual host served from before its server left the Settings: its filter asks nothing there and denies
        filter: customAuthFilter(n, servers[n] ?? { settings: { extauthzServerRef: { name: n } }, cluster: NO_SERVER, missing: true }),
      }));
      if (!protectsAnything(proxy)) return custom;
      // httpGateway.options.extauth: this listener's filter with the Gateway's settings
      const o = listener.extauth ?? {};
      // Legate's own service sets the user id header: the header's name travels with each check (gRPC metadata)
      const userId = o.userIdHeader && !o.server ? o.userIdHeader : undefined;
      const body = o.requestBody;
      const status = o.statusOnError ? STATUS_NAMES[o.statusOnError] : undefined;
      const filter: HttpFilter = {
        name: EXT_AUTHZ_FILTER,
        typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.ext_authz.v3.ExtAuthz', {
          transport_api_version: 'V3',
          // the timeout: longer than the service's own introspection timeout, so it can answer (deny) itself
          ...serverOf(
            o.server?.cluster ?? EXTAUTH_CLUSTER,
            o.authority,
            o.timeout ?? { seconds: 3 },
            o.server ? o.http : undefined,
            userId,
          ),
          // a server that does not exist cannot answer: denied, whatever failureModeAllow says
          failure_mode_allow: o.server?.missing ? false : (o.failureModeAllow ?? false),
          status_on_error: { code: status ?? 'Forbidden' },
          ...(body
            ? {
                with_request_body: {
                  max_request_bytes: body.maxRequestBytes,
                  allow_partial_message: body.allowPartialMessage,
                  pack_as_bytes: body.packAsBytes,
                },
              }
            : {}),
          ...(o.clearRouteCache ? { clear_route_cache: true } : {}),
          ...(o.statPrefix ? { stat_prefix: o.statPrefix } : {}),
          // Legate's service reads only the bearer token (and API key headers): sending those instead of all
          // headers halves what Envoy encodes and the service decodes per check; another server gets them all
          ...(o.server ? {} : allowedHeaders(proxy)),
          ...metadataNamespaces(proxy),
          // Legate's service: decisions are counted on the filter (http.<prefix>.ext_authz.*) and by the service;
          // charging them to each route's upstream cluster too costs Envoy CPU on every check
          ...(o.server ? {} : { charge_cluster_response_stats: false }),
        }),
      };
      // off where no virtual host or route config turns it on: a listener update (the filter added or removed)
      // and the route update that goes with it reach Envoy one after the other, and connections opened before
      // keep the listener's old filters; a virtual host without auth must pass in either order
      const off: HttpFilter = { ...(skip ? skippable(filter, skip) : filter), disabled: true };
      return [{ position: during(FilterStage.AuthN), filter: off }, ...custom];
    },
    proxyContext: protectsAnything,
    patchListener(ir, _listener, filters) {
      // Gloo's sanitize filter: the client's own user id header is removed before any filter, so only the server sets it
      const own = ir.extauth?.userIdHeader;
      const headers = [...new Set([...(own ? [own] : []), ...namedUserIdHeaders])].sort();
      if (!headers.length) return;
      for (const f of filters) {
        if (f.name !== 'envoy.filters.network.http_connection_manager' || !f.typed_config) continue;
        const hcm = f.typed_config as TypedConfig & { early_header_mutation_extensions?: object[] };
        (hcm.early_header_mutation_extensions ??= []).push({
          name: 'legate.strip_user_id_header',
          typed_config: typed(HEADER_MUTATION, { mutations: headers.map((remove) => ({ remove })) }),
        });
      }
    },
    patchVirtualHost(ir, vhost, proxy) {
      // a virtual host without an AuthConfig turns the filter off; its routes may still turn it on
      if (protectsAnything(proxy)) setPerFilterConfig(vhost, EXT_AUTHZ_FILTER, perFilterConfig(ir.auth ?? { disabled: true }));
      if (ir.auth && 'customAuth' in ir.auth)
        setPerFilterConfig(vhost, customAuthFilterName(ir.auth.customAuth), customFilterConfig(ir.auth));
    },
    patchRoute(ir, route, vh) {
      const clusters = ir.action.type === 'route' ? ir.action.clusters : [];
      const weighted = route.route?.weighted_clusters?.clusters;
      // one destination left is rendered as a plain cluster: its binding, the more specific, is the route's
      const only = weighted ? undefined : clusters.length === 1 ? clusters[0]?.auth : undefined;
      const auth = only ?? ir.auth;
      if (auth) bindAuth(route, auth, vh.auth);
      // a weighted cluster's config is the most specific when it is picked (routing keeps the IR's order)
      if (weighted)
        clusters.forEach((c, i) => {
          const w = weighted[i];
          if (c.auth && w) bindAuth(w, c.auth, ir.auth ?? vh.auth);
        });
    },
    extraClusters(proxy) {
      return protectsAnything(proxy) ? [extensionCluster(EXTAUTH_CLUSTER, service)] : [];
    },
    secrets(proxy) {
      return protectsAnything(proxy) ? extensionSecrets(service) : [];
    },
  };
}
