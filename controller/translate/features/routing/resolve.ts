// Stage 1 for routing: route actions (to upstreams or Services, direct responses, redirects) and the
// options that shape forwarding (options.ts).
import type { VirtualService } from '../../../api/resources.js';
import type { Route } from '../../../api/routes.js';
import { destinationCluster } from '../../destinations.js';
import type { BindSink, FeatureBinding, ResolveContext, RouteSite } from '../../feature.js';
import type { RouteActionIR, RouteIR, UpstreamIR, VirtualHostIR, WeightedClusterIR } from '../../ir.js';
import { bindRouteOptions, regexRewrite, retryPolicy } from './options.js';
import { destinationSubset } from './subset.js';

export function routingBinding(ctx: ResolveContext): FeatureBinding {
  let byCluster: Map<string, UpstreamIR> | undefined;
  const upstreamOf = (cluster: string): UpstreamIR | undefined =>
    (byCluster ??= new Map([...ctx.upstreams().resolved.values()].map((u) => [u.cluster, u]))).get(cluster);
  return {
    routeAction(route: Route, site: RouteSite, sink: BindSink): RouteActionIR | undefined {
      const { where } = site;
      if (route.routeAction?.clusterHeader !== undefined)
        return { type: 'route', clusters: [], clusterHeader: route.routeAction.clusterHeader };
      const upstreamGroup = route.routeAction?.upstreamGroup;
      if (upstreamGroup) {
        // the core puts a served group's destinations in `multi` before features bind; this one is not served
        const ref = `${upstreamGroup.namespace ?? site.namespace}.${upstreamGroup.name}`;
        return {
          type: 'route',
          clusters: [{ cluster: `invalid:UpstreamGroup:${ref}`, weight: 1, invalid: `UpstreamGroup ${ref} is missing or rejected` }],
        };
      }
      // other kinds of routeAction destination (dynamicForwardProxy) are their features'
      if (route.routeAction?.single || route.routeAction?.multi) {
        const { single, multi } = route.routeAction;
        const dests = single
          ? [{ destination: single, weight: 1 }]
          : (multi?.destinations ?? []).map((d) => ({ destination: d.destination, weight: d.weight ?? 1 }));
        const clusters: WeightedClusterIR[] = [];
        dests.forEach((d, j) => {
          const path = single ? `${where}.routeAction.single` : `${where}.routeAction.multi.destinations[${j}].destination`;
          // As in Gloo, a missing or rejected destination is a warning: the other routes keep serving and
          // this one (or its share of a weighted route) answers as Settings gloo.invalidConfigPolicy says.
          const { cluster, problem } = destinationCluster(d.destination, path, site.namespace, ctx);
          const ir: WeightedClusterIR = multi ? { cluster, weight: d.weight, destination: j } : { cluster, weight: d.weight };
          if (problem) {
            sink.warnings.push({ code: problem.code, message: problem.message });
            ir.invalid = problem.reason;
          } else {
            const subset = destinationSubset(d.destination, upstreamOf(cluster), path, sink);
            if (subset) ir.subset = subset;
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
      if (route.redirectAction) {
        const { regexRewrite: rewrite, ...redirect } = route.redirectAction;
        const action: RouteActionIR = { type: 'redirect', ...redirect };
        const checked = rewrite && regexRewrite(rewrite, `${where}.redirectAction.regexRewrite`, sink.problems);
        if (checked) action.regexRewrite = checked;
        return action;
      }
      return undefined;
    },
    bindRoute(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink): void {
      bindRouteOptions(route, ir, site, sink, ctx);
    },
    bindVirtualHost(vs: VirtualService, ir: VirtualHostIR, sink: BindSink): void {
      const retries = vs.spec.virtualHost.options?.retries;
      const policy = retries && retryPolicy(retries, 'virtualHost.options.retries', sink);
      if (policy) ir.retries = policy;
    },
  };
}
