// `options.tracing` on routes (Gloo's RouteTracingSettings): the span's name and sampling percentages.
import { z } from 'zod';
import { Percentage } from '../../../api/primitives.js';

const RouteTracingSchema = z.strictObject({
  routeDescriptor: z.string().optional(),
  tracePercentages: z
    .strictObject({
      clientSamplePercentage: Percentage.optional(),
      randomSamplePercentage: Percentage.optional(),
      overallSamplePercentage: Percentage.optional(),
    })
    .optional(),
  propagate: z.boolean().optional(),
});
export type RouteTracing = z.infer<typeof RouteTracingSchema>;

export const tracingRouteOptions = {
  tracing: RouteTracingSchema.optional(),
};
