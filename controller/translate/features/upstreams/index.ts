// Upstreams: Upstream resources (user-written and discovered from Services) -> clusters and endpoints.
// First in the feature list: it publishes the upstream lookup that routes and resolvers use.
import type { Feature } from '../../feature.js';
import { upstreamsRender } from './render.js';
import { resolveUpstream } from './resolve.js';

export const upstreamsFeature: Feature = {
  name: 'upstreams',
  kinds: ['Upstream'],
  resolve(ctx) {
    const { results, rejected } = ctx.resolveEach(ctx.ofKind('Upstream'), (u) => resolveUpstream(u, ctx.index));
    ctx.publishUpstreams({ resolved: results, rejected });
    return {};
  },
  render: upstreamsRender,
};
