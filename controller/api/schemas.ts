// Runtime schemas for each resource kind's `spec` (zod, strict: unknown fields are errors), and the
// TypeScript types inferred from them. Field names and shapes follow Gloo Edge so its manifests apply
// unchanged; see docs/resources.md for what each field does in Legate.
import { z } from 'zod';

import { corsHttpListenerOptions } from '../translate/features/cors/schema.js';
import { ExtProcSettingsSchema } from '../translate/features/extproc/schema.js';
import { listenerGatewayFields } from '../translate/features/listener/schema.js';
import { OTHER_UPSTREAM_TYPES, UPSTREAM_OPTIONS, serviceSpecField } from '../translate/features/upstreams/schema.js';
import {
  CircuitBreakerConfigSchema,
  resilienceStaticHostOptions,
  resilienceUpstreamOptions,
} from '../translate/features/resilience/schema.js';
import { HttpConnectionManagerSettingsSchema, hcmHttpListenerOptions } from '../translate/features/hcm/schema.js';
import { hybridSchemas } from '../translate/features/hybrid/schema.js';
import { AwsDestinationSpecSchema, DestinationSchema } from '../translate/features/routing/schema.js';
import { functionUpstreamTypes } from '../translate/features/functions/schema.js';
import { tcpGatewaySchema } from '../translate/features/tcp/schema.js';
import { SslConfigFields } from '../translate/features/tls/schema.js';
import { tracingHcmSettings } from '../translate/features/tracing/schema.js';
import { wasmHttpListenerOptions } from '../translate/features/wasm/schema.js';
import { dfpHttpListenerOptions } from '../translate/features/dfp/schema.js';
import { ObservabilityOptionsSchema } from './observability.js';
import { Duration, Name, ResourceRefSchema, SslParametersSchema, notSupported, protoEnum } from './primitives.js';
import {
  ApiKeyAuthSchema,
  BasicAuthSchema,
  HmacAuthSchema,
  LdapSchema,
  OpaAuthSchema,
  OpaServerAuthSchema,
  PassThroughAuthSchema,
} from './auth-steps.js';

export { formatIssues } from './issues.js';

export { DURATION_PATTERN, ResourceRefSchema, type ResourceRef } from './primitives.js';

// ---- Rate limits (RateLimitConfig, and the options in features/ratelimit/schema.ts) ----

/** A limit: Gloo's (and Envoy's ratelimit service's) `{requestsPerUnit, unit}`; units are checked in translation. */
export const RateLimitValueSchema = z.strictObject({
  requestsPerUnit: z.number().int().min(0).optional(),
  unit: z.string().optional(),
  /** Envoy's reference service: the descriptor matches but is never limited */
  unlimited: z.boolean().optional(),
});
export type RateLimitValue = z.infer<typeof RateLimitValueSchema>;

// ---- Gateway ----

/** A label selector expression (Gloo's Selector.Expression; the operator is checked where it is used). */
const SelectorExpressionSchema = z.strictObject({
  key: z.string(),
  operator: z.union([z.string(), z.number().int()]).optional(),
  values: z.array(z.string()).optional(),
});
export type SelectorExpression = z.infer<typeof SelectorExpressionSchema>;

/** Gloo's selectors.proto Selector (MatchableHttpGateway / MatchableTcpGateway selection). */
const LabelSelectorSchema = z.strictObject({
  namespaces: z.array(z.string()).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  expressions: z.array(SelectorExpressionSchema).optional(),
});
export type LabelSelector = z.infer<typeof LabelSelectorSchema>;

/** Gloo's HttpConnectionManagerSettings: the hcm feature's fields and the tracing feature's `tracing`. */
const HcmSettingsWithTracingSchema = HttpConnectionManagerSettingsSchema.extend(tracingHcmSettings);

const HttpGatewaySchema = z.strictObject({
  virtualServices: z.array(ResourceRefSchema).optional(),
  virtualServiceSelector: z.record(z.string(), z.string()).optional(),
  virtualServiceExpressions: z.strictObject({ expressions: z.array(SelectorExpressionSchema).optional() }).optional(),
  virtualServiceNamespaces: z.array(z.string()).optional(),
  options: z
    .strictObject({
      ...hcmHttpListenerOptions,
      httpConnectionManagerSettings: HcmSettingsWithTracingSchema.optional(),
      ...corsHttpListenerOptions,
      ...wasmHttpListenerOptions,
      ...dfpHttpListenerOptions,
      // lazy: defined with the Settings' below; this listener's ext_authz and ratelimit filters take them instead
      extauth: z.lazy(() => ListenerExtauthSchema).optional(),
      ratelimitServer: z.lazy(() => RatelimitServerSchema).optional(),
    })
    .optional(),
});
export type HttpGateway = z.infer<typeof HttpGatewaySchema>;

/** A tcpHost's or a matcher's sslConfig: a certificate terminates TLS; without one the connection passes through. */
const PassthroughSslConfigSchema = SslConfigFields.refine(
  (s) => [s.secretRef, s.sslFiles, s.sds].filter((x) => x !== undefined).length <= 1,
  {
    message: 'set at most one of secretRef, sslFiles (neither: TLS passes through)',
  },
);
export type PassthroughSslConfig = z.infer<typeof PassthroughSslConfigSchema>;

// function destinations (aws, azure, rest, grpc) call functions over HTTP: a tcpHost forwards bytes. Refused whole
// (the typed shape is kept for the tcp feature, which never sees one)
const TcpDestinationSchema = DestinationSchema.safeExtend({
  destinationSpec: notSupported(
    'function routing is HTTP; tcp_proxy forwards bytes',
  ) as unknown as typeof DestinationSchema.shape.destinationSpec,
});
const TcpGatewaySchema = tcpGatewaySchema(TcpDestinationSchema, PassthroughSslConfigSchema);
export type TcpGateway = z.infer<typeof TcpGatewaySchema>;

export const { HybridGatewaySchema, MatchableHttpGatewaySpecSchema, MatchableTcpGatewaySpecSchema } = hybridSchemas({
  httpGateway: HttpGatewaySchema,
  tcpGateway: TcpGatewaySchema,
  sslConfig: PassthroughSslConfigSchema,
  selector: LabelSelectorSchema,
  hcmSettings: HcmSettingsWithTracingSchema,
});
export type HybridGateway = z.infer<typeof HybridGatewaySchema>;
export type MatchableHttpGatewaySpec = z.infer<typeof MatchableHttpGatewaySpecSchema>;
export type MatchableTcpGatewaySpec = z.infer<typeof MatchableTcpGatewaySpecSchema>;

const GATEWAY_TYPES = ['httpGateway', 'tcpGateway', 'hybridGateway'] as const;

export const GatewaySpecSchema = z
  .strictObject({
    bindAddress: z.string().optional(),
    bindPort: z.number().int().min(1).max(65535),
    ssl: z.boolean().optional(),
    proxyNames: z.array(Name).optional(),
    ...listenerGatewayFields,
    httpGateway: HttpGatewaySchema.optional(),
    tcpGateway: TcpGatewaySchema.optional(),
    hybridGateway: HybridGatewaySchema.optional(),
  })
  .refine((g) => GATEWAY_TYPES.filter((t) => g[t] !== undefined).length <= 1, {
    message: `set at most one of ${GATEWAY_TYPES.join(', ')}`,
  });
export type GatewaySpec = z.infer<typeof GatewaySpecSchema>;

// ---- Upstream ----

export type { UpstreamSslConfig as SslConfig } from '../translate/features/upstreams/schema.js';

const StaticHostSchema = z.strictObject({
  addr: Name,
  port: z.number().int().min(1).max(65535),
  sniAddr: z.string().optional(),
  loadBalancingWeight: z.number().int().min(1).optional(),
  /** Envoy filter metadata of the endpoint, by filter name; `envoy.lb` keys are what subsets select on */
  metadata: z.record(Name, z.record(z.string(), z.unknown())).optional(),
  ...resilienceStaticHostOptions,
});

/** Gloo's SubsetSpec: the endpoint subsets Envoy precomputes (by `envoy.lb` metadata keys). */
const SubsetSpecSchema = z.strictObject({
  selectors: z
    .array(
      z
        .strictObject({ keys: z.array(Name).min(1, 'needs at least one key'), singleHostPerSubset: z.boolean().optional() })
        .refine((s) => !s.singleHostPerSubset || s.keys.length === 1, { message: 'singleHostPerSubset needs exactly one key' }),
    )
    .min(1, 'needs at least one selector'),
  fallbackPolicy: z.enum(['ANY_ENDPOINT', 'NO_FALLBACK', 'DEFAULT_SUBSET']).optional(),
  defaultSubset: z.strictObject({ values: z.record(z.string(), z.string()) }).optional(),
});
export type SubsetSpec = z.infer<typeof SubsetSpecSchema>;

const SlowStartConfigSchema = z.strictObject({
  slowStartWindow: Duration.optional(),
  aggression: z.number().positive().optional(),
  minWeightPercent: z.number().min(0).max(100).optional(),
});

/** Envoy's limit on either ring size. */
export const MAX_RING_SIZE = 8_388_608;

/** Gloo's LoadBalancerConfig: at most one policy, and settings common to all of them. */
const LoadBalancerConfigSchema = z
  .strictObject({
    healthyPanicThreshold: z.number().min(0).max(100).optional(),
    updateMergeWindow: Duration.optional(),
    roundRobin: z.strictObject({ slowStartConfig: SlowStartConfigSchema.optional() }).optional(),
    leastRequest: z
      .strictObject({ choiceCount: z.number().int().min(2).optional(), slowStartConfig: SlowStartConfigSchema.optional() })
      .optional(),
    random: z.strictObject({}).optional(),
    ringHash: z
      .strictObject({
        ringHashConfig: z
          .strictObject({
            minimumRingSize: z.number().int().min(1).max(MAX_RING_SIZE).optional(),
            maximumRingSize: z.number().int().min(1).max(MAX_RING_SIZE).optional(),
          })
          .refine((c) => (c.minimumRingSize ?? 0) <= (c.maximumRingSize ?? MAX_RING_SIZE), {
            message: 'minimumRingSize must not be above maximumRingSize',
          })
          .optional(),
      })
      .optional(),
    maglev: z.strictObject({}).optional(),
    localityWeightedLbConfig: z.strictObject({}).optional(),
    useHostnameForHashing: z.boolean().optional(),
    closeConnectionsOnHostSetChange: z.boolean().optional(),
  })
  .refine((c) => [c.roundRobin, c.leastRequest, c.random, c.ringHash, c.maglev].filter((p) => p !== undefined).length <= 1, {
    message: 'set at most one of roundRobin, leastRequest, random, ringHash, maglev',
  });
export type LoadBalancerConfig = z.infer<typeof LoadBalancerConfigSchema>;

const FUNCTION_UPSTREAM_TYPES = functionUpstreamTypes(AwsDestinationSpecSchema);

export const UpstreamSpecSchema = z
  .strictObject({
    static: z
      .strictObject({
        hosts: z.array(StaticHostSchema).min(1, 'needs at least one host'),
        useTls: z.boolean().optional(),
        autoSniRewrite: z.boolean().optional(),
        /** Legate's: Gloo has subsetSpec on kube upstreams only; here the hosts' `metadata` define the subsets */
        subsetSpec: SubsetSpecSchema.optional(),
        ...serviceSpecField,
      })
      .optional(),
    kube: z
      .strictObject({
        serviceName: Name,
        serviceNamespace: Name,
        servicePort: z.number().int().min(1).max(65535),
        selector: z.record(z.string(), z.string()).optional(),
        subsetSpec: notSupported(
          'subsets of a kube upstream select on pod labels, and Legate reads EndpointSlices, not Pods, so its endpoints ' +
            'carry no labels; use a static upstream whose hosts carry metadata',
        ),
        ...serviceSpecField,
      })
      .optional(),
    ...FUNCTION_UPSTREAM_TYPES,
    ...UPSTREAM_OPTIONS,
    loadBalancerConfig: LoadBalancerConfigSchema.optional(),
    discoveryMetadata: z.strictObject({ labels: z.record(z.string(), z.string()).optional() }).optional(),
    ...resilienceUpstreamOptions,
  })
  .refine(
    (u) =>
      [u.static, u.kube, u.aws, u.azure, ...Object.keys(OTHER_UPSTREAM_TYPES).map((k) => u[k as keyof typeof OTHER_UPSTREAM_TYPES])].filter(
        Boolean,
      ).length === 1,
    {
      message: 'set exactly one upstream type: static, kube, pipe, aws or azure',
    },
  );
export type UpstreamSpec = z.infer<typeof UpstreamSpecSchema>;

// ---- Settings ----

/** Legate's hot-path checks (proxy-wasm filters); limits as the filters themselves enforce them. */
const WasmChecksSchema = z.strictObject({
  bearerCheck: z
    .strictObject({
      enabled: z.boolean().optional(),
      maxTokenBytes: z.number().int().min(1).max(65536).optional(),
      /** edge cache slots per Envoy worker for tokens ext_authz accepted; 0 = every request asks ext_authz */
      cacheEntries: z.number().int().min(0).max(1048576).optional(),
      /** the edge cache also in proxy-wasm shared data, so every Envoy worker sees what one learnt (default true) */
      sharedCache: z.boolean().optional(),
    })
    .optional(),
  graphqlCheck: z
    .strictObject({
      enabled: z.boolean().optional(),
      maxBodyBytes: z.number().int().min(1).max(1073741824).optional(),
      allowGet: z.boolean().optional(),
    })
    .optional(),
});
export type WasmChecks = z.infer<typeof WasmChecksSchema>;

/** Gloo's `settings.ratelimitServer`: where the ratelimit filter asks, and how it behaves. */
const RatelimitServerSchema = z.strictObject({
  /** an Upstream serving envoy.service.ratelimit.v3.RateLimitService instead of Legate's own */
  ratelimitServerRef: ResourceRefSchema.optional(),
  requestTimeout: Duration.optional(),
  /** deny (500 from Envoy) when the service cannot answer; default false: allow */
  denyOnFail: z.boolean().optional(),
  /** rate-limit before ext_authz rather than after it */
  rateLimitBeforeAuth: z.boolean().optional(),
  enableXRatelimitHeaders: z.boolean().optional(),
});
export type RatelimitServer = z.infer<typeof RatelimitServerSchema>;

/** The statuses Envoy's ext_authz can answer when its server fails (Envoy's StatusCode enum), as Gloo lists them. */
export const EXTAUTH_STATUS_ON_ERROR = [
  100, 200, 201, 202, 203, 204, 205, 206, 207, 208, 226, 300, 301, 302, 303, 304, 305, 307, 308, 400, 401, 402, 403, 404, 405, 406, 407,
  408, 409, 410, 411, 412, 413, 414, 415, 416, 417, 421, 422, 423, 424, 426, 428, 429, 431, 500, 501, 502, 503, 504, 505, 506, 507, 508,
  510, 511,
] as const;

/**
 * Gloo's extauth Settings (enterprise.gloo.solo.io.Settings): an ext_authz server of the user's, an Upstream. The values
 * of Settings `namedExtauth` (routes pick one with `extauth.customAuth.name`).
 */
export const ExtauthServerSettingsSchema = z.strictObject({
  extauthzServerRef: ResourceRefSchema,
  /** ask the server over HTTP (Envoy's ext_authz http_service) instead of gRPC; Gloo's oneof with grpcService */
  httpService: z
    .strictObject({
      pathPrefix: z.string().optional(),
      request: z
        .strictObject({
          allowedHeaders: z.array(z.string().min(1)).optional(),
          headersToAdd: z.record(z.string().min(1), z.string()).optional(),
          allowedHeadersRegex: z.array(z.string().min(1)).optional(),
        })
        .optional(),
      response: z
        .strictObject({
          allowedUpstreamHeaders: z.array(z.string().min(1)).optional(),
          allowedClientHeaders: z.array(z.string().min(1)).optional(),
          allowedUpstreamHeadersToAppend: z.array(z.string().min(1)).optional(),
        })
        .optional(),
    })
    .optional(),
  grpcService: z.strictObject({ authority: z.string().optional() }).optional(),
  /** the header the server puts the authenticated user's id in; a client's own copy is removed before the check */
  userIdHeader: z
    .string()
    .regex(/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/, 'not an HTTP header name')
    .optional(),
  /** default 200ms, as Gloo */
  requestTimeout: Duration.optional(),
  failureModeAllow: z.boolean().optional(),
  requestBody: z
    .strictObject({
      /** default 4KB, as Gloo */
      maxRequestBytes: z.number().int().min(0).max(4294967295).optional(),
      allowPartialMessage: z.boolean().optional(),
      packAsBytes: z.boolean().optional(),
    })
    .optional(),
  clearRouteCache: z.boolean().optional(),
  /** 0 or unset: 403 */
  statusOnError: z
    .number()
    .int()
    .refine((c) => c === 0 || (EXTAUTH_STATUS_ON_ERROR as readonly number[]).includes(c), 'not an HTTP status Envoy can answer with')
    .optional(),
  transportApiVersion: protoEnum(['V3']).optional(),
  statPrefix: z.string().optional(),
});
export type ExtauthServerSettings = z.infer<typeof ExtauthServerSettingsSchema>;
export type ExtauthHttpService = NonNullable<ExtauthServerSettings['httpService']>;

/** A Gateway's `httpGateway.options.extauth`: Legate's ext_authz filter on that listener, with these settings. */
const ListenerExtauthSchema = ExtauthServerSettingsSchema.extend({
  /** an Upstream serving envoy.service.auth.v3.Authorization in place of Legate's extauth service */
  extauthzServerRef: ResourceRefSchema.optional(),
});
export type ListenerExtauth = z.infer<typeof ListenerExtauthSchema>;

/**
 * Gloo's `settings.gloo.invalidConfigPolicy`: what a route whose destination is missing or rejected answers.
 * Off (Gloo's default): Envoy's own 503 for a cluster it does not have; on: this status and body.
 */
const InvalidConfigPolicySchema = z.strictObject({
  replaceInvalidRoutes: z.boolean().optional(),
  invalidRouteResponseCode: z.number().int().min(200).max(599).optional(),
  invalidRouteResponseBody: z.string().optional(),
});
export type InvalidConfigPolicy = z.infer<typeof InvalidConfigPolicySchema>;

/** Kubernetes' LabelSelector, as Gloo copies it for watchNamespaceSelectors. */
const KubeLabelSelectorSchema = z.strictObject({
  matchLabels: z.record(z.string(), z.string()).optional(),
  matchExpressions: z
    .array(
      z.strictObject({
        key: Name,
        operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
        values: z.array(z.string()).optional(),
      }),
    )
    .optional(),
});
export type KubeLabelSelector = z.infer<typeof KubeLabelSelectorSchema>;

/** An address a Gloo component binds (`host:port`): Legate's listeners are set on its command line and chart. */
const BindAddress = z.string().regex(/^.+:\d{1,5}$/, 'expected host:port');

/**
 * Gloo's `settings.gloo` (GlooOptions). Read: invalidConfigPolicy, circuitBreakers, disableGrpcWeb,
 * disableKubernetesDestinations, upstream DNS polling for failover. The bind addresses describe Gloo's processes.
 */
const GlooOptionsSchema = z.strictObject({
  /** accepted without effect: a Gloo process's address; Legate's come from its command line and chart */
  xdsBindAddr: BindAddress.optional(),
  /** accepted without effect: a Gloo process's address; Legate's come from its command line and chart */
  validationBindAddr: BindAddress.optional(),
  /** accepted without effect: a Gloo process's address; Legate's come from its command line and chart */
  restXdsBindAddr: BindAddress.optional(),
  /** accepted without effect: a Gloo process's address; Legate's come from its command line and chart */
  proxyDebugBindAddr: z.string().optional(),
  circuitBreakers: CircuitBreakerConfigSchema.optional(),
  endpointsWarmingTimeout: notSupported('Legate serves whatever it has read when Envoy connects; it has no warming timeout'),
  awsOptions: notSupported(
    "its fields configure Gloo's own Lambda filter; Envoy's aws_lambda filter has no propagateOriginalRouting, " +
      "credentialRefreshDelay or fallbackToFirstFunction, and finds default credentials in the Envoy process's environment " +
      '(what an aws Upstream without secretRef uses, as enableCredentialsDiscovey and serviceAccountCredentials would)',
  ),
  invalidConfigPolicy: InvalidConfigPolicySchema.optional(),
  disableKubernetesDestinations: z.boolean().optional(),
  disableGrpcWeb: z.boolean().optional(),
  disableProxyGarbageCollection: z
    .boolean()
    .refine((v) => !v, 'NotSupported: Legate serves no routes once no VirtualService is left; keeping the last ones is not implemented')
    .optional(),
  /** the largest RE2 program a regex may compile to (Envoy's runtime re2.max_program_size.error_level); default 100 */
  regexMaxProgramSize: z.number().int().min(1).max(4294967295).optional(),
  enableRestEds: z
    .boolean()
    .refine((v) => !v, 'NotSupported: Legate serves endpoints over gRPC ADS only (REST EDS is deprecated in Envoy)')
    .optional(),
  failoverUpstreamDnsPollingInterval: notSupported('failover endpoints are rendered as Envoy resolves them (STRICT_DNS), not polled'),
  removeUnusedFilters: z.boolean().optional(),
  logTransformationRequestResponseInfo: notSupported('Legate has no transformation filter'),
  transformationEscapeCharacters: notSupported('Legate has no transformation filter'),
  /** Gloo's defaults (integration off) are what Legate does; turning the integration on is refused */
  istioOptions: z
    .strictObject({
      /** Gloo: deprecated; only read with the Istio integration on */
      appendXForwardedHost: z.boolean().optional(),
      enableAutoMtls: z
        .boolean()
        .refine((v) => !v, 'NotSupported: Legate has no Istio integration, so there is no Istio mTLS to turn on')
        .optional(),
      enableIntegration: z
        .boolean()
        .refine((v) => !v, 'NotSupported: Legate has no Istio integration (no istio-proxy or SDS sidecar beside its Envoy)')
        .optional(),
    })
    .optional(),
});

/** Gloo's `settings.gateway.validation` (ValidationOptions): how the admission webhook decides. */
const ValidationOptionsSchema = z.strictObject({
  /** accepted without effect: validation runs in the controller itself */
  proxyValidationServerAddr: z.string().optional(),
  /** accepted without effect: the webhook's certificate comes from the chart's Secret or is generated */
  validationWebhookTlsCert: z.string().optional(),
  /** accepted without effect: the webhook's key comes from the chart's Secret or is generated */
  validationWebhookTlsKey: z.string().optional(),
  /** Gloo: deprecated; there is no separate validation server to fail */
  ignoreGlooValidationFailure: z.boolean().optional(),
  /** accept what validation would refuse, and log it (Gloo's default is true; Legate's is false) */
  alwaysAccept: z.boolean().optional(),
  /** accept resources whose status would be Warning (default true) */
  allowWarnings: z.boolean().optional(),
  /** Gloo: deprecated, default false (no route-order warnings), which is what Legate does */
  warnRouteShortCircuiting: z
    .boolean()
    .refine((v) => !v, 'NotSupported: Legate does not analyse route order for routes that make later ones unreachable')
    .optional(),
  /** Legate has no transformation filter, so there is no transformation to validate: true and false behave alike */
  disableTransformationValidation: z.boolean().optional(),
  /** accepted without effect: Legate's webhook has no gRPC hop with a message size */
  validationServerGrpcMaxSizeBytes: z.number().int().min(0).optional(),
  /** false: the webhook accepts everything without validating (default true) */
  serverEnabled: z.boolean().optional(),
  /** a missing TLS Secret is a Warning, not an error: the resource is admitted and served without that TLS until it exists */
  warnMissingTlsSecret: z.boolean().optional(),
});
export type GatewayValidation = z.infer<typeof ValidationOptionsSchema>;

/** Gloo's `settings.gateway` (GatewayOptions). */
const GatewayOptionsSchema = z.strictObject({
  /** accepted without effect: a Gloo process's address; Legate's come from its command line and chart */
  validationServerAddr: z.string().optional(),
  validation: ValidationOptionsSchema.optional(),
  readGatewaysFromAllNamespaces: z.boolean().optional(),
  /** Gloo: deprecated and ignored */
  alwaysSortRouteTableRoutes: z.boolean().optional(),
  compressedProxySpec: z.boolean().optional(),
  virtualServiceOptions: z.strictObject({ oneWayTls: z.boolean().optional() }).optional(),
  persistProxySpec: z.boolean().optional(),
  enableGatewayController: z
    .boolean()
    .refine((v) => v, 'NotSupported: Legate always translates Gateways and VirtualServices; it has no Proxy-only mode')
    .optional(),
  /** false (Gloo's default) is how Legate renders: every ssl filter chain of a listener shares one route table */
  isolateVirtualHostsBySslConfig: z
    .boolean()
    .refine(
      (v) => !v,
      "NotSupported: the filter chains of an ssl listener share one route table (Gloo's default); one per ssl config is not rendered",
    )
    .optional(),
  translateEmptyGateways: z.boolean().optional(),
});

/** Gloo's `settings.discovery` (DiscoveryOptions): upstream discovery (UDS) is Legate's; function discovery is not. */
const DiscoveryOptionsSchema = z.strictObject({
  /** Legate has no function discovery (FDS): every mode discovers no functions, so all are accepted alike */
  fdsMode: protoEnum(['BLACKLIST', 'WHITELIST', 'DISABLED']).optional(),
  udsOptions: z
    .strictObject({
      enabled: z.boolean().optional(),
      watchLabels: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  fdsOptions: z
    .strictObject({
      graphqlEnabled: z
        .boolean()
        .refine((v) => !v, 'NotSupported: Legate does not discover GraphQL schemas from upstreams (FDS)')
        .optional(),
    })
    .optional(),
});

const KUBERNETES_STORAGE_ONLY =
  "Legate reads from a directory or the Kubernetes API, chosen by how it is started ('legate run DIR' or --kubernetes)";
const NO_VAULT_OR_CONSUL =
  'Legate reads secrets from Kubernetes Secrets or files next to the resources; Vault and Consul are not supported';

export const SettingsSpecSchema = z.strictObject({
  ratelimitServer: RatelimitServerSchema.optional(),
  extProc: ExtProcSettingsSchema.optional(),
  /** Gloo Enterprise's default extauth settings: every listener's ext_authz filter (a Gateway's own win, field by field) */
  extauth: z.lazy(() => ListenerExtauthSchema).optional(),
  namedExtauth: z.record(z.string().min(1), ExtauthServerSettingsSchema).optional(),
  // lazy: defined with RateLimitConfig's schemas below
  ratelimit: z.lazy(() => RatelimitServiceSettingsSchema).optional(),
  discoveryNamespace: z.string().optional(),
  wasmChecks: WasmChecksSchema.optional(),
  writeNamespace: z.string().optional(),
  watchNamespaces: z.array(z.string()).optional(),
  watchNamespaceSelectors: z.array(KubeLabelSelectorSchema).optional(),
  devMode: z.boolean().optional(),
  gloo: GlooOptionsSchema.optional(),
  gateway: GatewayOptionsSchema.optional(),
  discovery: DiscoveryOptionsSchema.optional(),
  /** Gloo's storage choices: Kubernetes storage is what Legate's Kubernetes mode is; in directory mode, the directory */
  kubernetesConfigSource: z.strictObject({}).optional(),
  kubernetesSecretSource: z.strictObject({}).optional(),
  kubernetesArtifactSource: z.strictObject({}).optional(),
  directoryConfigSource: notSupported(KUBERNETES_STORAGE_ONLY),
  directorySecretSource: notSupported(KUBERNETES_STORAGE_ONLY),
  directoryArtifactSource: notSupported(KUBERNETES_STORAGE_ONLY),
  consulKvSource: notSupported(NO_VAULT_OR_CONSUL),
  consulKvArtifactSource: notSupported(NO_VAULT_OR_CONSUL),
  vaultSecretSource: notSupported(NO_VAULT_OR_CONSUL),
  secretOptions: notSupported(NO_VAULT_OR_CONSUL),
  /** Gloo's resync period: accepted without effect (the directory is rescanned every second, informers re-list on a break) */
  refreshRate: Duration.optional(),
  linkerd: notSupported('Legate has no Linkerd integration (l5d-dst-override headers)'),
  knative: notSupported('Legate has no Knative integration'),
  consul: notSupported('Legate has no Consul integration'),
  consulDiscovery: notSupported('Legate has no Consul integration'),
  kubernetes: z
    .strictObject({
      /** the controller's requests to the Kubernetes API server: Gloo's defaults are QPS 50, burst 100 */
      rateLimits: z.strictObject({ QPS: z.number().min(0).optional(), burst: z.number().int().min(0).optional() }).optional(),
    })
    .optional(),
  extensions: notSupported('Gloo plugin extensions are opaque; Legate has none to pass them to'),
  /** Gloo Enterprise's rbac.options.gloo.solo.io.Settings: requireRbac refuses (403) what no rbac option allows */
  rbac: z.strictObject({ requireRbac: z.boolean().optional() }).optional(),
  cachingServer: notSupported("Gloo Enterprise's caching server is not part of Legate"),
  observabilityOptions: ObservabilityOptionsSchema.optional(),
  upstreamOptions: z
    .strictObject({
      /** the TLS parameters of every Upstream whose sslConfig sets none */
      sslParameters: SslParametersSchema.optional(),
      /** annotations read by discovery as if every Service carried them (a Service's own win) */
      globalAnnotations: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  /** Legate's web console (docs/console.md): read-only whatever readOnly says; apiExplorerEnabled false turns GraphiQL off */
  consoleOptions: z.strictObject({ readOnly: z.boolean().optional(), apiExplorerEnabled: z.boolean().optional() }).optional(),
  /** Gloo's default (breaking schema changes allowed, no rules) is what Legate does; rejecting them is refused */
  graphqlOptions: z
    .strictObject({
      schemaChangeValidationOptions: z
        .strictObject({
          rejectBreakingChanges: z
            .boolean()
            .refine((v) => !v, 'NotSupported: Legate does not compare a GraphQL schema with its previous version')
            .optional(),
          /** tune breaking-change detection, which Legate does not do: a warning says so when any is set */
          processingRules: z
            .array(
              protoEnum([
                'RULE_UNSPECIFIED',
                'RULE_DANGEROUS_TO_BREAKING',
                'RULE_DEPRECATED_FIELD_REMOVAL_DANGEROUS',
                'RULE_IGNORE_DESCRIPTION_CHANGES',
                'RULE_IGNORE_UNREACHABLE',
              ]),
            )
            .optional(),
        })
        .optional(),
    })
    .optional(),
});
export type SettingsSpec = z.infer<typeof SettingsSpecSchema>;

// ---- Kubernetes core kinds (loose: real clusters add many fields Legate does not read) ----

export const ServiceBodySchema = z.looseObject({
  spec: z.looseObject({
    ports: z
      .array(
        z.looseObject({
          name: z.string().optional(),
          port: z.number().int().min(1).max(65535),
          targetPort: z.union([z.number().int(), z.string()]).optional(),
          protocol: z.string().optional(),
          appProtocol: z.string().optional(),
        }),
      )
      .min(1, 'a Service needs at least one port'),
    selector: z.record(z.string(), z.string()).optional(),
  }),
});
export type ServiceBody = z.infer<typeof ServiceBodySchema>;

export const EndpointsBodySchema = z.looseObject({
  subsets: z
    .array(
      z.looseObject({
        addresses: z.array(z.looseObject({ ip: z.string(), hostname: z.string().optional() })).optional(),
        notReadyAddresses: z.array(z.looseObject({ ip: z.string() })).optional(),
        ports: z
          .array(z.looseObject({ name: z.string().optional(), port: z.number().int().min(1).max(65535), protocol: z.string().optional() }))
          .optional(),
      }),
    )
    .optional(),
});
export type EndpointsBody = z.infer<typeof EndpointsBodySchema>;

export const SecretBodySchema = z.looseObject({
  type: z.string().optional(),
  data: z.record(z.string(), z.string()).optional(),
  stringData: z.record(z.string(), z.string()).optional(),
});
export type SecretBody = z.infer<typeof SecretBodySchema>;

/** A core ConfigMap: its `data` is read (OPA Rego modules of opaAuth). */
export const ConfigMapBodySchema = z.looseObject({
  data: z.record(z.string(), z.string()).optional(),
  binaryData: z.record(z.string(), z.string()).optional(),
});

// ---- GraphQLApi (graphql.legate.dev/v1beta1) and the flat GraphQLSchema (v1alpha1) ----

const RestResolverSchema = z.strictObject({
  upstreamRef: ResourceRefSchema,
  request: z
    .strictObject({
      headers: z.record(z.string(), z.string()).optional(),
      queryParams: z.record(z.string(), z.string()).optional(),
      body: z.unknown().optional(),
    })
    .optional(),
  response: z
    .strictObject({
      resultRoot: z.string().optional(),
      setters: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  spanName: z.string().optional(),
  timeout: Duration.optional(),
});
export type RestResolver = z.infer<typeof RestResolverSchema>;

/** Gloo's mockResolver: exactly one of a value, a value after a delay, an error message (checked in translation). */
const MockResolverSchema = z.strictObject({
  syncResponse: z.unknown().optional(),
  asyncResponse: z.strictObject({ response: z.unknown().optional(), delay: Duration.optional() }).optional(),
  errorResponse: z.string().optional(),
});
export type MockResolver = z.infer<typeof MockResolverSchema>;

/** Gloo's grpcResolver: a unary call described by `executableSchema.grpcDescriptorRegistry`. */
const GrpcResolverSchema = z.strictObject({
  upstreamRef: ResourceRefSchema,
  requestTransform: z.strictObject({
    serviceName: z.string().min(1, 'must not be empty'),
    methodName: z.string().min(1, 'must not be empty'),
    outgoingMessageJson: z.unknown().optional(),
    requestMetadata: z.record(z.string(), z.string()).optional(),
  }),
  spanName: z.string().optional(),
  timeout: Duration.optional(),
});
export type GrpcResolver = z.infer<typeof GrpcResolverSchema>;

const ResolutionSchema = z.strictObject({
  restResolver: RestResolverSchema.optional(),
  grpcResolver: GrpcResolverSchema.optional(),
  mockResolver: MockResolverSchema.optional(),
  statPrefix: z.string().optional(),
});
export type Resolution = z.infer<typeof ResolutionSchema>;

const LocalExecutorSchema = z.strictObject({
  resolutions: z.record(z.string(), ResolutionSchema).optional(),
  enableIntrospection: z.boolean().optional(),
  // maxAliases and maxFields are Legate's additions to Gloo's options (0 = no limit)
  options: z
    .strictObject({
      maxDepth: z.number().int().min(0).optional(),
      maxAliases: z.number().int().min(0).optional(),
      maxFields: z.number().int().min(0).optional(),
    })
    .optional(),
});

/** Gloo's executor.remote: the GraphQL request forwarded to a GraphQL server. */
const RemoteExecutorSchema = z.strictObject({
  upstreamRef: ResourceRefSchema,
  headers: z.record(z.string(), z.string()).optional(),
  queryParams: z.record(z.string(), z.string()).optional(),
  spanName: z.string().optional(),
});
export type RemoteExecutor = z.infer<typeof RemoteExecutorSchema>;

/** Gloo's grpcDescriptorRegistry: a base64 FileDescriptorSet inline, or ConfigMaps holding them. */
const GrpcDescriptorRegistrySchema = z.strictObject({
  protoDescriptorBin: z.string().optional(),
  protoRefsList: notSupported('descriptors from ConfigMaps are not read yet; use protoDescriptorBin (a base64 FileDescriptorSet)'),
});

/** Gloo's stitchedSchema: other GraphQLApis merged into one schema; typeMerge says how a type's fields are
 * fetched from a subschema (its Query field `queryName`, with `args` read from the object by path). */
const StitchedSchemaSchema = z.strictObject({
  subschemas: z
    .array(
      z.strictObject({
        name: Name,
        namespace: z.string().optional(),
        typeMerge: z
          .record(
            z.string(),
            z.strictObject({
              selectionSet: z.string().optional(),
              queryName: z.string().min(1, 'must not be empty'),
              args: z.record(z.string(), z.string()).optional(),
            }),
          )
          .optional(),
      }),
    )
    .min(1, 'must list at least one subschema'),
});
export type StitchedSchema = z.infer<typeof StitchedSchemaSchema>;

export const GraphQLApiSpecSchema = z
  .strictObject({
    stitchedSchema: StitchedSchemaSchema.optional(),
    executableSchema: z
      .strictObject({
        schemaDefinition: z.string().min(1, 'must not be empty'),
        executor: z
          .strictObject({
            local: LocalExecutorSchema.optional(),
            remote: RemoteExecutorSchema.optional(),
          })
          .refine((e) => (e.local ? 1 : 0) + (e.remote ? 1 : 0) === 1, { message: 'set exactly one of local, remote' }),
        grpcDescriptorRegistry: GrpcDescriptorRegistrySchema.optional(),
      })
      .optional(),
    statPrefix: z.string().optional(),
    persistedQueryCacheConfig: z.strictObject({ cacheSize: z.number().int().min(0).optional() }).optional(),
    allowedQueryHashes: z.array(z.string()).optional(),
    options: z.strictObject({ logSensitiveInfo: z.boolean().optional() }).optional(),
  })
  .refine((s) => (s.executableSchema ? 1 : 0) + (s.stitchedSchema ? 1 : 0) === 1, {
    message: 'set exactly one of executableSchema, stitchedSchema',
  });
export type GraphQLApiSpec = z.infer<typeof GraphQLApiSpecSchema>;

/** The flat kind has no grpcDescriptorRegistry, so a gRPC resolver could never be described. */
const FlatResolutionSchema = ResolutionSchema.extend({
  grpcResolver: notSupported('a GraphQLSchema has no grpcDescriptorRegistry to describe the service; use a GraphQLApi'),
});

export const GraphQLSchemaSpecSchema = z.strictObject({
  schemaDefinition: z.string().min(1, 'must not be empty'),
  resolutions: z.record(z.string(), FlatResolutionSchema).optional(),
  enableIntrospection: z.boolean().optional(),
  options: z
    .strictObject({
      maxDepth: z.number().int().min(0).optional(),
      maxAliases: z.number().int().min(0).optional(),
      maxFields: z.number().int().min(0).optional(),
    })
    .optional(),
});
export type GraphQLSchemaSpec = z.infer<typeof GraphQLSchemaSpecSchema>;

// ---- AuthConfig (enterprise.legate.dev/v1) ----

/** `accessTokenValidation.jwt`: Gloo's fields, plus `audiences` (Legate's: `aud` must hold one of them). */
const JwtValidationSchema = z
  .strictObject({
    remoteJwks: z.strictObject({ url: z.string(), refreshInterval: Duration.optional() }).optional(),
    localJwks: z.strictObject({ inlineString: z.string() }).optional(),
    issuer: z.string().min(1).optional(),
    audiences: z.array(z.string().min(1)).optional(),
  })
  .refine((j) => (j.remoteJwks === undefined) !== (j.localJwks === undefined), { message: 'set exactly one of remoteJwks, localJwks' });

const AccessTokenValidationSchema = z
  .strictObject({
    introspectionUrl: z.string().optional(),
    introspection: z
      .strictObject({
        introspectionUrl: z.string(),
        clientId: z.string().optional(),
        clientSecretRef: ResourceRefSchema.optional(),
        disableClientSecret: z.boolean().optional(),
        userIdAttributeName: z.string().optional(),
      })
      .optional(),
    jwt: JwtValidationSchema.optional(),
    userinfoUrl: z.string().optional(),
    cacheTimeout: Duration.optional(),
    requiredScopes: z.strictObject({ scope: z.array(z.string().min(1)) }).optional(),
    dynamicMetadataFromClaims: z.record(z.string(), z.string()).optional(),
  })
  .refine((a) => [a.introspectionUrl, a.introspection, a.jwt].filter((x) => x !== undefined).length === 1, {
    message: 'set exactly one validation method: introspectionUrl, introspection or jwt',
  });

/** `oauth2.*.session` (Gloo's UserSession). */
const UserSessionSchema = z.strictObject({
  failOnFetchFailure: z.boolean().optional(),
  cookieOptions: z
    .strictObject({
      maxAge: z.number().int().min(0).optional(),
      notSecure: z.boolean().optional(),
      httpOnly: z.boolean().optional(),
      path: z.string().optional(),
      sameSite: z.enum(['DefaultMode', 'LaxMode', 'StrictMode', 'NoneMode']).optional(),
      domain: z.string().optional(),
    })
    .optional(),
  cookie: z
    .strictObject({ allowRefreshing: z.boolean().optional(), keyPrefix: z.string().optional(), targetDomain: z.string().optional() })
    .optional(),
  redis: z
    .strictObject({
      options: z
        .strictObject({
          host: z.string().min(1),
          db: z.number().int().min(0).optional(),
          poolSize: z.number().int().min(0).optional(),
          tlsCertMountPath: z.string().min(1).optional(),
          socketType: z.enum(['TCP', 'TLS']).optional(),
        })
        .optional(),
      keyPrefix: z.string().optional(),
      cookieName: z.string().optional(),
      allowRefreshing: z.boolean().optional(),
      preExpiryBuffer: Duration.optional(),
      targetDomain: z.string().optional(),
      headerName: z.string().optional(),
    })
    .optional(),
  cipherConfig: z.strictObject({ keyRef: ResourceRefSchema.optional() }).optional(),
});

const ClaimToHeaderSchema = z.strictObject({ claim: z.string().min(1), header: z.string().min(1), append: z.boolean().optional() });

/** `oauth2.oidcAuthorizationCode` (Gloo's OidcAuthorizationCode). */
const OidcAuthorizationCodeSchema = z.strictObject({
  clientId: z.string().min(1),
  clientSecretRef: ResourceRefSchema.optional(),
  issuerUrl: z.string().min(1),
  authEndpointQueryParams: z.record(z.string(), z.string()).optional(),
  tokenEndpointQueryParams: z.record(z.string(), z.string()).optional(),
  appUrl: z.string().min(1),
  callbackPath: z.string().min(1),
  logoutPath: z.string().optional(),
  afterLogoutUrl: z.string().optional(),
  scopes: z.array(z.string().min(1)).optional(),
  session: UserSessionSchema.optional(),
  headers: z
    .strictObject({
      idTokenHeader: z.string().optional(),
      accessTokenHeader: z.string().optional(),
      useBearerSchemaForAuthorization: z.boolean().optional(),
    })
    .optional(),
  discoveryOverride: z
    .strictObject({
      authEndpoint: z.string().optional(),
      tokenEndpoint: z.string().optional(),
      jwksUri: z.string().optional(),
      revocationEndpoint: z.string().optional(),
      idTokenAlgs: z.array(z.string()).optional(),
      authMethods: z.array(z.string()).optional(),
      scopes: notSupported('Legate does not read the provider metadata this overrides; leave it out'),
      responseTypes: notSupported('Legate does not read the provider metadata this overrides; leave it out'),
      subjects: notSupported('Legate does not read the provider metadata this overrides; leave it out'),
      claims: notSupported('Legate does not read the provider metadata this overrides; leave it out'),
      endSessionEndpoint: z.string().optional(),
    })
    .optional(),
  discoveryPollInterval: Duration.optional(),
  jwksCacheRefreshPolicy: z
    .strictObject({
      never: z.strictObject({}).optional(),
      always: z.strictObject({}).optional(),
      maxIdpReqPerPollingInterval: z.number().int().min(1).optional(),
    })
    .refine((p) => [p.never, p.always, p.maxIdpReqPerPollingInterval].filter((x) => x !== undefined).length === 1, {
      message: 'set exactly one of never, always, maxIdpReqPerPollingInterval',
    })
    .optional(),
  sessionIdHeaderName: z.string().optional(),
  parseCallbackPathAsRegex: z.boolean().optional(),
  autoMapFromMetadata: z.strictObject({ namespace: z.string().optional() }).optional(),
  endSessionProperties: z.strictObject({ methodType: z.enum(['GetMethod', 'PostMethod']).optional() }).optional(),
  dynamicMetadataFromClaims: z.record(z.string(), z.string()).optional(),
  disableClientSecret: z.boolean().optional(),
  accessToken: z.strictObject({ claimsToHeaders: z.array(ClaimToHeaderSchema).optional() }).optional(),
  identityToken: z.strictObject({ claimsToHeaders: z.array(ClaimToHeaderSchema).optional() }).optional(),
  clientAuthentication: z
    .strictObject({
      clientSecret: z
        .strictObject({ clientSecretRef: ResourceRefSchema.optional(), disableClientSecret: z.boolean().optional() })
        .optional(),
      privateKeyJwt: z.strictObject({ signingKeyRef: ResourceRefSchema, validFor: Duration.optional() }).optional(),
    })
    .optional(),
});
export type OidcAuthorizationCode = z.infer<typeof OidcAuthorizationCodeSchema>;

/** `oauth2.oauth2` (Gloo's PlainOAuth2). */
const PlainOAuth2Schema = z.strictObject({
  clientId: z.string().min(1),
  clientSecretRef: ResourceRefSchema.optional(),
  authEndpointQueryParams: z.record(z.string(), z.string()).optional(),
  appUrl: z.string().min(1),
  callbackPath: z.string().min(1),
  scopes: z.array(z.string().min(1)).optional(),
  session: UserSessionSchema.optional(),
  logoutPath: z.string().optional(),
  tokenEndpointQueryParams: z.record(z.string(), z.string()).optional(),
  afterLogoutUrl: z.string().optional(),
  authEndpoint: z.string().min(1),
  tokenEndpoint: z.string().min(1),
  revocationEndpoint: z.string().optional(),
  disableClientSecret: z.boolean().optional(),
});
export type PlainOAuth2 = z.infer<typeof PlainOAuth2Schema>;

/**
 * Gloo's deprecated `oauth` step: the OIDC login with the first fields oidcAuthorizationCode had. Gloo's docs of the
 * time wrote it with the proto's own names (`app_url`), which Gloo's protobuf-JSON reading accepts, so both are read.
 */
const DeprecatedOAuthSchema = z.preprocess(
  (v) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), x]))
      : v,
  z.strictObject({
    clientId: z.string().min(1),
    clientSecretRef: ResourceRefSchema.optional(),
    issuerUrl: z.string().min(1),
    authEndpointQueryParams: z.record(z.string(), z.string()).optional(),
    appUrl: z.string().min(1),
    callbackPath: z.string().min(1),
    scopes: z.array(z.string().min(1)).optional(),
  }),
);

/** The step kinds Gloo knows; those without a schema below are reported as not supported. */
export const AUTH_STEP_KINDS = [
  'basicAuth',
  'oauth2',
  'apiKeyAuth',
  'pluginAuth',
  'opaAuth',
  'ldap',
  'jwt',
  'passThroughAuth',
  'hmacAuth',
  'opaServerAuth',
  'ldapInternal',
  'oauth',
] as const;

/** The step kinds with a schema of their own (the rest are stored as unknown and reported). */
const TYPED_STEP_KINDS = {
  oauth2: true,
  apiKeyAuth: true,
  basicAuth: true,
  ldap: true,
  opaAuth: true,
  opaServerAuth: true,
  passThroughAuth: true,
  hmacAuth: true,
  oauth: true,
} as const;

const AuthStepSchema = z.strictObject({
  name: z.string().optional(),
  oauth2: z
    .strictObject({
      accessTokenValidation: AccessTokenValidationSchema.optional(),
      oidcAuthorizationCode: OidcAuthorizationCodeSchema.optional(),
      oauth2: PlainOAuth2Schema.optional(),
    })
    .optional(),
  apiKeyAuth: ApiKeyAuthSchema.optional(),
  basicAuth: BasicAuthSchema.optional(),
  ldap: LdapSchema.optional(),
  opaAuth: OpaAuthSchema.optional(),
  opaServerAuth: OpaServerAuthSchema.optional(),
  passThroughAuth: PassThroughAuthSchema.optional(),
  hmacAuth: HmacAuthSchema.optional(),
  oauth: DeprecatedOAuthSchema.optional(),
  ...Object.fromEntries(AUTH_STEP_KINDS.filter((k) => !Object.hasOwn(TYPED_STEP_KINDS, k)).map((k) => [k, z.unknown().optional()])),
});
export type AuthStep = z.infer<typeof AuthStepSchema> & {
  oauth2?: {
    accessTokenValidation?: z.infer<typeof AccessTokenValidationSchema>;
    oidcAuthorizationCode?: OidcAuthorizationCode;
    oauth2?: PlainOAuth2;
  };
  apiKeyAuth?: z.infer<typeof ApiKeyAuthSchema>;
  basicAuth?: z.infer<typeof BasicAuthSchema>;
  ldap?: z.infer<typeof LdapSchema>;
  opaAuth?: z.infer<typeof OpaAuthSchema>;
  opaServerAuth?: z.infer<typeof OpaServerAuthSchema>;
  passThroughAuth?: z.infer<typeof PassThroughAuthSchema>;
  hmacAuth?: z.infer<typeof HmacAuthSchema>;
  oauth?: z.infer<typeof DeprecatedOAuthSchema>;
};

export const AuthConfigSpecSchema = z.strictObject({
  configs: z.array(AuthStepSchema).min(1, 'needs at least one step'),
  booleanExpr: z.string().optional(),
  failOnRedirect: z.boolean().optional(),
});
export type AuthConfigSpec = z.infer<typeof AuthConfigSpecSchema>;

// ---- RateLimitConfig (ratelimit.legate.dev/v1alpha1; Gloo's ratelimit.solo.io/v1alpha1) ----

/** A descriptor of Envoy's ratelimit service config (Gloo's camelCase names), nested. */
export interface RateLimitDescriptor {
  key: string;
  value?: string | undefined;
  rateLimit?: RateLimitValue | undefined;
  shadowMode?: boolean | undefined;
  descriptors?: RateLimitDescriptor[] | undefined;
  weight?: number | undefined;
  alwaysApply?: boolean | undefined;
}

export const RateLimitDescriptorSchema: z.ZodType<RateLimitDescriptor> = z.lazy(() =>
  z.strictObject({
    key: Name,
    value: z.string().optional(),
    rateLimit: RateLimitValueSchema.optional(),
    shadowMode: z.boolean().optional(),
    descriptors: z.array(RateLimitDescriptorSchema).optional(),
    weight: z.number().int().min(0).optional(),
    alwaysApply: z.boolean().optional(),
  }),
);

/** An Envoy header matcher as Gloo's raw actions write it (headerValueMatch.headers). */
const RateLimitHeaderMatcherSchema = z.strictObject({
  name: Name,
  exactMatch: z.string().optional(),
  prefixMatch: z.string().optional(),
  suffixMatch: z.string().optional(),
  regexMatch: z.string().optional(),
  safeRegexMatch: z.strictObject({ regex: z.string() }).optional(),
  presentMatch: z.boolean().optional(),
  invertMatch: z.boolean().optional(),
});
export type RateLimitHeaderMatcher = z.infer<typeof RateLimitHeaderMatcherSchema>;

/** The action kinds of Envoy's route RateLimit; Legate renders the first six and reports the others. */
export const RATE_LIMIT_ACTION_KINDS = [
  'genericKey',
  'requestHeaders',
  'remoteAddress',
  'sourceCluster',
  'destinationCluster',
  'headerValueMatch',
  'metadata',
  'dynamicMetadata',
  'maskedRemoteAddress',
  'queryParameterValueMatch',
  'extension',
] as const;

/** Envoy's MetadataKey (Gloo's copy): a filter namespace and a path of struct keys. */
const MetadataKeySchema = z.strictObject({
  key: Name,
  path: z.array(z.strictObject({ key: Name })).min(1, 'needs at least one path segment'),
});
export type RateLimitMetadataKey = z.infer<typeof MetadataKeySchema>;

/** Envoy's QueryParameterMatcher (queryParameterValueMatch.queryParameters). */
const RateLimitQueryParameterMatcherSchema = z.strictObject({
  name: Name,
  stringMatch: z
    .strictObject({
      exact: z.string().optional(),
      prefix: z.string().optional(),
      suffix: z.string().optional(),
      contains: z.string().optional(),
      safeRegex: z.strictObject({ regex: z.string() }).optional(),
      ignoreCase: z.boolean().optional(),
    })
    .optional(),
  presentMatch: z.boolean().optional(),
});
export type RateLimitQueryParameterMatcher = z.infer<typeof RateLimitQueryParameterMatcherSchema>;

const RateLimitActionSchema = z.strictObject({
  genericKey: z.strictObject({ descriptorValue: Name, descriptorKey: z.string().optional() }).optional(),
  requestHeaders: z.strictObject({ headerName: Name, descriptorKey: Name, skipIfAbsent: z.boolean().optional() }).optional(),
  remoteAddress: z.strictObject({}).optional(),
  sourceCluster: z.strictObject({}).optional(),
  destinationCluster: z.strictObject({}).optional(),
  headerValueMatch: z
    .strictObject({
      descriptorValue: Name,
      descriptorKey: z.string().optional(),
      expectMatch: z.boolean().optional(),
      headers: z.array(RateLimitHeaderMatcherSchema).min(1, 'needs at least one header'),
    })
    .optional(),
  metadata: z
    .strictObject({
      descriptorKey: Name,
      metadataKey: MetadataKeySchema,
      defaultValue: z.string().optional(),
      source: protoEnum(['DYNAMIC', 'ROUTE_ENTRY']).optional(),
      skipIfAbsent: z.boolean().optional(),
    })
    .optional(),
  dynamicMetadata: z.strictObject({ descriptorKey: Name, metadataKey: MetadataKeySchema, defaultValue: z.string().optional() }).optional(),
  maskedRemoteAddress: z
    .strictObject({
      v4PrefixMaskLen: z.number().int().min(0).max(32).optional(),
      v6PrefixMaskLen: z.number().int().min(0).max(128).optional(),
    })
    .optional(),
  queryParameterValueMatch: z
    .strictObject({
      descriptorValue: Name,
      descriptorKey: z.string().optional(),
      expectMatch: z.boolean().optional(),
      queryParameters: z.array(RateLimitQueryParameterMatcherSchema).min(1, 'needs at least one query parameter'),
    })
    .optional(),
  extension: notSupported(
    "Envoy's extension action needs a compiled descriptor-producer extension and its typed config; Gloo's API has no such action",
  ),
});
export type RateLimitAction = z.infer<typeof RateLimitActionSchema>;

/** Gloo's RateLimitActions: one Envoy rate_limits entry (RateLimitConfig raw.rateLimits, options.ratelimit.rateLimits). */
export const RateLimitActionsSchema = z.strictObject({
  actions: z.array(RateLimitActionSchema).optional(),
  setActions: z.array(RateLimitActionSchema).optional(),
  limit: z.strictObject({ dynamicMetadata: z.strictObject({ metadataKey: MetadataKeySchema }) }).optional(),
});
export type RateLimitActions = z.infer<typeof RateLimitActionsSchema>;

/** Gloo's SetDescriptor: a rule matched as a set of key/values, in any order, among a set-style descriptor's entries. */
export const RateLimitSetDescriptorSchema = z.strictObject({
  simpleDescriptors: z.array(z.strictObject({ key: Name, value: z.string().optional() })).optional(),
  rateLimit: RateLimitValueSchema.optional(),
  alwaysApply: z.boolean().optional(),
});
export type RateLimitSetDescriptor = z.infer<typeof RateLimitSetDescriptorSchema>;

export const RateLimitConfigSpecSchema = z.strictObject({
  raw: z.strictObject({
    descriptors: z.array(RateLimitDescriptorSchema).optional(),
    setDescriptors: z.array(RateLimitSetDescriptorSchema).optional(),
    rateLimits: z.array(RateLimitActionsSchema).optional(),
  }),
});
export type RateLimitConfigSpec = z.infer<typeof RateLimitConfigSpecSchema>;

/** Settings `ratelimit` (Gloo's ServiceSettings): the descriptors raw actions (options.ratelimit.rateLimits) count against. */
const RatelimitServiceSettingsSchema = z.strictObject({
  descriptors: z.array(RateLimitDescriptorSchema).optional(),
  setDescriptors: z.array(RateLimitSetDescriptorSchema).optional(),
});
