// The cost of the access log `legate run` writes by default: a plain route through the default gateway with Legate's
// JSON access log line per request (to Envoy's stdout, i.e. .legate/logs/envoy.log) against the same route without.
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadScenario } from '../lib/types.js';

const HOST = 'plain.bench';

function gateway(ctx: BenchContext, accessLog: string): Promise<{ value: Legate; release(): Promise<void> }> {
  const name = accessLog === 'off' ? 'access-log-off' : 'access-log-json';
  return acquire(ctx, `${name}-gateway`, async () => {
    const up = await ctx.upstream();
    const files = { 'upstream.yaml': upstreamYaml(up.port), 'plain.yaml': catchAllVsYaml('plain', [HOST]) };
    const gw = await startLegate(ctx, name, files, ctx.settings.serverCpus, accessLog);
    try {
      await untilServed(gw.ports.http, '/bench', HOST, up.body, 30_000, 100, () => (gw.proc.alive() ? undefined : 'legate run exited'));
      return gw;
    } catch (err) {
      await gw.stop();
      throw err;
    }
  });
}

function loadScenario(name: string, accessLog: string, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    ...(aim !== undefined ? { compareTo: ['access-log-off'], aims: { 'access-log-off': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const gw = await gateway(ctx, accessLog);
      return {
        port: gw.value.ports.http,
        path: '/bench',
        host: HOST,
        processes: [...legateProcesses(gw.value), { label: 'upstream', role: 'upstream', pid: up.pid }],
        stop: () => gw.release(),
      };
    },
  };
}

export const accessLogOff = loadScenario('access-log-off', 'off', 'a plain route through the default gateway, no access log');
export const accessLogJson = loadScenario(
  'access-log-json',
  '/dev/stdout',
  "the same route with legate run's default JSON access log line per request (Envoy's stdout, .legate/logs/envoy.log)",
  0.9,
);
