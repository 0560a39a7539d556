// Tracing options: `options.tracing` on routes (Gloo's RouteTracingSettings: the span's name and sampling
// percentages) and `httpConnectionManagerSettings.tracing` of a Gateway's httpGateway.options (Gloo's
// ListenerTracingSettings: sampling, tags and the provider that exports spans to a collector).
import { z } from 'zod';
import { Name, Percentage, ResourceRefSchema, notSupported, protoEnum } from '../../../api/primitives.js';

const TracePercentagesSchema = z.strictObject({
  clientSamplePercentage: Percentage.optional(),
  randomSamplePercentage: Percentage.optional(),
  overallSamplePercentage: Percentage.optional(),
});

const RouteTracingSchema = z.strictObject({
  routeDescriptor: z.string().optional(),
  tracePercentages: TracePercentagesSchema.optional(),
  propagate: z.boolean().optional(),
});
export type RouteTracing = z.infer<typeof RouteTracingSchema>;

export const tracingRouteOptions = {
  tracing: RouteTracingSchema.optional(),
};

/** Zipkin's CollectorEndpointVersion, in Gloo's enum order (0 is Zipkin's v1 API, which Envoy no longer has). */
export const ZIPKIN_VERSIONS = ['DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE', 'HTTP_JSON', 'HTTP_PROTO'] as const;

const oneCollector = (c: { collectorUpstreamRef?: unknown; clusterName?: unknown }) =>
  (c.collectorUpstreamRef !== undefined ? 1 : 0) + (c.clusterName !== undefined ? 1 : 0) === 1;
const ONE_COLLECTOR = { message: 'set exactly one of collectorUpstreamRef, clusterName' };

/** Gloo's trace/v3 ZipkinConfig. */
const ZipkinConfigSchema = z
  .strictObject({
    collectorUpstreamRef: ResourceRefSchema.optional(),
    clusterName: Name.optional(),
    collectorEndpoint: Name,
    traceId128bit: z.boolean().optional(),
    sharedSpanContext: z.boolean().optional(),
    collectorEndpointVersion: protoEnum(ZIPKIN_VERSIONS)
      .refine((v) => v !== 0 && v !== 'DEPRECATED_AND_UNAVAILABLE_DO_NOT_USE', {
        message: "Zipkin's v1 API is not available in Envoy; use HTTP_JSON or HTTP_PROTO",
      })
      .optional(),
  })
  .refine(oneCollector, ONE_COLLECTOR);

/** Gloo's trace/v3 OpenTelemetryConfig (OTLP over gRPC). */
const OpenTelemetryConfigSchema = z
  .strictObject({
    collectorUpstreamRef: ResourceRefSchema.optional(),
    clusterName: Name.optional(),
    serviceName: z.string().optional(),
    grpcService: z.strictObject({ authority: z.string().optional() }).optional(),
  })
  .refine(oneCollector, ONE_COLLECTOR);

/** Gloo's trace/v3 DatadogConfig. */
const DatadogConfigSchema = z
  .strictObject({
    collectorUpstreamRef: ResourceRefSchema.optional(),
    clusterName: Name.optional(),
    serviceName: Name,
  })
  .refine(oneCollector, ONE_COLLECTOR);

/** Gloo's TracingTagMetadata kinds: request (dynamic) metadata, or the upstream endpoint's (Envoy's host metadata). */
export const TRACING_METADATA_KINDS = ['REQUEST', 'ENDPOINT'] as const;

/** Gloo's TracingTagMetadata: a tag whose value is read from metadata. */
const TracingTagMetadataSchema = z.strictObject({
  tag: Name,
  kind: protoEnum(TRACING_METADATA_KINDS).optional(),
  value: z.strictObject({
    // the filter namespace (Envoy's MetadataKey.key), e.g. envoy.lb
    namespace: Name,
    key: Name,
    // splits `key` into a path into nested fields
    nestedFieldDelimiter: z.string().optional(),
  }),
  defaultValue: z.string().optional(),
});

/** Gloo's ListenerTracingSettings. */
const ListenerTracingSchema = z
  .strictObject({
    requestHeadersForTags: z.array(Name).optional(),
    verbose: z.boolean().optional(),
    tracePercentages: TracePercentagesSchema.optional(),
    environmentVariablesForTags: z.array(z.strictObject({ tag: Name, name: Name, defaultValue: z.string().optional() })).optional(),
    literalsForTags: z.array(z.strictObject({ tag: Name, value: z.string() })).optional(),
    metadataForTags: z.array(TracingTagMetadataSchema).optional(),
    spawnUpstreamSpan: z.boolean().optional(),
    zipkinConfig: ZipkinConfigSchema.optional(),
    datadogConfig: DatadogConfigSchema.optional(),
    openTelemetryConfig: OpenTelemetryConfigSchema.optional(),
    openCensusConfig: notSupported('Envoy removed the OpenCensus tracer; use openTelemetryConfig'),
  })
  .refine((t) => [t.zipkinConfig, t.datadogConfig, t.openTelemetryConfig].filter((p) => p !== undefined).length <= 1, {
    message: 'set at most one of zipkinConfig, datadogConfig, openTelemetryConfig',
  });
export type ListenerTracing = z.infer<typeof ListenerTracingSchema>;

/** `httpConnectionManagerSettings` fields this feature owns (composed with the hcm feature's in controller/api/schemas.ts). */
export const tracingHcmSettings = {
  tracing: ListenerTracingSchema.optional(),
};
