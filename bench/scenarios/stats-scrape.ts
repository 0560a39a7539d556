// The cost of being watched: a plain route through `legate run` with Envoy's stats listener (the chart's 8081,
// GET /metrics -> the admin's /stats/prometheus) scraped every 5 s by a real Prometheus (built by
// scripts/prometheus-tool.sh), against the same gateway and listener with nobody scraping.
import { ScenarioSkipped } from '../lib/types.js';
import { startPrometheus, type RunningPrometheus } from '../../test/prometheus/prometheus.js';
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { freePort } from '../lib/net.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadScenario } from '../lib/types.js';

interface Watched {
  gw: Legate;
  prometheus: RunningPrometheus | undefined;
  stop(): Promise<void>;
}

function gateway(ctx: BenchContext, scraped: boolean): Promise<{ value: Watched; release(): Promise<void> }> {
  const name = scraped ? 'stats-scraped' : 'stats-unscraped';
  return acquire(ctx, `${name}-gateway`, async () => {
    const up = await ctx.upstream();
    const statsPort = await freePort();
    const files = { 'upstream.yaml': upstreamYaml(up.port), 'vs.yaml': catchAllVsYaml('bench', ['*']) };
    const gw = await startLegate(ctx, name, files, ctx.settings.serverCpus, 'off', ['--stats-listener-port', String(statsPort)]);
    let prometheus: RunningPrometheus | undefined;
    try {
      await untilServed(gw.ports.http, '/bench', undefined, up.body, 30_000, 100, () =>
        gw.proc.alive() ? undefined : 'legate run exited',
      );
      if (scraped) {
        try {
          prometheus = await startPrometheus([{ job: 'envoy', address: `127.0.0.1:${statsPort}`, path: '/metrics' }], '5s');
        } catch (err) {
          throw new ScenarioSkipped(`no Prometheus: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      const p = prometheus;
      return {
        gw,
        prometheus: p,
        stop: async () => {
          await p?.stop();
          await gw.stop();
        },
      };
    } catch (err) {
      await prometheus?.stop();
      await gw.stop();
      throw err;
    }
  });
}

function loadScenario(name: string, scraped: boolean, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    // measured at the same time, so other work on the machine hits both sides alike
    group: 'stats-scrape',
    ...(aim !== undefined ? { compareTo: ['stats-unscraped'], aims: { 'stats-unscraped': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const w = await gateway(ctx, scraped);
      return {
        port: w.value.gw.ports.http,
        path: '/bench',
        processes: [
          ...legateProcesses(w.value.gw),
          { label: 'upstream', role: 'upstream', pid: up.pid },
          ...(w.value.prometheus ? [{ label: 'prometheus', role: 'provider' as const, pid: w.value.prometheus.pid }] : []),
        ],
        stop: () => w.release(),
      };
    },
  };
}

export const statsUnscraped = loadScenario('stats-unscraped', false, 'a plain route through Envoy with the stats listener, not scraped');
export const statsScraped = loadScenario(
  'stats-scraped',
  true,
  "the same route with Envoy's stats listener scraped every 5 s by Prometheus",
  0.97,
);
