// Where a destination (an Upstream, or a Service port through the Upstream discovery made for it) sends
// traffic: its cluster name, and why Envoy will have no such cluster when the destination is missing or
// rejected. The routing feature (route actions) and the core (UpstreamGroups) both resolve destinations.
import type { Destination } from '../api/routes.js';
import type { Problem, ResolveContext } from './feature.js';
import { clusterName, discoveredUpstreamName, nsName } from './names.js';

export interface DestinationCluster {
  cluster: string;
  /** set when the cluster will not exist: the message (with `where`) and the reason alone */
  problem?: Problem & { reason: string };
}

function missing(cluster: string, code: Problem['code'], where: string, reason: string): DestinationCluster {
  return { cluster, problem: { code, message: `${where}: ${reason}`, reason } };
}

/** `ns` is the namespace of the resource that holds the destination (the default for its references). */
export function destinationCluster(
  dest: Destination,
  where: string,
  ns: string,
  ctx: Pick<ResolveContext, 'upstreams' | 'index' | 'writeNamespace' | 'disableKubernetesDestinations'>,
): DestinationCluster {
  if (dest.upstream) {
    const upNs = dest.upstream.namespace ?? ns;
    const key = nsName(upNs, dest.upstream.name);
    const cluster = clusterName(upNs, dest.upstream.name);
    const upstreams = ctx.upstreams();
    if (upstreams.rejected.has(key)) {
      return missing(cluster, 'UpstreamRejected', where, `Upstream ${upNs}.${dest.upstream.name} is rejected`);
    }
    const up = upstreams.resolved.get(key);
    if (!up) return missing(cluster, 'UpstreamNotFound', where, `Upstream ${upNs}.${dest.upstream.name} not found`);
    return { cluster: up.cluster };
  }
  const kube = dest.kube;
  if (!kube) return missing('invalid:destination', 'InvalidSpec', where, 'set upstream or kube');
  if (ctx.disableKubernetesDestinations) {
    const reason = 'Kubernetes destinations are disabled (Settings gloo.disableKubernetesDestinations); route to an Upstream';
    return missing('invalid:destination', 'InvalidSpec', `${where}.kube`, reason);
  }
  const svcNs = kube.ref.namespace ?? ns;
  // routed through the upstream discovery makes for this Service port
  const cluster = clusterName(ctx.writeNamespace, discoveredUpstreamName(svcNs, kube.ref.name, kube.port));
  const svc = ctx.index.services.get(nsName(svcNs, kube.ref.name));
  if (!svc) return missing(cluster, 'ServiceNotFound', `${where}.kube`, `Service ${svcNs}.${kube.ref.name} not found`);
  if (!svc.spec.spec.ports.some((p) => p.port === kube.port)) {
    const have = svc.spec.spec.ports.map((p) => p.port).join(', ');
    const reason = `Service ${svcNs}.${kube.ref.name} has no port ${kube.port} (ports: ${have})`;
    return missing(cluster, 'ServicePortNotFound', `${where}.kube`, reason);
  }
  return { cluster };
}
