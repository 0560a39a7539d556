// An Upstream's traffic as uPlot charts: requests/s by class, latency p50/p99, connections and hosts. The
// console polls its /api/metrics (Prometheus, else Envoy's stats) and appends a point each time.
import { useEffect, useRef, useState } from 'preact/hooks';
import { html } from 'htm/preact';
import uPlot, { type AlignedData, type Options } from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { get, query, type Point } from './api.js';
const KEEP = 150;
const EVERY_MS = 2000;

interface ChartSpec {
  id: string;
  title: string;
  series: { label: string; value: (p: Point) => number | null; stroke: string }[];
}

export const CHARTS: ChartSpec[] = [
  {
    id: 'rps',
    title: 'requests/s',
    series: [
      { label: 'all', value: (p) => p.rps, stroke: '#3366cc' },
      { label: '2xx', value: (p) => p.rps2xx, stroke: '#2a9d3a' },
      { label: '4xx', value: (p) => p.rps4xx, stroke: '#e6a100' },
      { label: '5xx', value: (p) => p.rps5xx, stroke: '#d62728' },
    ],
  },
  {
    id: 'latency',
    title: 'upstream latency (ms)',
    series: [
      { label: 'p50', value: (p) => p.p50, stroke: '#3366cc' },
      { label: 'p99', value: (p) => p.p99, stroke: '#d62728' },
    ],
  },
  {
    id: 'hosts',
    title: 'connections and hosts',
    series: [
      { label: 'active connections', value: (p) => p.activeConnections, stroke: '#3366cc' },
      { label: 'healthy hosts', value: (p) => p.healthyHosts, stroke: '#2a9d3a' },
      { label: 'ejected (outlier)', value: (p) => p.ejectedHosts, stroke: '#d62728' },
    ],
  },
];

function Chart({ spec, points }: { spec: ChartSpec; points: Point[] }) {
  const el = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot>();
  const data: AlignedData = [points.map((p) => p.t), ...spec.series.map((s) => points.map((p) => s.value(p)))];
  useEffect(() => {
    if (!el.current) return;
    const opts: Options = {
      width: Math.min(560, el.current.clientWidth || 560),
      height: 200,
      series: [{}, ...spec.series.map((s) => ({ label: s.label, stroke: s.stroke, width: 2, spanGaps: true }))],
      axes: [{}, { size: 50 }],
    };
    plot.current = new uPlot(opts, data, el.current);
    return () => plot.current?.destroy();
  }, [spec.id]);
  useEffect(() => plot.current?.setData(data), [points]);
  const last = points[points.length - 1];
  return html`<div class="chart" data-chart=${spec.id} data-points=${points.length}>
    <h4>${spec.title}</h4>
    <div ref=${el}></div>
    <div class="legend small" data-last=${last ? JSON.stringify(spec.series.map((s) => s.value(last))) : ''}>
      ${spec.series.map((s) => html`<span>${s.label}: <b data-series=${s.label}>${fmt(last ? s.value(last) : null)}</b> </span>`)}
    </div>
  </div>`;
}

function fmt(v: number | null): string {
  return v === null ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(2);
}

export function UpstreamCharts({ cluster }: { cluster: string }) {
  const [points, setPoints] = useState<Point[]>([]);
  const [source, setSource] = useState('');
  const [error, setError] = useState<string>();
  useEffect(() => {
    let live = true;
    const poll = (): void => {
      get<{ source: string; point: Point }>(`/api/metrics${query({ cluster })}`).then(
        ({ source: s, point }) => {
          if (!live) return;
          setSource(s);
          setError(undefined);
          setPoints((ps) => [...ps, point].slice(-KEEP));
        },
        (e: unknown) => live && setError(String(e)),
      );
    };
    poll();
    const timer = setInterval(poll, EVERY_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [cluster]);
  return html`<div>
    <p class="muted small">cluster <code>${cluster}</code>, from ${source || '…'}, every ${EVERY_MS / 1000} s</p>
    ${error ? html`<p class="error">${error}</p>` : null}
    <div class="charts">${CHARTS.map((c) => html`<${Chart} key=${c.id} spec=${c} points=${points} />`)}</div>
  </div>`;
}
