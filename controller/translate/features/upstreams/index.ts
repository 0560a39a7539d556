// Upstreams: Upstream resources (user-written and discovered from Services) -> clusters and endpoints.
// First in the feature list: it publishes the upstream lookup that routes and resolvers use.
import type { Attempt, Feature } from '../../feature.js';
import type { UpstreamIR } from '../../ir.js';
import { upstreamsRender } from './render.js';
import { resolveUpstream } from './resolve.js';

export const upstreamsFeature: Feature = {
  name: 'upstreams',
  kinds: ['Upstream'],
  resolve(ctx) {
    const { results, rejected } = ctx.resolveEach(ctx.ofKind('Upstream'), (u) =>
      withOptions(resolveUpstream(u, ctx.index), ctx.upstreamOptions(u)),
    );
    // an Upstream its schema rejects is rejected too, for the routes that name it (not "not found")
    const invalid = ctx.invalidKeys('Upstream');
    ctx.publishUpstreams({ resolved: results, rejected: invalid.length ? new Set([...rejected, ...invalid]) : rejected });
    let byCluster: Map<string, UpstreamIR> | undefined;
    return {
      // a route to an Upstream with serviceSpec.grpcJsonTranscoder transcodes with it (Gloo's per-route config)
      bindRoute(_route, ir, site, sink) {
        if (ir.action.type !== 'route') return;
        byCluster ??= new Map([...results.values()].map((u) => [u.cluster, u]));
        const found = ir.action.clusters.map((c) => byCluster?.get(c.cluster)?.grpcJsonTranscoder);
        const first = found.find((t) => t !== undefined);
        if (!first) return;
        if (found.some((t) => JSON.stringify(t) !== JSON.stringify(first))) {
          const message =
            `${site.where}: its destinations have different serviceSpec.grpcJsonTranscoder (or some none); ` +
            'Envoy transcodes a route with one: it is not transcoded';
          sink.warnings.push({ code: 'InvalidSpec', message });
          return;
        }
        ir.grpcJsonTranscoder = first;
      },
    };
  },
  render: upstreamsRender,
};

/** An Upstream resolved with the fields other features own: their problems reject it too. */
function withOptions(own: Attempt<UpstreamIR>, others: Attempt<Partial<UpstreamIR>>): Attempt<UpstreamIR> {
  const problems = [...own.problems, ...others.problems];
  const warnings = [...(own.warnings ?? []), ...(others.warnings ?? [])];
  if (problems.length || !own.ir) return { problems, warnings };
  return { ir: { ...own.ir, ...others.ir }, problems, warnings };
}
