// `options.extauth` on virtual hosts, routes and weighted destinations (Gloo's ExtAuthExtension).
import { z } from 'zod';
import { ResourceRefSchema } from '../../../api/primitives.js';

export const ExtauthOptionsSchema = z
  .strictObject({
    configRef: ResourceRefSchema.optional(),
    disable: z.boolean().optional(),
    customAuth: z.strictObject({ contextExtensions: z.record(z.string(), z.string()).optional(), name: z.string().optional() }).optional(),
  })
  .refine((e) => [e.configRef, e.disable, e.customAuth].filter((x) => x !== undefined).length === 1, {
    message: 'set exactly one of configRef, disable, customAuth',
  });
export type ExtauthOptions = z.infer<typeof ExtauthOptionsSchema>;

export const extauthOptions = { extauth: ExtauthOptionsSchema.optional() };
