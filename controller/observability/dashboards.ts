// The dashboards Legate generates: one per Upstream and one for the whole gateway, as plain data. Each panel's query
// is given twice: as PromQL over Envoy's Prometheus stats (what `legate observability` writes into Grafana JSON and
// what the console asks Prometheus) and as the Envoy stats it is computed from (what the console reads from Envoy's
// admin /stats when no Prometheus runs). Pure: no I/O, no imports beyond names; the browser bundle uses it as is.
import { clusterName } from '../translate/names.js';

/** Grafana's unit ids, which the console formats the same way. */
export type PanelUnit = 'reqps' | 'ms' | 'short' | 'ops';

/** A query in Envoy's own stats names, as the admin's /stats (format=json) lists them. */
export interface EnvoyStatsQuery {
  /**
   * The stat's full name (`cluster.echo_default.upstream_rq_2xx`), or with `regex` a pattern for /stats?filter= whose
   * matches are summed; with `seriesGroup` the sum is per value of that capture group (one series each).
   */
  stat: string;
  regex?: boolean;
  seriesGroup?: number;
  /** counter: per-second rate between two reads; gauge: the value; histogram: `quantile` of the interval's samples */
  type: 'counter' | 'gauge' | 'histogram';
  /** 0..1, histograms only */
  quantile?: number;
}

export interface DashboardQuery {
  /** Grafana's refId: A, B, … unique in the panel */
  refId: string;
  /** the series' name; `{{label}}` is a Prometheus label of the result (Grafana's legendFormat) */
  legend: string;
  promql: string;
  envoy: EnvoyStatsQuery;
}

export interface DashboardPanel {
  /** stable id in the dashboard (the console's chart key) */
  key: string;
  title: string;
  description: string;
  unit: PanelUnit;
  queries: DashboardQuery[];
}

export interface DashboardModel {
  /** Grafana's dashboard uid: at most 40 characters of [A-Za-z0-9_-] */
  uid: string;
  title: string;
  tags: string[];
  /** the Upstream a per-Upstream dashboard shows */
  upstream?: { namespace: string; name: string; cluster: string };
  panels: DashboardPanel[];
}

/** Settings observabilityOptions.grafanaIntegration, as Gloo names them. */
export interface DashboardOptions {
  /** prefix of every uid and title (Gloo: dashboardPrefix, at most 20 characters) */
  dashboardPrefix?: string;
  /** label matchers added to every selector, e.g. `cluster="eu-1",pod=~"gateway-proxy-.*"` (extraMetricQueryParameters) */
  extraMetricQueryParameters?: string;
  /** the range of rate() and histogram windows; default 1m */
  rateWindow?: string;
}

/** The HCM stat prefix of the gateways' listeners (render.ts); the admin and the stats listener have their own. */
export const GATEWAY_HCM_PREFIX = 'http';
export const GATEWAY_DASHBOARD_UID = 'legate-gateway';

/** `"` and `\` escaped for a PromQL string. */
export function promString(s: string): string {
  return `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
}

function regexQuote(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

class Selectors {
  readonly window: string;
  private readonly extra: string;
  constructor(o: DashboardOptions) {
    this.window = o.rateWindow ?? '1m';
    this.extra = (o.extraMetricQueryParameters ?? '').trim().replace(/^,+|,+$/g, '');
  }
  /** `metric{matchers,extra}` */
  sel(metric: string, matchers: string[]): string {
    const all = [...matchers, ...(this.extra ? [this.extra] : [])];
    return all.length ? `${metric}{${all.join(',')}}` : metric;
  }
  rate(metric: string, matchers: string[], by?: string): string {
    return `sum${by ? ` by (${by})` : ''}(rate(${this.sel(metric, matchers)}[${this.window}]))`;
  }
  quantile(q: number, metric: string, matchers: string[]): string {
    return `histogram_quantile(${q}, sum by (le)(rate(${this.sel(`${metric}_bucket`, matchers)}[${this.window}])))`;
  }
  gauge(metric: string, matchers: string[], by?: string): string {
    return `sum${by ? ` by (${by})` : ''}(${this.sel(metric, matchers)})`;
  }
}

/** A Grafana uid: safe characters, at most 40 (a long one keeps its start and ends in a hash of the whole). */
export function dashboardUid(prefix: string, id: string): string {
  const raw = `${prefix}${id}`.replace(/[^A-Za-z0-9_-]/g, '-');
  if (raw.length <= 40) return raw;
  let h = 0x811c9dc5;
  for (let i = 0; i < raw.length; i++) h = Math.imul(h ^ raw.charCodeAt(i), 0x01000193) >>> 0;
  return `${raw.slice(0, 31)}-${h.toString(16).padStart(8, '0')}`;
}

const CLASSES = ['2', '4', '5'] as const;

/** The dashboard of one Upstream: its Envoy cluster's traffic, latency, connections, health checks and outlier state. */
export function upstreamDashboard(upstream: { namespace: string; name: string }, o: DashboardOptions = {}): DashboardModel {
  const cluster = clusterName(upstream.namespace, upstream.name);
  const s = new Selectors(o);
  const c = [`envoy_cluster_name=${promString(cluster)}`];
  const st = (suffix: string): string => `cluster.${cluster}.${suffix}`;
  const prefix = o.dashboardPrefix ?? '';
  return {
    uid: dashboardUid(prefix, `upstream-${upstream.namespace}-${upstream.name}`),
    title: `${prefix}Upstream ${upstream.namespace}/${upstream.name}`,
    tags: ['legate', 'upstream'],
    upstream: { ...upstream, cluster },
    panels: [
      {
        key: 'requests',
        title: 'Requests per second',
        description: `requests Envoy sent to the Upstream (cluster ${cluster})`,
        unit: 'reqps',
        queries: [
          {
            refId: 'A',
            legend: 'requests/s',
            promql: s.rate('envoy_cluster_upstream_rq_total', c),
            envoy: { stat: st('upstream_rq_total'), type: 'counter' },
          },
        ],
      },
      {
        key: 'responses',
        title: 'Responses by class',
        description: "the Upstream's responses per second by status class (2xx, 4xx, 5xx)",
        unit: 'reqps',
        queries: CLASSES.map((k, i) => ({
          refId: String.fromCharCode(65 + i),
          legend: `${k}xx`,
          promql: s.rate('envoy_cluster_upstream_rq_xx', [...c, `envoy_response_code_class="${k}"`]),
          envoy: { stat: st(`upstream_rq_${k}xx`), type: 'counter' as const },
        })),
      },
      {
        key: 'latency',
        title: 'Latency (p50, p99)',
        description: 'time from the request sent to the Upstream to its response complete',
        unit: 'ms',
        queries: [0.5, 0.99].map((q, i) => ({
          refId: String.fromCharCode(65 + i),
          legend: `p${q * 100}`,
          promql: s.quantile(q, 'envoy_cluster_upstream_rq_time', c),
          envoy: { stat: st('upstream_rq_time'), type: 'histogram' as const, quantile: q },
        })),
      },
      {
        key: 'connections',
        title: 'Active connections and requests',
        description: 'connections open to the Upstream and requests in flight',
        unit: 'short',
        queries: [
          {
            refId: 'A',
            legend: 'connections',
            promql: s.gauge('envoy_cluster_upstream_cx_active', c),
            envoy: { stat: st('upstream_cx_active'), type: 'gauge' },
          },
          {
            refId: 'B',
            legend: 'requests',
            promql: s.gauge('envoy_cluster_upstream_rq_active', c),
            envoy: { stat: st('upstream_rq_active'), type: 'gauge' },
          },
        ],
      },
      {
        key: 'health',
        title: 'Health checks',
        description: 'hosts healthy of all (active health checks and outlier ejections count), and failed checks per second',
        unit: 'short',
        queries: [
          {
            refId: 'A',
            legend: 'healthy hosts',
            promql: s.gauge('envoy_cluster_membership_healthy', c),
            envoy: { stat: st('membership_healthy'), type: 'gauge' },
          },
          {
            refId: 'B',
            legend: 'hosts',
            promql: s.gauge('envoy_cluster_membership_total', c),
            envoy: { stat: st('membership_total'), type: 'gauge' },
          },
          {
            refId: 'C',
            legend: 'failed checks/s',
            promql: s.rate('envoy_cluster_health_check_failure', c),
            envoy: { stat: st('health_check.failure'), type: 'counter' },
          },
        ],
      },
      {
        key: 'outlier',
        title: 'Outlier detection',
        description: 'hosts ejected now, and ejections enforced per second',
        unit: 'short',
        queries: [
          {
            refId: 'A',
            legend: 'ejected',
            promql: s.gauge('envoy_cluster_outlier_detection_ejections_active', c),
            envoy: { stat: st('outlier_detection.ejections_active'), type: 'gauge' },
          },
          {
            refId: 'B',
            legend: 'ejections/s',
            promql: s.rate('envoy_cluster_outlier_detection_ejections_enforced_total', c),
            envoy: { stat: st('outlier_detection.ejections_enforced_total'), type: 'counter' },
          },
        ],
      },
    ],
  };
}

/** The whole gateway: downstream traffic of the gateways' listeners, the busiest Upstreams, and the control plane. */
export function gatewayDashboard(o: DashboardOptions = {}): DashboardModel {
  const s = new Selectors(o);
  const h = [`envoy_http_conn_manager_prefix=${promString(GATEWAY_HCM_PREFIX)}`];
  const st = (suffix: string): string => `http.${GATEWAY_HCM_PREFIX}.${suffix}`;
  const prefix = o.dashboardPrefix ?? '';
  const clusterStat = (suffix: string): string => `^cluster\\.([^.]+)\\.${regexQuote(suffix)}$`;
  return {
    uid: dashboardUid(prefix, GATEWAY_DASHBOARD_UID),
    title: `${prefix}Legate gateway`,
    tags: ['legate', 'gateway'],
    panels: [
      {
        key: 'requests',
        title: 'Requests per second',
        description: "requests the gateways' listeners received",
        unit: 'reqps',
        queries: [
          {
            refId: 'A',
            legend: 'requests/s',
            promql: s.rate('envoy_http_downstream_rq_total', h),
            envoy: { stat: st('downstream_rq_total'), type: 'counter' },
          },
        ],
      },
      {
        key: 'responses',
        title: 'Responses by class',
        description: 'responses per second by status class (2xx, 4xx, 5xx), including those Envoy made itself',
        unit: 'reqps',
        queries: CLASSES.map((k, i) => ({
          refId: String.fromCharCode(65 + i),
          legend: `${k}xx`,
          promql: s.rate('envoy_http_downstream_rq_xx', [...h, `envoy_response_code_class="${k}"`]),
          envoy: { stat: st(`downstream_rq_${k}xx`), type: 'counter' as const },
        })),
      },
      {
        key: 'latency',
        title: 'Latency (p50, p99)',
        description: 'time from a request received to its response sent',
        unit: 'ms',
        queries: [0.5, 0.99].map((q, i) => ({
          refId: String.fromCharCode(65 + i),
          legend: `p${q * 100}`,
          promql: s.quantile(q, 'envoy_http_downstream_rq_time', h),
          envoy: { stat: st('downstream_rq_time'), type: 'histogram' as const, quantile: q },
        })),
      },
      {
        key: 'connections',
        title: 'Active downstream connections',
        description: "client connections open on the gateways' listeners",
        unit: 'short',
        queries: [
          {
            refId: 'A',
            legend: 'connections',
            promql: s.gauge('envoy_http_downstream_cx_active', h),
            envoy: { stat: st('downstream_cx_active'), type: 'gauge' },
          },
        ],
      },
      {
        key: 'upstreams',
        title: 'Requests per second by Upstream',
        description: 'the ten busiest Envoy clusters (an Upstream is <name>_<namespace>)',
        unit: 'reqps',
        queries: [
          {
            refId: 'A',
            legend: '{{envoy_cluster_name}}',
            promql: `topk(10, ${s.rate('envoy_cluster_upstream_rq_total', [], 'envoy_cluster_name')})`,
            envoy: { stat: clusterStat('upstream_rq_total'), regex: true, seriesGroup: 1, type: 'counter' },
          },
        ],
      },
      {
        key: 'healthy',
        title: 'Healthy hosts by Upstream',
        description: 'hosts of each cluster that pass their health checks and are not ejected',
        unit: 'short',
        queries: [
          {
            refId: 'A',
            legend: '{{envoy_cluster_name}}',
            promql: s.gauge('envoy_cluster_membership_healthy', [], 'envoy_cluster_name'),
            envoy: { stat: clusterStat('membership_healthy'), regex: true, seriesGroup: 1, type: 'gauge' },
          },
        ],
      },
      {
        key: 'xds',
        title: 'Cluster config updates',
        description: 'cluster (CDS) updates Envoy accepted and rejected (NACKed) per second',
        unit: 'ops',
        queries: [
          {
            refId: 'A',
            legend: 'accepted',
            promql: s.rate('envoy_cluster_manager_cds_update_success', []),
            envoy: { stat: 'cluster_manager.cds.update_success', type: 'counter' },
          },
          {
            refId: 'B',
            legend: 'rejected',
            promql: s.rate('envoy_cluster_manager_cds_update_rejected', []),
            envoy: { stat: 'cluster_manager.cds.update_rejected', type: 'counter' },
          },
        ],
      },
    ],
  };
}
