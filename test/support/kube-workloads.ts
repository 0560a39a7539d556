// Workload objects for a test API server that has no kubelet, scheduler or controller-manager:
// Deployments and Pods are created as objects and their `status` is written by the test (what those
// components would write), Services get their load balancer address the same way. A pod's
// status.podIP may point at a test address (198.18.0.0/15, netns.ts): the API server's pod proxy
// then dials it, which is how legatectl reaches Envoy's admin and the controller API in the tests.
import type { KubeApiServer } from './kube.js';

export interface PodSpecInput {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  /** container name -> named ports */
  containers: Record<string, Record<string, number>>;
  /** the node it runs on (see createNode); none: not scheduled, and the API server answers its log with nothing */
  nodeName?: string;
}

export type PodState =
  | { ready: true; podIP: string }
  | { ready: false; podIP?: string; waiting?: { container: string; reason: string; message?: string; restarts?: number } };

async function ok<T>(what: string, p: Promise<{ status: number; body: T }>): Promise<T> {
  const r = await p;
  if (r.status >= 300) throw new Error(`${what}: HTTP ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body;
}

const mergePatch = 'application/merge-patch+json';

export async function createPod(kube: KubeApiServer, pod: PodSpecInput): Promise<void> {
  await ok(
    `create pod ${pod.name}`,
    kube.api('POST', `/api/v1/namespaces/${pod.namespace}/pods`, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: pod.name, namespace: pod.namespace, labels: pod.labels },
      spec: {
        ...(pod.nodeName ? { nodeName: pod.nodeName } : {}),
        containers: Object.entries(pod.containers).map(([name, ports]) => ({
          name,
          image: 'legate:test',
          ports: Object.entries(ports).map(([portName, containerPort]) => ({ name: portName, containerPort })),
        })),
      },
    }),
  );
}

/**
 * A Node object, its kubelet at `address:kubeletPort` (a test address; where nothing listens, so that
 * the API server's requests for pod logs fail there instead of going anywhere else).
 */
export async function createNode(kube: KubeApiServer, name: string, address: string, kubeletPort: number): Promise<void> {
  await ok(`create node ${name}`, kube.api('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name } }));
  const status = { addresses: [{ type: 'InternalIP', address }], daemonEndpoints: { kubeletEndpoint: { Port: kubeletPort } } };
  await ok(`status of node ${name}`, kube.api('PATCH', `/api/v1/nodes/${name}/status`, { status }, mergePatch));
}

/** Writes what a kubelet would: phase, conditions, container statuses and (when given) the pod IP. */
export async function setPodState(
  kube: KubeApiServer,
  namespace: string,
  name: string,
  containers: string[],
  state: PodState,
): Promise<void> {
  const now = new Date().toISOString();
  const waiting = state.ready ? undefined : state.waiting;
  const status = {
    phase: 'Running',
    ...(state.podIP ? { podIP: state.podIP, podIPs: [{ ip: state.podIP }], hostIP: state.podIP } : {}),
    startTime: now,
    conditions: [
      { type: 'PodScheduled', status: 'True', lastTransitionTime: now },
      {
        type: 'Ready',
        status: state.ready ? 'True' : 'False',
        lastTransitionTime: now,
        ...(state.ready ? {} : { reason: 'ContainersNotReady', message: `containers with unready status: [${containers.join(' ')}]` }),
      },
    ],
    containerStatuses: containers.map((c) => ({
      name: c,
      image: 'legate:test',
      imageID: '',
      ready: state.ready || waiting?.container !== c,
      restartCount: waiting?.container === c ? (waiting.restarts ?? 0) : 0,
      started: state.ready,
      state:
        waiting?.container === c
          ? { waiting: { reason: waiting.reason, ...(waiting.message ? { message: waiting.message } : {}) } }
          : { running: { startedAt: now } },
    })),
  };
  await ok(`status of pod ${name}`, kube.api('PATCH', `/api/v1/namespaces/${namespace}/pods/${name}/status`, { status }, mergePatch));
}

export async function createDeployment(
  kube: KubeApiServer,
  namespace: string,
  name: string,
  labels: Record<string, string>,
): Promise<void> {
  await ok(
    `create deployment ${name}`,
    kube.api('POST', `/apis/apps/v1/namespaces/${namespace}/deployments`, {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name, namespace, labels },
      spec: {
        replicas: 1,
        selector: { matchLabels: labels },
        template: { metadata: { labels }, spec: { containers: [{ name, image: 'legate:test' }] } },
      },
    }),
  );
}

/** Writes what the deployment controller would: replicas available or not, with an Available condition. */
export async function setDeploymentAvailable(kube: KubeApiServer, namespace: string, name: string, available: boolean): Promise<void> {
  const now = new Date().toISOString();
  const status = {
    observedGeneration: 1,
    replicas: 1,
    updatedReplicas: 1,
    readyReplicas: available ? 1 : 0,
    availableReplicas: available ? 1 : 0,
    unavailableReplicas: available ? 0 : 1,
    conditions: [
      {
        type: 'Available',
        status: available ? 'True' : 'False',
        reason: available ? 'MinimumReplicasAvailable' : 'MinimumReplicasUnavailable',
        message: available ? 'Deployment has minimum availability.' : 'Deployment does not have minimum availability.',
        lastUpdateTime: now,
        lastTransitionTime: now,
      },
    ],
  };
  await ok(
    `status of deployment ${name}`,
    kube.api('PATCH', `/apis/apps/v1/namespaces/${namespace}/deployments/${name}/status`, { status }, mergePatch),
  );
}

/** Sets (or, with undefined, clears) a LoadBalancer Service's ingress address, as a cloud's controller would. */
export async function setLoadBalancerIngress(kube: KubeApiServer, namespace: string, name: string, ip: string | undefined): Promise<void> {
  const status = { loadBalancer: ip ? { ingress: [{ ip }] } : { ingress: null } };
  await ok(
    `status of service ${name}`,
    kube.api('PATCH', `/api/v1/namespaces/${namespace}/services/${name}/status`, { status }, mergePatch),
  );
}
