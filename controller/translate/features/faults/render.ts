// Stage 2 for faults: the fault filter on the HCM (empty: inert) and each route's HTTPFault.
import { typed, type HTTPFault } from '../../../../envoy/typed.js';
import { duration, fractionalPercent, setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, during, type RenderPlugin } from '../../feature.js';
import type { FaultsIR } from '../../ir.js';

export const FAULT_FILTER = 'envoy.filters.http.fault';
const HTTP_FAULT = 'type.googleapis.com/envoy.extensions.filters.http.fault.v3.HTTPFault';

export const faultsRender: RenderPlugin = {
  httpFilters(_proxy, listener) {
    if (!listener.virtualHosts.some((vh) => vh.routes.some((r) => r.faults))) return [];
    return [{ position: during(FilterStage.Fault), filter: { name: FAULT_FILTER, typed_config: typed(HTTP_FAULT, {}) } }];
  },
  patchRoute(ir, route) {
    if (ir.faults) setPerFilterConfig(route, FAULT_FILTER, typed(HTTP_FAULT, httpFault(ir.faults)));
  },
};

function httpFault(f: FaultsIR): HTTPFault {
  const fault: HTTPFault = {};
  if (f.abort) fault.abort = { http_status: f.abort.httpStatus, percentage: fractionalPercent(f.abort.percentage) };
  if (f.delay) fault.delay = { fixed_delay: duration(f.delay.fixedDelay), percentage: fractionalPercent(f.delay.percentage) };
  return fault;
}
