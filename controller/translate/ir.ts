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
  /** `connect`: Gloo's connectMatcher, CONNECT requests only (they have no path) */
  path: { prefix: string } | { exact: string } | { regex: string } | { connect: true };
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
  /** the destination's own CSRF policy (options.csrf), over the route's */
  csrf?: CsrfIR;
  /** the destination's subset: endpoint metadata (`envoy.lb`) the endpoints must have */
  subset?: Record<string, string>;
  /** the destination's options.bufferPerRoute */
  buffer?: BufferIR;
  /** the destination's headerManipulation, applied when it is picked */
  headers?: HeaderManipulationIR;
  /** the destination's extauth, more specific than the route's */
  auth?: AuthBindingIR;
  /** destinationSpec.aws: the AWS Lambda function this destination invokes (features/functions) */
  awsLambda?: AwsLambdaIR;
  /** why Envoy has no such cluster (a missing or rejected destination): requests for it answer as
   * Settings gloo.invalidConfigPolicy says (ListenerIR.invalidRouteResponse), or Envoy's 503 */
  invalid?: string;
}

/** A header to add: a literal value (Envoy's %…% operators apply to it), or a key of a Secret (taken literally). */
export type HeaderAddIR = { key: string; append: boolean } & ({ value: string } | { secretValue: string; fromSecretRef: string });

/** headerManipulation of a virtual host, route or weighted destination. */
export interface HeaderManipulationIR {
  requestHeadersToAdd?: HeaderAddIR[];
  requestHeadersToRemove?: string[];
  responseHeadersToAdd?: HeaderAddIR[];
  responseHeadersToRemove?: string[];
}

/** How a route rewrites the Host header on the way upstream (Envoy's host_rewrite_specifier). */
export type HostRewriteIR =
  { literal: string } | { auto: true } | { header: string } | { pathRegex: { regex: string; substitution: string } };

export type RouteActionIR =
  /** clusters empty when clusterHeader names the cluster per request */
  | { type: 'route'; clusters: WeightedClusterIR[]; clusterHeader?: string }
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
      regexRewrite?: RegexRewriteIR;
    }
  | {
      type: 'graphql';
      api: SourceRef;
      /** request headers the API reads (sent as ext_proc attributes on the single-message path); unset:
       * the API needs headers that cannot be asked for that way, so every request sends all headers */
      requestHeaders?: string[];
    };

/** ext_authz binding: check with an AuthConfig (`<ns>.<name>`) or a user's own server, or explicitly no auth. */
export type AuthBindingIR =
  | {
      configId: string;
      /** the AuthConfig's content version (AuthConfigConfig.version); unset when it is missing or rejected */
      configVersion?: string;
      /** the AuthConfig may allow a request without a bearer token (API keys, booleanExpr): no bearer pre-check */
      bearerOptional?: true;
      /** Envoy's edge cache keys its allows on this credential (credential-check): a session cookie, or Authorization */
      edgeCredential?: { cookie: string; checkPaths: string[] } | { authorization: true };
      /** request headers its steps read besides `authorization` (API key headers), which ext_authz must send */
      headers?: string[];
      /** its steps read every request header (ext_authz must send them all) */
      allHeaders?: true;
      /** filter metadata namespaces its steps read (ext_authz metadata_context_namespaces), e.g. the JWT filter's */
      metadataNamespaces?: string[];
      sourceType: 'virtual_host' | 'route' | 'weighted_destination';
      sourceName: string;
    }
  /** a user's own ext_authz server of Settings namedExtauth (customAuth; '' = Settings extauth's), told these context extensions */
  | { customAuth: string; contextExtensions?: Record<string, string> }
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
    }
  | {
      metadata: {
        descriptorKey: string;
        metadataKey: MetadataKeyIR;
        defaultValue?: string;
        source: 'DYNAMIC' | 'ROUTE_ENTRY';
        skipIfAbsent?: boolean;
      };
    }
  | { dynamicMetadata: { descriptorKey: string; metadataKey: MetadataKeyIR; defaultValue?: string } }
  | { maskedRemoteAddress: { v4PrefixMaskLen?: number; v6PrefixMaskLen?: number } }
  | {
      queryParameterValueMatch: {
        descriptorKey?: string;
        descriptorValue: string;
        expectMatch: boolean;
        queryParameters: {
          name: string;
          match: {
            exact?: string;
            prefix?: string;
            suffix?: string;
            contains?: string;
            regex?: string;
            present?: boolean;
            ignoreCase?: boolean;
          };
        }[];
      };
    };

/** Envoy's MetadataKey: a filter namespace and the struct keys down to the value. */
export interface MetadataKeyIR {
  key: string;
  path: string[];
}

/** One rate_limits entry. `stage`: early runs before ext_authz, regular after it; unset: as Settings
 * ratelimitServer.rateLimitBeforeAuth says. `domain: custom`: raw actions, counted against the Settings'
 * descriptors (Gloo's domain); unset: Legate's domain, whose descriptors start with Legate's own keys. */
export interface RateLimitEntryIR {
  actions: RateLimitActionIR[];
  stage?: 'early' | 'regular';
  domain?: 'custom';
  /** Envoy's RateLimit.Override: the limit sent with the descriptor, read from dynamic metadata */
  limitOverride?: MetadataKeyIR;
}

/** Rate limits bound on a virtual host or route (options.rateLimitConfigs, ratelimit, ratelimitBasic, localRatelimit, staged). */
export interface RateLimitIR {
  /** Envoy rate_limits entries (each a list of actions) asked of the rate-limit service */
  rateLimits: RateLimitEntryIR[];
  /** route only: the virtual host's entries apply too (Envoy's default: only when the route has none) */
  includeVhRateLimits?: true;
  /** Envoy's local_ratelimit token bucket, per Envoy */
  local?: { maxTokens: number; tokensPerFill: number; fillInterval: DurationIR };
}

/** options.cors: Envoy's CORS filter. A route's fields win over its virtual host's, field by field (Envoy's merge). */
export interface CorsIR {
  /** exact origins */
  allowOrigin?: string[];
  /** RE2 patterns, matched against the whole origin */
  allowOriginRegex?: string[];
  allowMethods?: string[];
  allowHeaders?: string[];
  exposeHeaders?: string[];
  /** Access-Control-Max-Age, in seconds */
  maxAge?: number;
  allowCredentials?: true;
  /** route only (disableForRoute): CORS is off on this route */
  disabled?: true;
}

/** A share of requests (Envoy's RuntimeFractionalPercent): numerator / denominator, or the runtime key's value. */
export interface RuntimeFractionIR {
  numerator: number;
  denominator: 'HUNDRED' | 'TEN_THOUSAND' | 'MILLION';
  runtimeKey?: string;
}

/** options.csrf: Envoy's CSRF filter (the most specific policy applies: destination, route, virtual host). */
export interface CsrfIR {
  /** requests checked and refused (403) when their origin is not the host's */
  filterEnabled: RuntimeFractionIR;
  /** requests checked and only counted (stats), while filterEnabled does not refuse them */
  shadowEnabled?: RuntimeFractionIR;
  /** origins accepted besides the request's own host */
  additionalOrigins: (StringMatchIR & { prefix?: string; suffix?: string })[];
}

/** Envoy's RegexMatchAndSubstitute: the pattern (RE2, checked) and its substitution (`\1` for group 1). */
export interface RegexRewriteIR {
  pattern: string;
  substitution: string;
}

/** A retry policy (Gloo's RetryPolicy, with its defaults applied) on a route or virtual host. */
export interface RetryPolicyIR {
  /** Envoy retry conditions, comma-separated; empty: only requests with x-envoy-retry-on are retried */
  retryOn: string;
  numRetries: number;
  perTryTimeout?: DurationIR;
  backOff?: { baseInterval: DurationIR; maxInterval?: DurationIR };
  previousPriorities?: { updateFrequency: number };
}

/** options.faults: Envoy's fault filter on this route (percentages 0-100). */
export interface FaultsIR {
  abort?: { percentage: number; httpStatus: number };
  delay?: { percentage: number; fixedDelay: DurationIR };
}

/** options.tracing: the route's span name (decorator) and sampling percentages (0-100). */
export interface RouteTracingIR {
  operation?: string;
  propagate?: boolean;
  clientSampling: number;
  randomSampling: number;
  overallSampling: number;
}

/** options.bufferPerRoute (Envoy's buffer filter): off, or buffer whole requests up to a size (413 beyond). */
export type BufferIR = { disabled: true } | { maxRequestBytes: number };

/** One entry of options.upgrades: a protocol upgrade turned on or off for the route (unset: Envoy's default, on). */
export interface UpgradeIR {
  type: 'websocket' | 'CONNECT';
  enabled?: boolean;
}

/** A gRPC service Envoy's ext_proc filter streams to (Settings extProc.grpcService, or an override of it). */
export interface ExtProcServiceIR {
  cluster: string;
  authority?: string;
  timeout?: DurationIR;
  initialMetadata?: { key: string; value: string }[];
  retryPolicy?: { numRetries?: number; backOff?: { baseInterval: DurationIR; maxInterval?: DurationIR } };
}

type ExtProcHeaderMode = 'DEFAULT' | 'SEND' | 'SKIP';
type ExtProcBodyMode = 'NONE' | 'STREAMED' | 'BUFFERED' | 'BUFFERED_PARTIAL';
/** Envoy's ext_proc ProcessingMode: what of a request and its response the server is sent. */
export interface ExtProcModeIR {
  requestHeaderMode?: ExtProcHeaderMode;
  responseHeaderMode?: ExtProcHeaderMode;
  requestBodyMode?: ExtProcBodyMode;
  responseBodyMode?: ExtProcBodyMode;
  requestTrailerMode?: ExtProcHeaderMode;
  responseTrailerMode?: ExtProcHeaderMode;
}

/** options.extProc: the Settings' ext_proc filter off here, or parts of it overridden. */
export type ExtProcIR =
  | { disabled: true }
  | {
      processingMode?: ExtProcModeIR;
      grpcService?: ExtProcServiceIR;
      metadataNamespaces?: { untyped?: string[]; typed?: string[] };
    };

export interface RouteIR {
  name: string;
  /** unset: inherit the virtual host's */
  auth?: AuthBindingIR;
  matchers: MatcherIR[];
  action: RouteActionIR;
  prefixRewrite?: string;
  /** the serviceSpec.grpcJsonTranscoder of the Upstream the route goes to (features/upstreams) */
  grpcJsonTranscoder?: GrpcJsonTranscoderIR;
  timeout: DurationIR;
  retries?: RetryPolicyIR;
  rateLimit?: RateLimitIR;
  cors?: CorsIR;
  csrf?: CsrfIR;
  /** what a hashing load balancer (ringHash, maglev) hashes, in order */
  hashPolicies?: HashPolicyIR[];
  regexRewrite?: RegexRewriteIR;
  idleTimeout?: DurationIR;
  maxStreamDuration?: { maxStreamDuration?: DurationIR; grpcTimeoutHeaderMax?: DurationIR; grpcTimeoutHeaderOffset?: DurationIR };
  /** options.shadowing: a copy of a share of the requests goes to this cluster (answers dropped) */
  mirror?: { cluster: string; percentage: number };
  faults?: FaultsIR;
  tracing?: RouteTracingIR;
  upgrades?: UpgradeIR[];
  buffer?: BufferIR;
  /** options.envoyMetadata: the Envoy route's filter_metadata, by filter name */
  envoyMetadata?: Record<string, Record<string, unknown>>;
  /** routeAction.dynamicForwardProxy (the action routes to the dynamic forward proxy cluster): the host
   * to resolve instead of the request's Host, or the header that names it */
  dynamicForwardProxy?: { hostRewrite?: string; hostRewriteHeader?: string };
  headers?: HeaderManipulationIR;
  hostRewrite?: HostRewriteIR;
  /** JWT stages this route turns off (jwt.disable, jwtStaged.<stage>.disable) */
  jwtDisabled?: JwtStage[];
  /** replaces the virtual host's RBAC */
  rbac?: RbacIR;
  /** the original Host goes to x-forwarded-host when it is rewritten */
  appendXForwardedHost?: true;
  /** options.extProc (the Settings' ext_proc filter) */
  extProc?: ExtProcIR;
  /** destinationSpec.aws of routeAction.single: the AWS Lambda function the route invokes (features/functions) */
  awsLambda?: AwsLambdaIR;
  /** destinationSpec.azure: the Azure function the route calls (features/functions) */
  azureFunction?: AzureFunctionIR;
}

/** An AWS Lambda invocation by Envoy's aws_lambda filter: the function's ARN, signed (SigV4) for `host`. */
export interface AwsLambdaIR {
  /** arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>] */
  arn: string;
  invocationMode: 'SYNCHRONOUS' | 'ASYNCHRONOUS';
  /** false: the request goes as Envoy's JSON event and the answer is unwrapped from {statusCode, headers, body} */
  payloadPassthrough: boolean;
  host: string;
  /** unset: Envoy's default AWS credentials chain (environment, credentials file, web identity, ECS/EC2 metadata) */
  credentials?: AwsCredentialsIR;
}

export interface AwsCredentialsIR {
  accessKeyId: string;
  secretAccessKey: string;
  sessionToken?: string;
}

/** A call to an Azure function: the Function App's host, the function's path and its key (x-functions-key). */
export interface AzureFunctionIR {
  host: string;
  path: string;
  /** the function key, from the Upstream's Secret (named so, it is hidden where the Proxy is shown) */
  secretValue?: string;
}

/** The two JWT filters: before ext_authz and after it (Gloo's jwtStaged; its legacy `jwt` is afterExtAuth). */
export type JwtStage = 'beforeExtAuth' | 'afterExtAuth';

/** A JWT provider (Gloo's jwt Provider), verified by Envoy's jwt_authn filter. */
export interface JwtProviderIR {
  issuer?: string;
  audiences?: string[];
  /** a JWKS document (JSON): the local key as given, or a single JWK or a PEM public key made into one */
  localJwks?: string;
  /** fetched from `url` through the cluster of the referenced Upstream, kept for cacheDuration */
  remoteJwks?: { url: string; cluster: string; cacheDuration: DurationIR; asyncFetch?: { fastListener?: boolean } };
  /** unset: Envoy's default, `Authorization: Bearer <token>` or the `access_token` query parameter */
  tokenSource?: { headers: { name: string; prefix?: string }[]; queryParams: string[] };
  /** the token stays in the request sent upstream */
  keepToken: boolean;
  /** the claim replaces what the client sent in that header (Envoy has no append) */
  claimsToHeaders: { claim: string; header: string }[];
  clockSkewSeconds?: number;
  failedStatusInMetadata?: string;
}

/** One stage's JWT check on a virtual host: a token from any one provider passes, as the policy says. */
export interface JwtStageIR {
  providers: Record<string, JwtProviderIR>;
  validationPolicy: 'REQUIRE_VALID' | 'ALLOW_MISSING' | 'ALLOW_MISSING_OR_FAILED';
}

/** How an RBAC principal's claim is compared (Gloo's ClaimMatcher). */
export type ClaimMatchIR = { exact: string } | { bool: boolean } | { listContains: string };

/** A JWT principal: every claim matches in the payload verified by one of `providers`. */
export interface RbacPrincipalIR {
  providers: { stage: JwtStage; name: string }[];
  /** `path`: the claim's key, or its nested keys (nestedClaimDelimiter) */
  claims: { path: string[]; match: ClaimMatchIR }[];
}

/** options.rbac: allowed when a policy matches (any principal, and all of its permissions); else 403. */
export type RbacIR =
  { disabled: true } | { policies: Record<string, { principals: RbacPrincipalIR[]; pathPrefix?: string; methods?: string[] }> };

/** One element of a route's hash key (options.lbHash.hashPolicies). */
export interface HashPolicyIR {
  key: { header: string } | { cookie: { name: string; ttl?: DurationIR; path?: string } } | { sourceIp: true };
  terminal: boolean;
}

/** Envoy's TlsParameters.TlsProtocol (TLS_AUTO: Envoy's default). */
export type TlsVersionIR = 'TLS_AUTO' | 'TLSv1_0' | 'TLSv1_1' | 'TLSv1_2' | 'TLSv1_3';

export interface DownstreamTlsIR {
  /** unset with `sds` (the user's SDS server holds them) */
  certChain?: DataSourceIR;
  privateKey?: DataSourceIR;
  /** sslConfig.sds: the certificate and client CA come from the user's SDS server, by name */
  sds?: SdsSourceIR;
  /** served over SDS under this name (a Secret's `<namespace>.<name>`), so a new certificate in the same
   * Secret changes that SDS resource and not the listener; unset (sslFiles): inline in the listener */
  sdsName?: string;
  /** SNI names this certificate serves; empty = the listener's default certificate. */
  sniDomains: string[];
  /** sslFiles.ocspStaple (a file), or the Secret's tls.ocsp-staple (DER, base64): stapled to the certificate */
  ocspStaple?: DataSourceIR | { inlineBytes: string };
  /** client certificates are verified against this CA (the Secret's ca.crt, over SDS under `<sdsName>#ca`,
   * or sslFiles.rootCa) and required unless oneWayTls */
  clientCa?: DataSourceIR;
  requireClientCertificate?: boolean;
  /** a client certificate must have one of these SANs (any type) */
  verifySubjectAltName?: string[];
  /** sslConfig.parameters: Envoy's TLS versions, cipher suites, ECDH curves (unset: TLSv1_2 at least, Envoy's defaults) */
  params?: { minimum: TlsVersionIR; maximum?: TlsVersionIR; cipherSuites?: string[]; ecdhCurves?: string[] };
  /** offered in the handshake (unset: h2, http/1.1; empty: no ALPN) */
  alpnProtocols?: string[];
  ocspStaplePolicy?: 'LENIENT_STAPLING' | 'STRICT_STAPLING' | 'MUST_STAPLE';
  disableSessionResumption?: true;
  transportSocketConnectTimeout?: DurationIR;
}

/** Gloo's SslConfig.sds: Envoy asks the user's SDS server (through a cluster to targetUri) for these secrets. */
export interface SdsSourceIR {
  /** the cluster to the server (clusterName, else one named after targetUri) */
  cluster: string;
  target: { pipe: string } | { host: string; port: number };
  certificatesSecretName: string;
  /** client certificates are verified against this secret (required unless oneWayTls) */
  validationContextName?: string;
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
  cors?: CorsIR;
  csrf?: CsrfIR;
  /** used by the routes without a retry policy of their own */
  retries?: RetryPolicyIR;
  /** options.stats.virtualClusters: requests counted apart in Envoy's stats (vhost.<name>.vcluster.<vc>.*) */
  virtualClusters?: { name: string; pattern: string; method?: string }[];
  buffer?: BufferIR;
  /** x-envoy-attempt-count on upstream requests (includeRequestAttemptCount) */
  includeRequestAttemptCount?: true;
  /** x-envoy-attempt-count on downstream responses (includeAttemptCountInResponse) */
  includeAttemptCountInResponse?: true;
  headers?: HeaderManipulationIR;
  /** options.jwt / jwtStaged: the providers of each stage */
  jwt?: Partial<Record<JwtStage, JwtStageIR>>;
  rbac?: RbacIR;
  /** options.extProc (the Settings' ext_proc filter) */
  extProc?: ExtProcIR;
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
  /** the Gateway's useProxyProto, options and routeOptions (features/listener) */
  options?: ListenerOptionsIR;
  /** httpGateway.options: HTTP connection manager settings and listener-wide filters (features/hcm) */
  http?: HttpListenerIR;
  /** httpGateway.options.csrf: the CSRF policy of every request the listener serves (features/cors) */
  csrf?: CsrfIR;
  /** httpGateway.options.wasm: the user's proxy-wasm filters, in order (features/wasm) */
  wasm?: WasmFilterIR[];
  /** httpGateway.options.dynamicForwardProxy: the DNS cache of the dynamic forward proxy routes (features/dfp) */
  dynamicForwardProxy?: {
    dnsCache: {
      lookupFamily?: string;
      refreshRate?: DurationIR;
      hostTtl?: DurationIR;
      maxHosts?: number;
      failureRefresh?: { base: DurationIR; max?: DurationIR };
      maxPendingRequests?: number;
      queryTimeout?: DurationIR;
      preresolve: { address: string; port: number }[];
    };
    saveUpstreamAddress?: boolean;
  };
  /** httpGateway.options.extauth: this listener's ext_authz filter settings, in place of the defaults (features/extauth) */
  extauth?: ListenerExtauthIR;
  /** httpGateway.options.ratelimitServer: this listener's ratelimit filters, in place of Settings' (features/ratelimit) */
  ratelimitServer?: ListenerRatelimitIR;
  /** tcpGateway (or a hybridGateway's TCP matched gateway): tcp_proxy filter chains instead of the HCM (features/tcp) */
  tcp?: TcpListenerIR;
  /** one matched gateway of a hybridGateway (features/hybrid): the ListenerIRs that share a name are one Envoy listener */
  chain?: ChainMatchIR;
  /** httpGateway.options.httpConnectionManagerSettings.tracing: sampling, tags, provider (features/tracing) */
  tracing?: ListenerTracingIR;
}

/** Gloo's extauth Settings on one listener; each unset field keeps the default of Legate's ext_authz filter. */
export interface ListenerExtauthIR {
  /** the Upstream's cluster asked instead of Legate's extauth service; `missing`: it does not exist (checks fail, denied) */
  server?: { cluster: string; missing?: true };
  authority?: string;
  timeout?: DurationIR;
  failureModeAllow?: boolean;
  requestBody?: { maxRequestBytes: number; allowPartialMessage: boolean; packAsBytes: boolean };
  clearRouteCache?: boolean;
  /** an HTTP status (Envoy's StatusCode) */
  statusOnError?: number;
  statPrefix?: string;
  /** the header the server sets to the authenticated user's id; a client's own copy is removed before any filter */
  userIdHeader?: string;
  /** Gloo's httpService: the server is asked over HTTP (Envoy's http_service), not gRPC */
  http?: ExtauthHttpIR;
}

/** Gloo's extauth httpService, as Envoy's ext_authz http_service takes it. */
export interface ExtauthHttpIR {
  pathPrefix?: string;
  /** request headers sent to the server (exact names), and regexes of more */
  allowedHeaders?: string[];
  allowedHeadersRegex?: string[];
  headersToAdd?: Record<string, string>;
  /** the server's response headers set on the request forwarded upstream */
  allowedUpstreamHeaders?: string[];
  allowedUpstreamHeadersToAppend?: string[];
  /** the server's response headers sent to the client on a denial */
  allowedClientHeaders?: string[];
}

/** Gloo's ratelimit Settings on one listener; each unset field keeps the Settings' (or Legate's default). */
export interface ListenerRatelimitIR {
  /** the Upstream's cluster asked instead (ratelimitServerRef; a missing one keeps the Settings' server) */
  cluster?: string;
  timeoutMs?: number;
  denyOnFail?: boolean;
  xRateLimitHeaders?: boolean;
}

/** A user's proxy-wasm filter (Gloo's WasmFilter), its module pinned by sha256. */
export interface WasmFilterIR {
  /** the HTTP filter's name in the chain, `envoy.filters.http.wasm.<pluginName>` */
  name: string;
  /** Gloo's `name` (the plugin's, in Envoy's logs), by default `filter-<index>` */
  pluginName: string;
  rootId: string;
  /** a file Envoy reads (its sha256 checked at translation), or a URL it fetches through `cluster` and checks */
  code: { filename: string } | { uri: string; cluster: string; host: string; port: number; tls: boolean };
  sha256: string;
  /** the plugin configuration: a StringValue (a Struct as its JSON text) or a BytesValue (base64) */
  configuration?: { type: 'string'; value: string } | { type: 'bytes'; base64: string };
  /** where in the chain (Gloo's filterStage, in Legate's stages) */
  position: { stage: 'Fault' | 'Early' | 'AuthN' | 'AuthZ' | 'RateLimit' | 'Processing' | 'Route'; side: 'before' | 'during' | 'after' };
}

/** What selects a hybridGateway's matched gateway: its filter chains match these, besides their own SNI names. */
export interface ChainMatchIR {
  /** unique on the listener: its filter chains and route configuration are named after it */
  name: string;
  /** the MatchableHttpGateway / MatchableTcpGateway it comes from */
  source?: SourceRef;
  sourcePrefixRanges: { addressPrefix: string; prefixLen: number }[];
  /** a TCP matcher's sslConfig: the SNI names and certificate of its tcpHosts that have none of their own */
  serverNames?: string[];
  tls?: DownstreamTlsIR;
}

/** Where a tcpHost sends connections. */
export type TcpActionIR =
  | { cluster: string; subset?: Record<string, string> }
  | { weighted: { cluster: string; weight: number; subset?: Record<string, string> }[] }
  /** the TLS SNI name is the cluster (Envoy's sni_cluster filter) */
  | { sniCluster: true };

export interface TcpHostIR {
  name: string;
  /** SNI names this host serves (filter_chain_match.server_names); empty: any connection */
  serverNames: string[];
  /** TLS terminated with this certificate; unset: the bytes (TLS or not) pass through */
  tls?: DownstreamTlsIR;
  action: TcpActionIR;
}

/** tcpGateway: its hosts and TcpListenerOptions. */
export interface TcpListenerIR {
  hosts: TcpHostIR[];
  maxConnectAttempts?: number;
  idleTimeout?: DurationIR;
  tunneling?: { hostname: string; headersToAdd: { key: string; value: string; append: boolean }[] };
  accessLogFlushInterval?: DurationIR;
  connectionLimit?: { maxActiveConnections: number; delayBeforeClose?: DurationIR };
  localRatelimit?: { maxTokens: number; tokensPerFill: number; fillInterval: DurationIR };
}

/** Envoy's ComparisonFilter, Gloo's op and RuntimeUInt32 value. */
export interface AccessLogComparisonIR {
  op: 'EQ' | 'GE' | 'LE';
  value: number;
  runtimeKey: string;
}

/** Gloo's (and Envoy's) access log filters, one per object. */
export type AccessLogFilterIR =
  | { statusCode: AccessLogComparisonIR }
  | { duration: AccessLogComparisonIR }
  | { notHealthCheck: true }
  | { traceable: true }
  | { runtime: { runtimeKey: string; numerator: number; denominator: 'HUNDRED' | 'TEN_THOUSAND' | 'MILLION'; independent: boolean } }
  | { and: AccessLogFilterIR[] }
  | { or: AccessLogFilterIR[] }
  | {
      header: {
        name: string;
        match?: StringMatchIR & { prefix?: string; suffix?: string; contains?: string; present?: boolean };
        range?: { start: number; end: number };
        invert: boolean;
      };
    }
  | { responseFlags: string[] }
  | { grpcStatus: { statuses: string[]; exclude: boolean } };

/** An access log: to a file (Envoy's format string or JSON dictionary), or to a gRPC access log service cluster. */
export interface AccessLogIR {
  file?: { path: string; text?: string; json?: Record<string, unknown> };
  grpc?: {
    logName: string;
    cluster: string;
    requestHeaders?: string[];
    responseHeaders?: string[];
    responseTrailers?: string[];
    filterStateObjects?: string[];
  };
  filter?: AccessLogFilterIR;
}

export interface ListenerOptionsIR {
  /** the proxy_protocol listener filter (useProxyProto or options.proxyProtocol) */
  proxyProtocol?: { rules: { tlvType: number; metadataNamespace?: string; key?: string }[]; allowWithout: boolean };
  /** HTTP access logs (the HCM's) */
  accessLogs?: AccessLogIR[];
  /** the listener's own access logs (connections, e.g. refused ones) */
  listenerAccessLogs?: AccessLogIR[];
  perConnectionBufferLimitBytes?: number;
  socketOptions?: { description?: string; level: number; name: number; intValue?: number; bufValue?: string; state: string }[];
  exactBalance?: true;
  routeConfig?: { maxDirectResponseBodySizeBytes?: number; mostSpecificHeaderMutationsWins?: boolean };
}

/** Gloo's HttpConnectionManagerSettings, durations parsed and enums by name; unset fields keep Envoy's default. */
export interface HcmSettingsIR {
  skipXffAppend?: boolean;
  via?: string;
  xffNumTrustedHops?: number;
  useRemoteAddress?: boolean;
  generateRequestId?: boolean;
  proxy100Continue?: boolean;
  streamIdleTimeout?: DurationIR;
  idleTimeout?: DurationIR;
  maxRequestHeadersKb?: number;
  requestTimeout?: DurationIR;
  requestHeadersTimeout?: DurationIR;
  drainTimeout?: DurationIR;
  delayedCloseTimeout?: DurationIR;
  serverName?: string;
  stripAnyHostPort?: boolean;
  acceptHttp10?: boolean;
  defaultHostForHttp10?: string;
  allowChunkedLength?: boolean;
  enableTrailers?: boolean;
  headerKeyFormat?: 'properCase' | 'preserveCase';
  forwardClientCertDetails?: string;
  setCurrentClientCertDetails?: { subject?: boolean; cert?: boolean; chain?: boolean; dns?: boolean; uri?: boolean };
  preserveExternalRequestId?: boolean;
  /** websocket and CONNECT on the whole listener (unset: WebSocket on, as Gloo) */
  upgrades?: UpgradeIR[];
  maxConnectionDuration?: DurationIR;
  maxStreamDuration?: DurationIR;
  maxHeadersCount?: number;
  headersWithUnderscoresAction?: string;
  maxRequestsPerConnection?: number;
  serverHeaderTransformation?: string;
  pathWithEscapedSlashesAction?: string;
  codecType?: string;
  mergeSlashes?: boolean;
  /** unset: true, as Gloo */
  normalizePath?: boolean;
  uuidRequestIdConfig?: { packTraceReason?: boolean; useRequestIdForTraceSampling?: boolean };
  http2?: {
    maxConcurrentStreams?: number;
    initialStreamWindowSize?: number;
    initialConnectionWindowSize?: number;
    overrideStreamErrorOnInvalidHttpMessage?: boolean;
  };
  internalAddresses?: { unixSockets?: boolean; cidrRanges: { addressPrefix: string; prefixLen: number }[] };
  appendXForwardedPort?: boolean;
  /** earlyHeaderManipulation: request headers set and removed before routing (a Secret's values taken literally) */
  earlyHeaders?: { add: { key: string; value: string; append: boolean }[]; remove: string[] };
}

/** Where a listener's spans go: an Envoy tracer and the cluster of its collector. */
export type TracingProviderIR =
  | { type: 'opentelemetry'; cluster: string; serviceName: string; authority?: string }
  | {
      type: 'zipkin';
      cluster: string;
      endpoint: string;
      version: 'HTTP_JSON' | 'HTTP_PROTO';
      traceId128bit?: boolean;
      sharedSpanContext?: boolean;
    }
  | { type: 'datadog'; cluster: string; serviceName: string };

/** A listener's tracing: sampling decisions, span tags, and the provider that exports the spans. */
export interface ListenerTracingIR {
  requestHeadersForTags: string[];
  verbose?: boolean;
  clientSampling?: number;
  randomSampling?: number;
  overallSampling?: number;
  environmentTags: { tag: string; name: string; defaultValue?: string }[];
  literalTags: { tag: string; value: string }[];
  /** metadataForTags: request or endpoint (host) metadata at namespace/path */
  metadataTags?: { tag: string; kind: 'request' | 'host'; namespace: string; path: string[]; defaultValue?: string }[];
  spawnUpstreamSpan?: boolean;
  /** none: Envoy decides and tags, and exports nothing */
  provider?: TracingProviderIR;
}

/** Envoy's gRPC-JSON transcoder (Gloo's fields; the descriptor set as a file or base64). */
export interface GrpcJsonTranscoderIR {
  descriptor: { filename: string } | { base64: string };
  services: string[];
  printOptions?: {
    addWhitespace?: boolean;
    alwaysPrintPrimitiveFields?: boolean;
    alwaysPrintEnumsAsInts?: boolean;
    preserveProtoFieldNames?: boolean;
  };
  matchIncomingRequestRoute?: boolean;
  ignoredQueryParameters: string[];
  autoMapping?: boolean;
  ignoreUnknownQueryParameters?: boolean;
  convertGrpcStatus?: boolean;
}

/** httpGateway.options of a Gateway. */
export interface HttpListenerIR {
  hcm?: HcmSettingsIR;
  /** Envoy's compressor filter with gzip (Gloo's v2 Gzip fields, enums by name) */
  gzip?: {
    memoryLevel?: number;
    contentLength?: number;
    compressionLevel?: string;
    compressionStrategy?: string;
    contentType: string[];
    disableOnEtagHeader?: boolean;
    removeAcceptEncodingHeader?: boolean;
    windowBits?: number;
  };
  /** Envoy's health_check filter answers 200 on this path itself */
  healthCheckPath?: string;
  /** grpcWeb.disable: no grpc_web filter on this listener */
  grpcWebDisabled?: boolean;
  /** a buffer filter for every request */
  bufferMaxRequestBytes?: number;
  /** Envoy's gRPC-JSON transcoder (Gloo's fields; the descriptor set as a file or base64) */
  grpcJsonTranscoder?: GrpcJsonTranscoderIR;
  localRatelimit?: {
    maxTokens: number;
    tokensPerFill: number;
    fillInterval: DurationIR;
    perConnection: boolean;
    rateLimitHeaders: boolean;
  };
  /** Envoy's connection_limit network filter in front of the HCM */
  connectionLimit?: { maxActiveConnections: number; delayBeforeClose?: DurationIR };
  /** Envoy's local_ratelimit network filter in front of the HCM (connections, before TLS) */
  networkLocalRatelimit?: { maxTokens: number; tokensPerFill: number; fillInterval: DurationIR };
  /** Envoy's stateful_session filter: the upstream host a session sticks to, in a cookie or a header */
  statefulSession?: { cookie?: { name: string; ttl?: DurationIR; path?: string }; header?: string; strict: boolean };
  /** the router filter's settings */
  router?: { suppressEnvoyHeaders?: boolean; dynamicStats?: boolean };
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
  /** sslConfig.parameters */
  minimumVersion?: TlsVersionIR;
  maximumVersion?: TlsVersionIR;
  cipherSuites?: string[];
  ecdhCurves?: string[];
  allowRenegotiation?: boolean;
}

export interface EndpointIR {
  /** an IP or DNS name; with `pipe`, a Unix domain socket path */
  address: string;
  port: number;
  /** a pipe upstream's endpoint: `address` is a Unix socket path (port 0) */
  pipe?: true;
  weight?: number;
  /** Envoy filter metadata by filter name (static host metadata; `envoy.lb` keys define subsets) */
  metadata?: Record<string, Record<string, unknown>>;
}

/** loadBalancerConfig: the cluster's load balancer (unset: Envoy's round robin with its defaults). */
export interface LoadBalancerIR {
  policy?: 'roundRobin' | 'leastRequest' | 'random' | 'ringHash' | 'maglev';
  /** leastRequest */
  choiceCount?: number;
  /** roundRobin, leastRequest */
  slowStart?: { window?: DurationIR; aggression?: number; minWeightPercent?: number };
  /** ringHash */
  minimumRingSize?: number;
  maximumRingSize?: number;
  healthyPanicThreshold?: number;
  updateMergeWindow?: DurationIR;
  localityWeighted?: true;
  useHostnameForHashing?: true;
  closeConnectionsOnHostSetChange?: true;
}

/** subsetSpec: how endpoints are grouped by their `envoy.lb` metadata, for routes that pick a subset. */
export interface SubsetsIR {
  selectors: { keys: string[]; singleHostPerSubset?: true }[];
  fallbackPolicy: 'ANY_ENDPOINT' | 'NO_FALLBACK' | 'DEFAULT_SUBSET';
  defaultSubset?: Record<string, string>;
}

export interface UpstreamIR {
  cluster: string;
  /**
   * httpProxyHostname: the endpoints are an HTTP CONNECT proxy; the cluster connects through an internal listener whose
   * tcp_proxy tunnels to `hostname` over a cluster of the endpoints (`tls`: httpConnectSslConfig, inside the tunnel)
   */
  tunnel?: { hostname: string; headers: { key: string; value: string }[]; tls?: UpstreamTlsIR };
  /** serviceSpec.grpcJsonTranscoder: the routes to this upstream transcode JSON to its gRPC services */
  grpcJsonTranscoder?: GrpcJsonTranscoderIR;
  source: SourceRef;
  /** EDS for IP endpoints (pushed by the controller), STRICT_DNS when a host is a DNS name. */
  discovery: 'EDS' | 'STRICT_DNS';
  endpoints: EndpointIR[];
  tls?: UpstreamTlsIR;
  http2: boolean;
  connectTimeout: DurationIR;
  loadBalancer?: LoadBalancerIR;
  subsets?: SubsetsIR;
  /** connectionConfig beyond connectTimeout, the HTTP/1 and HTTP/2 options, protocolSelection */
  connection?: UpstreamConnectionIR;
  /** failover: priorities 1, 2, … after the upstream's own endpoints (priority 0) */
  failover?: FailoverPriorityIR[];
  proxyProtocol?: 'V1' | 'V2';
  /** STRICT_DNS clusters only */
  dnsRefreshRate?: DurationIR;
  respectDnsTtl?: boolean;
  preconnect?: { perUpstreamRatio?: number; predictiveRatio?: number };
  /** healthChecks, outlierDetection, circuitBreakers (or Settings gloo.circuitBreakers), ignoreHealthOnHostRemoval */
  healthChecks?: HealthCheckIR[];
  outlierDetection?: OutlierDetectionIR;
  circuitBreakers?: CircuitBreakersIR;
  ignoreHealthOnHostRemoval?: boolean;
  /** an aws Upstream (features/functions): its functions, for the routes to them */
  awsLambda?: {
    region: string;
    accountId?: string;
    host: string;
    functions: { logicalName: string; name: string; qualifier?: string }[];
    credentials?: AwsCredentialsIR;
    /** destinationOverrides: the flags every route to it gets, whatever its destinationSpec says */
    overrides?: { logicalName?: string; async?: true; requestTransformation?: true; unwrap?: true; wrapAsApiGateway?: true };
  };
  /** an azure Upstream (features/functions): its functions and their keys */
  azure?: { host: string; functions: { name: string; authLevel: 'Anonymous' | 'Function' | 'Admin' }[]; keys: Record<string, string> };
  /**
   * A static upstream's health checks send each host's own address as Host (:authority), as Gloo's do; set when
   * no check names its own host or authority (a host's name for health checks overrides the checks' in Envoy).
   */
  healthCheckByAddress?: boolean;
}

export interface UpstreamConnectionIR {
  maxRequestsPerConnection?: number;
  tcpKeepalive?: { probes?: number; timeSeconds?: number; intervalSeconds?: number };
  perConnectionBufferLimitBytes?: number;
  idleTimeout?: DurationIR;
  maxHeadersCount?: number;
  maxStreamDuration?: DurationIR;
  headersWithUnderscoresAction?: 'ALLOW' | 'REJECT_REQUEST' | 'DROP_HEADER';
  http1?: { enableTrailers?: boolean; headerKeyFormat?: 'properCase' | 'preserveCase'; overrideStreamErrorOnInvalidHttpMessage?: boolean };
  http2?: {
    initialStreamWindowSize?: number;
    initialConnectionWindowSize?: number;
    maxConcurrentStreams?: number;
    overrideStreamErrorOnInvalidHttpMessage?: boolean;
  };
  /** protocolSelection USE_DOWNSTREAM_PROTOCOL: HTTP/1.1 or HTTP/2 as the client spoke */
  useDownstreamProtocol?: boolean;
}

export interface FailoverPriorityIR {
  localities: {
    locality?: { region?: string; zone?: string; subZone?: string };
    weight?: number;
    /** `tls`: the endpoint's own upstreamSslConfig, rendered as a transport socket match */
    endpoints: (EndpointIR & { healthCheck?: { port?: number; hostname?: string }; tls?: UpstreamTlsIR })[];
  }[];
}

/** One active health check of an upstream (Envoy's HealthCheck); durations parsed, one checker kind. */
export interface HealthCheckIR {
  timeout: DurationIR;
  interval: DurationIR;
  unhealthyThreshold: number;
  healthyThreshold: number;
  initialJitter?: DurationIR;
  intervalJitter?: DurationIR;
  intervalJitterPercent?: number;
  reuseConnection?: boolean;
  noTrafficInterval?: DurationIR;
  unhealthyInterval?: DurationIR;
  unhealthyEdgeInterval?: DurationIR;
  healthyEdgeInterval?: DurationIR;
  eventLogPath?: string;
  alwaysLogHealthCheckFailures?: boolean;
  http?: {
    path: string;
    host?: string;
    serviceName?: string;
    headersToAdd?: { key: string; value: string; append: boolean }[];
    headersToRemove?: string[];
    http2?: boolean;
    /** half-open [start, end) */
    expectedStatuses?: { start: number; end: number }[];
    method?: string;
  };
  /** hex payloads; none: connect only */
  tcp?: { send?: string; receive?: string[] };
  grpc?: { serviceName?: string; authority?: string };
}

/** Envoy's OutlierDetection fields Gloo has, by their camelCase names (durations parsed). */
export interface OutlierDetectionIR {
  durations: { interval?: DurationIR; baseEjectionTime?: DurationIR };
  /** consecutive5xx, enforcing*, successRate*, failurePercentage*, …: counts and percentages */
  values: Record<string, number>;
  splitExternalLocalOriginErrors?: boolean;
}

/** Envoy's circuit breaker thresholds at the default priority; `fromSettings` when Settings gloo.circuitBreakers set them. */
export interface CircuitBreakersIR {
  maxConnections?: number;
  maxPendingRequests?: number;
  maxRequests?: number;
  maxRetries?: number;
  fromSettings?: boolean;
}
