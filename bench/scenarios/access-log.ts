// The cost of the access log `legate run` writes by default: a plain route through the default gateway with Legate's
// JSON access log line per request (to Envoy's stdout, i.e. .legate/logs/envoy.log) against the same route without;
// and, on the same route, the 17-field line that was the default before (a Gateway with that accessLoggingService).
// The three are one group, measured at the same time, each with its own upstream process: whatever else runs on the
// machine hits them alike at every instant (measured one after another, their ratio moved 0.85-1.25x between runs).
import { freePort } from '../lib/net.js';
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import { startNodeServer } from '../lib/servers.js';
import type { LoadScenario } from '../lib/types.js';

const HOST = 'plain.bench';

/** The default line before it was chosen by docs/benchmarks.md's figures: Envoy's default format's 17 fields. */
export const FORMAT_17: Readonly<Record<string, string>> = {
  start_time: '%START_TIME%',
  method: '%REQ(:METHOD)%',
  path: '%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%',
  protocol: '%PROTOCOL%',
  response_code: '%RESPONSE_CODE%',
  response_flags: '%RESPONSE_FLAGS%',
  bytes_received: '%BYTES_RECEIVED%',
  bytes_sent: '%BYTES_SENT%',
  duration: '%DURATION%',
  upstream_service_time: '%RESP(X-ENVOY-UPSTREAM-SERVICE-TIME)%',
  x_forwarded_for: '%REQ(X-FORWARDED-FOR)%',
  user_agent: '%REQ(USER-AGENT)%',
  request_id: '%REQ(X-REQUEST-ID)%',
  authority: '%REQ(:AUTHORITY)%',
  upstream_host: '%UPSTREAM_HOST%',
  upstream_cluster: '%UPSTREAM_CLUSTER%',
  downstream_remote_address: '%DOWNSTREAM_REMOTE_ADDRESS%',
};

type Variant = 'off' | 'json' | 'json17';

/** A Gateway (Gloo's shape) on `port` whose access log is the 17-field JSON line to /dev/stdout. */
function gateway17Yaml(port: number): string {
  const format = Object.entries(FORMAT_17)
    .map(([k, v]) => `              ${k}: '${v}'`)
    .join('\n');
  return `apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${port}
  httpGateway: {}
  options:
    accessLoggingService:
      accessLog:
        - fileSink:
            path: /dev/stdout
            jsonFormat:
${format}
`;
}

/** wrk connections per scenario: the three are measured at the same time and share the load CPU and the server core */
const CONNECTIONS = 16;

function loadScenario(name: string, variant: Variant, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    group: 'access-log',
    ...(variant !== 'off' ? { compareTo: ['access-log-off'] } : {}),
    ...(aim !== undefined ? { aims: { 'access-log-off': aim } } : {}),
    async setup(ctx) {
      // an upstream of its own: the three are measured at the same time, and CPU is charged per process
      const up = await startNodeServer<{ port: number; body: string }>(ctx, `upstream (${name})`, 'upstream.mjs');
      const files: Record<string, string> = {
        'upstream.yaml': upstreamYaml(up.info.port),
        'plain.yaml': catchAllVsYaml('plain', [HOST]),
      };
      const port17 = variant === 'json17' ? await freePort() : undefined;
      if (port17 !== undefined) files['gateway.yaml'] = gateway17Yaml(port17);
      let gw: Legate | undefined;
      try {
        gw = await startLegate(ctx, name, files, ctx.settings.serverCpus, variant === 'json' ? '/dev/stdout' : 'off');
        const port = port17 ?? gw.ports.http;
        const alive = gw.proc.alive;
        await untilServed(port, '/bench', HOST, up.info.body, 30_000, 100, () => (alive() ? undefined : 'legate run exited'));
        const stop = async (): Promise<void> => {
          await gw?.stop();
          await up.stop();
        };
        return {
          port,
          path: '/bench',
          host: HOST,
          connections: CONNECTIONS,
          processes: [...legateProcesses(gw), { label: 'upstream', role: 'upstream', pid: up.pid }],
          stop,
        };
      } catch (err) {
        await gw?.stop();
        await up.stop();
        throw err;
      }
    },
  };
}

export const accessLogOff = loadScenario('access-log-off', 'off', 'a plain route through the default gateway, no access log');
export const accessLogJson = loadScenario(
  'access-log-json',
  'json',
  "the same route with legate run's default JSON access log line per request (Envoy's stdout, .legate/logs/envoy.log)",
  0.9,
);
export const accessLogJson17 = loadScenario(
  'access-log-json17',
  'json17',
  'the same route through a Gateway whose accessLoggingService writes the former 17-field default line to /dev/stdout',
);
