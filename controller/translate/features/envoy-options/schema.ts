// Options Gloo hands to Envoy as they are: a route's envoyMetadata, a virtual host's attempt-count headers.
import { z } from 'zod';

/** Route options the envoy-options feature renders. */
export const envoyOptionsRouteOptions = {
  // filter name -> google.protobuf.Struct
  envoyMetadata: z
    .record(
      z.string().min(1, 'a filter name must not be empty'),
      z.record(z.string(), z.unknown(), { error: "expected an object: the filter's metadata (a Struct)" }),
    )
    .optional(),
};

/** Virtual-host options the envoy-options feature renders. */
export const envoyOptionsVirtualHostOptions = {
  includeRequestAttemptCount: z.boolean().optional(),
  includeAttemptCountInResponse: z.boolean().optional(),
};
