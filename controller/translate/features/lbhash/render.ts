// Stage 2 for hash policies: the route's hash_policy, in the order the user listed them.
import type { RouteAction } from '../../../../envoy/typed.js';
import { duration } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { HashPolicyIR } from '../../ir.js';

type EnvoyHashPolicy = NonNullable<RouteAction['hash_policy']>[number];

export const lbHashRender: RenderPlugin = {
  patchRoute(ir, route) {
    if (ir.hashPolicies && route.route) route.route.hash_policy = ir.hashPolicies.map(envoyHashPolicy);
  },
};

function envoyHashPolicy(p: HashPolicyIR): EnvoyHashPolicy {
  const k = p.key;
  const policy: EnvoyHashPolicy =
    'header' in k
      ? { header: { header_name: k.header } }
      : 'cookie' in k
        ? {
            cookie: {
              name: k.cookie.name,
              ...(k.cookie.ttl ? { ttl: duration(k.cookie.ttl) } : {}),
              ...(k.cookie.path !== undefined ? { path: k.cookie.path } : {}),
            },
          }
        : { connection_properties: { source_ip: true } };
  if (p.terminal) policy.terminal = true;
  return policy;
}
