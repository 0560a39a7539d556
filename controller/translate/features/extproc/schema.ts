// Gloo's extProc (extproc.options.gloo.solo.io): Settings `extProc` puts a user's external processing
// server on every HTTP connection manager; a virtual host's or route's `extProc` turns it off there or
// overrides part of it.
import { z } from 'zod';
import {
  DURATION_PATTERN,
  Duration,
  FilterStageSchema,
  Name,
  ResourceRefSchema,
  notSupported,
  protoEnum,
} from '../../../api/primitives.js';

const HEADER_SEND_MODES = ['DEFAULT', 'SEND', 'SKIP'] as const;
const BODY_SEND_MODES = ['NONE', 'STREAMED', 'BUFFERED', 'BUFFERED_PARTIAL'] as const;
export { BODY_SEND_MODES, HEADER_SEND_MODES };

/** Envoy's ProcessingMode, as Gloo copies it. */
const ProcessingModeSchema = z.strictObject({
  requestHeaderMode: protoEnum(HEADER_SEND_MODES).optional(),
  responseHeaderMode: protoEnum(HEADER_SEND_MODES).optional(),
  requestBodyMode: protoEnum(BODY_SEND_MODES).optional(),
  responseBodyMode: protoEnum(BODY_SEND_MODES).optional(),
  requestTrailerMode: protoEnum(HEADER_SEND_MODES).optional(),
  responseTrailerMode: protoEnum(HEADER_SEND_MODES).optional(),
});
export type ProcessingMode = z.infer<typeof ProcessingModeSchema>;

const GrpcServiceSchema = z.strictObject({
  /** the Upstream serving envoy.service.ext_proc.v3.ExternalProcessor (it must speak HTTP/2: useHttp2) */
  extProcServerRef: ResourceRefSchema,
  authority: z.string().optional(),
  retryPolicy: z
    .strictObject({
      retryBackOff: z.strictObject({ baseInterval: Duration, maxInterval: Duration.optional() }).optional(),
      numRetries: z.number().int().min(0).max(4294967295).optional(),
    })
    .optional(),
  timeout: Duration.optional(),
  initialMetadata: z.array(z.strictObject({ key: Name, value: z.string() })).optional(),
});
export type ExtProcGrpcService = z.infer<typeof GrpcServiceSchema>;

/** Gloo's copy of Envoy's StringMatcher: exactly one pattern. */
const StringMatcherSchema = z
  .strictObject({
    exact: z.string().optional(),
    prefix: z.string().min(1, 'must not be empty').optional(),
    suffix: z.string().min(1, 'must not be empty').optional(),
    contains: z.string().min(1, 'must not be empty').optional(),
    safeRegex: z.strictObject({ googleRe2: z.strictObject({}).optional(), regex: z.string().min(1, 'must not be empty') }).optional(),
    ignoreCase: z.boolean().optional(),
  })
  .refine((m) => [m.exact, m.prefix, m.suffix, m.contains, m.safeRegex].filter((p) => p !== undefined).length === 1, {
    message: 'set exactly one of exact, prefix, suffix, contains, safeRegex',
  });
export type ExtProcStringMatcher = z.infer<typeof StringMatcherSchema>;
const ListStringMatcherSchema = z.strictObject({ patterns: z.array(StringMatcherSchema).min(1, 'needs at least one pattern') });

const RegexMatcherSchema = z.strictObject({ googleRe2: z.strictObject({}).optional(), regex: z.string().min(1, 'must not be empty') });

const ASYNC_MODE = "Envoy's ext_proc has no asynchronous mode (Gloo documents asyncMode as not implemented); leave it unset or false";
const asyncMode = z
  .boolean()
  .refine((v) => !v, { message: `NotSupported: ${ASYNC_MODE}` })
  .optional();
const UNIT_SECONDS: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600 };
const timeoutUpTo1h = Duration.refine(
  (d) => {
    const m = DURATION_PATTERN.exec(d);
    return !m || Number(m[1]) * (UNIT_SECONDS[m[3] ?? 's'] ?? 1) <= 3600;
  },
  { message: 'must be at most 3600s' },
);

/** Settings `extProc` (Gloo's extproc.Settings). */
export const ExtProcSettingsSchema = z.strictObject({
  grpcService: GrpcServiceSchema,
  filterStage: FilterStageSchema,
  failureModeAllow: z.boolean().optional(),
  processingMode: ProcessingModeSchema.optional(),
  asyncMode,
  requestAttributes: z.array(Name).optional(),
  responseAttributes: z.array(Name).optional(),
  messageTimeout: timeoutUpTo1h.optional(),
  statPrefix: z.string().optional(),
  mutationRules: z
    .strictObject({
      allowAllRouting: z.boolean().optional(),
      allowEnvoy: z.boolean().optional(),
      disallowSystem: z.boolean().optional(),
      disallowAll: z.boolean().optional(),
      allowExpression: RegexMatcherSchema.optional(),
      disallowExpression: RegexMatcherSchema.optional(),
      disallowIsError: z.boolean().optional(),
    })
    .optional(),
  maxMessageTimeout: timeoutUpTo1h.optional(),
  disableClearRouteCache: z.boolean().optional(),
  forwardRules: z
    .strictObject({ allowedHeaders: ListStringMatcherSchema.optional(), disallowedHeaders: ListStringMatcherSchema.optional() })
    .optional(),
  filterMetadata: z.record(z.string(), z.unknown()).optional(),
  allowModeOverride: z.boolean().optional(),
  metadataContextNamespaces: z.array(Name).optional(),
  typedMetadataContextNamespaces: z.array(Name).optional(),
});
export type ExtProcSettings = z.infer<typeof ExtProcSettingsSchema>;

const OVERRIDE_ATTRIBUTES = 'Envoy ignores request and response attributes in a per-route override; set them in Settings extProc';

/** A virtual host's or route's `extProc` (Gloo's extproc.RouteSettings): exactly one of disabled, overrides. */
export const ExtProcRouteSettingsSchema = z
  .strictObject({
    disabled: z.literal(true, { error: 'only true is supported (Gloo: setting it to false is not supported)' }).optional(),
    overrides: z
      .strictObject({
        processingMode: ProcessingModeSchema.optional(),
        asyncMode,
        requestAttributes: notSupported(OVERRIDE_ATTRIBUTES),
        responseAttributes: notSupported(OVERRIDE_ATTRIBUTES),
        grpcService: GrpcServiceSchema.optional(),
        metadataContextNamespaces: z.array(Name).optional(),
        typedMetadataContextNamespaces: z.array(Name).optional(),
      })
      .optional(),
  })
  .refine((s) => (s.disabled ? 1 : 0) + (s.overrides ? 1 : 0) === 1, { message: 'set exactly one of disabled, overrides' });
export type ExtProcRouteSettings = z.infer<typeof ExtProcRouteSettingsSchema>;

/** Virtual-host and route options the extproc feature renders. */
export const extProcOptions = { extProc: ExtProcRouteSettingsSchema.optional() };
