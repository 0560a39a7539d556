// Stage 1 for routing: route actions (to upstreams or Services, direct responses, redirects) and the
// route options that shape forwarding (prefix rewrite, retries).
import type { Route } from '../../../api/routes.js';
import { parseDuration } from '../../duration.js';
import { destinationCluster } from '../../destinations.js';
import type { BindSink, FeatureBinding, ResolveContext, RouteSite } from '../../feature.js';
import type { RouteActionIR, RouteIR, WeightedClusterIR } from '../../ir.js';

export function routingBinding(ctx: ResolveContext): FeatureBinding {
  return {
    routeAction(route: Route, site: RouteSite, sink: BindSink): RouteActionIR | undefined {
      const { where } = site;
      if (route.routeAction) {
        const { single, multi, upstreamGroup } = route.routeAction;
        if (upstreamGroup) {
          // the core puts a served group's destinations in `multi` before features bind; this one is not served
          const ref = `${upstreamGroup.namespace ?? site.vs.metadata.namespace}.${upstreamGroup.name}`;
          return {
            type: 'route',
            clusters: [{ cluster: `invalid:UpstreamGroup:${ref}`, weight: 1, invalid: `UpstreamGroup ${ref} is missing or rejected` }],
          };
        }
        const dests = single
          ? [{ destination: single, weight: 1 }]
          : (multi?.destinations ?? []).map((d) => ({ destination: d.destination, weight: d.weight ?? 1 }));
        const clusters: WeightedClusterIR[] = [];
        dests.forEach((d, j) => {
          const path = single ? `${where}.routeAction.single` : `${where}.routeAction.multi.destinations[${j}].destination`;
          // As in Gloo, a missing or rejected destination is a warning: the other routes keep serving and
          // this one (or its share of a weighted route) answers as Settings gloo.invalidConfigPolicy says.
          const { cluster, problem } = destinationCluster(d.destination, path, site.vs.metadata.namespace, ctx);
          const ir: WeightedClusterIR = multi ? { cluster, weight: d.weight, destination: j } : { cluster, weight: d.weight };
          if (problem) {
            sink.warnings.push({ code: problem.code, message: problem.message });
            ir.invalid = problem.reason;
          }
          clusters.push(ir);
        });
        if (clusters.length > 1 && clusters.every((c) => c.weight === 0)) {
          sink.problems.push({
            code: 'InvalidSpec',
            message: `${where}.routeAction.multi: at least one destination needs a weight above 0`,
          });
        }
        return { type: 'route', clusters: clusters.filter((c) => c.weight > 0 || clusters.length === 1) };
      }
      if (route.directResponseAction) {
        const action: RouteActionIR = { type: 'directResponse', status: route.directResponseAction.status };
        if (route.directResponseAction.body !== undefined) action.body = route.directResponseAction.body;
        return action;
      }
      if (route.redirectAction) return { type: 'redirect', ...route.redirectAction };
      return undefined;
    },
    bindRoute(route: Route, ir: RouteIR): void {
      const opts = route.options;
      if (opts?.prefixRewrite !== undefined) ir.prefixRewrite = opts.prefixRewrite;
      if (opts?.retries) {
        ir.retries = { retryOn: opts.retries.retryOn ?? '5xx', numRetries: opts.retries.numRetries ?? 1 };
        if (opts.retries.perTryTimeout) ir.retries.perTryTimeout = parseDuration(opts.retries.perTryTimeout);
      }
    },
  };
}
