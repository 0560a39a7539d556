// `httpGateway.options.extauth` (Gloo's extauth Settings on one listener): that listener's ext_authz filter is built
// with these values instead of the defaults, e.g. another server (an Upstream), failureModeAllow or a timeout.
import type { ListenerExtauth } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, UpstreamLookup } from '../../feature.js';
import type { ListenerExtauthIR } from '../../ir.js';
import { clusterName, nsName } from '../../names.js';

export function bindListenerExtauth(
  o: ListenerExtauth,
  namespace: string,
  upstreams: UpstreamLookup,
  sink: BindSink,
  where = 'httpGateway.options.extauth',
): ListenerExtauthIR {
  const ir: ListenerExtauthIR = {};
  const ref = o.extauthzServerRef;
  if (ref) {
    const ns = ref.namespace ?? namespace;
    const key = nsName(ns, ref.name);
    const served = upstreams.resolved.has(key);
    if (!served)
      sink.warnings.push({
        code: 'UpstreamNotFound',
        message:
          `${where}.extauthzServerRef: Upstream ${ns}.${ref.name} ${upstreams.rejected.has(key) ? 'is rejected' : 'not found'}; ` +
          "this listener's checks are denied until it is served",
      });
    ir.server = { cluster: clusterName(ns, ref.name), ...(served ? {} : { missing: true as const }) };
  }
  if (o.grpcService?.authority) ir.authority = o.grpcService.authority;
  if (o.requestTimeout !== undefined) ir.timeout = parseDuration(o.requestTimeout);
  if (o.failureModeAllow !== undefined) ir.failureModeAllow = o.failureModeAllow;
  if (o.requestBody) {
    const b = o.requestBody;
    // Gloo's default is 4KB
    ir.requestBody = {
      maxRequestBytes: b.maxRequestBytes || 4096,
      allowPartialMessage: b.allowPartialMessage ?? false,
      packAsBytes: b.packAsBytes ?? false,
    };
  }
  if (o.clearRouteCache !== undefined) ir.clearRouteCache = o.clearRouteCache;
  if (o.statusOnError) ir.statusOnError = o.statusOnError;
  if (o.statPrefix) ir.statPrefix = o.statPrefix;
  return ir;
}
