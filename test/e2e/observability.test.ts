// Observability end to end: `legate run --observability` starts a real Prometheus (built from its Go module) scraping
// Envoy's stats listener and every component's /metrics every 5 s; traffic through the gateway comes back through
// Prometheus's query API with the per-Upstream dashboard's own PromQL; every panel's PromQL parses; the controller
// publishes Gloo's metric names; `legate observability` writes the dashboards as Grafana JSON.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewayDashboard, upstreamDashboard } from '../../controller/observability/dashboards.js';
import { checkGrafanaDashboard } from '../../controller/observability/grafana.js';
import { ensurePrometheus, query, targets } from '../prometheus/prometheus.js';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { eventually, freePort } from '../support/util.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let echo: EchoUpstream;
let prometheus: string;
const ECHO = { namespace: 'default', name: 'echo' };

const resources = (port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: echo, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: app, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: echo, namespace: default } } }
---
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  observabilityOptions:
    grafanaIntegration: { defaultDashboardFolderId: 7 }
    configStatusMetricLabels:
      Upstream.v1.gloo.solo.io:
        labelToPath:
          name: '{.metadata.name}'
          namespace: '{.metadata.namespace}'
`;

beforeAll(async () => {
  ensurePrometheus();
  echo = await startEcho('echo');
  const promPort = await freePort();
  const statsPort = await freePort();
  gw = await startGateway(
    { 'app.yaml': resources(echo.port) },
    { args: ['--observability', '--prometheus-port', String(promPort), '--stats-listener-port', String(statsPort)] },
  );
  prometheus = `http://127.0.0.1:${promPort}`;
  await eventually('prometheus ready', async () => (await fetch(`${prometheus}/-/ready`)).ok || undefined, 60_000);
}, 240_000);

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
});

describe('legate run --observability', () => {
  it('records Prometheus in run.json and scrapes Envoy and every component', async () => {
    const run = JSON.parse(fs.readFileSync(path.join(gw.stateDir, 'run.json'), 'utf8')) as {
      components: Record<string, { endpoints: Record<string, string> }>;
    };
    expect(run.components['prometheus']?.endpoints['http']).toBe(prometheus);
    const up = await eventually(
      'every target up',
      async () => {
        const t = await targets(prometheus);
        return t.length === 5 && t.every((x) => x.health === 'up') ? t : undefined;
      },
      60_000,
    );
    expect(up.map((t) => t.job).sort()).toEqual(['controller', 'envoy', 'extauth', 'graphql', 'ratelimit']);
  }, 90_000);

  it("reads an Upstream's request rate back with its dashboard's PromQL", async () => {
    const dashboard = upstreamDashboard(ECHO);
    const rps = dashboard.panels.find((p) => p.key === 'requests')!.queries[0]!.promql;
    const ok = dashboard.panels.find((p) => p.key === 'responses')!.queries.find((q) => q.legend === '2xx')!.promql;
    const p99 = dashboard.panels.find((p) => p.key === 'latency')!.queries.find((q) => q.legend === 'p99')!.promql;
    // traffic for ~20 s: four scrapes or more, so rate() over 1m has points
    const until = Date.now() + 20_000;
    let sent = 0;
    while (Date.now() < until) {
      const r = await gw.request('/hello');
      expect(r.status).toBe(200);
      sent++;
      await new Promise((res) => setTimeout(res, 50));
    }
    expect(sent).toBeGreaterThan(50);
    const rate = await eventually(
      'the request rate in Prometheus',
      async () => {
        const s = await query(prometheus, rps);
        return s.length === 1 && s[0]!.value > 0 ? s[0]!.value : undefined;
      },
      60_000,
    );
    // sent over ~20 s in a 1 m window: between a fraction of a request and the client's own rate
    expect(rate).toBeGreaterThan(0.1);
    expect(rate).toBeLessThan(25);
    expect((await query(prometheus, ok))[0]?.value).toBeGreaterThan(0);
    const latency = (await query(prometheus, p99))[0]?.value;
    expect(latency).toBeGreaterThan(0);
    expect(latency).toBeLessThan(5000);
  }, 120_000);

  it("every panel's PromQL of both dashboards parses and evaluates", async () => {
    const all = [upstreamDashboard(ECHO), gatewayDashboard({ extraMetricQueryParameters: 'job="envoy"' })].flatMap((d) =>
      d.panels.flatMap((p) => p.queries.map((q) => q.promql)),
    );
    expect(all.length).toBeGreaterThan(20);
    for (const q of all) await query(prometheus, q);
    // and a broken one is refused, so the check means something
    await expect(query(prometheus, 'sum(rate(envoy_cluster_upstream_rq_total[1m])')).rejects.toThrow(/parse error/);
  });

  it("the controller publishes Gloo's metric names", async () => {
    const insync = await eventually(
      'glooe_solo_io_xds_insync',
      async () => {
        const s = await query(prometheus, 'sum(glooe_solo_io_xds_insync)');
        return s[0] && s[0].value > 0 ? s[0].value : undefined;
      },
      30_000,
    );
    const total = (await query(prometheus, 'sum(glooe_solo_io_xds_total_entities)'))[0]?.value;
    expect(total).toBeGreaterThanOrEqual(insync);
    const byType = await query(prometheus, 'glooe_solo_io_xds_total_entities');
    expect(byType.map((s) => s.metric['resource'])).toContain('type.googleapis.com/envoy.config.cluster.v3.Cluster');
    expect((await query(prometheus, 'api_gloosnapshot_gloo_solo_io_sync_time_sec_count'))[0]?.value).toBeGreaterThan(0);
    expect((await query(prometheus, 'api_gloosnapshot_gloo_solo_io_emitter_snap_out'))[0]?.value).toBeGreaterThan(0);
    const status = await query(prometheus, 'validation_gateway_solo_io_upstream_config_status{name="echo"}');
    expect(status).toEqual([
      {
        metric: expect.objectContaining({
          __name__: 'validation_gateway_solo_io_upstream_config_status',
          name: 'echo',
          namespace: 'default',
        }),
        value: 0,
      },
    ]);
  });

  it('writes the dashboards of legate observability into the state directory', async () => {
    const dir = path.join(gw.stateDir, 'dashboards');
    const file = path.join(dir, `${upstreamDashboard(ECHO).uid}.json`);
    const json = await eventually('the Upstream dashboard file', () => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined));
    expect(checkGrafanaDashboard(JSON.parse(json))).toEqual([]);
    expect(fs.existsSync(path.join(dir, 'legate-gateway.json'))).toBe(true);
  });
});

describe('legate observability', () => {
  it('--once --check-queries: Grafana JSON per Upstream, checked by Prometheus; a removed Upstream loses its file', () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-dashboards-'));
    try {
      const run = (): ReturnType<typeof spawnSync> =>
        spawnSync(
          process.execPath,
          [
            path.join(ROOT, 'bin', 'legate.js'),
            'observability',
            '--once',
            '--controller',
            `http://127.0.0.1:${gw.ports.api}`,
            '--out',
            out,
            '--check-queries',
            prometheus,
          ],
          { encoding: 'utf8', timeout: 60_000 },
        );
      // a file of a dashboard no longer wanted, written by an earlier run
      fs.writeFileSync(path.join(out, 'upstream-default-gone.json'), '{}');
      fs.writeFileSync(path.join(out, '.legate-dashboards.json'), '["upstream-default-gone"]');
      const r = run();
      expect(r.status, String(r.stderr)).toBe(0);
      const files = fs.readdirSync(out).sort();
      expect(files).toEqual(['.legate-dashboards.json', 'legate-gateway.json', 'upstream-default-echo.json']);
      const d = JSON.parse(fs.readFileSync(path.join(out, 'upstream-default-echo.json'), 'utf8')) as {
        title: string;
        panels: { targets: { expr: string }[] }[];
      };
      expect(d.title).toBe('Upstream default/echo');
      expect(d.panels[0]!.targets[0]!.expr).toBe(upstreamDashboard(ECHO).panels[0]!.queries[0]!.promql);
    } finally {
      fs.rmSync(out, { recursive: true, force: true });
    }
  });

  it("--grafana-url: pushes each dashboard to its folder through Grafana's HTTP API, with the credentials of the URL", async () => {
    // a stand-in for Grafana's dashboard API (Grafana itself is AGPL): what legate observability sends
    const got: { method: string; url: string; auth: string | undefined; body: string }[] = [];
    const grafana = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        got.push({ method: req.method ?? '', url: req.url ?? '', auth: req.headers.authorization, body });
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"success"}');
      });
    });
    await new Promise<void>((resolve) => grafana.listen(0, '127.0.0.1', resolve));
    try {
      const port = (grafana.address() as AddressInfo).port;
      const r = await new Promise<{ status: number | null; stderr: string }>((resolve) => {
        const child = spawn(
          process.execPath,
          [
            path.join(ROOT, 'bin', 'legate.js'),
            'observability',
            '--once',
            '--controller',
            `http://127.0.0.1:${gw.ports.api}`,
            '--grafana-url',
            `http://admin:s3cret@127.0.0.1:${port}/`,
          ],
          { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, GRAFANA_API_KEY: '' } },
        );
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
        child.on('exit', (status) => resolve({ status, stderr }));
      });
      expect(r.status, r.stderr).toBe(0);
      expect(got.map((g) => `${g.method} ${g.url}`)).toEqual(['POST /api/dashboards/db', 'POST /api/dashboards/db']);
      for (const g of got) expect(g.auth).toBe(`Basic ${Buffer.from('admin:s3cret').toString('base64')}`);
      const bodies = got.map((g) => JSON.parse(g.body) as { dashboard: { uid: string; id: null }; folderId: number; overwrite: boolean });
      // the Settings' defaultDashboardFolderId
      expect(bodies.map((b) => [b.dashboard.uid, b.folderId, b.overwrite, b.dashboard.id])).toEqual([
        ['legate-gateway', 7, true, null],
        ['upstream-default-echo', 7, true, null],
      ]);
    } finally {
      grafana.close();
    }
  });

  it('refuses to start without a destination', () => {
    const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'legate.js'), 'observability'], { encoding: 'utf8' });
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('give --out DIR, --grafana-url URL or --port N');
  });
});
