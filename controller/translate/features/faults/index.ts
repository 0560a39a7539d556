// Fault injection: `options.faults` on a route -> Envoy's fault filter, on the HCM with nothing to inject
// (inert) whenever some route of the listener has faults, and the route's HTTPFault in its
// typed_per_filter_config (as Gloo's faultinjection plugin).
import type { Feature } from '../../feature.js';
import { parseDuration } from '../../duration.js';
import type { FaultsIR } from '../../ir.js';
import { faultsRender } from './render.js';

export const faultsFeature: Feature = {
  name: 'faults',
  kinds: [],
  resolve() {
    return {
      bindRoute(route, ir, site, sink) {
        const f = route.options?.faults;
        if (!f) return;
        const where = `${site.where}.options.faults`;
        const faults: FaultsIR = {};
        const none = (what: string): void => {
          sink.warnings.push({ code: 'InvalidSpec', message: `${where}.${what}.percentage is 0 (the default): no request is affected` });
        };
        if (f.abort) {
          faults.abort = { percentage: f.abort.percentage ?? 0, httpStatus: f.abort.httpStatus };
          if (faults.abort.percentage === 0) none('abort');
        }
        if (f.delay) {
          const fixedDelay = parseDuration(f.delay.fixedDelay);
          if (fixedDelay.seconds === 0 && !fixedDelay.nanos) {
            sink.problems.push({ code: 'InvalidSpec', message: `${where}.delay.fixedDelay: must be longer than 0` });
          }
          faults.delay = { percentage: f.delay.percentage ?? 0, fixedDelay };
          if (faults.delay.percentage === 0) none('delay');
        }
        if (!f.abort && !f.delay) {
          sink.warnings.push({ code: 'InvalidSpec', message: `${where}: neither abort nor delay is set: nothing is injected` });
          return;
        }
        ir.faults = faults;
      },
    };
  },
  render: faultsRender,
};
