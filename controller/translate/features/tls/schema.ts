// A VirtualService's `sslConfig` (Gloo's ssl.proto SslConfig): the certificate (secretRef, sslFiles or sds), the
// SNI names it serves, client certificates (a CA means they are required unless oneWayTls), TLS parameters,
// ALPN, OCSP stapling and session resumption. controller/api/routes.ts composes it into the VirtualService.
import { z } from 'zod';
import {
  Duration,
  Name,
  OCSP_STAPLE_POLICIES,
  ResourceRefSchema,
  SslParametersSchema,
  notSupported,
  protoEnum,
} from '../../../api/primitives.js';

export {
  DEFAULT_MIN_TLS,
  ECDH_CURVES,
  OCSP_STAPLE_POLICIES,
  TLS_VERSIONS,
  cipherProblem,
  tlsVersion,
  type OcspStaplePolicy,
  type SslParameters,
  type TlsVersion,
} from '../../../api/primitives.js';

const CALL_CREDENTIALS =
  "file-based gRPC call credentials are Envoy's google_grpc plugin envoy.grpc_credentials.file_based_metadata, which " +
  "Envoy 1.40 does not have; Legate asks the SDS server over a cluster to targetUri (with clusterName, Gloo's other form)";

/** Gloo's ssl.proto SDSConfig: the certificate (and client CA) from the user's SDS server, by secret name. */
const SdsConfigSchema = z.strictObject({
  /** the SDS server: `host:port`, `[ipv6]:port` or `unix:/path` (a cluster to it is generated) */
  targetUri: z.string().min(1, 'must not be empty').optional(),
  callCredentials: notSupported(CALL_CREDENTIALS),
  /** the generated cluster's name (Gloo: a cluster of its Envoy bootstrap) */
  clusterName: z.string().min(1, 'must not be empty').optional(),
  certificatesSecretName: z.string().min(1, 'must not be empty'),
  validationContextName: z.string().min(1, 'must not be empty').optional(),
});
export type SdsConfig = z.infer<typeof SdsConfigSchema>;

/** Gloo's ssl.proto SslConfig fields, with no rule on which certificate source is set. */
export const SslConfigFields = z.strictObject({
  secretRef: ResourceRefSchema.optional(),
  sslFiles: z
    .strictObject({
      tlsCert: z.string().min(1, 'must not be empty'),
      tlsKey: z.string().min(1, 'must not be empty'),
      rootCa: z.string().min(1, 'must not be empty').optional(),
      ocspStaple: z.string().min(1, 'must not be empty').optional(),
    })
    .optional(),
  sds: SdsConfigSchema.optional(),
  sniDomains: z.array(z.string()).optional(),
  verifySubjectAltName: z.array(Name).optional(),
  parameters: SslParametersSchema.optional(),
  // ["allow_empty"]: no ALPN at all (Gloo's escape hatch); unset: h2, http/1.1
  alpnProtocols: z.array(Name).optional(),
  oneWayTls: z.boolean().nullable().optional(),
  disableTlsSessionResumption: z.boolean().nullable().optional(),
  transportSocketConnectTimeout: Duration.optional(),
  ocspStaplePolicy: protoEnum(OCSP_STAPLE_POLICIES).optional(),
});

/** `sslConfig` of a VirtualService (ssl.proto SslConfig). */
export const SslConfigSchema = SslConfigFields.refine((s) => [s.secretRef, s.sslFiles, s.sds].filter((x) => x !== undefined).length === 1, {
  message: 'set exactly one of secretRef, sslFiles, sds',
});
export type SslConfig = z.infer<typeof SslConfigSchema>;
