// The wasm filters alone in Envoy: what each costs per request, without extauth, ext_proc,
// the upstream and the provider sharing the core (they make the Legate pairs' differences noisy). One
// hand-started Envoy (same binary, flags and worker count as Legate's) whose HCM has both filters as
// Legate renders them (same modules, configuration, V8 runtime; disabled on the HCM) and the router;
// routes answer the same direct response:
//   /on, /off                GET with a well-formed bearer token; /on enables bearer-check (which passes
//                            it), /off leaves it disabled (as Legate does on routes without an AuthConfig)
//   /graphql-on, -off        POST of a GraphQL query (application/json, Content-Length); /graphql-on
//                            enables graphql-check (which passes it, body callback included)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BEARER_CHECK, GRAPHQL_CHECK, wasmFilter } from '../../controller/translate/features/wasm/index.js';
import { envoyConcurrency, envoyPath, envoyStats } from '../lib/legate.js';
import { freePort, get, send, waitFor } from '../lib/net.js';
import { startProcess, type Started } from '../lib/procs.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadRequest, LoadScenario } from '../lib/types.js';
import { LEGATE_ENVOY_CONCURRENCY } from './legate-route.js';
import { cpuCount } from './static-envoy.js';

const FILTER = BEARER_CHECK;
const GRAPHQL_FILTER = GRAPHQL_CHECK;
const GRAPHQL_BODY = JSON.stringify({ query: '{productsForHome{id title}}' });
/** the same body as the bench upstream's, so the answer is the size of a proxied one */
const BODY = JSON.stringify({ ok: true, service: 'bench-upstream', items: [1, 2, 3] });
/** well-formed, the length of the example provider's opaque access tokens (43) */
const TOKEN = 'bench_wasm-envoy.token~0123456789ABCDEFGH+/';
const PASSES = 'wasmcustom.legate_bearer_check_allowed';
const GRAPHQL_PASSES = 'wasmcustom.legate_graphql_check_allowed';
const GRAPHQL_REQUEST: LoadRequest = { method: 'POST', headers: { 'content-type': 'application/json' }, body: GRAPHQL_BODY };
const BEARER_REQUEST: LoadRequest = { headers: { authorization: `Bearer ${TOKEN}` } };
const ENABLE = { '@type': 'type.googleapis.com/envoy.config.route.v3.FilterConfig', config: {} };

function bootstrap(o: { adminPort: number; httpPort: number; wasmFile: string; graphqlWasmFile: string }): Record<string, unknown> {
  const answer = { status: 200, body: { inline_string: BODY } };
  const json = { key: 'content-type', value: 'application/json' };
  return {
    node: { id: 'bench-wasm', cluster: 'bench-wasm' },
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
                        {
                          name: 'all',
                          domains: ['*'],
                          routes: [
                            {
                              match: { path: '/on' },
                              direct_response: answer,
                              response_headers_to_add: [{ header: json }],
                              typed_per_filter_config: { [FILTER]: ENABLE },
                            },
                            { match: { path: '/off' }, direct_response: answer, response_headers_to_add: [{ header: json }] },
                            {
                              match: { path: '/graphql-on' },
                              direct_response: answer,
                              response_headers_to_add: [{ header: json }],
                              typed_per_filter_config: { [GRAPHQL_FILTER]: ENABLE },
                            },
                            { match: { path: '/graphql-off' }, direct_response: answer, response_headers_to_add: [{ header: json }] },
                          ],
                        },
                      ],
                    },
                    http_filters: [
                      // as controller/translate/features/wasm renders them (bearer-check with its edge cache off:
                      // this measures the check itself)
                      wasmFilter(FILTER, { maxTokenBytes: 4096 }, { type: 'local', files: { 'bearer-check': o.wasmFile } }),
                      wasmFilter(
                        GRAPHQL_FILTER,
                        { maxBodyBytes: 1048576, allowGet: true },
                        { type: 'local', files: { 'graphql-check': o.graphqlWasmFile } },
                      ),
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
    },
  };
}

interface WasmEnvoy {
  proc: Started;
  ports: { admin: number; http: number };
  concurrency: number;
  stop(): Promise<void>;
}

function wasmEnvoy(ctx: BenchContext): Promise<{ value: WasmEnvoy; release(): Promise<void> }> {
  return acquire(ctx, 'wasm-envoy', async () => {
    const wasmFile = path.join(ctx.root, 'dist', 'wasm', 'bearer-check.wasm');
    const graphqlWasmFile = path.join(ctx.root, 'dist', 'wasm', 'graphql-check.wasm');
    for (const f of [wasmFile, graphqlWasmFile]) if (!fs.existsSync(f)) throw new Error(`${f} is missing: run 'make setup' (or make wasm)`);
    const known = ctx.facts.get(LEGATE_ENVOY_CONCURRENCY);
    const concurrency = typeof known === 'number' ? known : ctx.settings.serverCpus ? cpuCount(ctx.settings.serverCpus) : os.cpus().length;
    const ports = { admin: await freePort(), http: await freePort() };
    const dir = fs.mkdtempSync(path.join(ctx.workDir, 'wasm-envoy-'));
    const file = path.join(dir, 'envoy.json');
    fs.writeFileSync(file, JSON.stringify(bootstrap({ adminPort: ports.admin, httpPort: ports.http, wasmFile, graphqlWasmFile }), null, 2));
    const proc = startProcess('wasm envoy', envoyPath(ctx.root), {
      args: ['-c', file, '--disable-hot-restart', '-l', 'info', '--drain-time-s', '1', '--concurrency', String(concurrency)],
      cpus: ctx.settings.serverCpus,
    });
    ctx.defer(() => proc.stop());
    try {
      const dead = (): string | undefined => (proc.alive() ? undefined : `Envoy exited:\n${proc.output().slice(-4000)}`);
      await waitFor('the wasm Envoy to be ready', async () => ((await get(ports.admin, '/ready')).status === 200 ? true : undefined), {
        timeoutMs: 30_000,
        abortIf: dead,
      });
      const auth = { authorization: `Bearer ${TOKEN}` };
      const passes = async (): Promise<number> => (await envoyStats(ports.admin, [PASSES]))[PASSES]!;
      // /on: the filter refuses a missing token and passes a well-formed one; /off: it is not consulted
      const refused = await send(ports.http, { path: '/on' });
      if (refused.status !== 403 || JSON.parse(refused.text)?.error !== 'missing_token')
        throw new Error(`/on without a token answered ${refused.status} ${refused.text.slice(0, 200)}`);
      for (const [route, filtered] of [
        ['/on', 1],
        ['/off', 0],
      ] as const) {
        const before = await passes();
        const r = await send(ports.http, { path: route, headers: auth });
        if (r.status !== 200 || r.text !== BODY) throw new Error(`${route} with a token answered ${r.status} ${r.text.slice(0, 200)}`);
        const seen = (await passes()) - before;
        if (seen !== filtered) throw new Error(`${route}: the filter passed ${seen} request(s), expected ${filtered}`);
      }
      const graphqlPasses = async (): Promise<number> => (await envoyStats(ports.admin, [GRAPHQL_PASSES]))[GRAPHQL_PASSES]!;
      const put = await send(ports.http, {
        method: 'PUT',
        path: '/graphql-on',
        headers: { 'content-type': 'application/json' },
        body: GRAPHQL_BODY,
      });
      if (put.status !== 405) throw new Error(`PUT /graphql-on answered ${put.status}, expected 405 from graphql-check`);
      for (const [route, filtered] of [
        ['/graphql-on', 1],
        ['/graphql-off', 0],
      ] as const) {
        const before = await graphqlPasses();
        const r = await send(ports.http, {
          method: 'POST',
          path: route,
          headers: { 'content-type': 'application/json' },
          body: GRAPHQL_BODY,
        });
        if (r.status !== 200 || r.text !== BODY) throw new Error(`POST ${route} answered ${r.status} ${r.text.slice(0, 200)}`);
        // counted when the stream ends
        const seen = await waitFor(
          `${route} to be counted`,
          async () => {
            const n = (await graphqlPasses()) - before;
            return n === filtered ? n : undefined;
          },
          { timeoutMs: 2000, intervalMs: 20 },
        ).catch(async () => (await graphqlPasses()) - before);
        if (seen !== filtered) throw new Error(`${route}: graphql-check passed ${seen} request(s), expected ${filtered}`);
      }
      return { proc, ports, concurrency: await envoyConcurrency(ports.admin), stop: () => proc.stop() };
    } catch (err) {
      await proc.stop();
      throw err;
    }
  });
}

function scenario(on: boolean, filter: 'bearer' | 'graphql'): LoadScenario {
  const graphql = filter === 'graphql';
  const name = `wasm-envoy${graphql ? '-graphql' : ''}-${on ? 'on' : 'off'}`;
  return {
    kind: 'load',
    name,
    description: graphql
      ? on
        ? 'POST /graphql-on {"query":…} (application/json) to the hand-started Envoy, whose route enables the graphql-check wasm filter ' +
          '(passes it) and answers a direct response: the filter alone'
        : 'the same POST to /graphql-off, where the filter stays disabled: the pair of wasm-envoy-graphql-on'
      : on
        ? 'GET /on with a well-formed bearer token to a hand-started Envoy whose route enables the bearer-check wasm filter (passes it) ' +
          'and answers a direct response: the filter alone'
        : 'the same GET to /off on the same Envoy, where the filter stays disabled: the pair of wasm-envoy-on',
    compareTo: on ? [`wasm-envoy${graphql ? '-graphql' : ''}-off`] : [],
    async setup(ctx) {
      const e = await wasmEnvoy(ctx);
      const admin = e.value.ports.admin;
      const counter = graphql ? GRAPHQL_PASSES : PASSES;
      return {
        port: e.value.ports.http,
        path: graphql ? (on ? '/graphql-on' : '/graphql-off') : on ? '/on' : '/off',
        request: graphql ? GRAPHQL_REQUEST : BEARER_REQUEST,
        processes: [{ label: 'envoy', role: 'proxy', pid: e.value.proc.pid }],
        counters: async () => ({
          [graphql ? 'graphql-check passes' : 'bearer-check passes']: (await envoyStats(admin, [counter]))[counter]!,
        }),
        notes: [`Envoy concurrency ${e.value.concurrency}; direct response of ${BODY.length} bytes, no upstream`],
        stop: () => e.release(),
      };
    },
  };
}

export const wasmEnvoyOn = scenario(true, 'bearer');
export const wasmEnvoyOff = scenario(false, 'bearer');
export const wasmEnvoyGraphqlOn = scenario(true, 'graphql');
export const wasmEnvoyGraphqlOff = scenario(false, 'graphql');
