// Prometheus metrics of the ratelimit service: decisions by outcome (ok, over_limit, error: the store
// failed and Envoy's denyOnFail decided), latency, shadow-mode hits and the store's state.
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { SpanRecorder } from '../../common/trace.js';
import { http2LimitMetric } from '../common/h2/metrics.js';
import { outcomeCounter } from '../common/outcome-counter.js';
import type { Outcome } from './service.js';

export function ratelimitMetrics(registry: Registry, spans: SpanRecorder, store: () => { errors: number; connected: boolean } | undefined) {
  http2LimitMetric(registry);
  const countDecision = outcomeCounter<Outcome>(
    registry,
    'legate_ratelimit_decisions_total',
    'ShouldRateLimit calls by outcome (error: the counter store failed; Envoy applied denyOnFail)',
  );
  const shadow = new Counter({
    name: 'legate_ratelimit_shadow_over_limit_total',
    help: 'descriptors over their limit in shadow mode (allowed)',
    registers: [registry],
  });
  const latency = new Histogram({
    name: 'legate_ratelimit_decision_duration_seconds',
    help: 'time to answer ShouldRateLimit',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1],
    registers: [registry],
  });
  new Gauge({
    name: 'legate_ratelimit_store_errors_total',
    help: 'counter store calls that failed (Redis down, slow or refusing)',
    registers: [registry],
    collect() {
      const s = store();
      if (s) this.set(s.errors);
    },
  });
  new Gauge({
    name: 'legate_ratelimit_store_connected',
    help: '1 when the counter store is reachable (always 1 for the in-memory store)',
    registers: [registry],
    collect() {
      const s = store();
      if (s) this.set(s.connected ? 1 : 0);
    },
  });
  return {
    observe(outcome: Outcome, seconds: number, shadowed: number): void {
      countDecision(outcome);
      latency.observe(seconds);
      if (shadowed) shadow.inc(shadowed);
      if (outcome === 'error' || seconds > 0.005) spans.start('ratelimit.decision', { outcome, ms: Math.round(seconds * 1e6) / 1e3 })();
    },
  };
}
