// `virtualHost.options.stats` (Gloo's Stats): virtual clusters, requests Envoy counts apart.
import { z } from 'zod';

const VirtualClusterSchema = z.strictObject({
  name: z.string().min(1, 'must not be empty'),
  pattern: z.string().min(1, 'must not be empty'),
  method: z.string().optional(),
});

export const statsVirtualHostOptions = {
  stats: z.strictObject({ virtualClusters: z.array(VirtualClusterSchema).optional() }).optional(),
};
