// The same request through `legate run`: an Upstream (static host = the upstream) and a
// VirtualService routing prefix / to it, served by Legate's Envoy.
import { envoyConcurrency, legateProcesses, startLegate, untilServed } from '../lib/legate.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import type { LoadScenario } from '../lib/types.js';

export const LEGATE_ENVOY_CONCURRENCY = 'legate.envoyConcurrency';

export const legateRoute: LoadScenario = {
  kind: 'load',
  name: 'legate-route',
  description: 'the same request through Envoy on a Legate route (`legate run`, VirtualService prefix / -> Upstream)',
  async setup(ctx) {
    const up = await ctx.upstream();
    const files = { 'upstream.yaml': upstreamYaml(up.port), 'vs.yaml': catchAllVsYaml('bench', ['*']) };
    const gw = await startLegate(ctx, 'legate-route', files, ctx.settings.serverCpus);
    try {
      await untilServed(gw.ports.http, '/bench', undefined, up.body, 30_000, 100, () =>
        gw.proc.alive() ? undefined : 'legate run exited',
      );
      const concurrency = await envoyConcurrency(gw.ports.admin);
      ctx.facts.set(LEGATE_ENVOY_CONCURRENCY, concurrency);
      return {
        port: gw.ports.http,
        path: '/bench',
        // Envoy, the (idle) extension processes, the upstream; the controller as control plane
        processes: [...legateProcesses(gw), { label: 'upstream', role: 'upstream', pid: up.pid }],
        notes: [`Envoy concurrency ${concurrency} (legate run passes no --concurrency; Envoy sizes it to the CPUs it may run on)`],
        stop: () => gw.stop(),
      };
    } catch (err) {
      await gw.stop();
      throw err;
    }
  },
};
