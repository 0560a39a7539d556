// Options that map one to one onto Envoy fields: a route's `envoyMetadata` (the Envoy route's
// metadata.filter_metadata, for filters that read it) and a virtual host's `includeRequestAttemptCount`
// / `includeAttemptCountInResponse` (the x-envoy-attempt-count header upstream / downstream).
import type { Feature } from '../../feature.js';

/** Metadata namespaces Legate's own filters read: a user's value there would change what they do. */
const RESERVED_PREFIX = 'legate.';

export const envoyOptionsFeature: Feature = {
  name: 'envoy-options',
  kinds: [],
  resolve() {
    return {
      bindRoute(route, ir, site, sink) {
        const metadata = route.options?.envoyMetadata;
        if (!metadata) return;
        const kept: Record<string, Record<string, unknown>> = {};
        for (const [name, struct] of Object.entries(metadata)) {
          if (name.startsWith(RESERVED_PREFIX)) {
            sink.problems.push({
              code: 'InvalidSpec',
              message: `${site.where}.options.envoyMetadata.${name}: filter names starting with ${RESERVED_PREFIX} are Legate's own`,
            });
            continue;
          }
          kept[name] = struct;
        }
        if (Object.keys(kept).length) ir.envoyMetadata = kept;
      },
      bindVirtualHost(vs, ir) {
        const options = vs.spec.virtualHost.options;
        if (options?.includeRequestAttemptCount) ir.includeRequestAttemptCount = true;
        if (options?.includeAttemptCountInResponse) ir.includeAttemptCountInResponse = true;
      },
    };
  },
  render: {
    // patchVirtualHost reads nothing of the proxy
    proxyContext: () => null,
    patchVirtualHost(ir, vhost) {
      if (ir.includeRequestAttemptCount) vhost.include_request_attempt_count = true;
      if (ir.includeAttemptCountInResponse) vhost.include_attempt_count_in_response = true;
    },
    patchRoute(ir, route) {
      if (!ir.envoyMetadata) return;
      const byFilter = ((route.metadata ??= {}).filter_metadata ??= {});
      for (const [name, struct] of Object.entries(ir.envoyMetadata)) byFilter[name] = struct;
    },
  },
};
