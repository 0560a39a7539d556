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
    return {};
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
