// The dashboard model (controller/observability/dashboards.ts): stable uids, unique keys, the Settings
// grafanaIntegration options in every query; the PromQL itself is parsed by a real Prometheus in
// test/e2e/observability.test.ts.
import { describe, expect, it } from 'vitest';
import { dashboardUid, gatewayDashboard, upstreamDashboard, type DashboardModel } from '../../controller/observability/dashboards.js';
import { configStatusSeries } from '../../controller/observability/config-status.js';
import {
  FOLDER_ANNOTATION,
  activeObservabilityOptions,
  generateDashboards,
  type ListedSettings,
  type ListedUpstream,
} from '../../controller/observability/generate.js';
import { checkGrafanaDashboard, grafanaDashboard } from '../../controller/observability/grafana.js';

function selectors(d: DashboardModel): string[] {
  return d.panels.flatMap((p) => p.queries.flatMap((q) => [...q.promql.matchAll(/\{[^}]*\}/g)].map((m) => m[0])));
}

describe('dashboard model', () => {
  it('an Upstream dashboard queries its Envoy cluster in both forms', () => {
    const d = upstreamDashboard({ namespace: 'default', name: 'echo' });
    expect(d.uid).toBe('upstream-default-echo');
    expect(d.upstream).toEqual({ namespace: 'default', name: 'echo', cluster: 'echo_default' });
    expect(d.panels.map((p) => p.key)).toEqual(['requests', 'responses', 'latency', 'connections', 'health', 'outlier']);
    const requests = d.panels[0]!.queries[0]!;
    expect(requests.promql).toBe('sum(rate(envoy_cluster_upstream_rq_total{envoy_cluster_name="echo_default"}[1m]))');
    expect(requests.envoy).toEqual({ stat: 'cluster.echo_default.upstream_rq_total', type: 'counter' });
    const p99 = d.panels[2]!.queries[1]!;
    expect(p99.legend).toBe('p99');
    expect(p99.promql).toContain('histogram_quantile(0.99, sum by (le)(rate(envoy_cluster_upstream_rq_time_bucket{');
    for (const s of selectors(d)) expect(s).toContain('envoy_cluster_name="echo_default"');
  });

  it('keys and refIds are unique', () => {
    for (const d of [upstreamDashboard({ namespace: 'a', name: 'b' }), gatewayDashboard()]) {
      expect(new Set(d.panels.map((p) => p.key)).size).toBe(d.panels.length);
      for (const p of d.panels) expect(new Set(p.queries.map((q) => q.refId)).size).toBe(p.queries.length);
    }
  });

  it('dashboardPrefix and extraMetricQueryParameters reach every uid, title and selector', () => {
    const o = { dashboardPrefix: 'prod-', extraMetricQueryParameters: 'cluster="eu-1",pod=~"gw-.*"' };
    for (const d of [upstreamDashboard({ namespace: 'default', name: 'echo' }, o), gatewayDashboard(o)]) {
      expect(d.uid.startsWith('prod-')).toBe(true);
      expect(d.title.startsWith('prod-')).toBe(true);
      const sels = selectors(d);
      expect(sels.length).toBeGreaterThan(5);
      for (const s of sels) expect(s).toContain('cluster="eu-1",pod=~"gw-.*"}');
    }
  });

  it('uids stay within 40 safe characters and distinct', () => {
    const a = dashboardUid('p-', `upstream-${'n'.repeat(50)}-one`);
    const b = dashboardUid('p-', `upstream-${'n'.repeat(50)}-two`);
    expect(a).toMatch(/^[A-Za-z0-9_-]{1,40}$/);
    expect(a).not.toBe(b);
    expect(dashboardUid('', 'upstream-ns-a.b')).toBe('upstream-ns-a-b');
  });

  it('label values are escaped', () => {
    const d = upstreamDashboard({ namespace: 'x"y', name: 'a\\b' });
    expect(d.panels[0]!.queries[0]!.promql).toContain('envoy_cluster_name="a\\\\b_x\\"y"');
  });
});

describe('Grafana JSON', () => {
  it('the builders give dashboards Grafana imports, with the PromQL of the model', () => {
    const models = [upstreamDashboard({ namespace: 'default', name: 'echo' }), gatewayDashboard({ dashboardPrefix: 'p-' })];
    for (const m of models) {
      const d = grafanaDashboard(m);
      expect(checkGrafanaDashboard(d)).toEqual([]);
      expect(d.uid).toBe(m.uid);
      expect(d.panels?.length).toBe(m.panels.length);
      const exprs = (d.panels ?? []).flatMap((p) => ('targets' in p ? (p.targets ?? []) : []).map((t) => (t as { expr?: string }).expr));
      expect(exprs).toEqual(m.panels.flatMap((p) => p.queries.map((q) => q.promql)));
    }
  });

  it('the check names what Grafana would refuse', () => {
    const d = grafanaDashboard(upstreamDashboard({ namespace: 'default', name: 'echo' })) as unknown as Record<string, unknown>;
    const panels = d['panels'] as Record<string, unknown>[];
    panels[1]!['id'] = panels[0]!['id'];
    panels[2]!['gridPos'] = { x: 20, y: 0, w: 12, h: 8 };
    expect(checkGrafanaDashboard({ ...d, uid: 'x'.repeat(41), extra: undefined })).toEqual([
      'does not round-trip through JSON (undefined values, functions or non-finite numbers)',
      `uid: ${'x'.repeat(41)}`,
      'panels[1].id: 1 repeated',
      'panels[2].gridPos: outside the 24-column grid',
    ]);
  });
});

describe('config status metrics (Settings observabilityOptions.configStatusMetricLabels)', () => {
  const listed = [
    { resource: { kind: 'Upstream', metadata: { namespace: 'gloo-system', name: 'petstore' } }, status: { state: 'Accepted' } },
    { resource: { kind: 'Upstream', metadata: { namespace: 'gloo-system', name: 'broken' } }, status: { state: 'Rejected' } },
    { resource: { kind: 'VirtualService', metadata: { namespace: 'default', name: 'vs' } }, status: { state: 'Warning' } },
  ];
  it("gives Gloo's series: 0 Accepted, 1 Rejected or Warning, labels from the paths", () => {
    const r = configStatusSeries(
      listed,
      {
        configStatusMetricLabels: {
          'Upstream.v1.gloo.solo.io': { labelToPath: { name: '{.metadata.name}', namespace: '{.metadata.namespace}' } },
          'VirtualService.v1.gateway.solo.io': { labelToPath: { name: '{.metadata.name}', missing: '{.spec.nothing}' } },
          'Nope.v1.gloo.solo.io': { labelToPath: {} },
          w: { labelToPath: {} },
        },
      },
      (k) => k === 'Upstream' || k === 'VirtualService',
    );
    expect(r.series).toEqual([
      { metric: 'validation_gateway_solo_io_upstream_config_status', labels: { name: 'petstore', namespace: 'gloo-system' }, value: 0 },
      { metric: 'validation_gateway_solo_io_upstream_config_status', labels: { name: 'broken', namespace: 'gloo-system' }, value: 1 },
      { metric: 'validation_gateway_solo_io_virtual_service_config_status', labels: { name: 'vs', missing: '' }, value: 1 },
    ]);
    expect(r.problems).toEqual([
      'settings.observabilityOptions.configStatusMetricLabels["Nope.v1.gloo.solo.io"]: Legate has no kind Nope; no metric',
      'settings.observabilityOptions.configStatusMetricLabels["w"]: not a resource type as Kind.version.group ' +
        '(e.g. VirtualService.v1.gateway.solo.io); no metric',
    ]);
  });
});

describe('legate observability: what it generates from the controller API', () => {
  const up = (name: string, annotations?: Record<string, string>): ListedUpstream => ({
    metadata: { namespace: 'default', name, ...(annotations ? { annotations } : {}) },
  });
  it('one dashboard per Upstream and the gateway one, with the Settings grafanaIntegration and the folder annotation', () => {
    const settings: ListedSettings[] = [
      { metadata: { namespace: 'x', name: 'other' }, spec: { observabilityOptions: { grafanaIntegration: { dashboardPrefix: 'no-' } } } },
      {
        metadata: { namespace: 'x', name: 'default' },
        spec: { observabilityOptions: { grafanaIntegration: { dashboardPrefix: 'p-', defaultDashboardFolderId: 3 } } },
      },
    ];
    const g = generateDashboards(
      [up('b'), up('a', { [FOLDER_ANNOTATION]: '9' }), up('c', { [FOLDER_ANNOTATION]: 'ops' })],
      activeObservabilityOptions(settings),
    );
    expect(g.dashboards.map((d) => [d.model.uid, d.folderId])).toEqual([
      ['p-legate-gateway', 3],
      ['p-upstream-default-a', 9],
      ['p-upstream-default-b', 3],
      ['p-upstream-default-c', 3],
    ]);
    expect(g.warnings).toEqual([
      'Upstream default/c: annotation observability.solo.io/dashboard_folder_id: "ops" is not a folder id (a number); ' +
        'the default folder 3 is used',
    ]);
  });

  it('a Rejected Settings is not applied', () => {
    const rejected: ListedSettings = {
      metadata: { namespace: 'x', name: 'default' },
      spec: { observabilityOptions: { grafanaIntegration: { dashboardPrefix: 'p-' } } },
      status: { statuses: { x: { state: 'Rejected' } } },
    };
    expect(activeObservabilityOptions([rejected])).toBeUndefined();
    expect(generateDashboards([], undefined).dashboards.map((d) => d.model.uid)).toEqual(['legate-gateway']);
  });
});
