// Stage 2 for tracing: each route's decorator and sampling, and Envoy's tracing on the HCM of a listener
// that has such routes (no provider: decisions and decorators only, no spans exported).
import type { HttpConnectionManager, TypedConfig } from '../../../../envoy/typed.js';
import { fractionalPercent } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';

export const tracingRender: RenderPlugin = {
  patchListener(ir, _listener, filters) {
    if (!ir.virtualHosts.some((vh) => vh.routes.some((r) => r.tracing))) return;
    for (const f of filters) {
      if (f.name !== 'envoy.filters.network.http_connection_manager' || !f.typed_config) continue;
      const hcm = f.typed_config as TypedConfig & HttpConnectionManager;
      hcm.tracing ??= {};
    }
  },
  patchRoute(ir, route) {
    const t = ir.tracing;
    if (!t) return;
    route.tracing = {
      client_sampling: fractionalPercent(t.clientSampling),
      random_sampling: fractionalPercent(t.randomSampling),
      overall_sampling: fractionalPercent(t.overallSampling),
    };
    if (t.operation !== undefined) {
      route.decorator = t.propagate === undefined ? { operation: t.operation } : { operation: t.operation, propagate: t.propagate };
    }
  },
};
