// Prometheus metrics of the graphql service: requests by API and status, latency, loaded APIs.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SpanRecorder } from '../../common/trace.js';
import { http2LimitMetric } from '../common/h2/metrics.js';

export function graphqlMetrics(registry: Registry, spans: SpanRecorder, apis: () => Record<string, string>) {
  http2LimitMetric(registry);
  /** the label sets observed, per API: an API no longer loaded loses its own at the next scrape or new API seen */
  const seen = new Map<string, Set<string>>();
  let pruneAt = 64;
  const requests = new Counter({
    name: 'legate_graphql_requests_total',
    help: 'GraphQL requests by API and HTTP status',
    labelNames: ['api', 'status'],
    registers: [registry],
    collect() {
      forgetUnloaded();
    },
  });
  const forgetUnloaded = (): void => {
    const loaded = apis();
    for (const [api, statuses] of seen) {
      if (api in loaded) continue;
      for (const status of statuses) requests.remove({ api, status });
      latency.remove({ api });
      singleMessage.remove({ api });
      seen.delete(api);
    }
  };
  const latency = new Histogram({
    name: 'legate_graphql_request_duration_seconds',
    help: 'time from the request headers to the answer',
    labelNames: ['api'],
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [registry],
  });
  const singleMessage = new Counter({
    name: 'legate_graphql_single_message_requests_total',
    help: 'GraphQL requests that arrived as one ext_proc message (body with attributes, no headers message)',
    labelNames: ['api'],
    registers: [registry],
  });
  new Gauge({
    name: 'legate_graphql_apis_loaded',
    help: 'GraphQL APIs received from the controller',
    registers: [registry],
    collect() {
      this.set(Object.keys(apis()).length);
    },
  });
  return {
    observe(api: string, status: number, seconds: number, oneMessage: boolean): void {
      requests.inc({ api, status: String(status) });
      let statuses = seen.get(api);
      if (!statuses) {
        // unscraped, the label sets of APIs come and gone would pile up: pruned when their number doubles
        if (seen.size >= pruneAt) {
          forgetUnloaded();
          pruneAt = Math.max(64, 2 * seen.size);
        }
        seen.set(api, (statuses = new Set()));
      }
      statuses.add(String(status));
      if (oneMessage) singleMessage.inc({ api });
      latency.observe({ api }, seconds);
      // only failed or slow requests become spans: keeps the per-request path allocation-light
      if (status >= 400 || seconds > 0.05) spans.start('graphql.request', { api, status, ms: Math.round(seconds * 1e6) / 1e3 })();
    },
  };
}
