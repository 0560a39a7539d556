// The cost of the access log `legate run` writes by default: a plain route through the default gateway with Legate's
// JSON access log line per request (to Envoy's stdout, i.e. .legate/logs/envoy.log) against the same route without;
// and, on the same route, the 17-field line that was the default before (a Gateway with that accessLoggingService).
import { freePort } from '../lib/net.js';
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadScenario } from '../lib/types.js';

const HOST = 'plain.bench';

/** The default line before it was chosen by docs/benchmarks.md's figures: Envoy's default format's 17 fields. */
const FORMAT_17: Readonly<Record<string, string>> = {
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

async function startVariant(ctx: BenchContext, variant: Variant): Promise<{ gw: Legate; port: number }> {
  const up = await ctx.upstream();
  const name = `access-log-${variant}`;
  const files: Record<string, string> = { 'upstream.yaml': upstreamYaml(up.port), 'plain.yaml': catchAllVsYaml('plain', [HOST]) };
  const port17 = variant === 'json17' ? await freePort() : undefined;
  if (port17 !== undefined) files['gateway.yaml'] = gateway17Yaml(port17);
  const accessLog = variant === 'json' ? '/dev/stdout' : 'off';
  const gw = await startLegate(ctx, name, files, ctx.settings.serverCpus, accessLog);
  const port = port17 ?? gw.ports.http;
  try {
    await untilServed(port, '/bench', HOST, up.body, 30_000, 100, () => (gw.proc.alive() ? undefined : 'legate run exited'));
    return { gw, port };
  } catch (err) {
    await gw.stop();
    throw err;
  }
}

function loadScenario(name: string, variant: Variant, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    ...(variant !== 'off' ? { compareTo: ['access-log-off'] } : {}),
    ...(aim !== undefined ? { aims: { 'access-log-off': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const shared = await acquire(ctx, `${name}-gateway`, async () => {
        const v = await startVariant(ctx, variant);
        return { ...v, stop: () => v.gw.stop() };
      });
      return {
        port: shared.value.port,
        path: '/bench',
        host: HOST,
        processes: [...legateProcesses(shared.value.gw), { label: 'upstream', role: 'upstream', pid: up.pid }],
        stop: () => shared.release(),
      };
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
