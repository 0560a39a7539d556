// What each way of writing the access log costs Envoy per request, to choose Legate's default line. Each variant
// is a hand-started Envoy (same binary, flags and worker count as Legate's) with one listener, a plain route to an
// upstream process of its own, differing only in its HCM access log; all variants are one group, measured at
// the same time (one wrk each), so whatever else runs on the machine hits them alike at every instant: compare
// their Envoy CPU per request, not their req/s. Envoy's stdout goes to a file, as under `legate run`
// (.legate/logs/envoy.log), so `/dev/stdout` costs what it costs there.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_ACCESS_LOG_FORMAT } from '../../controller/translate/features/listener/index.js';
import { envoyConcurrency, envoyPath, untilServed } from '../lib/legate.js';
import { freePort, get, waitFor } from '../lib/net.js';
import { startProcess, type Started } from '../lib/procs.js';
import { startNodeServer } from '../lib/servers.js';
import type { BenchContext, LoadScenario, Upstream } from '../lib/types.js';
import { FORMAT_17 } from './access-log.js';
import { LEGATE_ENVOY_CONCURRENCY } from './legate-route.js';
import { cpuCount } from './static-envoy.js';

const without = (format: Readonly<Record<string, string>>, ...keys: string[]): Record<string, string> =>
  Object.fromEntries(Object.entries(format).filter(([k]) => !keys.includes(k)));
/** wrk connections per variant: the group shares the load CPU and the server core */
const CONNECTIONS = 8;
const textLine = (format: Readonly<Record<string, string>>): string => `${Object.values(format).join(' ')}\n`;

type Sink = 'stdout' | 'file';
interface Variant {
  name: string;
  description: string;
  /** the FileAccessLog beyond its path; undefined: no access log */
  log?: Record<string, unknown>;
  sink?: Sink;
  /** the AccessLog's filter */
  filter?: Record<string, unknown>;
  /** Envoy command-line flags */
  flags?: string[];
}

const JSON_17 = { log_format: { json_format: FORMAT_17 } };

const VARIANTS: Variant[] = [
  { name: 'alv-off', description: 'no access log (the baseline of the variants)' },
  {
    name: 'alv-json17',
    description: 'the 17-field JSON line (log_format.json_format) to /dev/stdout: the default measured at 0.87x',
    log: JSON_17,
  },
  { name: 'alv-json17-file', description: 'the same line to a regular file instead of /dev/stdout', log: JSON_17, sink: 'file' },
  {
    name: 'alv-text17',
    description: 'the same 17 fields as a text line (log_format.text_format_source)',
    log: { log_format: { text_format_source: { inline_string: textLine(FORMAT_17) } } },
  },
  {
    name: 'alv-typed-json17',
    description: "the same JSON line through FileAccessLog's deprecated typed_json_format",
    log: { typed_json_format: FORMAT_17 },
  },
  {
    name: 'alv-json16-no-time',
    description: 'the JSON line without %START_TIME%',
    log: { log_format: { json_format: without(FORMAT_17, 'start_time') } },
  },
  {
    name: 'alv-json17-time-fmt',
    description: '%START_TIME(%Y-%m-%dT%H:%M:%S.%3fZ)% (a custom time format) instead of %START_TIME%',
    log: { log_format: { json_format: { ...FORMAT_17, start_time: '%START_TIME(%Y-%m-%dT%H:%M:%S.%3fZ)%' } } },
  },
  {
    name: 'alv-json1',
    description: 'a one-field JSON line ({"response_code": %RESPONSE_CODE%})',
    log: { log_format: { json_format: { response_code: '%RESPONSE_CODE%' } } },
  },
  {
    name: 'alv-json17-filtered',
    description: 'the 17-field line behind a filter no request passes (status >= 600): the logger called, nothing formatted or written',
    log: JSON_17,
    filter: { status_code_filter: { comparison: { op: 'GE', value: { default_value: 600, runtime_key: 'bench.access_log.min_status' } } } },
  },
  {
    name: 'alv-default',
    description:
      "Legate's default line (DEFAULT_ACCESS_LOG_FORMAT: the 17 without protocol, upstream_service_time, " +
      'upstream_cluster and downstream_remote_address)',
    log: { log_format: { json_format: DEFAULT_ACCESS_LOG_FORMAT } },
  },
  {
    name: 'alv-json17-flush',
    description: 'the 17-field line on an Envoy with --file-flush-min-size-kb 1024 --file-flush-interval-msec 1000',
    log: JSON_17,
    flags: ['--file-flush-min-size-kb', '1024', '--file-flush-interval-msec', '1000'],
  },
];

interface VariantEnvoy {
  port: number;
  proc: Started;
  stop(): Promise<void>;
}

function listener(name: string, port: number, accessLog: Record<string, unknown>[] | undefined): Record<string, unknown> {
  return {
    name,
    address: { socket_address: { address: '127.0.0.1', port_value: port } },
    filter_chains: [
      {
        filters: [
          {
            name: 'envoy.filters.network.http_connection_manager',
            typed_config: {
              '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
              stat_prefix: name,
              codec_type: 'AUTO',
              ...(accessLog ? { access_log: accessLog } : {}),
              route_config: {
                name,
                virtual_hosts: [{ name: 'all', domains: ['*'], routes: [{ match: { prefix: '/' }, route: { cluster: 'upstream' } }] }],
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
  };
}

async function startVariantEnvoy(ctx: BenchContext, v: Variant, up: Upstream): Promise<VariantEnvoy> {
  const key = `envoy-${v.name}`;
  const dir = fs.mkdtempSync(path.join(ctx.workDir, `${key}-`));
  const adminPort = await freePort();
  const port = await freePort();
  const file = v.sink === 'file' ? path.join(dir, `${v.name}.log`) : '/dev/stdout';
  const log = v.log
    ? [
        {
          name: 'envoy.access_loggers.file',
          ...(v.filter ? { filter: v.filter } : {}),
          typed_config: { '@type': 'type.googleapis.com/envoy.extensions.access_loggers.file.v3.FileAccessLog', path: file, ...v.log },
        },
      ]
    : undefined;
  const bootstrap = {
    node: { id: key, cluster: key },
    admin: { address: { socket_address: { address: '127.0.0.1', port_value: adminPort } } },
    static_resources: {
      listeners: [listener(v.name, port, log)],
      clusters: [
        {
          name: 'upstream',
          type: 'STATIC',
          connect_timeout: '5s',
          load_assignment: {
            cluster_name: 'upstream',
            endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: up.port } } } }] }],
          },
        },
      ],
    },
    layered_runtime: {
      layers: [
        { name: 'static_layer', static_layer: { 'overload.global_downstream_max_connections': 50000 } },
        { name: 'admin_layer', admin_layer: {} },
      ],
    },
  };
  const config = path.join(dir, 'envoy.json');
  fs.writeFileSync(config, JSON.stringify(bootstrap, null, 2));
  const known = ctx.facts.get(LEGATE_ENVOY_CONCURRENCY);
  const concurrency = typeof known === 'number' ? known : ctx.settings.serverCpus ? cpuCount(ctx.settings.serverCpus) : os.cpus().length;
  const args = ['-c', config, '--disable-hot-restart', '-l', 'info', '--drain-time-s', '1', '--concurrency', String(concurrency)];
  args.push(...(v.flags ?? []));
  const out = path.join(dir, 'stdout.log');
  // stdout to a file as `legate run` does (a pipe to this runner would charge the log to the runner)
  const proc = startProcess(key, '/bin/sh', {
    args: ['-c', 'exec "$0" "$@" >>"$LOG_FILE" 2>&1', envoyPath(ctx.root), ...args],
    env: { LOG_FILE: out },
    cpus: ctx.settings.serverCpus,
  });
  ctx.defer(() => proc.stop());
  const dead = (): string | undefined => (proc.alive() ? undefined : `Envoy exited:\n${fs.readFileSync(out, 'utf8').slice(-4000)}`);
  try {
    await waitFor(`${key} to be ready`, async () => ((await get(adminPort, '/ready')).status === 200 ? true : undefined), {
      timeoutMs: 30_000,
      abortIf: dead,
    });
    await untilServed(port, '/bench', undefined, up.body, 10_000, 100, dead);
    const actual = await envoyConcurrency(adminPort);
    if (actual !== concurrency) throw new Error(`Envoy runs ${actual} workers, asked ${concurrency}`);
    return { port, proc, stop: () => proc.stop() };
  } catch (err) {
    await proc.stop();
    throw err;
  }
}

function variantScenario(v: Variant): LoadScenario {
  return {
    kind: 'load',
    name: v.name,
    description: v.description,
    group: 'access-log-variants',
    ...(v.name !== 'alv-off' ? { compareTo: ['alv-off'] } : {}),
    async setup(ctx) {
      // an upstream of its own: the variants are measured at the same time, and CPU is charged per process
      const up = await startNodeServer<{ port: number; body: string }>(ctx, `upstream (${v.name})`, 'upstream.mjs');
      try {
        const envoy = await startVariantEnvoy(ctx, v, { port: up.info.port, pid: up.pid, body: up.info.body });
        return {
          port: envoy.port,
          path: '/bench',
          connections: CONNECTIONS,
          processes: [
            { label: 'envoy', role: 'proxy', pid: envoy.proc.pid },
            { label: 'upstream', role: 'upstream', pid: up.pid },
          ],
          stop: async () => {
            await envoy.stop();
            await up.stop();
          },
        };
      } catch (err) {
        await up.stop();
        throw err;
      }
    },
  };
}

export const ACCESS_LOG_VARIANTS: readonly LoadScenario[] = VARIANTS.map(variantScenario);
