// The building blocks every schema shares (durations, names, references), and `notSupported`: a real
// Gloo field Legate does not implement, refused with a reason instead of the "unknown field" a typo
// gets. Feature folders build their option schemas from these (features/<name>/schema.ts), so this
// module imports nothing of Legate's.
import { z } from 'zod';

export const DURATION_PATTERN = /^(\d+(\.\d+)?)(ms|s|m|h)$/;
export const Duration = z.string().regex(DURATION_PATTERN, 'expected a duration such as "15s", "1.5s" or "250ms"');

export const Name = z.string().min(1, 'must not be empty');

/** Gloo's percentages (shadowing, faults, tracing): 0 to 100. */
export const Percentage = z.number().min(0, 'must be between 0 and 100').max(100, 'must be between 0 and 100');

export const ResourceRefSchema = z.strictObject({ name: Name, namespace: z.string().optional() });
export type ResourceRef = z.infer<typeof ResourceRefSchema>;

/** The message prefix formatIssues keeps as the whole reason of a not-supported field. */
export const NOT_SUPPORTED = 'NotSupported';

/**
 * A field Gloo has and Legate refuses: any value is an error that says so (and why), so a user who
 * relies on it (often a security control) never gets a resource that is Accepted without it.
 */
export function notSupported(reason: string): z.ZodOptional<z.ZodUnknown> {
  return z
    .unknown()
    .superRefine((_value, ctx) => {
      ctx.addIssue({ code: 'custom', message: `${NOT_SUPPORTED}: ${reason}` });
    })
    .optional();
}

/** Every key of `fields` refused with one reason (for Gloo's blocks Legate has none of). */
export function notSupportedFields<K extends string>(keys: readonly K[], reason: string): Record<K, z.ZodOptional<z.ZodUnknown>> {
  return Object.fromEntries(keys.map((k) => [k, notSupported(reason)])) as Record<K, z.ZodOptional<z.ZodUnknown>>;
}

/** A protobuf enum as Gloo's CRDs take it: by name, or by number (its position in `names`). */
export function protoEnum<const N extends readonly [string, ...string[]]>(names: N) {
  return z.union(
    [
      z.enum(names),
      z
        .number()
        .int()
        .min(0)
        .max(names.length - 1),
    ],
    {
      error: `expected one of ${names.join(', ')} (or its number, 0 to ${names.length - 1})`,
    },
  );
}

// ---- Gloo's FilterStage (extProc and wasm filters say where in the chain they go) ----

/** Gloo's FilterStage.Stage, in its order. */
export const GLOO_FILTER_STAGES = [
  'FaultStage',
  'CorsStage',
  'WafStage',
  'AuthNStage',
  'AuthZStage',
  'RateLimitStage',
  'AcceptedStage',
  'OutAuthStage',
  'RouteStage',
] as const;
/** Gloo's FilterStage.Predicate (During is 0, the default). */
export const GLOO_FILTER_PREDICATES = ['During', 'Before', 'After'] as const;

export const FilterStageSchema = z.strictObject({
  stage: protoEnum(GLOO_FILTER_STAGES).optional(),
  predicate: protoEnum(GLOO_FILTER_PREDICATES).optional(),
});
export type GlooFilterStage = z.infer<typeof FilterStageSchema>;

// ---- TLS parameters (Gloo's SslParameters), shared by downstream and upstream TLS ----

/** SslParameters.ProtocolVersion, in enum order (TLS_AUTO: Envoy's default). */
export const TLS_VERSIONS = ['TLS_AUTO', 'TLSv1_0', 'TLSv1_1', 'TLSv1_2', 'TLSv1_3'] as const;
export type TlsVersion = (typeof TLS_VERSIONS)[number];
export const OCSP_STAPLE_POLICIES = ['LENIENT_STAPLING', 'STRICT_STAPLING', 'MUST_STAPLE'] as const;
export type OcspStaplePolicy = (typeof OCSP_STAPLE_POLICIES)[number];

/** A version by name (a number is its position in TLS_VERSIONS). */
export function tlsVersion(v: string | number | undefined): TlsVersion | undefined {
  if (v === undefined) return undefined;
  return typeof v === 'number' ? TLS_VERSIONS[v] : (v as TlsVersion);
}

/** The floor Legate keeps when no minimum is set (Envoy's own default for servers, stated so it stays). */
export const DEFAULT_MIN_TLS: TlsVersion = 'TLSv1_2';
/** Envoy's default maximum for servers. */
const DEFAULT_MAX_TLS: TlsVersion = 'TLSv1_3';

// What Envoy's TLS library (BoringSSL) takes in a cipher list: each entry is checked on its own and an unknown
// one fails the whole listener, so Legate refuses it first. TLS 1.3 suites are not configurable in BoringSSL.
const CIPHER_NAMES = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-AES128-SHA',
  'ECDHE-RSA-AES128-SHA',
  'ECDHE-ECDSA-AES128-SHA256',
  'ECDHE-RSA-AES128-SHA256',
  'ECDHE-ECDSA-AES256-SHA',
  'ECDHE-RSA-AES256-SHA',
  'AES128-GCM-SHA256',
  'AES256-GCM-SHA384',
  'AES128-SHA',
  'AES256-SHA',
  'DES-CBC3-SHA',
  'ECDHE-PSK-AES128-CBC-SHA',
  'ECDHE-PSK-AES256-CBC-SHA',
  'ECDHE-PSK-CHACHA20-POLY1305',
  'PSK-AES128-CBC-SHA',
  'PSK-AES256-CBC-SHA',
];
const CIPHER_ALIASES = [
  'ALL',
  'DEFAULT',
  'HIGH',
  'FIPS',
  'kRSA',
  'RSA',
  'kECDHE',
  'kEECDH',
  'ECDHE',
  'EECDH',
  'kPSK',
  'PSK',
  'aRSA',
  'aECDSA',
  'ECDSA',
  'aPSK',
  '3DES',
  'AES128',
  'AES256',
  'AES',
  'AESGCM',
  'CHACHA20',
  'SHA1',
  'SHA',
  'SSLv3',
  'TLSv1',
  'TLSv1.2',
];
const CIPHER_ATOMS = new Set([...CIPHER_NAMES, ...CIPHER_ALIASES]);
/** ECDH groups BoringSSL knows (names and OpenSSL's aliases). */
export const ECDH_CURVES = ['X25519', 'P-256', 'P-384', 'P-521', 'X25519MLKEM768', 'MLKEM1024', 'prime256v1', 'secp384r1', 'secp521r1'];

/** Why a cipher_suites entry is refused, or undefined: a name or alias, `A+B`, or an equal-preference group `[A|B]`. */
export function cipherProblem(entry: string): string | undefined {
  if (entry === '') return undefined; // "must not be empty" says it
  if (entry.startsWith('TLS_AES_') || entry.startsWith('TLS_CHACHA20_'))
    return `${entry} is a TLS 1.3 cipher suite: Envoy (BoringSSL) always offers those and does not configure them`;
  if (entry.includes(':')) return 'one cipher suite per entry (Envoy joins the list with ":")';
  const group = /^\[(.*)\]$/.exec(entry);
  const atoms = group ? group[1]!.split('|') : entry.split('+');
  const unknown = atoms.filter((a) => !CIPHER_ATOMS.has(a));
  if (unknown.length === 0) return undefined;
  return (
    `${unknown.map((u) => JSON.stringify(u)).join(', ')}: not a cipher suite Envoy (BoringSSL) knows ` +
    `(names such as ${CIPHER_NAMES.slice(0, 2).join(', ')}, groups [A|B], aliases A+B)`
  );
}

export const SslParametersSchema = z
  .strictObject({
    minimumProtocolVersion: protoEnum(TLS_VERSIONS).optional(),
    maximumProtocolVersion: protoEnum(TLS_VERSIONS).optional(),
    cipherSuites: z
      .array(
        z
          .string()
          .min(1, 'must not be empty')
          .superRefine((c, ctx) => {
            const problem = cipherProblem(c);
            if (problem) ctx.addIssue({ code: 'custom', message: problem });
          }),
      )
      .optional(),
    ecdhCurves: z
      .array(
        z
          .string()
          .min(1, 'must not be empty')
          .refine((c) => ECDH_CURVES.includes(c), { message: `expected one of ${ECDH_CURVES.join(', ')}` }),
      )
      .optional(),
  })
  .superRefine((p, ctx) => {
    const named = (v: TlsVersion | undefined, fallback: TlsVersion): TlsVersion => (v === undefined || v === 'TLS_AUTO' ? fallback : v);
    const min = named(tlsVersion(p.minimumProtocolVersion), DEFAULT_MIN_TLS);
    const max = named(tlsVersion(p.maximumProtocolVersion), DEFAULT_MAX_TLS);
    if (TLS_VERSIONS.indexOf(min) <= TLS_VERSIONS.indexOf(max)) return;
    const explicit = p.minimumProtocolVersion !== undefined && tlsVersion(p.minimumProtocolVersion) !== 'TLS_AUTO';
    ctx.addIssue({
      code: 'custom',
      path: ['maximumProtocolVersion'],
      message: explicit
        ? `${max} is below minimumProtocolVersion ${min}: no TLS version is left`
        : `${max} is below the default minimum ${min}: set minimumProtocolVersion too`,
    });
  });
export type SslParameters = z.infer<typeof SslParametersSchema>;

/** Gloo's grpc_json.proto GrpcJsonTranscoder (Envoy's gRPC-JSON transcoder filter): a Gateway's, or an Upstream's serviceSpec. */
export const GrpcJsonTranscoderSchema = z
  .strictObject({
    protoDescriptor: Name.optional(),
    protoDescriptorBin: z.base64('must be base64 (a FileDescriptorSet)').min(1, 'must not be empty').optional(),
    // a ConfigMap key holding the base64 FileDescriptorSet; without `key`, the ConfigMap's only key
    protoDescriptorConfigMap: z.strictObject({ configMapRef: ResourceRefSchema, key: z.string().optional() }).optional(),
    services: z.array(Name).min(1, 'list at least one service (package.Service)'),
    printOptions: z
      .strictObject({
        addWhitespace: z.boolean().optional(),
        alwaysPrintPrimitiveFields: z.boolean().optional(),
        alwaysPrintEnumsAsInts: z.boolean().optional(),
        preserveProtoFieldNames: z.boolean().optional(),
      })
      .optional(),
    matchIncomingRequestRoute: z.boolean().optional(),
    ignoredQueryParameters: z.array(Name).optional(),
    autoMapping: z.boolean().optional(),
    ignoreUnknownQueryParameters: z.boolean().optional(),
    convertGrpcStatus: z.boolean().optional(),
  })
  .refine((t) => (t.protoDescriptor ? 1 : 0) + (t.protoDescriptorBin ? 1 : 0) + (t.protoDescriptorConfigMap ? 1 : 0) === 1, {
    message: 'set exactly one of protoDescriptor, protoDescriptorBin, protoDescriptorConfigMap',
  });
export type GrpcJsonTranscoder = z.infer<typeof GrpcJsonTranscoderSchema>;
