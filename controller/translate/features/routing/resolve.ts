// Stage 1 for routing: route actions (to upstreams or Services, direct responses, redirects) and the
// route options that shape forwarding (prefix rewrite, retries).
import type { Route } from '../../../api/routes.js';
import type { Destination } from './schema.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, FeatureBinding, Problem, ResolveContext, RouteSite } from '../../feature.js';
import type { RouteActionIR, RouteIR, WeightedClusterIR } from '../../ir.js';
import { clusterName, discoveredUpstreamName, nsName } from '../../names.js';

export function routingBinding(ctx: ResolveContext): FeatureBinding {
  return {
    routeAction(route: Route, site: RouteSite, sink: BindSink): RouteActionIR | undefined {
      const { where } = site;
      if (route.routeAction) {
        const dests = route.routeAction.single
          ? [{ destination: route.routeAction.single, weight: 1 }]
          : (route.routeAction.multi?.destinations ?? []).map((d) => ({ destination: d.destination, weight: d.weight ?? 1 }));
        const clusters: WeightedClusterIR[] = [];
        dests.forEach((d, j) => {
          const path = route.routeAction?.single
            ? `${where}.routeAction.single`
            : `${where}.routeAction.multi.destinations[${j}].destination`;
          const cluster = resolveDestination(d.destination, path, site.namespace, ctx, sink.problems);
          if (cluster)
            clusters.push(route.routeAction?.multi ? { cluster, weight: d.weight, destination: j } : { cluster, weight: d.weight });
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

function resolveDestination(dest: Destination, where: string, ns: string, ctx: ResolveContext, problems: Problem[]): string | undefined {
  if (dest.upstream) {
    const upNs = dest.upstream.namespace ?? ns;
    const key = nsName(upNs, dest.upstream.name);
    const upstreams = ctx.upstreams();
    if (upstreams.rejected.has(key)) {
      problems.push({ code: 'UpstreamRejected', message: `${where}: Upstream ${upNs}.${dest.upstream.name} is rejected` });
      return undefined;
    }
    const up = upstreams.resolved.get(key);
    if (!up) {
      problems.push({ code: 'UpstreamNotFound', message: `${where}: Upstream ${upNs}.${dest.upstream.name} not found` });
      return undefined;
    }
    return up.cluster;
  }
  if (dest.kube) {
    const svcNs = dest.kube.ref.namespace ?? ns;
    const svc = ctx.index.services.get(nsName(svcNs, dest.kube.ref.name));
    if (!svc) {
      problems.push({ code: 'ServiceNotFound', message: `${where}.kube: Service ${svcNs}.${dest.kube.ref.name} not found` });
      return undefined;
    }
    if (!svc.spec.spec.ports.some((p) => p.port === dest.kube?.port)) {
      const have = svc.spec.spec.ports.map((p) => p.port).join(', ');
      problems.push({
        code: 'ServicePortNotFound',
        message: `${where}.kube: Service ${svcNs}.${dest.kube.ref.name} has no port ${dest.kube.port} (ports: ${have})`,
      });
      return undefined;
    }
    // Routed through the upstream discovery made for this Service port.
    return clusterName(ctx.writeNamespace, discoveredUpstreamName(svcNs, dest.kube.ref.name, dest.kube.port));
  }
  return undefined;
}
