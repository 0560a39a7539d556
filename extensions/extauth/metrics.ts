// Prometheus metrics of the extauth service: checks by outcome, latency, introspection, cache and JWKS fetches.
import { Gauge, Histogram, type Registry } from 'prom-client';
import type { SpanRecorder } from '../../common/trace.js';
import { http2LimitMetric } from '../common/h2/metrics.js';
import { outcomeCounter } from '../common/outcome-counter.js';
import type { AuthorizerStats, Outcome } from './service.js';

export function extauthMetrics(registry: Registry, spans: SpanRecorder, stats: () => AuthorizerStats | undefined) {
  http2LimitMetric(registry);
  const countCheck = outcomeCounter<Outcome>(registry, 'legate_extauth_checks_total', 'ext_authz Check calls by outcome');
  const latency = new Histogram({
    name: 'legate_extauth_check_duration_seconds',
    help: 'time to answer a Check',
    buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5],
    registers: [registry],
  });
  const gauge = (name: string, help: string, pick: (s: AuthorizerStats) => number): void => {
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        const s = stats();
        if (s) this.set(pick(s));
      },
    });
  };
  gauge('legate_extauth_introspections_total', 'introspection calls made', (s) => s.introspections);
  gauge('legate_extauth_introspections_joined_total', 'checks that shared an in-flight introspection', (s) => s.joinedIntrospections);
  gauge(
    'legate_extauth_introspection_errors_total',
    'introspection calls that failed (unreachable, timeout, bad answer)',
    (s) => s.introspectionErrors,
  );
  gauge('legate_extauth_cache_hits_total', 'checks answered from the token cache', (s) => s.cacheHits);
  gauge('legate_extauth_cache_entries', 'active tokens cached', (s) => s.cacheEntries);
  gauge('legate_extauth_jwks_fetches_total', 'JWK set fetches (config, refresh interval, unknown kid)', (s) => s.jwksFetches);
  gauge('legate_extauth_jwks_fetch_errors_total', 'JWK set fetches that failed (the last good set is kept)', (s) => s.jwksFetchErrors);
  gauge(
    'legate_extauth_jwt_verifications_total',
    'JWT signature verifications (checks not answered from the JWT cache)',
    (s) => s.jwtVerifications,
  );
  gauge('legate_extauth_jwt_cache_hits_total', 'JWT checks answered from the cache of verified tokens', (s) => s.jwtCacheHits);
  gauge('legate_extauth_jwt_cache_entries', 'verified JWTs cached', (s) => s.jwtCacheEntries);
  return {
    observe(outcome: Outcome, configId: string, seconds: number): void {
      countCheck(outcome);
      latency.observe(seconds);
      // only slow or denied checks are worth a span; keeps the hot path cheap
      if (outcome !== 'allow' || seconds > 0.005)
        spans.start('extauth.check', { outcome, config_id: configId, ms: Math.round(seconds * 1e6) / 1e3 })();
    },
  };
}
