// The values of a dashboard's panels now (the model is controller/observability/dashboards.ts, the one
// `legate observability` turns into Grafana JSON): from Prometheus when the console has one, else from
// Envoy's admin /stats, where a counter's rate is the difference between this read and the last.
import type { DashboardModel, DashboardQuery, EnvoyStatsQuery } from '../../controller/observability/dashboards.js';

export interface SeriesValue {
  /** the query's legend, `{{label}}` filled in */
  label: string;
  value: number | null;
}

export interface DashboardValues {
  /** seconds since the epoch */
  t: number;
  /** panel key -> its series now */
  panels: Record<string, SeriesValue[]>;
}

export interface MetricsSource {
  readonly name: 'prometheus' | 'envoy';
  values(model: DashboardModel): Promise<DashboardValues>;
}

interface EnvoyStatsJson {
  stats: ({ name: string; value: number } | { histograms: { supported_quantiles: number[]; computed_quantiles: HistogramJson[] } })[];
}

interface HistogramJson {
  name: string;
  values: ({ interval: number | null; cumulative: number | null } | null)[];
}

/** Series per panel at most (the gateway's by-Upstream panels: the busiest, as Grafana's topk). */
const MAX_SERIES = 10;

export class EnvoyStatsSource implements MetricsSource {
  readonly name = 'envoy';
  /** dashboard uid -> series key -> the counter's last value and when it was read */
  private readonly last = new Map<string, Map<string, { t: number; v: number }>>();

  constructor(private readonly adminUrl: string) {}

  async values(model: DashboardModel): Promise<DashboardValues> {
    const queries = model.panels.flatMap((p) => p.queries.map((q) => q.envoy));
    const filter = queries.map((q) => (q.regex ? q.stat : `^${escapeRegex(q.stat)}$`)).join('|');
    const res = await fetch(`${this.adminUrl}/stats?format=json&filter=${encodeURIComponent(filter)}`, {
      signal: AbortSignal.timeout(3000),
    });
    if (!res.ok) throw new Error(`Envoy admin /stats answered ${res.status}`);
    const body = (await res.json()) as EnvoyStatsJson;
    const scalars = new Map<string, number>();
    const histograms = new Map<string, Map<number, number | null>>();
    for (const s of body.stats) {
      if ('name' in s) scalars.set(s.name, s.value);
      else {
        const q = s.histograms.supported_quantiles;
        for (const h of s.histograms.computed_quantiles) {
          histograms.set(h.name, new Map(q.map((quantile, i) => [quantile / 100, h.values[i]?.interval ?? null])));
        }
      }
    }
    const t = Date.now() / 1000;
    const previous = this.last.get(model.uid) ?? new Map<string, { t: number; v: number }>();
    const next = new Map<string, { t: number; v: number }>();
    this.last.set(model.uid, next);
    const rate = (key: string, v: number): number | null => {
      next.set(key, { t, v });
      const before = previous.get(key);
      if (!before || t <= before.t) return null;
      return Math.max(0, (v - before.v) / (t - before.t));
    };
    const panels: Record<string, SeriesValue[]> = {};
    for (const panel of model.panels) {
      const series: SeriesValue[] = [];
      for (const q of panel.queries) series.push(...this.evaluate(q, scalars, histograms, rate));
      panels[panel.key] = topSeries(series);
    }
    return { t, panels };
  }

  private evaluate(
    q: DashboardQuery,
    scalars: ReadonlyMap<string, number>,
    histograms: ReadonlyMap<string, ReadonlyMap<number, number | null>>,
    rate: (key: string, v: number) => number | null,
  ): SeriesValue[] {
    const e: EnvoyStatsQuery = q.envoy;
    if (e.type === 'histogram') {
      const h = [...histograms.entries()].find(([name]) => (e.regex ? new RegExp(e.stat).test(name) : name === e.stat));
      const v = h?.[1].get(e.quantile ?? 0.5);
      return [{ label: q.legend, value: v === undefined || v === null || Number.isNaN(v) ? null : v }];
    }
    // one series, or one per value of the capture group (summed over the rest)
    const sums = new Map<string, number>();
    if (!e.regex) sums.set(q.legend, scalars.get(e.stat) ?? 0);
    else {
      const re = new RegExp(e.stat);
      for (const [name, v] of scalars) {
        const m = re.exec(name);
        if (!m) continue;
        const label = e.seriesGroup !== undefined ? (m[e.seriesGroup] ?? '') : q.legend;
        sums.set(label, (sums.get(label) ?? 0) + v);
      }
    }
    return [...sums].map(([label, v]) => ({ label, value: e.type === 'counter' ? rate(`${q.refId}/${label}`, v) : v }));
  }
}

/** A Prometheus that scrapes Envoy's /stats/prometheus: each query's PromQL, as Grafana would run it. */
export class PrometheusSource implements MetricsSource {
  readonly name = 'prometheus';

  constructor(private readonly url: string) {}

  async values(model: DashboardModel): Promise<DashboardValues> {
    const panels: Record<string, SeriesValue[]> = {};
    await Promise.all(
      model.panels.map(async (panel) => {
        const all = await Promise.all(panel.queries.map((q) => this.query(q)));
        panels[panel.key] = topSeries(all.flat());
      }),
    );
    return { t: Date.now() / 1000, panels };
  }

  private async query(q: DashboardQuery): Promise<SeriesValue[]> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(q.promql)}`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) throw new Error(`Prometheus answered ${res.status}`);
    const body = (await res.json()) as { data?: { result?: { metric?: Record<string, string>; value?: [number, string] }[] } };
    const result = body.data?.result ?? [];
    if (result.length === 0) return q.legend.includes('{{') ? [] : [{ label: q.legend, value: null }];
    return result.map((r) => {
      const n = Number(r.value?.[1]);
      return {
        label: q.legend.replace(/\{\{\s*(\w+)\s*\}\}/g, (_, l: string) => r.metric?.[l] ?? ''),
        value: Number.isFinite(n) ? n : null,
      };
    });
  }
}

function topSeries(series: SeriesValue[]): SeriesValue[] {
  if (series.length <= MAX_SERIES) return series;
  return [...series].sort((a, b) => (b.value ?? -1) - (a.value ?? -1)).slice(0, MAX_SERIES);
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
