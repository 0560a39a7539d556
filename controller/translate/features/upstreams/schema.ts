// The Upstream options this feature renders beyond the upstream type (static / kube): client TLS, connection and
// HTTP protocol options, failover priorities, DNS, PROXY protocol and preconnecting, and the Gloo fields Legate
// refuses with a reason. controller/api/schemas.ts spreads UPSTREAM_OPTIONS into UpstreamSpecSchema.
import { z } from 'zod';
import {
  Duration,
  GrpcJsonTranscoderSchema,
  Name,
  ResourceRefSchema,
  SslParametersSchema,
  notSupported,
  protoEnum,
} from '../../../api/primitives.js';

/** UpstreamSslConfig (ssl.proto): TLS and mTLS from Envoy to the upstream. */
const UpstreamSslConfigSchema = z
  .strictObject({
    secretRef: ResourceRefSchema.optional(),
    sslFiles: z.strictObject({ tlsCert: z.string().optional(), tlsKey: z.string().optional(), rootCa: z.string().optional() }).optional(),
    sds: notSupported(
      "sds reads client certificates from Gloo's SDS server (a gRPC target in Gloo's Envoy bootstrap), which Legate's Envoy " +
        'does not have; put the certificate in a Secret and use secretRef',
    ),
    sni: z.string().optional(),
    verifySubjectAltName: z.array(z.string()).optional(),
    parameters: SslParametersSchema.optional(),
    alpnProtocols: z.array(z.string()).optional(),
    allowRenegotiation: z.boolean().optional(),
  })
  .refine((s) => !(s.secretRef && s.sslFiles), { message: 'set at most one of secretRef, sslFiles' });
export type UpstreamSslConfig = z.infer<typeof UpstreamSslConfigSchema>;

export const HEADERS_WITH_UNDERSCORES_ACTIONS = ['ALLOW', 'REJECT_REQUEST', 'DROP_HEADER'] as const;

/** ConnectionConfig (connection.proto), with Gloo 1.17's http1ProtocolOptions (protocol.proto Http1ProtocolOptions). */
const ConnectionConfigSchema = z.strictObject({
  maxRequestsPerConnection: z.number().int().min(0).optional(),
  connectTimeout: Duration.optional(),
  tcpKeepalive: z
    .strictObject({
      keepaliveProbes: z.number().int().min(0).optional(),
      keepaliveTime: Duration.optional(),
      keepaliveInterval: Duration.optional(),
    })
    .optional(),
  perConnectionBufferLimitBytes: z.number().int().min(0).optional(),
  commonHttpProtocolOptions: z
    .strictObject({
      idleTimeout: Duration.optional(),
      maxHeadersCount: z.number().int().min(0).optional(),
      maxStreamDuration: Duration.optional(),
      headersWithUnderscoresAction: protoEnum(HEADERS_WITH_UNDERSCORES_ACTIONS).optional(),
    })
    .optional(),
  http1ProtocolOptions: z
    .strictObject({
      enableTrailers: z.boolean().optional(),
      properCaseHeaderKeyFormat: z.boolean().optional(),
      preserveCaseHeaderKeyFormat: z.boolean().optional(),
      overrideStreamErrorOnInvalidHttpMessage: z.boolean().optional(),
    })
    .refine((h) => !(h.properCaseHeaderKeyFormat && h.preserveCaseHeaderKeyFormat), {
      message: 'set at most one of properCaseHeaderKeyFormat, preserveCaseHeaderKeyFormat',
    })
    .optional(),
});
export type ConnectionConfig = z.infer<typeof ConnectionConfigSchema>;

const Port = z.number().int().min(1).max(65535);

/** failover.proto LbEndpoint */
const FailoverEndpointSchema = z.strictObject({
  address: Name,
  port: Port,
  healthCheckConfig: z
    .strictObject({ portValue: z.number().int().min(0).max(65535).optional(), hostname: z.string().optional() })
    .optional(),
  // TLS of its own to this endpoint (a transport socket match), in place of the Upstream's sslConfig
  upstreamSslConfig: UpstreamSslConfigSchema.optional(),
  loadBalancingWeight: z.number().int().min(1).optional(),
});

/** failover.proto Failover: priority i+1 for prioritizedLocalities[i] (the upstream's own hosts are priority 0). */
const FailoverSchema = z.strictObject({
  prioritizedLocalities: z
    .array(
      z.strictObject({
        localityEndpoints: z
          .array(
            z.strictObject({
              locality: z
                .strictObject({ region: z.string().optional(), zone: z.string().optional(), subZone: z.string().optional() })
                .optional(),
              lbEndpoints: z.array(FailoverEndpointSchema).min(1, 'needs at least one endpoint'),
              loadBalancingWeight: z.number().int().min(1).optional(),
            }),
          )
          .min(1, 'needs at least one locality'),
      }),
    )
    .min(1, 'needs at least one prioritized locality'),
  policy: notSupported(
    "the failover policy orders localities relative to the proxy's own locality (Gloo Enterprise), and Legate's Envoy has " +
      'no locality; priorities follow the order of prioritizedLocalities',
  ),
});
export type Failover = z.infer<typeof FailoverSchema>;

/** HTTP/2 flow-control windows: Envoy takes 65535 (the HTTP/2 default) to 2^31-1. */
const Window = z.number().int().min(65535).max(2147483647);

const FUNCTIONS =
  "Gloo routes to an upstream's rest and grpc functions with its own transformation filter, which upstream Envoy does " +
  'not have; transcode JSON to gRPC with grpcJsonTranscoder';
/** `serviceSpec` of static, kube and pipe upstreams (Gloo's ServiceSpec: one plugin type) */
export const serviceSpecField = {
  serviceSpec: z
    .strictObject({
      // the routes to this upstream transcode JSON to its gRPC services (Envoy's gRPC-JSON transcoder, per route)
      grpcJsonTranscoder: GrpcJsonTranscoderSchema.optional(),
      rest: notSupported(FUNCTIONS),
      grpc: notSupported(FUNCTIONS),
      graphql: notSupported('a GraphQL schema on the upstream is served by a GraphQLApi in Legate'),
    })
    .optional(),
};

/** Gloo's other upstream types (the upstream_type oneof; aws and azure are features/functions'): each refused with why. */
export const OTHER_UPSTREAM_TYPES = {
  awsEc2: notSupported("EC2 upstreams need Gloo's EC2 discovery of instances by tag; Legate discovers Kubernetes Services only"),
  gcp: notSupported("Google Cloud Functions / Cloud Run upstreams need Gloo Enterprise's GCP authentication; Legate has none"),
  consul: notSupported('Consul upstreams need a Consul client for service discovery; Legate discovers Kubernetes Services only'),
  // a Unix domain socket (an @name is Linux's abstract namespace), Gloo's pipe.proto UpstreamSpec
  pipe: z.strictObject({ path: z.string().regex(/^[/@]/, 'must be an absolute socket path (or @name)'), ...serviceSpecField }).optional(),
};

export const PROTOCOL_SELECTIONS = ['USE_CONFIGURED_PROTOCOL', 'USE_DOWNSTREAM_PROTOCOL'] as const;

/** Upstream fields besides the upstream type, discoveryMetadata and loadBalancerConfig. */
export const UPSTREAM_OPTIONS = {
  sslConfig: UpstreamSslConfigSchema.optional(),
  useHttp2: z.boolean().optional(),
  connectionConfig: ConnectionConfigSchema.optional(),
  failover: FailoverSchema.optional(),
  protocolSelection: protoEnum(PROTOCOL_SELECTIONS).optional(),
  initialStreamWindowSize: Window.optional(),
  initialConnectionWindowSize: Window.optional(),
  maxConcurrentStreams: z.number().int().min(1).max(2147483647).optional(),
  overrideStreamErrorOnInvalidHttpMessage: z.boolean().optional(),
  proxyProtocolVersion: z.enum(['V1', 'V2']).optional(),
  dnsRefreshRate: Duration.refine((d) => !/^0+(\.0+)?(ms|s|m|h)$/.test(d), { message: 'must be at least 1ms' }).optional(),
  respectDnsTtl: z.boolean().optional(),
  // the upstream's hosts are an HTTP CONNECT proxy: requests are tunnelled to this host:port through it
  httpProxyHostname: z.string().min(1, 'must not be empty').optional(),
  // TLS to the host behind the proxy, inside the tunnel (sslConfig is TLS to the proxy)
  httpConnectSslConfig: UpstreamSslConfigSchema.optional(),
  // headers of the CONNECT request
  httpConnectHeaders: z.array(z.strictObject({ key: Name, value: z.string() })).optional(),
  preconnectPolicy: z
    .strictObject({
      perUpstreamPreconnectRatio: z.number().min(1).max(3).optional(),
      predictivePreconnectRatio: z.number().min(1).max(3).optional(),
    })
    .optional(),
  // Accepted and without effect, by design: Gloo only adds Istio's auto-mTLS transport socket match when its Istio
  // integration is on; Legate has no Istio integration, so every upstream already behaves as if this were true.
  disableIstioAutoMtls: z.boolean().optional(),
  ...OTHER_UPSTREAM_TYPES,
};
