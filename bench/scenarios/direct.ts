// Baseline: the load generator straight to the upstream, no proxy.
import type { LoadScenario } from '../lib/types.js';

export const direct: LoadScenario = {
  kind: 'load',
  name: 'direct',
  description: 'wrk straight to the Node upstream (no proxy): the baseline every ratio is against',
  async setup(ctx) {
    const up = await ctx.upstream();
    return { port: up.port, path: '/bench', processes: [{ label: 'upstream', role: 'upstream', pid: up.pid }], stop: async () => {} };
  },
};
