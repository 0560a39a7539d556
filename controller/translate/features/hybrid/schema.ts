// A Gateway's `hybridGateway` (Gloo's gateway.proto HybridGateway: matchedGateways, or the MatchableHttpGateway /
// MatchableTcpGateway resources delegatedHttpGateways / delegatedTcpGateways select) and those two kinds'
// specs (matchable_http_gateway.proto, matchable_tcp_gateway.proto). controller/api/schemas.ts composes them with
// the httpGateway, tcpGateway, sslConfig, selector and HCM settings schemas other parts own.
import { z } from 'zod';

import { ResourceRefSchema, notSupported } from '../../../api/primitives.js';

/** Envoy's CidrRange as Gloo writes it. */
export const CidrRangeSchema = z.strictObject({
  addressPrefix: z.string().min(1, 'must not be empty'),
  prefixLen: z.number().int().min(0).max(128).optional(),
});
export type CidrRange = z.infer<typeof CidrRangeSchema>;

const PASSTHROUGH_CIPHERS =
  "Gloo Enterprise's passthrough by offered cipher suites needs its own TLS inspector build; upstream Envoy's cannot " +
  'choose a filter chain by the ciphers a client offers';

const DELEGATED_SSL =
  "a delegatedHttpGateways sslConfig is a default under the VirtualServices' own sslConfig; Legate takes TLS from each " +
  "VirtualService's sslConfig: put it there";

export function hybridSchemas<H extends z.ZodType, T extends z.ZodType, S extends z.ZodType, L extends z.ZodType, C extends z.ZodType>(p: {
  httpGateway: H;
  tcpGateway: T;
  sslConfig: S;
  selector: L;
  hcmSettings: C;
}) {
  const MatcherSchema = z.strictObject({
    sslConfig: p.sslConfig.optional(),
    sourcePrefixRanges: z.array(CidrRangeSchema).optional(),
    passthroughCipherSuites: notSupported(PASSTHROUGH_CIPHERS),
  });
  const MatchedGatewaySchema = z
    .strictObject({
      matcher: MatcherSchema.optional(),
      httpGateway: p.httpGateway.optional(),
      tcpGateway: p.tcpGateway.optional(),
    })
    .refine((m) => (m.httpGateway !== undefined ? 1 : 0) + (m.tcpGateway !== undefined ? 1 : 0) === 1, {
      message: 'set exactly one of httpGateway, tcpGateway',
    });
  const oneSelection = { message: 'set exactly one of ref, selector' };
  const DelegatedHttpGatewaySchema = z
    .strictObject({
      ref: ResourceRefSchema.optional(),
      selector: p.selector.optional(),
      preventChildOverrides: z.boolean().optional(),
      httpConnectionManagerSettings: p.hcmSettings.optional(),
      sslConfig: notSupported(DELEGATED_SSL),
    })
    .refine((d) => (d.ref !== undefined ? 1 : 0) + (d.selector !== undefined ? 1 : 0) === 1, oneSelection);
  const DelegatedTcpGatewaySchema = z
    .strictObject({ ref: ResourceRefSchema.optional(), selector: p.selector.optional() })
    .refine((d) => (d.ref !== undefined ? 1 : 0) + (d.selector !== undefined ? 1 : 0) === 1, oneSelection);
  return {
    HybridGatewaySchema: z.strictObject({
      matchedGateways: z.array(MatchedGatewaySchema).optional(),
      delegatedHttpGateways: DelegatedHttpGatewaySchema.optional(),
      delegatedTcpGateways: DelegatedTcpGatewaySchema.optional(),
    }),
    MatchableHttpGatewaySpecSchema: z.strictObject({
      matcher: z.strictObject({ sourcePrefixRanges: z.array(CidrRangeSchema).optional(), sslConfig: p.sslConfig.optional() }).optional(),
      httpGateway: p.httpGateway,
    }),
    MatchableTcpGatewaySpecSchema: z.strictObject({
      matcher: MatcherSchema.optional(),
      tcpGateway: p.tcpGateway,
    }),
  };
}
