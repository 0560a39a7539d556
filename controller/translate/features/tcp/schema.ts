// A Gateway's `tcpGateway` (Gloo's gateway.proto TcpGateway): `tcpHosts` (proxy.proto TcpHost: a name, an sslConfig for
// SNI matching, passthrough or TLS termination, and one destination) and `options` (tcp_listener_options.proto
// TcpListenerOptions: tcp_proxy settings, connection limit, local rate limit). controller/api/schemas.ts composes it with
// the destination and sslConfig schemas the routing and tls features own.
import { z } from 'zod';

import { Duration, Name, ResourceRefSchema, notSupported } from '../../../api/primitives.js';

const UInt32 = z.number().int().min(0).max(4294967295);

const HeaderValueOptionSchema = z.strictObject({
  header: z.strictObject({ key: Name, value: z.string() }),
  append: z.boolean().nullable().optional(),
});

/** tcp.proto TcpProxySettings. */
const TcpProxySettingsSchema = z.strictObject({
  maxConnectAttempts: z.number().int().min(1, 'must be at least 1').max(4294967295).optional(),
  idleTimeout: Duration.optional(),
  tunnelingConfig: z
    .strictObject({ hostname: z.string().min(1, 'must not be empty'), headersToAdd: z.array(HeaderValueOptionSchema).optional() })
    .optional(),
  accessLogFlushInterval: Duration.optional(),
});

/** tcp_listener_options.proto TcpListenerOptions. */
export const TcpListenerOptionsSchema = z.strictObject({
  tcpProxySettings: TcpProxySettingsSchema.optional(),
  connectionLimit: z
    .strictObject({
      maxActiveConnections: z.number().int().min(1, 'must be at least 1').max(4294967295),
      delayBeforeClose: Duration.optional(),
    })
    .optional(),
  localRatelimit: z
    .strictObject({
      maxTokens: z.number().int().min(1, 'must be at least 1').max(4294967295),
      tokensPerFill: UInt32.optional(),
      fillInterval: Duration,
    })
    .optional(),
});
export type TcpListenerOptions = z.infer<typeof TcpListenerOptionsSchema>;

const DESTINATION_OPTIONS = "tcp_proxy forwards bytes: a weighted destination's HTTP options (headers, auth, …) have nothing to act on";

/** `tcpGateway`, with a TcpHost's destination and sslConfig as the routing and tls features define them. */
export function tcpGatewaySchema<D extends z.ZodType, S extends z.ZodType>(destination: D, sslConfig: S) {
  const kinds = ['single', 'multi', 'upstreamGroup', 'forwardSniClusterName'] as const;
  const TcpActionSchema = z
    .strictObject({
      single: destination.optional(),
      multi: z
        .strictObject({
          destinations: z
            .array(
              z.strictObject({
                destination,
                weight: UInt32.optional(),
                options: notSupported(DESTINATION_OPTIONS),
              }),
            )
            .min(1, 'needs at least one destination'),
        })
        .optional(),
      upstreamGroup: ResourceRefSchema.optional(),
      /** the cluster is the TLS SNI name (Envoy's sni_cluster filter) */
      forwardSniClusterName: z.strictObject({}).optional(),
    })
    .refine((a) => kinds.filter((k) => a[k] !== undefined).length === 1, { message: `set exactly one of ${kinds.join(', ')}` });
  const TcpHostSchema = z.strictObject({
    name: Name,
    sslConfig: sslConfig.optional(),
    destination: TcpActionSchema,
  });
  return z.strictObject({
    tcpHosts: z.array(TcpHostSchema).optional(),
    options: TcpListenerOptionsSchema.optional(),
  });
}
