// The dashboard model as Grafana dashboard JSON, built with Grafana's typed builders (@grafana/grafana-foundation-sdk),
// and a structural check of what they built (the SDK has no validator of its own; the PromQL is checked by a real
// Prometheus in the e2e and by `legate observability --check-queries`).
import {
  DashboardBuilder,
  DashboardCursorSync,
  DatasourceVariableBuilder,
  type Dashboard,
} from '@grafana/grafana-foundation-sdk/dashboard';
import { LegendDisplayMode, LegendPlacement, VizLegendOptionsBuilder } from '@grafana/grafana-foundation-sdk/common';
import { DataqueryBuilder } from '@grafana/grafana-foundation-sdk/prometheus';
import { PanelBuilder } from '@grafana/grafana-foundation-sdk/timeseries';
import type { DashboardModel } from './dashboards.js';

/** Every panel reads the Prometheus the user picks (the dashboard's `datasource` variable). */
export const DATASOURCE_VARIABLE = 'datasource';
const DATASOURCE = { type: 'prometheus', uid: `\${${DATASOURCE_VARIABLE}}` };
const WIDTH = 12;
const HEIGHT = 8;

export function grafanaDashboard(model: DashboardModel): Dashboard {
  const b = new DashboardBuilder(model.title)
    .uid(model.uid)
    .tags(model.tags)
    .editable()
    .tooltip(DashboardCursorSync.Crosshair)
    .time({ from: 'now-1h', to: 'now' })
    .refresh('30s')
    .timezone('browser')
    .withVariable(new DatasourceVariableBuilder(DATASOURCE_VARIABLE).label('Prometheus').type('prometheus'));
  if (model.upstream)
    b.description(`Envoy cluster ${model.upstream.cluster} of Upstream ${model.upstream.namespace}/${model.upstream.name}`);
  model.panels.forEach((p, i) => {
    const panel = new PanelBuilder()
      .id(i + 1)
      .title(p.title)
      .description(p.description)
      .unit(p.unit)
      .datasource(DATASOURCE)
      .gridPos({ x: (i % 2) * WIDTH, y: Math.floor(i / 2) * HEIGHT, w: WIDTH, h: HEIGHT })
      .fillOpacity(10)
      .legend(new VizLegendOptionsBuilder().showLegend(true).displayMode(LegendDisplayMode.List).placement(LegendPlacement.Bottom));
    for (const q of p.queries) {
      panel.withTarget(new DataqueryBuilder().refId(q.refId).expr(q.promql).legendFormat(q.legend).range().datasource(DATASOURCE));
    }
    b.withPanel(panel);
  });
  // the SDK's objects carry marker functions: the dashboard is their JSON
  return JSON.parse(JSON.stringify(b.build())) as Dashboard;
}

/**
 * What Grafana needs to import a dashboard: JSON that round-trips, a schemaVersion, a uid of at most 40 safe
 * characters, panels with unique ids inside the 24-column grid, each target a Prometheus query with a unique refId.
 * Returns the problems found (none: valid).
 */
export function checkGrafanaDashboard(d: unknown): string[] {
  const problems: string[] = [];
  let copy: unknown;
  try {
    copy = JSON.parse(JSON.stringify(d)) as unknown;
  } catch (err) {
    return [`not JSON: ${String(err)}`];
  }
  if (!isDeepEqual(copy, d)) problems.push('does not round-trip through JSON (undefined values, functions or non-finite numbers)');
  const dash = copy as Record<string, unknown>;
  if (typeof dash['schemaVersion'] !== 'number') problems.push('schemaVersion: missing');
  if (typeof dash['title'] !== 'string' || dash['title'] === '') problems.push('title: missing');
  if (typeof dash['uid'] !== 'string' || !/^[A-Za-z0-9_-]{1,40}$/.test(dash['uid'])) problems.push(`uid: ${String(dash['uid'])}`);
  const vars = ((dash['templating'] as { list?: { name?: string }[] } | undefined)?.list ?? []).map((v) => v.name);
  if (!vars.includes(DATASOURCE_VARIABLE)) problems.push(`templating: no ${DATASOURCE_VARIABLE} variable`);
  const panels = Array.isArray(dash['panels']) ? (dash['panels'] as Record<string, unknown>[]) : [];
  if (panels.length === 0) problems.push('panels: none');
  const ids = new Set<unknown>();
  panels.forEach((p, i) => {
    const at = `panels[${i}]`;
    if (ids.has(p['id'])) problems.push(`${at}.id: ${String(p['id'])} repeated`);
    ids.add(p['id']);
    if (p['type'] !== 'timeseries') problems.push(`${at}.type: ${String(p['type'])}`);
    const g = p['gridPos'] as { x: number; y: number; w: number; h: number } | undefined;
    if (!g || g.x < 0 || g.w <= 0 || g.x + g.w > 24 || g.h <= 0 || g.y < 0) problems.push(`${at}.gridPos: outside the 24-column grid`);
    const targets = Array.isArray(p['targets']) ? (p['targets'] as Record<string, unknown>[]) : [];
    if (targets.length === 0) problems.push(`${at}.targets: none`);
    const refIds = new Set<unknown>();
    targets.forEach((t, j) => {
      if (refIds.has(t['refId'])) problems.push(`${at}.targets[${j}].refId: ${String(t['refId'])} repeated`);
      refIds.add(t['refId']);
      if (typeof t['expr'] !== 'string' || t['expr'] === '') problems.push(`${at}.targets[${j}].expr: missing`);
      if ((t['datasource'] as { type?: string } | undefined)?.type !== 'prometheus')
        problems.push(`${at}.targets[${j}].datasource: not Prometheus`);
    });
  });
  return problems;
}

function isDeepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  return ka.every((k) => isDeepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
