// The cost of tracing on a plain route: a Gateway whose HCM traces 1% of requests at random
// (httpConnectionManagerSettings.tracing, randomSamplePercentage: 1) and exports those spans over OTLP to a real
// collector (Jaeger, built by scripts/jaeger-tool.sh), against the same Gateway without tracing.
import { ScenarioSkipped } from '../lib/types.js';
import { startJaeger, type Jaeger } from '../../test/tracing/jaeger.js';
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { freePort } from '../lib/net.js';
import { catchAllVsYaml, upstreamYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import type { BenchContext, LoadScenario } from '../lib/types.js';

const HOST = 'plain.bench';

function gatewayYaml(port: number, jaeger: Jaeger | undefined): string {
  const tracing = jaeger
    ? `
      httpConnectionManagerSettings:
        tracing:
          tracePercentages: { randomSamplePercentage: 1 }
          openTelemetryConfig:
            collectorUpstreamRef: { name: otel-collector, namespace: legate-system }`
    : `
      httpConnectionManagerSettings: {}`;
  const collector = jaeger
    ? `---
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: otel-collector, namespace: legate-system }
spec:
  useHttp2: true
  static: { hosts: [{ addr: 127.0.0.1, port: ${jaeger.ports.otlpGrpc} }] }
`
    : '';
  return `apiVersion: gateway.legate.dev/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: legate-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${port}
  httpGateway:
    options:${tracing}
${collector}`;
}

interface Traced {
  gw: Legate;
  port: number;
  jaeger: Jaeger | undefined;
  stop(): Promise<void>;
}

function gateway(ctx: BenchContext, traced: boolean): Promise<{ value: Traced; release(): Promise<void> }> {
  const name = traced ? 'tracing-sampled' : 'tracing-off';
  return acquire(ctx, `${name}-gateway`, async () => {
    let jaeger: Jaeger | undefined;
    if (traced) {
      try {
        jaeger = await startJaeger();
      } catch (err) {
        throw new ScenarioSkipped(`no Jaeger: ${err instanceof Error ? err.message : String(err)}`);
      }
    }
    const up = await ctx.upstream();
    const port = await freePort();
    const files = {
      'upstream.yaml': upstreamYaml(up.port),
      'plain.yaml': catchAllVsYaml('plain', [HOST]),
      'gateway.yaml': gatewayYaml(port, jaeger),
    };
    let gw: Legate | undefined;
    try {
      gw = await startLegate(ctx, name, files, ctx.settings.serverCpus);
      const started = gw;
      await untilServed(port, '/bench', HOST, up.body, 30_000, 100, () => (started.proc.alive() ? undefined : 'legate run exited'));
      return {
        gw,
        port,
        jaeger,
        stop: async () => {
          await started.stop();
          await jaeger?.stop();
        },
      };
    } catch (err) {
      await gw?.stop();
      await jaeger?.stop();
      throw err;
    }
  });
}

function loadScenario(name: string, traced: boolean, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    // measured at the same time, so other work on the machine hits both sides alike
    group: 'tracing',
    ...(aim !== undefined ? { compareTo: ['tracing-off'], aims: { 'tracing-off': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const t = await gateway(ctx, traced);
      const { gw, jaeger, port } = t.value;
      return {
        port,
        path: '/bench',
        host: HOST,
        processes: [
          ...legateProcesses(gw),
          { label: 'upstream', role: 'upstream', pid: up.pid },
          ...(jaeger ? [{ label: 'jaeger', role: 'provider' as const, pid: jaeger.pid }] : []),
        ],
        stop: () => t.release(),
      };
    },
  };
}

export const tracingOff = loadScenario('tracing-off', false, 'a plain route through a Gateway without tracing');
export const tracingSampled = loadScenario(
  'tracing-sampled',
  true,
  'the same route with the Gateway tracing 1% of requests (random sampling), spans to Jaeger over OTLP',
  0.95,
);
