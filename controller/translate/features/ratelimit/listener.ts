// `httpGateway.options.ratelimitServer` (Gloo's ratelimit Settings on one listener): that listener's ratelimit
// filters ask another server, or with another timeout, failure mode or headers, than the Settings' ratelimitServer.
import type { RatelimitServer } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, UpstreamLookup } from '../../feature.js';
import type { ListenerRatelimitIR } from '../../ir.js';
import { clusterName, nsName } from '../../names.js';

export function bindListenerRatelimit(
  o: RatelimitServer,
  namespace: string,
  upstreams: UpstreamLookup,
  settingsBeforeAuth: boolean,
  sink: BindSink,
): ListenerRatelimitIR {
  const where = 'httpGateway.options.ratelimitServer';
  if (o.rateLimitBeforeAuth !== undefined && o.rateLimitBeforeAuth !== settingsBeforeAuth)
    sink.problems.push({
      code: 'NotSupported',
      message:
        `${where}.rateLimitBeforeAuth: which side of ext_authz a limit is counted on is proxy-wide in Legate ` +
        `(Settings ratelimitServer.rateLimitBeforeAuth, now ${settingsBeforeAuth}); set it there`,
    });
  const ir: ListenerRatelimitIR = {};
  const ref = o.ratelimitServerRef;
  if (ref) {
    const ns = ref.namespace ?? namespace;
    if (upstreams.resolved.has(nsName(ns, ref.name))) ir.cluster = clusterName(ns, ref.name);
    else
      // as for Settings: Envoy keeps asking the Settings' server (a filter naming no cluster would fail the listener)
      sink.warnings.push({
        code: 'UpstreamNotFound',
        message: `${where}.ratelimitServerRef: Upstream ${ns}.${ref.name} not found; this listener asks the Settings' server`,
      });
  }
  if (o.requestTimeout !== undefined) {
    const d = parseDuration(o.requestTimeout);
    ir.timeoutMs = Math.max(1, Math.round(d.seconds * 1000 + (d.nanos ?? 0) / 1e6));
  }
  if (o.denyOnFail !== undefined) ir.denyOnFail = o.denyOnFail;
  if (o.enableXRatelimitHeaders !== undefined) ir.xRateLimitHeaders = o.enableXRatelimitHeaders;
  return ir;
}
