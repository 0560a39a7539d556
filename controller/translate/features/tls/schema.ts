// A VirtualService's `sslConfig` (Gloo's ssl.proto SslConfig): the certificate (secretRef or sslFiles), the
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

const SDS =
  "sds reads certificates from Gloo's SDS server (the gateway_proxy_sds cluster of Gloo's Envoy bootstrap, or a gRPC " +
  "target): Legate's Envoy has neither; Legate serves Secrets over its own SDS, so use secretRef";

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
  sds: notSupported(SDS),
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
  message: 'set exactly one of secretRef, sslFiles',
});
export type SslConfig = z.infer<typeof SslConfigSchema>;
