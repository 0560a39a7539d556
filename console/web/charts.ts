// A dashboard's panels as uPlot charts (the model of controller/observability/dashboards.ts, the same panels
// `legate observability` writes as Grafana JSON). The console polls its /api/dashboard and appends a point
// to each series each time.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { get, query } from './api.js';

const KEEP = 150;
const EVERY_MS = 2000;
const COLORS = ['#3366cc', '#2a9d3a', '#e6a100', '#d62728', '#8e44ad', '#16a2b8', '#7f8c8d', '#c0392b', '#2c3e50', '#f39c12'];

interface PanelInfo {
  key: string;
  title: string;
  description: string;
  unit: string;
}

interface DashboardAnswer {
  source: string;
  title: string;
  panels: PanelInfo[];
  values: { t: number; panels: Record<string, { label: string; value: number | null }[]> };
}

/** The points kept: timestamps, and per panel per series label its values (null where it had none). */
interface History {
  t: number[];
  series: Record<string, Record<string, (number | null)[]>>;
}

function append(h: History, a: DashboardAnswer): History {
  const t = [...h.t, a.values.t].slice(-KEEP);
  const n = h.t.length;
  const series: History['series'] = {};
  for (const p of a.panels) {
    const before = h.series[p.key] ?? {};
    const now = new Map((a.values.panels[p.key] ?? []).map((s) => [s.label, s.value]));
    const out: Record<string, (number | null)[]> = {};
    for (const label of new Set([...Object.keys(before), ...now.keys()])) {
      const old = before[label] ?? new Array<number | null>(n).fill(null);
      out[label] = [...old, now.get(label) ?? null].slice(-KEEP);
    }
    series[p.key] = out;
  }
  return { t, series };
}

function Chart({ panel, t, series }: { panel: PanelInfo; t: number[]; series: Record<string, (number | null)[]> }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  const labels = Object.keys(series).sort();
  const data: AlignedData = [t, ...labels.map((l) => series[l]!)];
  const shape = labels.join('\n');
  useEffect(() => {
    if (!el.current) return;
    const opts: Options = {
      width: 470,
      height: 180,
      legend: { show: false },
      // a minute wide until there are points enough to span one
      scales: { x: { time: true, range: (_u, min, max) => [Math.min(min, max - 60), max] } },
      series: [{}, ...labels.map((label, i) => ({ label, stroke: COLORS[i % COLORS.length]!, width: 2, spanGaps: true }))],
      axes: [{}, { size: 56, values: (_u, ticks) => ticks.map((v) => fmt(v, panel.unit)) }],
    };
    plot.current = new uPlot(opts, data, el.current);
    return () => plot.current?.destroy();
  }, [shape]);
  useEffect(() => plot.current?.setData(data), [t]);
  return html`<div class="chart" data-chart=${panel.key} data-points=${t.length} title=${panel.description}>
    <h4>${panel.title}</h4>
    <div ref=${el}></div>
    <div class="legend small">
      ${labels.map((l) => {
        const v = series[l]![series[l]!.length - 1] ?? null;
        return html`<span>${l}: <b data-series=${l} data-value=${v ?? ''}>${v === null ? '–' : fmt(v, panel.unit)}</b> </span>`;
      })}
    </div>
  </div>`;
}

function fmt(v: number, unit: string): string {
  const n = Math.abs(v) >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(2);
  return unit === 'ms' ? `${n} ms` : unit === 'reqps' ? `${n}/s` : n;
}

/** `upstream`: NAMESPACE/NAME, that Upstream's dashboard; unset: the whole gateway's. */
export function Dashboard({ upstream }: { upstream?: string }) {
  const [info, setInfo] = useState<{ source: string; panels: PanelInfo[] }>();
  const [history, setHistory] = useState<History>({ t: [], series: {} });
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    setHistory({ t: [], series: {} });
    const poll = (): void => {
      get<DashboardAnswer>(`/api/dashboard${query({ upstream })}`).then(
        (a) => {
          if (!live) return;
          setInfo({ source: a.source, panels: a.panels });
          setError(undefined);
          setHistory((h) => append(h, a));
        },
        (e: unknown) => live && setError(String(e instanceof Error ? e.message : e)),
      );
    };
    poll();
    const timer = setInterval(poll, EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [upstream]);
  return html`<div>
    <p class="muted small">from ${info?.source ?? '…'}, every ${EVERY_MS / 1000} s</p>
    ${error ? html`<p class="error">${error}</p>` : null}
    <div class="charts">
      ${(info?.panels ?? []).map((p) => html`<${Chart} key=${p.key} panel=${p} t=${history.t} series=${history.series[p.key] ?? {}} />`)}
    </div>
  </div>`;
}
