// `httpGateway.options` of a Gateway (Gloo's HttpListenerOptions): the HTTP connection manager settings,
// and the listener-wide filters (gzip, healthCheck, grpcWeb, buffer, httpLocalRatelimit). `csrf` is the cors
// feature's (composed next to these in controller/api/schemas.ts).
import { z } from 'zod';

import { Duration, GrpcJsonTranscoderSchema, Name, notSupported, protoEnum, ResourceRefSchema } from '../../../api/primitives.js';

const uint32 = z.number().int().min(0).max(4294967295);

export const FORWARD_CLIENT_CERT_DETAILS = ['SANITIZE', 'FORWARD_ONLY', 'APPEND_FORWARD', 'SANITIZE_SET', 'ALWAYS_FORWARD_ONLY'] as const;
export const SERVER_HEADER_TRANSFORMATIONS = ['OVERWRITE', 'APPEND_IF_ABSENT', 'PASS_THROUGH'] as const;
export const HEADERS_WITH_UNDERSCORES_ACTIONS = ['ALLOW', 'REJECT_CLIENT_REQUEST', 'DROP_HEADER'] as const;
export const CODEC_TYPES = ['AUTO', 'HTTP1', 'HTTP2'] as const;
export const PATH_WITH_ESCAPED_SLASHES_ACTIONS = [
  'IMPLEMENTATION_SPECIFIC_DEFAULT',
  'KEEP_UNCHANGED',
  'REJECT_REQUEST',
  'UNESCAPE_AND_REDIRECT',
  'UNESCAPE_AND_FORWARD',
] as const;
export const GZIP_COMPRESSION_LEVELS = ['DEFAULT', 'BEST', 'SPEED'] as const;
export const GZIP_COMPRESSION_STRATEGIES = ['DEFAULT', 'FILTERED', 'HUFFMAN', 'RLE'] as const;

const UpgradeSchema = z
  .strictObject({
    websocket: z.strictObject({ enabled: z.boolean().optional() }).optional(),
    connect: z.strictObject({ enabled: z.boolean().optional() }).optional(),
  })
  .refine((u) => (u.websocket ? 1 : 0) + (u.connect ? 1 : 0) === 1, { message: 'set exactly one of websocket, connect' });

const CidrRangeSchema = z.strictObject({ addressPrefix: Name, prefixLen: z.number().int().min(0).max(128).optional() });

/** Gloo's hcm.proto HttpConnectionManagerSettings (its `tracing` is the tracing feature's, composed in controller/api/schemas.ts). */
export const HttpConnectionManagerSettingsSchema = z.strictObject({
  skipXffAppend: z.boolean().optional(),
  via: z.string().optional(),
  xffNumTrustedHops: uint32.optional(),
  useRemoteAddress: z.boolean().optional(),
  generateRequestId: z.boolean().optional(),
  proxy100Continue: z.boolean().optional(),
  streamIdleTimeout: Duration.optional(),
  idleTimeout: Duration.optional(),
  maxRequestHeadersKb: z.number().int().min(1).max(8192).optional(),
  requestTimeout: Duration.optional(),
  requestHeadersTimeout: Duration.optional(),
  drainTimeout: Duration.optional(),
  delayedCloseTimeout: Duration.optional(),
  serverName: z.string().optional(),
  stripAnyHostPort: z.boolean().optional(),
  acceptHttp10: z.boolean().optional(),
  defaultHostForHttp10: z.string().optional(),
  allowChunkedLength: z.boolean().optional(),
  enableTrailers: z.boolean().optional(),
  properCaseHeaderKeyFormat: z.boolean().optional(),
  preserveCaseHeaderKeyFormat: z.boolean().optional(),
  forwardClientCertDetails: protoEnum(FORWARD_CLIENT_CERT_DETAILS).optional(),
  setCurrentClientCertDetails: z
    .strictObject({
      subject: z.boolean().optional(),
      cert: z.boolean().optional(),
      chain: z.boolean().optional(),
      dns: z.boolean().optional(),
      uri: z.boolean().optional(),
    })
    .optional(),
  preserveExternalRequestId: z.boolean().optional(),
  upgrades: z.array(UpgradeSchema).optional(),
  maxConnectionDuration: Duration.optional(),
  maxStreamDuration: Duration.optional(),
  maxHeadersCount: z.number().int().min(1).optional(),
  headersWithUnderscoresAction: protoEnum(HEADERS_WITH_UNDERSCORES_ACTIONS).optional(),
  maxRequestsPerConnection: uint32.optional(),
  serverHeaderTransformation: protoEnum(SERVER_HEADER_TRANSFORMATIONS).optional(),
  pathWithEscapedSlashesAction: protoEnum(PATH_WITH_ESCAPED_SLASHES_ACTIONS).optional(),
  codecType: protoEnum(CODEC_TYPES).optional(),
  mergeSlashes: z.boolean().optional(),
  normalizePath: z.boolean().optional(),
  uuidRequestIdConfig: z
    .strictObject({ packTraceReason: z.boolean().optional(), useRequestIdForTraceSampling: z.boolean().optional() })
    .optional(),
  http2ProtocolOptions: z
    .strictObject({
      maxConcurrentStreams: z.number().int().min(1).max(2147483647).optional(),
      initialStreamWindowSize: z.number().int().min(65535).max(2147483647).optional(),
      initialConnectionWindowSize: z.number().int().min(65535).max(2147483647).optional(),
      overrideStreamErrorOnInvalidHttpMessage: z.boolean().optional(),
    })
    .optional(),
  internalAddressConfig: z
    .strictObject({ unixSockets: z.boolean().optional(), cidrRanges: z.array(CidrRangeSchema).optional() })
    .optional(),
  appendXForwardedPort: z.boolean().optional(),
  earlyHeaderManipulation: z
    .strictObject({
      headersToAdd: z
        .array(
          z
            .strictObject({
              header: z.strictObject({ key: Name, value: z.string().optional() }).optional(),
              headerSecretRef: ResourceRefSchema.optional(),
              append: z.boolean().optional(),
            })
            .refine((o) => (o.header ? 1 : 0) + (o.headerSecretRef ? 1 : 0) === 1, {
              message: 'set exactly one of header, headerSecretRef',
            }),
        )
        .optional(),
      headersToRemove: z.array(Name).optional(),
    })
    .optional(),
});
export type HttpConnectionManagerSettings = z.infer<typeof HttpConnectionManagerSettingsSchema>;

/** Gloo's copy of Envoy's v2 Gzip filter (rendered as the compressor filter with gzip). */
const GzipSchema = z.strictObject({
  memoryLevel: z.number().int().min(1).max(9).optional(),
  contentLength: z.number().int().min(30).optional(),
  compressionLevel: protoEnum(GZIP_COMPRESSION_LEVELS).optional(),
  compressionStrategy: protoEnum(GZIP_COMPRESSION_STRATEGIES).optional(),
  contentType: z.array(Name).max(50).optional(),
  disableOnEtagHeader: z.boolean().optional(),
  removeAcceptEncodingHeader: z.boolean().optional(),
  windowBits: z.number().int().min(9).max(15).optional(),
});
export type Gzip = z.infer<typeof GzipSchema>;

/** Gloo's TokenBucket (local_ratelimit.proto). */
const TokenBucketSchema = z.strictObject({
  maxTokens: z.number().int().min(1).max(4294967295),
  tokensPerFill: z.number().int().min(1).max(4294967295).optional(),
  fillInterval: Duration,
});

/** Gloo's connection_limit.proto ConnectionLimit (Envoy's connection_limit network filter, before the HCM). */
const ConnectionLimitSchema = z.strictObject({
  maxActiveConnections: z.number().int().min(1, 'must be at least 1').max(4294967295),
  delayBeforeClose: Duration.optional(),
});

/** Gloo's stateful_session.proto StatefulSession (Envoy's stateful_session filter): the upstream host kept in a cookie or header. */
const StatefulSessionSchema = z
  .strictObject({
    cookieBased: z
      .strictObject({
        cookie: z.strictObject({ name: Name, ttl: Duration.optional(), path: z.string().optional() }),
      })
      .optional(),
    headerBased: z.strictObject({ headerName: Name }).optional(),
    strict: z.boolean().optional(),
  })
  .refine((s) => (s.cookieBased ? 1 : 0) + (s.headerBased ? 1 : 0) === 1, { message: 'set exactly one of cookieBased, headerBased' });

/** Gloo's router.proto Router: settings of Envoy's router filter. */
const RouterSchema = z.strictObject({
  suppressEnvoyHeaders: z.boolean().optional(),
  dynamicStats: z.boolean().optional(),
});

const NOT_ENTERPRISE = 'a Gloo Enterprise listener option Legate does not render on a listener';

/** `httpGateway.options` fields this feature renders or refuses. */
export const hcmHttpListenerOptions = {
  httpConnectionManagerSettings: HttpConnectionManagerSettingsSchema.optional(),
  gzip: GzipSchema.optional(),
  healthCheck: z.strictObject({ path: z.string().startsWith('/', 'must start with /') }).optional(),
  grpcWeb: z.strictObject({ disable: z.boolean().optional() }).optional(),
  buffer: z.strictObject({ maxRequestBytes: z.number().int().min(1).max(4294967295) }).optional(),
  httpLocalRatelimit: z
    .strictObject({
      defaultLimit: TokenBucketSchema.optional(),
      localRateLimitPerDownstreamConnection: z.boolean().optional(),
      enableXRatelimitHeaders: z.boolean().optional(),
    })
    .optional(),
  extensions: notSupported('Gloo plugin extensions are opaque; Legate has none to pass them to'),
  waf: notSupported(`${NOT_ENTERPRISE} (ModSecurity WAF)`),
  dlp: notSupported(`${NOT_ENTERPRISE} (data loss prevention)`),
  grpcJsonTranscoder: GrpcJsonTranscoderSchema.optional(),
  proxyLatency: notSupported(`${NOT_ENTERPRISE} (proxy latency)`),
  caching: notSupported(`${NOT_ENTERPRISE} (caching server)`),
  tap: notSupported(
    "Gloo's tap sinks stream to a tap server over gRPC or HTTP; upstream Envoy's tap filter has no HTTP sink and " +
      'its gRPC sink is not implemented (its sinks are files, the admin endpoint and UDP)',
  ),
  statefulSession: StatefulSessionSchema.optional(),
  headerValidationSettings: notSupported('header validation settings are not rendered yet'),
  leftmostXffAddress: notSupported(`${NOT_ENTERPRISE} (leftmost X-Forwarded-For address)`),
  router: RouterSchema.optional(),
  sanitizeClusterHeader: notSupported(`${NOT_ENTERPRISE} (sanitize cluster header)`),
  extProc: notSupported('a listener-wide extProc is not rendered; use Settings extProc'),
  connectionLimit: ConnectionLimitSchema.optional(),
  networkLocalRatelimit: TokenBucketSchema.optional(),
  disableExtProc: notSupported('a listener-wide extProc switch is not rendered; use Settings extProc'),
};
