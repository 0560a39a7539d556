// Hash policies: `options.lbHash.hashPolicies` on a route -> Envoy's route hash_policy, the key a
// hashing load balancer (an upstream's loadBalancerConfig ringHash or maglev) picks an endpoint by:
// sticky sessions by header, cookie or client address.
import { parseDuration } from '../../duration.js';
import type { Feature } from '../../feature.js';
import type { DurationIR, HashPolicyIR, UpstreamIR } from '../../ir.js';
import { lbHashRender } from './render.js';
import type { HashPolicy } from './schema.js';

export const lbHashFeature: Feature = {
  name: 'lbhash',
  kinds: [],
  resolve(ctx) {
    let byCluster: Map<string, UpstreamIR> | undefined;
    const upstreamOf = (cluster: string): UpstreamIR | undefined =>
      (byCluster ??= new Map([...ctx.upstreams().resolved.values()].map((u) => [u.cluster, u]))).get(cluster);
    return {
      bindRoute(route, ir, site, sink) {
        const policies = route.options?.lbHash?.hashPolicies;
        if (!policies) return;
        const at = `${site.where}.options.lbHash`;
        if (ir.action.type !== 'route') {
          sink.warnings.push({
            code: 'InvalidSpec',
            message: `${at}: hash policies apply to routes that forward (this one answers itself)`,
          });
          return;
        }
        ir.hashPolicies = policies.map(hashPolicyOf);
        // As Gloo documents: only ringHash and maglev upstreams hash; elsewhere the policies do nothing.
        const notHashing = ir.action.clusters
          .map((c) => upstreamOf(c.cluster))
          .filter((u): u is UpstreamIR => u !== undefined && u.loadBalancer?.policy !== 'ringHash' && u.loadBalancer?.policy !== 'maglev')
          .map((u) => `${u.source.namespace}.${u.source.name}`);
        const names = [...new Set(notHashing)];
        if (names.length) {
          const [who, does, it] = names.length > 1 ? ['Upstreams', 'do', 'them'] : ['Upstream', 'does', 'it'];
          sink.warnings.push({
            code: 'InvalidSpec',
            message:
              `${at}: ${who} ${names.join(', ')} ${does} not hash (loadBalancerConfig ringHash or maglev), ` +
              `so these hash policies have no effect on ${it}`,
          });
        }
      },
    };
  },
  render: lbHashRender,
};

function hashPolicyOf(p: HashPolicy): HashPolicyIR {
  const terminal = p.terminal ?? false;
  if (p.header !== undefined) return { key: { header: p.header }, terminal };
  if (p.cookie) {
    const cookie: { name: string; ttl?: DurationIR; path?: string } = { name: p.cookie.name };
    if (p.cookie.ttl !== undefined) cookie.ttl = parseDuration(p.cookie.ttl);
    if (p.cookie.path !== undefined) cookie.path = p.cookie.path;
    return { key: { cookie }, terminal };
  }
  // the schema takes exactly one of header, cookie, sourceIp
  return { key: { sourceIp: p.sourceIp ?? true }, terminal };
}
