// What legatectl reads from Kubernetes objects, as pure functions of their JSON: the problems
// `check` reports for Deployments and Pods (worded as glooctl's), which pods are Legate's proxies and
// controller (the labels the chart sets), and the gateway proxy's address from its Service.
import { CliError } from './errors.js';

/** The labels Legate's pods carry (install/helm, docs/kubernetes.md). */
export const LABELS = {
  /** every Legate pod: `legate: <component>` (gateway-proxy, controller, extauth, graphql, ratelimit) */
  component: 'legate',
  /** a gateway proxy's name, as in Gloo: `gateway-proxy-id: gateway-proxy` */
  proxyId: 'gateway-proxy-id',
} as const;

/** Container port names legatectl looks for, with the defaults it falls back to. */
export const PORTS = { envoyAdmin: { name: 'admin', default: 19000 }, controllerApi: { name: 'api', default: 9095 } } as const;

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  generation?: number;
}

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface Deployment {
  metadata: ObjectMeta;
  spec?: { replicas?: number };
  status?: {
    observedGeneration?: number;
    replicas?: number;
    readyReplicas?: number;
    availableReplicas?: number;
    unavailableReplicas?: number;
    conditions?: Condition[];
  };
}

interface ContainerState {
  waiting?: { reason?: string; message?: string };
  running?: { startedAt?: string };
  terminated?: { reason?: string; message?: string; exitCode?: number };
}

export interface Pod {
  metadata: ObjectMeta;
  spec?: { nodeName?: string; containers?: { name: string; ports?: { name?: string; containerPort: number }[] }[] };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    podIP?: string;
    conditions?: Condition[];
    containerStatuses?: { name: string; ready: boolean; restartCount?: number; state?: ContainerState }[];
  };
}

export interface ServicePort {
  name?: string;
  port: number;
  nodePort?: number;
}

export interface Service {
  metadata: ObjectMeta;
  spec?: { type?: string; clusterIP?: string; ports?: ServicePort[] };
  status?: { loadBalancer?: { ingress?: { ip?: string; hostname?: string; ports?: { port: number }[] }[] } };
}

export interface Node {
  metadata: { name: string };
  status?: { addresses?: { type: string; address: string }[] };
}

export interface KubeList<T> {
  items: T[];
}

const byName = <T extends { metadata: { name: string } }>(a: T, b: T): number => a.metadata.name.localeCompare(b.metadata.name);

const message = (text: string | undefined): string => (text ? ` Message: ${text}` : '');

/** `Checking Deployments...`: each Deployment in the install namespace that fails, is stuck or lacks replicas. */
export function deploymentProblems(deployments: readonly Deployment[], namespace: string): string[] {
  if (!deployments.length) return [`No Deployments found in namespace ${namespace} (is Legate installed there? pass -n NAMESPACE)`];
  const problems: string[] = [];
  for (const d of [...deployments].sort(byName)) {
    const what = `Deployment ${d.metadata.name} in namespace ${d.metadata.namespace}`;
    const conditions = d.status?.conditions ?? [];
    const condition = (type: string): Condition | undefined => conditions.find((c) => c.type === type);
    const failure = condition('ReplicaFailure');
    const available = condition('Available');
    const progressing = condition('Progressing');
    const wanted = d.spec?.replicas ?? 1;
    const ready = d.status?.availableReplicas ?? 0;
    if (failure?.status === 'True') problems.push(`${what} failed to create pods!${message(failure.message)}`);
    else if (available && available.status !== 'True') problems.push(`${what} is not available!${message(available.message)}`);
    else if (progressing?.status === 'False') problems.push(`${what} has not progressed!${message(progressing.message)}`);
    else if (ready < wanted || (d.status?.unavailableReplicas ?? 0) > 0) {
      const why = d.status ? `${ready} of ${wanted} replicas available` : "no status yet (is the cluster's controller-manager running?)";
      problems.push(`${what} is not available! Message: ${why}`);
    }
  }
  return problems;
}

/** Why a container keeps its pod from being ready, e.g. `container envoy is waiting: CrashLoopBackOff (…), restarted 5 times`. */
function containerTrouble(pod: Pod): string | undefined {
  for (const c of pod.status?.containerStatuses ?? []) {
    if (c.ready) continue;
    const restarts = c.restartCount ? `, restarted ${c.restartCount} time${c.restartCount === 1 ? '' : 's'}` : '';
    const waiting = c.state?.waiting;
    if (waiting?.reason)
      return `container ${c.name} is waiting: ${waiting.reason}${waiting.message ? ` (${waiting.message})` : ''}${restarts}`;
    const terminated = c.state?.terminated;
    if (terminated) {
      const code = terminated.exitCode !== undefined ? ` with exit code ${terminated.exitCode}` : '';
      return `container ${c.name} terminated${code}${terminated.reason ? `: ${terminated.reason}` : ''}${restarts}`;
    }
    return `container ${c.name} is not ready${restarts}`;
  }
  return undefined;
}

/** `Checking Pods...`: each Legate pod (label `legate`) not scheduled, failed, or not ready, with the container's reason. */
export function podProblems(pods: readonly Pod[], namespace: string, selector: string): string[] {
  if (!pods.length)
    return [`No pods with label ${selector} found in namespace ${namespace} (is Legate installed there? pass -n NAMESPACE)`];
  const problems: string[] = [];
  for (const p of [...pods].sort(byName)) {
    const what = `Pod ${p.metadata.name} in namespace ${p.metadata.namespace}`;
    const phase = p.status?.phase;
    const conditions = p.status?.conditions ?? [];
    const scheduled = conditions.find((c) => c.type === 'PodScheduled');
    const ready = conditions.find((c) => c.type === 'Ready');
    if (phase === 'Succeeded') continue;
    if (phase === 'Failed') problems.push(`${what} has failed!${message(p.status?.message ?? p.status?.reason)}`);
    else if (scheduled?.status === 'False') problems.push(`${what} is not yet scheduled!${message(scheduled.message)}`);
    else if (ready?.status !== 'True') {
      problems.push(`${what} is not ready! Message: ${containerTrouble(p) ?? ready?.message ?? `phase ${phase ?? 'unknown'}, not Ready`}`);
    }
  }
  return problems;
}

export function podReady(p: Pod): boolean {
  return p.status?.phase === 'Running' && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}

/** The pod's container port of this name, else the default (a component's well-known port). */
export function containerPort(p: Pod, port: { name: string; default: number }): number {
  for (const c of p.spec?.containers ?? []) for (const cp of c.ports ?? []) if (cp.name === port.name) return cp.containerPort;
  return port.default;
}

/** Ready pods first (then by name): the one a command talks to is the first. */
export function preferReady(pods: readonly Pod[]): Pod[] {
  return [...pods].sort((a, b) => Number(podReady(b)) - Number(podReady(a)) || byName(a, b));
}

/**
 * The gateway proxy's URL from its Service, as glooctl's `proxy url`: the load balancer's address
 * and the Service port named `portName`; with `localCluster`, a node's address and the node port.
 * Without a load balancer address, says what there is instead (a ClusterIP works only in the cluster).
 */
export function serviceUrl(
  svc: Service,
  portName: string,
  options: { localCluster: boolean; nodes: readonly Node[] },
): { url: string; note?: string } {
  const name = `${svc.metadata.namespace}/${svc.metadata.name}`;
  const ports = svc.spec?.ports ?? [];
  const port = ports.find((p) => p.name === portName) ?? (ports.length === 1 && !ports[0]?.name ? ports[0] : undefined);
  if (!port) {
    throw new CliError(
      `Service ${name} has no port named ${portName} (it has: ${ports.map((p) => p.name ?? String(p.port)).join(', ') || 'none'})`,
    );
  }
  const scheme = portName === 'https' ? 'https' : 'http';
  const type = svc.spec?.type ?? 'ClusterIP';
  if (options.localCluster) {
    if (!port.nodePort)
      throw new CliError(`Service ${name} (type ${type}) has no node port for ${portName}; -l needs a NodePort or LoadBalancer Service`);
    const addresses = options.nodes.flatMap((n) => n.status?.addresses ?? []);
    const address =
      addresses.find((a) => a.type === 'ExternalIP') ??
      addresses.find((a) => a.type === 'InternalIP') ??
      addresses.find((a) => a.type === 'Hostname');
    if (!address) throw new CliError(`-l: no node with an address found for node port ${port.nodePort} of Service ${name}`);
    return { url: `${scheme}://${hostForUrl(address.address)}:${port.nodePort}` };
  }
  const ingress = svc.status?.loadBalancer?.ingress?.find((i) => i.ip || i.hostname);
  if (ingress) return { url: `${scheme}://${hostForUrl(ingress.ip ?? ingress.hostname ?? '')}:${port.port}` };
  if (type === 'LoadBalancer') {
    throw new CliError(
      `the load balancer of Service ${name} has no ingress address yet (no load balancer controller in this cluster?); ` +
        `try -l for node port ${port.nodePort ?? '(none)'} on a node's address`,
    );
  }
  if (type === 'NodePort') {
    throw new CliError(`Service ${name} is of type NodePort: use -l for node port ${port.nodePort ?? '(none)'} on a node's address`);
  }
  if (!svc.spec?.clusterIP || svc.spec.clusterIP === 'None') throw new CliError(`Service ${name} (type ${type}) has no address`);
  return {
    url: `${scheme}://${hostForUrl(svc.spec.clusterIP)}:${port.port}`,
    note: `Service ${name} is of type ${type}: this address is reachable from inside the cluster only`,
  };
}

function hostForUrl(host: string): string {
  return host.includes(':') ? `[${host}]` : host;
}
