// Legate's intermediate representation: the `Proxy` resource (what one gateway proxy should serve) and
// the resolved upstreams. Stage 1 (resources -> IR) resolves every reference and rejects what is broken;
// stage 2 (IR -> xDS) only renders. Everything here is plain data, readable with `legatectl get proxies`.

/** Envoy's redirect response codes (Gloo's RedirectAction uses the same names). */
export type RedirectCode = 'MOVED_PERMANENTLY' | 'FOUND' | 'SEE_OTHER' | 'TEMPORARY_REDIRECT' | 'PERMANENT_REDIRECT';

export interface SourceRef {
  kind: string;
  namespace: string;
  name: string;
}

export interface DurationIR {
  seconds: number;
  nanos?: number;
}

export interface StringMatchIR {
  exact?: string;
  regex?: string;
  ignoreCase?: boolean;
}

export interface MatcherIR {
  path: { prefix: string } | { exact: string } | { regex: string };
  caseSensitive: boolean;
  headers: { name: string; match?: StringMatchIR; invert: boolean }[];
  queryParameters: { name: string; match?: StringMatchIR }[];
  methods: string[];
}

export interface WeightedClusterIR {
  cluster: string;
  weight: number;
  /** its index in routeAction.multi.destinations, where its options are (unset for single) */
  destination?: number;
  /** why Envoy has no such cluster (a missing or rejected destination): requests for it answer as
   * Settings gloo.invalidConfigPolicy says (ListenerIR.invalidRouteResponse), or Envoy's 503 */
  invalid?: string;
}

export type RouteActionIR =
  | { type: 'route'; clusters: WeightedClusterIR[] }
  | { type: 'directResponse'; status: number; body?: string }
  | {
      type: 'redirect';
      hostRedirect?: string;
      portRedirect?: number;
      pathRedirect?: string;
      prefixRewrite?: string;
      httpsRedirect?: boolean;
      stripQuery?: boolean;
      responseCode?: RedirectCode;
    }
  | {
      type: 'graphql';
      api: SourceRef;
      /** request headers the API reads (sent as ext_proc attributes on the single-message path); unset:
       * the API needs headers that cannot be asked for that way, so every request sends all headers */
      requestHeaders?: string[];
    };

/** ext_authz binding: check with an AuthConfig (`<ns>.<name>`), or explicitly no auth. */
export type AuthBindingIR =
  | {
      configId: string;
      /** the AuthConfig's content version (AuthConfigConfig.version); unset when it is missing or rejected */
      configVersion?: string;
      /** the AuthConfig may allow a request without a bearer token (API keys, booleanExpr): no bearer pre-check */
      bearerOptional?: true;
      /** request headers its steps read besides `authorization` (API key headers), which ext_authz must send */
      headers?: string[];
      sourceType: 'virtual_host' | 'route';
      sourceName: string;
    }
  | { disabled: true };

/** One Envoy rate_limits entry: the actions whose descriptor entries go to the rate-limit service. */
export type RateLimitActionIR =
  | { genericKey: { descriptorKey?: string; descriptorValue: string } }
  | { requestHeaders: { headerName: string; descriptorKey: string; skipIfAbsent?: boolean } }
  | { remoteAddress: Record<string, never> }
  | { sourceCluster: Record<string, never> }
  | { destinationCluster: Record<string, never> }
  | {
      headerValueMatch: {
        descriptorKey?: string;
        descriptorValue: string;
        expectMatch: boolean;
        headers: { name: string; match: StringMatchIR & { prefix?: string; suffix?: string; present?: boolean }; invert: boolean }[];
      };
    };

/** Rate limits bound on a virtual host or route (options.rateLimitConfigs, ratelimitBasic, localRatelimit). */
export interface RateLimitIR {
  /** Envoy rate_limits entries (each a list of actions) asked of the rate-limit service */
  rateLimits: { actions: RateLimitActionIR[] }[];
  /** Envoy's local_ratelimit token bucket, per Envoy */
  local?: { maxTokens: number; tokensPerFill: number; fillInterval: DurationIR };
}

export interface RouteIR {
  name: string;
  /** unset: inherit the virtual host's */
  auth?: AuthBindingIR;
  matchers: MatcherIR[];
  action: RouteActionIR;
  prefixRewrite?: string;
  timeout: DurationIR;
  retries?: { retryOn: string; numRetries: number; perTryTimeout?: DurationIR };
  rateLimit?: RateLimitIR;
}

export interface DownstreamTlsIR {
  certChain: DataSourceIR;
  privateKey: DataSourceIR;
  /** served over SDS under this name (a Secret's `<namespace>.<name>`), so a new certificate in the same
   * Secret changes that SDS resource and not the listener; unset (sslFiles): inline in the listener */
  sdsName?: string;
  /** SNI names this certificate serves; empty = the listener's default certificate. */
  sniDomains: string[];
}

export interface VirtualHostIR {
  name: string;
  domains: string[];
  routes: RouteIR[];
  source: SourceRef;
  /** Set on virtual services served by ssl gateways. */
  tls?: DownstreamTlsIR;
  auth?: AuthBindingIR;
  rateLimit?: RateLimitIR;
}

export interface ListenerIR {
  name: string;
  bindAddress: string;
  bindPort: number;
  ssl: boolean;
  virtualHosts: VirtualHostIR[];
  source: SourceRef;
  /** Settings gloo.invalidConfigPolicy.replaceInvalidRoutes, set when a route here has an invalid cluster */
  invalidRouteResponse?: { status: number; body: string };
}

export interface ProxyIR {
  name: string;
  namespace: string;
  listeners: ListenerIR[];
}

export type DataSourceIR = { inline: string } | { filename: string };

export interface UpstreamTlsIR {
  sni?: string;
  rootCa?: DataSourceIR;
  certChain?: DataSourceIR;
  privateKey?: DataSourceIR;
  verifySubjectAltName: string[];
  alpnProtocols: string[];
}

export interface EndpointIR {
  address: string;
  port: number;
  weight?: number;
}

export interface UpstreamIR {
  cluster: string;
  source: SourceRef;
  /** EDS for IP endpoints (pushed by the controller), STRICT_DNS when a host is a DNS name. */
  discovery: 'EDS' | 'STRICT_DNS';
  endpoints: EndpointIR[];
  tls?: UpstreamTlsIR;
  http2: boolean;
  connectTimeout: DurationIR;
}
