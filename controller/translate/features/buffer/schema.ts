// `options.bufferPerRoute` on virtual hosts, routes and weighted destinations (Gloo's BufferPerRoute).
import { z } from 'zod';

export const BufferPerRouteSchema = z
  .strictObject({
    disabled: z.literal(true, { error: 'only true turns buffering off; to buffer, set buffer.maxRequestBytes instead' }).optional(),
    buffer: z.strictObject({ maxRequestBytes: z.number().int().min(1).max(4294967295) }).optional(),
  })
  .refine((b) => (b.disabled ? 1 : 0) + (b.buffer ? 1 : 0) === 1, { message: 'set exactly one of disabled, buffer' });
export type BufferPerRoute = z.infer<typeof BufferPerRouteSchema>;

/** Virtual-host, route and weighted-destination options the buffer feature renders. */
export const bufferOptions = { bufferPerRoute: BufferPerRouteSchema.optional() };
