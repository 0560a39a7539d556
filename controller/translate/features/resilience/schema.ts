// Upstream resilience options, Gloo's names: `healthChecks` (Envoy's active health checks as Gloo embeds
// them, solo.io.envoy.api.v2.core.HealthCheck), `outlierDetection`, `circuitBreakers` (also Settings
// `gloo.circuitBreakers`, the default), `ignoreHealthOnHostRemoval`. controller/api/schemas.ts composes them
// into UpstreamSpecSchema.
import { z } from 'zod';
import { Duration, ResourceRefSchema, notSupported, protoEnum } from '../../../api/primitives.js';

const UInt32 = z.number().int().min(0).max(4294967295);
const Percent = z.number().int().min(0, 'must be between 0 and 100').max(100, 'must be between 0 and 100');

/** Envoy's RequestMethod (Gloo's copy), the health check's HTTP method. */
export const HEALTH_CHECK_METHODS = [
  'METHOD_UNSPECIFIED',
  'GET',
  'HEAD',
  'POST',
  'PUT',
  'DELETE',
  'CONNECT',
  'OPTIONS',
  'TRACE',
  'PATCH',
] as const;

const PayloadSchema = z.strictObject({ text: z.string().regex(/^([0-9a-fA-F]{2})+$/, 'expected hex-encoded bytes, e.g. "000000FF"') });

const HttpHealthCheckSchema = z.strictObject({
  host: z.string().optional(),
  path: z.string().min(1, 'must not be empty'),
  serviceName: z.string().optional(),
  requestHeadersToAdd: z
    .array(
      z.strictObject({
        header: z.strictObject({ key: z.string().min(1, 'must not be empty'), value: z.string().optional() }).optional(),
        headerSecretRef: ResourceRefSchema.optional(),
        append: z.boolean().optional(),
      }),
    )
    .max(1000)
    .optional(),
  requestHeadersToRemove: z.array(z.string().min(1, 'must not be empty')).optional(),
  useHttp2: z.boolean().optional(),
  expectedStatuses: z
    .array(
      z
        .strictObject({ start: z.number().int().min(100).max(599), end: z.number().int().min(101).max(600) })
        .refine((r) => r.start < r.end, { message: 'start must be below end (the range is half-open: [start, end))' }),
    )
    .optional(),
  responseAssertions: notSupported("Gloo Enterprise's advanced HTTP health checker is not in upstream Envoy; use expectedStatuses"),
  method: protoEnum(HEALTH_CHECK_METHODS)
    .refine((m) => m !== 'CONNECT' && m !== 6, { message: 'CONNECT cannot be a health check method' })
    .optional(),
});

export const HealthCheckSchema = z
  .strictObject({
    timeout: Duration,
    interval: Duration,
    initialJitter: Duration.optional(),
    intervalJitter: Duration.optional(),
    intervalJitterPercent: UInt32.optional(),
    unhealthyThreshold: UInt32,
    healthyThreshold: UInt32,
    reuseConnection: z.boolean().optional(),
    httpHealthCheck: HttpHealthCheckSchema.optional(),
    tcpHealthCheck: z.strictObject({ send: PayloadSchema.optional(), receive: z.array(PayloadSchema).optional() }).optional(),
    grpcHealthCheck: z.strictObject({ serviceName: z.string().optional(), authority: z.string().optional() }).optional(),
    customHealthCheck: notSupported("Legate renders Envoy's http, tcp and grpc health checkers, not custom ones; use one of those"),
    noTrafficInterval: Duration.optional(),
    unhealthyInterval: Duration.optional(),
    unhealthyEdgeInterval: Duration.optional(),
    healthyEdgeInterval: Duration.optional(),
    eventLogPath: z.string().optional(),
    alwaysLogHealthCheckFailures: z.boolean().optional(),
  })
  .refine(
    (h) => [h.httpHealthCheck, h.tcpHealthCheck, h.grpcHealthCheck, h.customHealthCheck].filter((c) => c !== undefined).length === 1,
    {
      message: 'set exactly one of httpHealthCheck, tcpHealthCheck, grpcHealthCheck',
    },
  );
export type HealthCheck = z.infer<typeof HealthCheckSchema>;

/** Envoy's OutlierDetection, as Gloo embeds it (solo.io.envoy.api.v2.cluster.OutlierDetection). */
export const OutlierDetectionSchema = z.strictObject({
  consecutive5xx: UInt32.optional(),
  interval: Duration.optional(),
  baseEjectionTime: Duration.optional(),
  maxEjectionPercent: Percent.optional(),
  enforcingConsecutive5xx: Percent.optional(),
  enforcingSuccessRate: Percent.optional(),
  successRateMinimumHosts: UInt32.optional(),
  successRateRequestVolume: UInt32.optional(),
  successRateStdevFactor: UInt32.optional(),
  consecutiveGatewayFailure: UInt32.optional(),
  enforcingConsecutiveGatewayFailure: Percent.optional(),
  splitExternalLocalOriginErrors: z.boolean().optional(),
  consecutiveLocalOriginFailure: UInt32.optional(),
  enforcingConsecutiveLocalOriginFailure: Percent.optional(),
  enforcingLocalOriginSuccessRate: Percent.optional(),
  failurePercentageThreshold: Percent.optional(),
  enforcingFailurePercentage: Percent.optional(),
  enforcingFailurePercentageLocalOrigin: Percent.optional(),
  failurePercentageMinimumHosts: UInt32.optional(),
  failurePercentageRequestVolume: UInt32.optional(),
});
export type OutlierDetection = z.infer<typeof OutlierDetectionSchema>;

/** Gloo's CircuitBreakerConfig: Envoy's thresholds at the default priority. */
export const CircuitBreakerConfigSchema = z.strictObject({
  maxConnections: UInt32.optional(),
  maxPendingRequests: UInt32.optional(),
  maxRequests: UInt32.optional(),
  maxRetries: UInt32.optional(),
});
export type CircuitBreakerConfig = z.infer<typeof CircuitBreakerConfigSchema>;

/** The Upstream fields of this feature (spread into UpstreamSpecSchema). */
export const resilienceUpstreamOptions = {
  healthChecks: z.array(HealthCheckSchema).optional(),
  outlierDetection: OutlierDetectionSchema.optional(),
  circuitBreakers: CircuitBreakerConfigSchema.optional(),
  ignoreHealthOnHostRemoval: z.boolean().optional(),
};

/** A static host's `healthCheckConfig` (spread into the static host schema). */
export const resilienceStaticHostOptions = {
  healthCheckConfig: notSupported(
    "a per-host health check path and method are read by Gloo's own health checker (io.solo.health_checkers.advanced_http), " +
      'which upstream Envoy does not have; set healthChecks[].httpHealthCheck.path for every host',
  ),
};
