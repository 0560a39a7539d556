// Hot-path checks as proxy-wasm filters (AssemblyScript, extensions/wasm): bearer-check in front of
// ext_authz on routes that have an AuthConfig, graphql-check in front of ext_proc on GraphQL routes.
// Each filter is on the HCM disabled and enabled per virtual host or route with an empty
// FilterConfig (Envoy 1.40 refuses a FilterConfig without `config`).
//
// Edge cache (bearer-check `cacheEntries` > 0 and a secret): protected routes carry
// `<AuthConfig>@<version>` in route metadata; bearer-check marks requests whose token it (or, through
// proxy-wasm shared data, another worker) has seen accepted for that version with
// VERIFIED_HEADER: <secret>, and the extauth plugin wraps ext_authz in
// a matcher that skips it for exactly that header value. Virtual hosts drop the header before
// anything goes upstream. See docs/wasm.md "Edge cache".
import {
  typed,
  type HttpConnectionManager,
  type HttpFilter,
  type TypedConfig,
  type envoy_config_core_v3_AsyncDataSource as AsyncDataSource,
} from '../../../../envoy/typed.js';
import { fixedAddressDiscovery, setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, after, before, during, type RenderPlugin, type StagedHttpFilter } from '../../feature.js';
import type { AuthBindingIR, RouteIR, VirtualHostIR, WasmFilterIR } from '../../ir.js';
import type { Cluster } from '../../../../envoy/typed.js';
import { perProxy, someRoute, someVirtualHost } from '../../proxy-facts.js';

export const BEARER_CHECK = 'legate.bearer_check';
export const GRAPHQL_CHECK = 'legate.graphql_check';
/** bearer-check's second filter: the edge cache of session-cookie and Basic-credential allows (same module, own VM). */
export const CREDENTIAL_CHECK = 'legate.credential_check';
export const CONTROLLER_HTTP_CLUSTER = 'legate-controller-http';
/** Set by bearer-check on requests whose token is in its edge cache; never from outside, never upstream. */
export const VERIFIED_HEADER = 'x-legate-token-verified';

/** Where Envoy gets the .wasm modules: files on its host, or the controller over HTTP with a sha256. */
export type WasmCodeSource =
  | { type: 'local'; files: Record<string, string> }
  | { type: 'remote'; host: string; port: number; modules: Record<string, { path: string; sha256: string }> };

export interface WasmOptions {
  code: WasmCodeSource;
  bearerCheck: {
    enabled: boolean;
    maxTokenBytes: number;
    /** edge cache slots (per Envoy worker, and as many in shared data); 0 turns the edge cache off */
    cacheEntries: number;
    /** the edge cache also in proxy-wasm shared data, seen by every worker (default true) */
    sharedCache?: boolean;
    /** the secret value of VERIFIED_HEADER; '' turns the edge cache off (startController then generates one) */
    verifiedValue: string;
  };
  graphqlCheck: { enabled: boolean; maxBodyBytes: number; allowGet: boolean };
  /** the SHA-256 (hex) of a user's module file, or why it cannot be read; unset: modules named by file are not checked */
  moduleSha256?: (file: string) => string | { error: string };
}

/** module name (file stem) per filter */
const MODULES: Record<string, string> = {
  [BEARER_CHECK]: 'bearer-check',
  [GRAPHQL_CHECK]: 'graphql-check',
  [CREDENTIAL_CHECK]: 'bearer-check',
};

// an Any without a type: Envoy 1.40 wants `config` set, and the filters read no per-route config
const NO_CONFIG = {} as TypedConfig;
const ENABLE = (): TypedConfig => typed('type.googleapis.com/envoy.config.route.v3.FilterConfig', { config: { ...NO_CONFIG } });
const DISABLE = (): TypedConfig => typed('type.googleapis.com/envoy.config.route.v3.FilterConfig', { disabled: true });

/** A binding whose requests bearer-check may answer: an AuthConfig that always needs a bearer token. */
function protects(auth: AuthBindingIR | undefined): boolean {
  return auth !== undefined && 'configId' in auth && !auth.bearerOptional;
}

/** A binding whose allows credential-check may reuse: a session cookie or Authorization AuthConfig with a version. */
function credentialCached(auth: AuthBindingIR | undefined): boolean {
  return auth !== undefined && 'configId' in auth && auth.edgeCredential !== undefined && auth.configVersion !== undefined;
}

/** credential-check is rendered: the edge cache is on and shared by the workers (a logout must reach every worker). */
function credentialOn(options: WasmOptions): boolean {
  return edgeCacheSkip(options) !== undefined && options.bearerCheck.sharedCache !== false;
}

/** The header and value that let a request skip ext_authz, when the edge cache is on. */
export function edgeCacheSkip(options: WasmOptions): { header: string; value: string } | undefined {
  const b = options.bearerCheck;
  if (!b.enabled || b.cacheEntries <= 0 || b.verifiedValue === '') return undefined;
  return { header: VERIFIED_HEADER, value: b.verifiedValue };
}

function bearerConfiguration(options: WasmOptions): object {
  const b = options.bearerCheck;
  const skip = edgeCacheSkip(options);
  if (!skip) return { maxTokenBytes: b.maxTokenBytes };
  return {
    maxTokenBytes: b.maxTokenBytes,
    cacheEntries: b.cacheEntries,
    // the filter's default is true: only a switched-off shared table is written out
    ...(b.sharedCache === false ? { sharedCache: false } : {}),
    verifiedHeader: skip.header,
    verifiedValue: skip.value,
  };
}

/** The auth bindings of a route's weighted destinations. */
function destinationAuths(route: RouteIR): AuthBindingIR[] {
  return route.action.type === 'route' ? route.action.clusters.flatMap((c) => (c.auth ? [c.auth] : [])) : [];
}

/** Whether any route of the proxy is protected (asked once per virtual host). */
const usesBearer = perProxy((proxy) =>
  someVirtualHost(proxy, (vh) => protects(vh.auth) || vh.routes.some((r) => protects(r.auth) || destinationAuths(r).some(protects))),
);

/** Whether any route of the proxy is protected by an AuthConfig credential-check caches. */
const usesCredential = perProxy((proxy) =>
  someVirtualHost(proxy, (vh) => credentialCached(vh.auth) || vh.routes.some((r) => credentialCached(r.auth))),
);

/** What a protected route tells either filter: bearer-check's route key, or credential-check's key and credential. */
const usesEdgeFilters = perProxy((proxy) => ({ bearer: usesBearer(proxy), credential: usesCredential(proxy) }));

const usesGraphql = perProxy((proxy) => someRoute(proxy, (r) => r.action.type === 'graphql'));

function codeFor(name: string, code: WasmCodeSource): AsyncDataSource {
  const module = MODULES[name] ?? name;
  if (code.type === 'local') return { local: { filename: code.files[module] ?? `${module}.wasm` } };
  const m = code.modules[module];
  return {
    remote: {
      http_uri: {
        uri: `http://${code.host}:${code.port}${m?.path ?? `/wasm/${module}.wasm`}`,
        cluster: CONTROLLER_HTTP_CLUSTER,
        timeout: { seconds: 10 },
      },
      sha256: m?.sha256 ?? '',
      retry_policy: { num_retries: 5 },
    },
  };
}

/** A filter of the HCM chain, disabled (routes enable it). Public: the wasm benchmark renders its filters with it. */
export function wasmFilter(name: string, configuration: object, code: WasmCodeSource): HttpFilter {
  return {
    name,
    disabled: true,
    typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm', {
      config: {
        name,
        root_id: name,
        configuration: typed('type.googleapis.com/google.protobuf.StringValue', { value: JSON.stringify(configuration) }),
        vm_config: { vm_id: name, runtime: 'envoy.wasm.runtime.v8', code: codeFor(name, code) },
        // a broken module must not open anything up
        fail_open: false,
      },
    }),
  };
}

/** A user's filter (httpGateway.options.wasm), on for every request of its listener; a broken module fails closed. */
function userFilter(f: WasmFilterIR): StagedHttpFilter {
  const code: AsyncDataSource =
    'filename' in f.code
      ? { local: { filename: f.code.filename } }
      : {
          remote: {
            http_uri: { uri: f.code.uri, cluster: f.code.cluster, timeout: { seconds: 10 } },
            sha256: f.sha256,
            retry_policy: { num_retries: 3 },
          },
        };
  const c = f.configuration;
  const configuration = !c
    ? undefined
    : c.type === 'string'
      ? typed('type.googleapis.com/google.protobuf.StringValue', { value: c.value })
      : typed('type.googleapis.com/google.protobuf.BytesValue', { value: c.base64 });
  const stage = FilterStage[f.position.stage];
  return {
    position: f.position.side === 'before' ? before(stage) : f.position.side === 'after' ? after(stage) : during(stage),
    filter: {
      name: f.name,
      typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.wasm.v3.Wasm', {
        config: {
          name: f.pluginName,
          root_id: f.rootId,
          ...(configuration ? { configuration } : {}),
          vm_config: { vm_id: f.pluginName, runtime: 'envoy.wasm.runtime.v8', code },
          fail_open: false,
        },
      }),
    },
  };
}

/** The clusters Envoy fetches the user's modules named by URL through, one per host and port. */
function moduleClusters(proxy: { listeners: readonly { wasm?: WasmFilterIR[] }[] }): Cluster[] {
  const out = new Map<string, Cluster>();
  for (const l of proxy.listeners)
    for (const f of l.wasm ?? []) {
      const c = f.code;
      if ('filename' in c || out.has(c.cluster)) continue;
      out.set(c.cluster, {
        name: c.cluster,
        ...fixedAddressDiscovery(c.host),
        connect_timeout: { seconds: 5 },
        load_assignment: {
          cluster_name: c.cluster,
          endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: c.host, port_value: c.port } } } }] }],
        },
        // no certificate check: the module's sha256 is what Envoy trusts
        ...(c.tls
          ? {
              transport_socket: {
                name: 'envoy.transport_sockets.tls',
                typed_config: typed('type.googleapis.com/envoy.extensions.transport_sockets.tls.v3.UpstreamTlsContext', { sni: c.host }),
              },
            }
          : {}),
      });
    }
  return [...out.values()];
}

export function wasmRender(options: WasmOptions): RenderPlugin {
  return {
    httpFilters(proxy, listener) {
      const filters: StagedHttpFilter[] = (listener.wasm ?? []).map(userFilter);
      if (options.bearerCheck.enabled && usesBearer(proxy)) {
        filters.push({ position: during(FilterStage.Early), filter: wasmFilter(BEARER_CHECK, bearerConfiguration(options), options.code) });
      }
      const skip = edgeCacheSkip(options);
      if (skip && credentialOn(options) && usesCredential(proxy)) {
        const configuration = { cacheEntries: options.bearerCheck.cacheEntries, verifiedHeader: skip.header, verifiedValue: skip.value };
        filters.push({ position: during(FilterStage.Early), filter: wasmFilter(CREDENTIAL_CHECK, configuration, options.code) });
      }
      if (options.graphqlCheck.enabled && usesGraphql(proxy)) {
        const { maxBodyBytes, allowGet } = options.graphqlCheck;
        filters.push({ position: during(FilterStage.Early), filter: wasmFilter(GRAPHQL_CHECK, { maxBodyBytes, allowGet }, options.code) });
      }
      return filters;
    },
    proxyContext: usesEdgeFilters,
    patchListener(_ir, _listener, filters) {
      // Only bearer-check may set the verified header. A client's copy is removed before any filter
      // runs (early header mutation), so it cannot skip ext_authz on routes where bearer-check is off
      // (API keys, booleanExpr) even with the secret value.
      if (!edgeCacheSkip(options)) return;
      for (const f of filters) {
        if (f.name !== 'envoy.filters.network.http_connection_manager' || !f.typed_config) continue;
        const hcm = f.typed_config as TypedConfig & HttpConnectionManager;
        (hcm.early_header_mutation_extensions ??= []).push({
          name: 'legate.strip_verified_header',
          typed_config: typed('type.googleapis.com/envoy.extensions.http.early_header_mutation.header_mutation.v3.HeaderMutation', {
            mutations: [{ remove: VERIFIED_HEADER }],
          }),
        });
      }
    },
    patchVirtualHost(ir: VirtualHostIR, vhost, proxy) {
      // the virtual host's AuthConfig covers its routes; a route that turns auth off turns this off too
      if (options.bearerCheck.enabled && protects(ir.auth)) setPerFilterConfig(vhost, BEARER_CHECK, ENABLE());
      if (credentialOn(options) && credentialCached(ir.auth)) setPerFilterConfig(vhost, CREDENTIAL_CHECK, ENABLE());
      if (edgeCacheSkip(options) && (usesBearer(proxy) || (credentialOn(options) && usesCredential(proxy)))) {
        (vhost.request_headers_to_remove ??= []).push(VERIFIED_HEADER);
      }
    },
    patchRoute(ir: RouteIR, route, vh) {
      const clusters = ir.action.type === 'route' ? ir.action.clusters : [];
      const weighted = route.route?.weighted_clusters?.clusters;
      // one destination left is rendered as a plain cluster: its binding, the more specific, is the route's
      const routeAuth = (weighted ? undefined : clusters.length === 1 ? clusters[0]?.auth : undefined) ?? ir.auth;
      if (options.bearerCheck.enabled && routeAuth) setPerFilterConfig(route, BEARER_CHECK, protects(routeAuth) ? ENABLE() : DISABLE());
      if (options.bearerCheck.enabled && weighted)
        clusters.forEach((c, i) => {
          const w = weighted[i];
          if (c.auth && w) setPerFilterConfig(w, BEARER_CHECK, protects(c.auth) ? ENABLE() : DISABLE());
        });
      const auth = ir.auth ?? vh.auth;
      // route metadata is the route's, whichever destination is picked: a token cached for the route's
      // AuthConfig must not skip a destination's own, so a route with destination auth caches nothing
      const destinationAuth = destinationAuths(ir).length > 0;
      if (edgeCacheSkip(options) && !destinationAuth && auth && 'configId' in auth && auth.configVersion !== undefined) {
        const byFilter = ((route.metadata ??= {}).filter_metadata ??= {});
        const authKey = `${auth.configId}@${auth.configVersion}`;
        const credential = auth.edgeCredential;
        if (credential === undefined) byFilter[BEARER_CHECK] = { auth_key: authKey };
        else if (credentialOn(options)) {
          // one string, so the filter reads one property: key, credential, always-checked paths (one line each)
          const kind = 'cookie' in credential ? `cookie:${credential.cookie}` : 'authorization';
          const paths = 'cookie' in credential ? credential.checkPaths.join(' ') : '';
          byFilter[CREDENTIAL_CHECK] = { edge: `${authKey}\n${kind}\n${paths}` };
        }
      }
      // on where its AuthConfig is cached by credential-check, off where a route's own AuthConfig is not
      // (off on the HCM: only a virtual host that turned it on needs turning off again)
      if (credentialOn(options) && routeAuth && (credentialCached(routeAuth) || credentialCached(vh.auth)))
        setPerFilterConfig(route, CREDENTIAL_CHECK, credentialCached(routeAuth) ? ENABLE() : DISABLE());
      if (options.graphqlCheck.enabled && ir.action.type === 'graphql') setPerFilterConfig(route, GRAPHQL_CHECK, ENABLE());
    },
    extraClusters(proxy) {
      const user = moduleClusters(proxy);
      const code = options.code;
      if (code.type !== 'remote') return user;
      const used = (options.bearerCheck.enabled && usesBearer(proxy)) || (options.graphqlCheck.enabled && usesGraphql(proxy));
      if (!used) return user;
      return [
        ...user,
        {
          name: CONTROLLER_HTTP_CLUSTER,
          ...fixedAddressDiscovery(code.host),
          connect_timeout: { seconds: 2 },
          load_assignment: {
            cluster_name: CONTROLLER_HTTP_CLUSTER,
            endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: code.host, port_value: code.port } } } }] }],
          },
        },
      ];
    },
  };
}

export const DEFAULT_WASM_OPTIONS: WasmOptions = {
  code: { type: 'local', files: { 'bearer-check': 'bearer-check.wasm', 'graphql-check': 'graphql-check.wasm' } },
  bearerCheck: { enabled: true, maxTokenBytes: 4096, cacheEntries: 4096, verifiedValue: '' },
  graphqlCheck: { enabled: true, maxBodyBytes: 1048576, allowGet: true },
};
