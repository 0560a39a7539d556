// The HTTP/2 server's abuse limits as a metric, registered by each service that serves on it.
import { Gauge, type Registry } from 'prom-client';
import { limitHits, type H2Limit } from './server.js';

export function http2LimitMetric(registry: Registry): void {
  new Gauge({
    name: 'legate_http2_limit_hits_total',
    help: 'clients stopped by an HTTP/2 abuse limit (GOAWAY ENHANCE_YOUR_CALM, a reset stream or a closed connection), by limit',
    labelNames: ['limit'],
    registers: [registry],
    collect() {
      for (const [limit, n] of Object.entries(limitHits)) this.set({ limit: limit as H2Limit }, n);
    },
  });
}
