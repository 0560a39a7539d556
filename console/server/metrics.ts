// Where the console's per-Upstream charts get their numbers: Prometheus when one is configured, else
// Envoy's own stats (the admin /stats, read now and then; rates are the difference between two reads).
// Both give the same point; the charts do not know which one answered.

export interface UpstreamPoint {
  /** seconds since the epoch */
  t: number;
  /** requests per second, in all and by class */
  rps: number;
  rps2xx: number;
  rps4xx: number;
  rps5xx: number;
  /** upstream request time, ms (Envoy's histogram quantiles of the last interval) */
  p50: number | null;
  p99: number | null;
  activeConnections: number;
  healthyHosts: number;
  hosts: number;
  ejectedHosts: number;
}

export interface MetricsSource {
  readonly name: 'prometheus' | 'envoy';
  point(cluster: string): Promise<UpstreamPoint>;
}

interface EnvoyStatsJson {
  stats: ({ name: string; value: number } | { histograms: { supported_quantiles: number[]; computed_quantiles: HistogramJson[] } })[];
}

interface HistogramJson {
  name: string;
  values: ({ interval: number | null; cumulative: number | null } | null)[];
}

const COUNTERS = ['upstream_rq_total', 'upstream_rq_2xx', 'upstream_rq_4xx', 'upstream_rq_5xx'] as const;

/** Envoy's admin /stats (json): counters and gauges of `cluster.<name>.`, and upstream_rq_time's quantiles. */
export class EnvoyStatsSource implements MetricsSource {
  readonly name = 'envoy';
  private readonly last = new Map<string, { t: number; counters: Record<string, number> }>();

  constructor(private readonly adminUrl: string) {}

  async point(cluster: string): Promise<UpstreamPoint> {
    const prefix = `cluster.${cluster}.`;
    const names = 'upstream_rq_(total|2xx|4xx|5xx|time)|upstream_cx_active|membership_(healthy|total)|outlier_detection\\.ejections_active';
    const filter = `^cluster\\.${escapeRegex(cluster)}\\.(${names})$`;
    const res = await fetch(`${this.adminUrl}/stats?format=json&usedonly&filter=${encodeURIComponent(filter)}`, {
      signal: AbortSignal.timeout(3000),
    });
    if (!res.ok) throw new Error(`Envoy admin /stats answered ${res.status}`);
    const body = (await res.json()) as EnvoyStatsJson;
    const values: Record<string, number> = {};
    let p50: number | null = null;
    let p99: number | null = null;
    for (const s of body.stats) {
      if ('name' in s) values[s.name.slice(prefix.length)] = s.value;
      else {
        const q = s.histograms.supported_quantiles;
        const h = s.histograms.computed_quantiles.find((c) => c.name === `${prefix}upstream_rq_time`);
        if (h) {
          p50 = h.values[q.indexOf(50)]?.interval ?? null;
          p99 = h.values[q.indexOf(99)]?.interval ?? null;
        }
      }
    }
    const t = Date.now() / 1000;
    const counters = Object.fromEntries(COUNTERS.map((c) => [c, values[c] ?? 0]));
    const before = this.last.get(cluster);
    this.last.set(cluster, { t, counters });
    const rate = (c: (typeof COUNTERS)[number]): number => {
      if (!before || t <= before.t) return 0;
      return Math.max(0, (counters[c]! - (before.counters[c] ?? 0)) / (t - before.t));
    };
    return {
      t,
      rps: rate('upstream_rq_total'),
      rps2xx: rate('upstream_rq_2xx'),
      rps4xx: rate('upstream_rq_4xx'),
      rps5xx: rate('upstream_rq_5xx'),
      p50,
      p99,
      activeConnections: values['upstream_cx_active'] ?? 0,
      healthyHosts: values['membership_healthy'] ?? 0,
      hosts: values['membership_total'] ?? 0,
      ejectedHosts: values['outlier_detection.ejections_active'] ?? 0,
    };
  }
}

/** A Prometheus that scrapes Envoy's /stats/prometheus (Envoy's metric and label names). */
export class PrometheusSource implements MetricsSource {
  readonly name = 'prometheus';

  constructor(private readonly url: string) {}

  async point(cluster: string): Promise<UpstreamPoint> {
    const c = `envoy_cluster_name="${cluster.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
    const byClass = (cls: string): string => `sum(rate(envoy_cluster_upstream_rq_xx{${c},envoy_response_code_class="${cls}"}[1m]))`;
    const quantile = (q: number): string => `histogram_quantile(${q}, sum by (le) (rate(envoy_cluster_upstream_rq_time_bucket{${c}}[1m])))`;
    const [rps, rps2xx, rps4xx, rps5xx, p50, p99, active, healthy, hosts, ejected] = await Promise.all([
      this.scalar(`sum(rate(envoy_cluster_upstream_rq_total{${c}}[1m]))`),
      this.scalar(byClass('2')),
      this.scalar(byClass('4')),
      this.scalar(byClass('5')),
      this.scalar(quantile(0.5)),
      this.scalar(quantile(0.99)),
      this.scalar(`sum(envoy_cluster_upstream_cx_active{${c}})`),
      this.scalar(`sum(envoy_cluster_membership_healthy{${c}})`),
      this.scalar(`sum(envoy_cluster_membership_total{${c}})`),
      this.scalar(`sum(envoy_cluster_outlier_detection_ejections_active{${c}})`),
    ]);
    return {
      t: Date.now() / 1000,
      rps: rps ?? 0,
      rps2xx: rps2xx ?? 0,
      rps4xx: rps4xx ?? 0,
      rps5xx: rps5xx ?? 0,
      p50,
      p99,
      activeConnections: active ?? 0,
      healthyHosts: healthy ?? 0,
      hosts: hosts ?? 0,
      ejectedHosts: ejected ?? 0,
    };
  }

  private async scalar(query: string): Promise<number | null> {
    const res = await fetch(`${this.url}/api/v1/query?query=${encodeURIComponent(query)}`, { signal: AbortSignal.timeout(3000) });
    if (!res.ok) throw new Error(`Prometheus answered ${res.status}`);
    const body = (await res.json()) as { data?: { result?: { value?: [number, string] }[] } };
    const v = body.data?.result?.[0]?.value?.[1];
    const n = v === undefined ? NaN : Number(v);
    return Number.isFinite(n) ? n : null;
  }
}

function escapeRegex(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
