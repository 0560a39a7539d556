// `options.upgrades` on routes (Gloo's ProtocolUpgradeConfig list): WebSocket or CONNECT, on or off.
import { z } from 'zod';

const ProtocolUpgradeSpecSchema = z.strictObject({
  // unset: the upgrade is on (Envoy's default)
  enabled: z.boolean().optional(),
});

export const ProtocolUpgradeConfigSchema = z
  .strictObject({
    websocket: ProtocolUpgradeSpecSchema.optional(),
    connect: ProtocolUpgradeSpecSchema.optional(),
  })
  .refine((u) => (u.websocket ? 1 : 0) + (u.connect ? 1 : 0) === 1, { message: 'set exactly one of websocket, connect' });
export type ProtocolUpgradeConfig = z.infer<typeof ProtocolUpgradeConfigSchema>;

/** Route options the upgrades feature renders. */
export const upgradesRouteOptions = { upgrades: z.array(ProtocolUpgradeConfigSchema).optional() };
