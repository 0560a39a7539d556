// The health-check fleet: what active health checks of 1,000 Upstreams cost an otherwise idle Envoy. Each
// variant is a `legate run` holding 1,000 Gloo Upstreams (one static host each, a port of a backend process
// that answers every request 200) with the same `healthChecks`; all variants run at the same time and are
// measured over the same windows, so whatever else runs on the machine hits them alike. Figures: Envoy's CPU
// (utime+stime from /proc) as % of one core, health checks per second (Envoy's health_check.attempt
// counters), and Envoy's CPU per check above the fleet without checks.
import { performance } from 'node:perf_hooks';
import { get, waitFor } from '../lib/net.js';
import { cpuSeconds, machineCpu, selfAndReapedChildrenCpu, sleep } from '../lib/procs.js';
import { startLegate, type Legate } from '../lib/legate.js';
import { startNodeServer, type NodeServer } from '../lib/servers.js';
import type { BenchContext, Figure, FiguresScenario } from '../lib/types.js';

const UPSTREAMS = 1000;
// 60 s in all: one period of Envoy's default no_traffic_interval, during which the checks of the variants that
// never see traffic all fire at once (no jitter), so shorter windows would see all of them or none
const WINDOWS = 3;
const WINDOW_S = 20;

/** Gloo's failover guide's check (interval 1s, noTrafficInterval 1s): the fleet's headline. */
const FAILOVER_1S = {
  healthyThreshold: 1,
  httpHealthCheck: { path: '/health' },
  interval: '1s',
  noTrafficInterval: '1s',
  timeout: '1s',
  unhealthyThreshold: 1,
};

interface Variant {
  name: string;
  description: string;
  /** one element of the Upstream's healthChecks; undefined: none */
  check?: Record<string, unknown>;
  /** the backends speak HTTP/2 (h2c) */
  h2?: boolean;
}

export const HC_VARIANTS: readonly Variant[] = [
  { name: 'no-checks', description: 'the 1,000 Upstreams without healthChecks (what the idle fleet costs anyway)' },
  {
    name: 'gloo-guide-30s',
    description: "Gloo's upstream health-check guide: interval 30s, timeout 10s, thresholds 1, path /check/healthz",
    check: { healthyThreshold: 1, httpHealthCheck: { path: '/check/healthz' }, interval: '30s', timeout: '10s', unhealthyThreshold: 1 },
  },
  {
    name: 'failover-1s',
    description: "Gloo's failover guide: interval 1s, noTrafficInterval 1s, timeout 1s, thresholds 1, path /health (HTTP/1.1, reused)",
    check: FAILOVER_1S,
  },
  {
    name: '1s-no-traffic-default',
    description: "the same without noTrafficInterval: Envoy's default 60s applies while a cluster has had no traffic",
    check: (({ noTrafficInterval: _, ...rest }) => rest)(FAILOVER_1S),
  },
  {
    name: '1s-jitter',
    description: 'failover-1s with intervalJitterPercent 20 (checks spread instead of in step)',
    check: { ...FAILOVER_1S, intervalJitterPercent: 20 },
  },
  {
    name: '1s-new-connection',
    description: 'failover-1s with reuseConnection: false (a new TCP connection per check)',
    check: { ...FAILOVER_1S, reuseConnection: false },
  },
  {
    name: '1s-http2',
    description: 'failover-1s with httpHealthCheck.useHttp2: true against HTTP/2 (h2c) backends',
    check: { ...FAILOVER_1S, httpHealthCheck: { path: '/health', useHttp2: true } },
    h2: true,
  },
];

function upstreamsYaml(ports: number[], check: Record<string, unknown> | undefined): string {
  return ports
    .map((port, i) =>
      [
        'apiVersion: gloo.solo.io/v1',
        'kind: Upstream',
        `metadata: { name: hc-${String(i).padStart(4, '0')}, namespace: gloo-system }`,
        'spec:',
        `  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }`,
        ...(check ? [`  healthChecks: [${JSON.stringify(check)}]`] : []),
      ].join('\n'),
    )
    .join('\n---\n');
}

/** Sum of the Envoy stats whose name ends with `suffix` (counters and gauges). */
async function statSum(adminPort: number, suffix: string): Promise<number> {
  const r = await get(adminPort, `/stats?filter=${encodeURIComponent(`${suffix.replace(/\./g, '\\.')}$`)}`, undefined, 30_000);
  if (r.status !== 200) throw new Error(`Envoy admin /stats answered ${r.status}`);
  let sum = 0;
  for (const m of r.text.matchAll(/^\S+: (\d+)$/gm)) sum += Number(m[1]);
  return sum;
}

interface Running {
  variant: Variant;
  gw: Legate;
  backend: NodeServer<{ port: number; ports: number[] }>;
}

export const hcFleet: FiguresScenario = {
  kind: 'figures',
  name: 'hc-fleet',
  description: `${UPSTREAMS} Upstreams with HTTP healthChecks against real loopback backends, Envoy otherwise idle: its CPU`,
  async run(ctx: BenchContext) {
    const backends = new Map<boolean, NodeServer<{ port: number; ports: number[] }>>();
    const backend = async (h2: boolean): Promise<NodeServer<{ port: number; ports: number[] }>> => {
      let b = backends.get(h2);
      if (!b) {
        b = await startNodeServer<{ port: number; ports: number[] }>(ctx, h2 ? 'hc backends (h2c)' : 'hc backends', 'hc-backend.mjs', {
          PORTS: String(UPSTREAMS),
          ...(h2 ? { H2: '1' } : {}),
        });
        backends.set(h2, b);
      }
      return b;
    };
    const running: Running[] = [];
    try {
      for (const variant of HC_VARIANTS) {
        const b = await backend(variant.h2 ?? false);
        ctx.log(`  hc-fleet: starting ${variant.name}`);
        const gw = await startLegate(
          ctx,
          `hc-${variant.name}`,
          { 'upstreams.yaml': upstreamsYaml(b.info.ports, variant.check) },
          ctx.settings.serverCpus,
        );
        running.push({ variant, gw, backend: b });
      }
      // every cluster in Envoy, and (with checks) every host checked healthy
      for (const r of running) {
        const dead = (): string | undefined => (r.gw.proc.alive() ? undefined : 'legate run exited');
        await waitFor(
          `${r.variant.name}: ${UPSTREAMS} clusters${r.variant.check ? ', every host healthy' : ''}`,
          async () => {
            const clusters = await statSum(r.gw.ports.admin, '.membership_total');
            if (clusters < UPSTREAMS) return undefined;
            if (!r.variant.check) return true;
            return (await statSum(r.gw.ports.admin, '.membership_healthy')) >= UPSTREAMS ? true : undefined;
          },
          { timeoutMs: 180_000, intervalMs: 1000, abortIf: dead },
        );
      }
      // let the start-up work (translation, extensions loading) settle
      await sleep(5000);
      const envoys = running.map((r) => r.gw.envoyPid);
      const windows: { cpu: number[]; attempts: number[]; backendCpu: Map<number, number>; seconds: number; otherPct: number }[] = [];
      const backendPids = [...backends.values()].map((b) => b.pid);
      for (let w = 0; w < WINDOWS; w++) {
        const attempts0 = await Promise.all(running.map((r) => statSum(r.gw.ports.admin, '.health_check.attempt')));
        const cpu0 = envoys.map(cpuSeconds);
        const b0 = backendPids.map(cpuSeconds);
        const all0 = running.flatMap((r) => Object.values(r.gw.pids)).map(cpuSeconds);
        const m0 = machineCpu();
        const self0 = selfAndReapedChildrenCpu();
        const t0 = performance.now();
        await sleep(WINDOW_S * 1000);
        const seconds = (performance.now() - t0) / 1000;
        const cpu1 = envoys.map(cpuSeconds);
        const b1 = backendPids.map(cpuSeconds);
        const all1 = running.flatMap((r) => Object.values(r.gw.pids)).map(cpuSeconds);
        const m1 = machineCpu();
        const self1 = selfAndReapedChildrenCpu();
        const attempts1 = await Promise.all(running.map((r) => statSum(r.gw.ports.admin, '.health_check.attempt')));
        const ours = all1.reduce((a, x, i) => a + x - all0[i]!, 0) + b1.reduce((a, x, i) => a + x - b0[i]!, 0) + (self1 - self0);
        windows.push({
          cpu: cpu1.map((c, i) => c - cpu0[i]!),
          attempts: attempts1.map((a, i) => a - attempts0[i]!),
          backendCpu: new Map(backendPids.map((pid, i) => [pid, b1[i]! - b0[i]!])),
          seconds,
          otherPct: (Math.max(0, m1.busy - m0.busy - ours) / seconds) * 100,
        });
        ctx.log(
          `  hc-fleet window ${w + 1}/${WINDOWS}: ` +
            running.map((r, i) => `${r.variant.name} ${((windows[w]!.cpu[i]! / seconds) * 100).toFixed(1)}%`).join(', '),
        );
      }
      const seconds = windows.reduce((a, w) => a + w.seconds, 0);
      const total = (f: (w: (typeof windows)[number]) => number): number => windows.reduce((a, w) => a + f(w), 0);
      const base = running.findIndex((r) => !r.variant.check);
      const figures: Figure[] = running.map((r, i) => {
        const cpu = total((w) => w.cpu[i]!);
        const checks = total((w) => w.attempts[i]!);
        const perCheck = r.variant.check && base >= 0 && checks > 0 ? ((cpu - total((w) => w.cpu[base]!)) / checks) * 1e6 : undefined;
        const perWindow = windows.map((w) => ((w.cpu[i]! / w.seconds) * 100).toFixed(1)).join(', ');
        return {
          name: r.variant.name,
          value: ((cpu / seconds) * 100).toFixed(2),
          unit: '% of a core (Envoy)',
          note:
            `windows ${perWindow}; ${(checks / seconds).toFixed(0)} checks/s` +
            (perCheck !== undefined ? `, ${perCheck.toFixed(1)} µs of Envoy CPU per check above no-checks` : '') +
            `; ${r.variant.description}`,
        };
      });
      for (const [h2, b] of backends) {
        figures.push({
          name: `backends${h2 ? ' (h2c)' : ''}`,
          value: ((total((w) => w.backendCpu.get(b.pid) ?? 0) / seconds) * 100).toFixed(2),
          unit: '% of a core',
          note: `one Node process, ${UPSTREAMS} ports, serving the checks of every variant ${h2 ? 'speaking HTTP/2' : 'speaking HTTP/1.1'}`,
        });
      }
      const notes = [
        `${WINDOWS} windows of ${WINDOW_S} s (figures over all of them), all variants running at once (each its own legate run, ` +
          `Envoy pinned like the load scenarios); other work on the machine: ` +
          `${windows.map((w) => `${w.otherPct.toFixed(0)}%`).join(', ')} of a core`,
      ];
      const headline = running.findIndex((r) => r.variant.name === 'failover-1s');
      if (headline >= 0) {
        const pct = (total((w) => w.cpu[headline]!) / seconds) * 100;
        notes.push(`aim: failover-1s (every Upstream checked each second) under 5% of a core: ${pct < 5 ? 'met' : 'NOT met'}`);
      }
      return { kind: 'figures', figures, notes };
    } finally {
      for (const r of running.reverse()) await r.gw.stop();
      for (const b of backends.values()) await b.stop();
    }
  },
};
