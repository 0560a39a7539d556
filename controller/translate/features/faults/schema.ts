// `options.faults` on routes (Gloo's RouteFaults): abort a share of the requests with a status, or delay them.
import { z } from 'zod';
import { Duration, Percentage } from '../../../api/primitives.js';

const FaultsSchema = z.strictObject({
  abort: z
    .strictObject({
      percentage: Percentage.optional(),
      httpStatus: z.number().int().min(200, 'must be in [200, 600)').max(599, 'must be in [200, 600)'),
    })
    .optional(),
  delay: z.strictObject({ percentage: Percentage.optional(), fixedDelay: Duration }).optional(),
});
export type Faults = z.infer<typeof FaultsSchema>;

export const faultsRouteOptions = {
  faults: FaultsSchema.optional(),
};
