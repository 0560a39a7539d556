// `httpGateway.options.extauth` (Gloo's extauth Settings on one listener): that listener's ext_authz filter is built
// with these values instead of the defaults, e.g. another server (an Upstream), failureModeAllow or a timeout.
import type { ExtauthHttpService, ListenerExtauth } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, UpstreamLookup } from '../../feature.js';
import type { ExtauthHttpIR, ListenerExtauthIR } from '../../ir.js';
import { re2Error } from '../../regex.js';
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
  if (o.userIdHeader) ir.userIdHeader = o.userIdHeader.toLowerCase();
  if (o.httpService && !ref)
    sink.problems.push({
      code: 'NotSupported',
      message: `${where}.httpService: Legate's own extauth service speaks gRPC; an HTTP server needs extauthzServerRef (an Upstream)`,
    });
  else if (o.httpService) {
    const http = extauthHttp(o.httpService, `${where}.httpService`, sink);
    if (http) ir.http = http;
  }
  return ir;
}

/** Gloo's httpService as Envoy's http_service takes it; undefined (a problem reported) when a regex is bad. */
export function extauthHttp(h: ExtauthHttpService, where: string, sink: Pick<BindSink, 'problems'>): ExtauthHttpIR | undefined {
  const ir: ExtauthHttpIR = {};
  let ok = true;
  for (const [i, re] of (h.request?.allowedHeadersRegex ?? []).entries()) {
    const err = re2Error(re);
    if (err) {
      sink.problems.push({
        code: 'InvalidRegex',
        message: `${where}.request.allowedHeadersRegex[${i}]: invalid regex ${JSON.stringify(re)}: ${err}`,
      });
      ok = false;
    }
  }
  if (!ok) return undefined;
  if (h.pathPrefix) ir.pathPrefix = h.pathPrefix;
  const rq = h.request;
  if (rq?.allowedHeaders?.length) ir.allowedHeaders = rq.allowedHeaders;
  if (rq?.allowedHeadersRegex?.length) ir.allowedHeadersRegex = rq.allowedHeadersRegex;
  if (rq?.headersToAdd && Object.keys(rq.headersToAdd).length) ir.headersToAdd = rq.headersToAdd;
  const rs = h.response;
  if (rs?.allowedUpstreamHeaders?.length) ir.allowedUpstreamHeaders = rs.allowedUpstreamHeaders;
  if (rs?.allowedUpstreamHeadersToAppend?.length) ir.allowedUpstreamHeadersToAppend = rs.allowedUpstreamHeadersToAppend;
  if (rs?.allowedClientHeaders?.length) ir.allowedClientHeaders = rs.allowedClientHeaders;
  return ir;
}
