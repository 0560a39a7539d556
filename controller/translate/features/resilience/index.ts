// Upstream resilience: active health checks, outlier detection, circuit breakers (an Upstream's own, or
// Settings gloo.circuitBreakers for every Upstream without them). Resolved with each Upstream
// (Feature.resolveUpstream), rendered on its cluster.
import type { Feature } from '../../feature.js';
import { resilienceRender } from './render.js';
import { resolveResilience } from './resolve.js';
import type { CircuitBreakerConfig } from './schema.js';

export type { CircuitBreakerConfig } from './schema.js';

export function resilienceFeature(defaultCircuitBreakers?: CircuitBreakerConfig): Feature {
  return {
    name: 'resilience',
    kinds: [],
    resolveUpstream: (upstream, index) => resolveResilience(upstream, defaultCircuitBreakers, index.secrets),
    render: resilienceRender,
  };
}
