// A second Envoy, started by hand from a minimal static bootstrap (listener + HCM + router + static
// cluster to the same upstream), with the same binary, flags and worker count as Legate's Envoy.
// Its ratio against legate-route shows what Legate's generated config costs on the hot path.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envoyConcurrency, envoyPath, untilServed } from '../lib/legate.js';
import { freePort, get, waitFor } from '../lib/net.js';
import { startProcess } from '../lib/procs.js';
import type { LoadScenario } from '../lib/types.js';
import { LEGATE_ENVOY_CONCURRENCY } from './legate-route.js';

export function staticBootstrap(o: { adminPort: number; httpPort: number; upstreamPort: number }): Record<string, unknown> {
  return {
    node: { id: 'bench-static', cluster: 'bench-static' },
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: o.adminPort } } },
    static_resources: {
      listeners: [
        {
          name: 'http',
          address: { socket_address: { address: '127.0.0.1', port_value: o.httpPort } },
          filter_chains: [
            {
              filters: [
                {
                  name: 'envoy.filters.network.http_connection_manager',
                  typed_config: {
                    '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                    stat_prefix: 'http',
                    codec_type: 'AUTO',
                    route_config: {
                      name: 'local',
                      virtual_hosts: [
                        { name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'upstream' } }] },
                      ],
                    },
                    http_filters: [
                      {
                        name: 'envoy.filters.http.router',
                        typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                      },
                    ],
                  },
                },
              ],
            },
          ],
        },
      ],
      clusters: [
        {
          name: 'upstream',
          type: 'STATIC',
          connect_timeout: '5s',
          load_assignment: {
            cluster_name: 'upstream',
            endpoints: [
              { lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: o.upstreamPort } } } }] },
            ],
          },
        },
      ],
    },
    // the same runtime layer as Legate's bootstrap (a connection limit; not on the request path)
    layered_runtime: {
      layers: [
        { name: 'static_layer', static_layer: { 'overload.global_downstream_max_connections': 50000 } },
        { name: 'admin_layer', admin_layer: {} },
      ],
    },
  };
}

export const staticEnvoy: LoadScenario = {
  kind: 'load',
  name: 'static-envoy',
  description:
    'a hand-started Envoy with a minimal static bootstrap (listener, HCM, router, static cluster), same binary, flags and --concurrency',
  compareTo: ['legate-route'],
  async setup(ctx) {
    const up = await ctx.upstream();
    const known = ctx.facts.get(LEGATE_ENVOY_CONCURRENCY);
    // legate run passes no --concurrency: its Envoy runs one worker per CPU it is allowed on
    const concurrency = typeof known === 'number' ? known : ctx.settings.serverCpus ? cpuCount(ctx.settings.serverCpus) : os.cpus().length;
    const ports = { admin: await freePort(), http: await freePort() };
    const dir = fs.mkdtempSync(path.join(ctx.workDir, 'static-envoy-'));
    const file = path.join(dir, 'envoy.json');
    fs.writeFileSync(
      file,
      JSON.stringify(staticBootstrap({ adminPort: ports.admin, httpPort: ports.http, upstreamPort: up.port }), null, 2),
    );
    // the flags `legate run` gives its Envoy, plus the worker count made explicit
    const envoy = startProcess('static envoy', envoyPath(ctx.root), {
      args: ['-c', file, '--disable-hot-restart', '-l', 'info', '--drain-time-s', '1', '--concurrency', String(concurrency)],
      cpus: ctx.settings.serverCpus,
    });
    ctx.defer(() => envoy.stop());
    try {
      const dead = (): string | undefined => (envoy.alive() ? undefined : `Envoy exited:\n${envoy.output().slice(-4000)}`);
      await waitFor('static Envoy to be ready', async () => ((await get(ports.admin, '/ready')).status === 200 ? true : undefined), {
        timeoutMs: 30_000,
        abortIf: dead,
      });
      await untilServed(ports.http, '/bench', undefined, up.body, 10_000, 100, dead);
      const actual = await envoyConcurrency(ports.admin);
      const same =
        typeof known === 'number'
          ? known === actual
            ? " (= legate-route's Envoy)"
            : ` (legate-route's Envoy: ${known})`
          : ' (legate-route not run)';
      return {
        port: ports.http,
        path: '/bench',
        processes: [
          { label: 'envoy', role: 'proxy', pid: envoy.pid },
          { label: 'upstream', role: 'upstream', pid: up.pid },
        ],
        notes: [`Envoy concurrency ${actual}${same}`],
        stop: () => envoy.stop(),
      };
    } catch (err) {
      await envoy.stop();
      throw err;
    }
  },
};

/** Number of CPUs in a taskset list such as "0", "0-2" or "0,2". */
export function cpuCount(list: string): number {
  return list.split(',').reduce((n, part) => {
    const [a, b] = part.split('-').map(Number);
    return n + (b !== undefined && a !== undefined ? b - a + 1 : 1);
  }, 0);
}
