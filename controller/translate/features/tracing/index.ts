// Route tracing: `options.tracing` -> the route's decorator (its span's name, sent back to the client
// as x-envoy-decorator-operation unless propagate is false) and sampling percentages, as Gloo's tracing
// plugin. A listener with such routes gets Envoy's tracing turned on without a provider, which makes
// those decisions and the decorator take effect; exporting spans (a listener's tracing provider) is not
// rendered yet.
import type { Feature } from '../../feature.js';
import type { RouteTracingIR } from '../../ir.js';
import { tracingRender } from './render.js';

/** Gloo's default for each sampling percentage left out. */
const ALL = 100;

export const tracingFeature: Feature = {
  name: 'tracing',
  kinds: [],
  resolve() {
    return {
      bindRoute(route, ir, site, sink) {
        const t = route.options?.tracing;
        if (!t) return;
        const p = t.tracePercentages;
        const tracing: RouteTracingIR = {
          clientSampling: p?.clientSamplePercentage ?? ALL,
          randomSampling: p?.randomSamplePercentage ?? ALL,
          overallSampling: p?.overallSamplePercentage ?? ALL,
        };
        if (t.routeDescriptor) {
          tracing.operation = t.routeDescriptor;
          if (t.propagate !== undefined) tracing.propagate = t.propagate;
        } else if (t.propagate !== undefined) {
          sink.warnings.push({
            code: 'InvalidSpec',
            message: `${site.where}.options.tracing.propagate: has no effect without routeDescriptor (as in Gloo)`,
          });
        }
        ir.tracing = tracing;
      },
    };
  },
  render: tracingRender,
};
