// A Gateway's listener-level fields (Gloo's ListenerOptions, RouteConfigurationOptions and useProxyProto): access logs,
// PROXY protocol, buffer limits, socket options and connection balancing on the Envoy listener, and the RouteConfiguration.
import { z } from 'zod';

import { notSupported, protoEnum } from '../../../api/primitives.js';

const UInt32 = z.number().int().min(0).max(4294967295);

/** Envoy's RuntimeUInt32 (Gloo passes it through): a value a runtime key may override. */
const RuntimeUInt32Schema = z.strictObject({ defaultValue: UInt32.optional(), runtimeKey: z.string().min(1, 'must not be empty') });

const ComparisonFilterSchema = z.strictObject({ op: protoEnum(['EQ', 'GE', 'LE']).optional(), value: RuntimeUInt32Schema });

const HeaderMatcherSchema = z
  .strictObject({
    name: z.string().min(1, 'must not be empty'),
    exactMatch: z.string().optional(),
    prefixMatch: z.string().min(1, 'must not be empty').optional(),
    suffixMatch: z.string().min(1, 'must not be empty').optional(),
    containsMatch: z.string().min(1, 'must not be empty').optional(),
    presentMatch: z.boolean().optional(),
    safeRegexMatch: z.strictObject({ regex: z.string().min(1, 'must not be empty'), googleRe2: z.unknown().optional() }).optional(),
    rangeMatch: z.strictObject({ start: z.number().int(), end: z.number().int() }).optional(),
    invertMatch: z.boolean().optional(),
  })
  .refine(
    (h) =>
      [h.exactMatch, h.prefixMatch, h.suffixMatch, h.containsMatch, h.presentMatch, h.safeRegexMatch, h.rangeMatch].filter(
        (v) => v !== undefined,
      ).length <= 1,
    { message: 'set at most one of exactMatch, prefixMatch, suffixMatch, containsMatch, presentMatch, safeRegexMatch, rangeMatch' },
  );

/** Gloo's response flags (als.proto ResponseFlagFilter), which Envoy's filter takes as they are. */
export const RESPONSE_FLAGS = [
  'LH', 'UH', 'UT', 'LR', 'UR', 'UF', 'UC', 'UO', 'NR', 'DI', 'FI', 'RL', 'UAEX', 'RLSE', 'DC', 'URX', 'SI', 'IH', 'DPE', 'UMSDR', 'RFCF',
  'NFCF', 'DT', 'UPE', 'NC', 'OM',
] as const; // prettier-ignore

export const GRPC_STATUSES = [
  'OK', 'CANCELED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS',
  'UNAUTHENTICATED',
] as const; // prettier-ignore

export interface AccessLogFilter {
  statusCodeFilter?: { comparison: z.infer<typeof ComparisonFilterSchema> };
  durationFilter?: { comparison: z.infer<typeof ComparisonFilterSchema> };
  notHealthCheckFilter?: Record<string, never>;
  traceableFilter?: Record<string, never>;
  runtimeFilter?: {
    runtimeKey: string;
    percentSampled?: { numerator?: number; denominator?: 'HUNDRED' | 'TEN_THOUSAND' | 'MILLION' | number };
    useIndependentRandomness?: boolean;
  };
  andFilter?: { filters: AccessLogFilter[] };
  orFilter?: { filters: AccessLogFilter[] };
  headerFilter?: { header: z.infer<typeof HeaderMatcherSchema> };
  responseFlagFilter?: { flags?: (typeof RESPONSE_FLAGS)[number][] };
  grpcStatusFilter?: { statuses?: ((typeof GRPC_STATUSES)[number] | number)[]; exclude?: boolean };
}

/** Gloo's AccessLogFilter: exactly one filter, the same ones as Envoy's (and/or nest). */
export const AccessLogFilterSchema: z.ZodType<AccessLogFilter> = z.lazy(() =>
  z
    .strictObject({
      statusCodeFilter: z.strictObject({ comparison: ComparisonFilterSchema }).optional(),
      durationFilter: z.strictObject({ comparison: ComparisonFilterSchema }).optional(),
      notHealthCheckFilter: z.strictObject({}).optional(),
      traceableFilter: z.strictObject({}).optional(),
      runtimeFilter: z
        .strictObject({
          runtimeKey: z.string().min(1, 'must not be empty'),
          percentSampled: z
            .strictObject({ numerator: UInt32.optional(), denominator: protoEnum(['HUNDRED', 'TEN_THOUSAND', 'MILLION']).optional() })
            .optional(),
          useIndependentRandomness: z.boolean().optional(),
        })
        .optional(),
      andFilter: z.strictObject({ filters: z.array(AccessLogFilterSchema).min(2, 'an andFilter needs at least 2 filters') }).optional(),
      orFilter: z.strictObject({ filters: z.array(AccessLogFilterSchema).min(2, 'an orFilter needs at least 2 filters') }).optional(),
      headerFilter: z.strictObject({ header: HeaderMatcherSchema }).optional(),
      responseFlagFilter: z.strictObject({ flags: z.array(z.enum(RESPONSE_FLAGS)).optional() }).optional(),
      grpcStatusFilter: z
        .strictObject({
          statuses: z.array(z.union([z.enum(GRPC_STATUSES), z.number().int().min(0).max(16)])).optional(),
          exclude: z.boolean().optional(),
        })
        .optional(),
    })
    .refine((f) => Object.values(f).filter((v) => v !== undefined).length === 1, { message: 'set exactly one filter' }),
);

/** A JSON access log format: Envoy's json_format Struct, values are strings with command operators, or nested objects. */
type JsonFormat = { [key: string]: string | number | boolean | JsonFormat };
const JsonFormatSchema: z.ZodType<JsonFormat> = z.lazy(() =>
  z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), JsonFormatSchema])),
);

const AccessLogSchema = z
  .strictObject({
    fileSink: z
      .strictObject({
        path: z.string().min(1, 'must not be empty'),
        stringFormat: z.string().optional(),
        jsonFormat: JsonFormatSchema.optional(),
      })
      .refine((f) => f.stringFormat === undefined || f.jsonFormat === undefined, { message: 'set at most one of stringFormat, jsonFormat' })
      .optional(),
    grpcService: z
      .strictObject({
        logName: z.string().min(1, 'must not be empty'),
        /** an Envoy cluster: one Legate renders for an Upstream (`<name>_<namespace>`) */
        staticClusterName: z.string().min(1, 'must not be empty'),
        additionalRequestHeadersToLog: z.array(z.string()).optional(),
        additionalResponseHeadersToLog: z.array(z.string()).optional(),
        additionalResponseTrailersToLog: z.array(z.string()).optional(),
        filterStateObjectsToLog: z.array(z.string()).optional(),
      })
      .optional(),
    filter: AccessLogFilterSchema.optional(),
  })
  .refine((a) => (a.fileSink ? 1 : 0) + (a.grpcService ? 1 : 0) === 1, { message: 'set exactly one of fileSink, grpcService' });
export type AccessLog = z.infer<typeof AccessLogSchema>;

export const AccessLoggingServiceSchema = z.strictObject({ accessLog: z.array(AccessLogSchema).optional() });

/** solo-kit's SocketOption (Envoy's, v2): a raw setsockopt on the listener socket. */
const SocketOptionSchema = z
  .strictObject({
    description: z.string().optional(),
    level: z.number().int(),
    name: z.number().int(),
    intValue: z.number().int().optional(),
    /** base64, as protobuf JSON bytes */
    bufValue: z
      .string()
      .regex(/^(?:[0-9a-zA-Z+/]{4})*(?:[0-9a-zA-Z+/]{2}==|[0-9a-zA-Z+/]{3}=)?$/, 'expected base64 bytes')
      .optional(),
    state: protoEnum(['STATE_PREBIND', 'STATE_BOUND', 'STATE_LISTENING']).optional(),
  })
  .refine((s) => (s.intValue === undefined ? 0 : 1) + (s.bufValue === undefined ? 0 : 1) === 1, {
    message: 'set exactly one of intValue, bufValue',
  });

/** Gloo's ProxyProtocol (options/proxy_protocol): Envoy's proxy_protocol listener filter. */
const ProxyProtocolSchema = z.strictObject({
  rules: z
    .array(
      z.strictObject({
        tlvType: z.number().int().min(0).max(255),
        onTlvPresent: z.strictObject({ metadataNamespace: z.string().optional(), key: z.string().min(1, 'must not be empty') }).optional(),
      }),
    )
    .optional(),
  allowRequestsWithoutProxyProtocol: z.boolean().optional(),
});

export const ListenerOptionsSchema = z.strictObject({
  accessLoggingService: AccessLoggingServiceSchema.optional(),
  extensions: notSupported("Gloo's opaque extensions feed Gloo's compiled-in plugins; Legate has none"),
  perConnectionBufferLimitBytes: UInt32.optional(),
  socketOptions: z.array(SocketOptionSchema).optional(),
  proxyProtocol: ProxyProtocolSchema.optional(),
  connectionBalanceConfig: z.strictObject({ exactBalance: z.strictObject({}).optional() }).optional(),
  listenerAccessLoggingService: AccessLoggingServiceSchema.optional(),
});
export type ListenerOptions = z.infer<typeof ListenerOptionsSchema>;

/** Gloo's RouteConfigurationOptions: the Gateway's Envoy RouteConfiguration. */
export const RouteConfigurationOptionsSchema = z.strictObject({
  maxDirectResponseBodySizeBytes: UInt32.optional(),
  mostSpecificHeaderMutationsWins: z.boolean().optional(),
});

/** The Gateway spec fields the listener feature renders. */
export const listenerGatewayFields = {
  /** the proxy_protocol listener filter in front of everything else on the listener */
  useProxyProto: z.boolean().optional(),
  options: ListenerOptionsSchema.optional(),
  routeOptions: RouteConfigurationOptionsSchema.optional(),
};
