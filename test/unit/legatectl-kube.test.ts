// legatectl's Kubernetes backend, the pure parts: which backend a command uses, the Deployments and
// Pods problems `check` reports (glooctl's wording), the proxy's address from its Service, and which
// pod and port a command talks to.
import { describe, expect, it } from 'vitest';
import {
  containerPort,
  deploymentProblems,
  podProblems,
  PORTS,
  preferReady,
  serviceUrl,
  type Deployment,
  type Pod,
  type Service,
} from '../../cli/ctl/kube-health.js';
import { chooseBackend, type ChoiceProbes } from '../../cli/ctl/select.js';
import { UsageError } from '../../cli/flags.js';

const NS = 'legate-system';

describe('chooseBackend', () => {
  const probes = (localRun: boolean, kubeconfig?: string): ChoiceProbes => ({
    localRun: () => ({ found: localRun, tried: ['/w/a/.legate', '/w/.legate'] }),
    kubeconfig: () => kubeconfig,
  });
  const none = { fileFlags: [], kubeFlags: [] };

  it('follows --backend, and refuses flags of the other backend with it', () => {
    expect(chooseBackend({ ...none, backend: 'kubernetes' }, probes(true))).toEqual({ backend: 'kubernetes' });
    expect(chooseBackend({ ...none, backend: 'file' }, probes(false, '/home/u/.kube/config'))).toEqual({ backend: 'file' });
    expect(() => chooseBackend({ backend: 'file', fileFlags: [], kubeFlags: ['--kubeconfig'] }, probes(false))).toThrow(UsageError);
    expect(() => chooseBackend({ backend: 'kubernetes', fileFlags: ['--state-dir'], kubeFlags: [] }, probes(false))).toThrow(
      /--state-dir: for the file backend/,
    );
    expect(() => chooseBackend({ ...none, backend: 'k8s' }, probes(false))).toThrow(/expected auto, file or kubernetes/);
  });

  it("takes a backend's flags as the choice, and both kinds together as a mistake", () => {
    expect(chooseBackend({ fileFlags: [], kubeFlags: ['--kube-context'] }, probes(true))).toEqual({ backend: 'kubernetes' });
    expect(chooseBackend({ fileFlags: ['LEGATE_STATE_DIR'], kubeFlags: [] }, probes(false, 'KUBECONFIG=/k'))).toEqual({ backend: 'file' });
    expect(() => chooseBackend({ fileFlags: ['--controller'], kubeFlags: ['--kubeconfig'] }, probes(false))).toThrow(/do not go together/);
  });

  it('prefers a local legate run, then the default kubeconfig (saying why), then the file backend', () => {
    expect(chooseBackend(none, probes(true, '/home/u/.kube/config'))).toEqual({ backend: 'file' });
    expect(chooseBackend(none, probes(false, '/home/u/.kube/config'))).toEqual({
      backend: 'kubernetes',
      because: "no local 'legate run' was found (looked for /w/a/.legate/run.json, /w/.legate/run.json) and /home/u/.kube/config is there",
    });
    expect(chooseBackend(none, probes(false))).toEqual({ backend: 'file' });
  });
});

const deployment = (name: string, status?: Deployment['status'], replicas = 1): Deployment => ({
  metadata: { name, namespace: NS },
  spec: { replicas },
  ...(status ? { status } : {}),
});

describe('deploymentProblems', () => {
  it('passes available Deployments and ones scaled to zero', () => {
    const ok = deployment('legate-controller', {
      availableReplicas: 1,
      conditions: [{ type: 'Available', status: 'True', message: 'Deployment has minimum availability.' }],
    });
    expect(deploymentProblems([ok, deployment('graphql', {}, 0)], NS)).toEqual([]);
  });

  it('words problems as glooctl does, from the conditions first, else the replica counts', () => {
    const problems = deploymentProblems(
      [
        deployment('a', { conditions: [{ type: 'ReplicaFailure', status: 'True', message: 'pods "a-1" is forbidden: quota' }] }),
        deployment('b', {
          conditions: [{ type: 'Available', status: 'False', message: 'Deployment does not have minimum availability.' }],
        }),
        deployment('c', { conditions: [{ type: 'Progressing', status: 'False', message: 'ReplicaSet "c-1" has timed out progressing.' }] }),
        deployment('d', { availableReplicas: 1, unavailableReplicas: 1 }, 2),
        deployment('e'),
      ],
      NS,
    );
    expect(problems).toEqual([
      `Deployment a in namespace ${NS} failed to create pods! Message: pods "a-1" is forbidden: quota`,
      `Deployment b in namespace ${NS} is not available! Message: Deployment does not have minimum availability.`,
      `Deployment c in namespace ${NS} has not progressed! Message: ReplicaSet "c-1" has timed out progressing.`,
      `Deployment d in namespace ${NS} is not available! Message: 1 of 2 replicas available`,
      `Deployment e in namespace ${NS} is not available! Message: no status yet (is the cluster's controller-manager running?)`,
    ]);
  });

  it('reports an empty namespace instead of passing it', () => {
    expect(deploymentProblems([], 'gloo-system')).toEqual([
      'No Deployments found in namespace gloo-system (is Legate installed there? pass -n NAMESPACE)',
    ]);
  });
});

const pod = (name: string, status: Pod['status'], ports?: Record<string, number>): Pod => ({
  metadata: { name, namespace: NS },
  spec: { containers: [{ name: 'main', ports: Object.entries(ports ?? {}).map(([n, p]) => ({ name: n, containerPort: p })) }] },
  status,
});
const readyStatus: Pod['status'] = { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] };

describe('podProblems', () => {
  it('names the container that keeps a pod from being ready, with its reason and restarts', () => {
    const crashing = pod('envoy-1', {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False', message: 'containers with unready status: [envoy]' }],
      containerStatuses: [
        { name: 'envoy', ready: false, restartCount: 5, state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 5m0s' } } },
      ],
    });
    const oom = pod('graphql-1', {
      phase: 'Running',
      conditions: [{ type: 'Ready', status: 'False' }],
      containerStatuses: [
        { name: 'graphql', ready: false, restartCount: 1, state: { terminated: { reason: 'OOMKilled', exitCode: 137 } } },
      ],
    });
    const unscheduled = pod('extauth-1', {
      phase: 'Pending',
      conditions: [{ type: 'PodScheduled', status: 'False', message: '0/3 nodes are available: 3 Insufficient cpu.' }],
    });
    const failed = pod('job-1', { phase: 'Failed', reason: 'Evicted', message: 'The node was low on resource: memory.' });
    expect(
      podProblems([crashing, oom, unscheduled, failed, pod('ok-1', readyStatus), pod('done-1', { phase: 'Succeeded' })], NS, 'legate'),
    ).toEqual([
      `Pod envoy-1 in namespace ${NS} is not ready! Message: container envoy is waiting: CrashLoopBackOff (back-off 5m0s), ` +
        'restarted 5 times',
      `Pod extauth-1 in namespace ${NS} is not yet scheduled! Message: 0/3 nodes are available: 3 Insufficient cpu.`,
      `Pod graphql-1 in namespace ${NS} is not ready! Message: container graphql terminated with exit code 137: OOMKilled, ` +
        'restarted 1 time',
      `Pod job-1 in namespace ${NS} has failed! Message: The node was low on resource: memory.`,
    ]);
  });

  it('falls back to the Ready condition, and reports no pods at all', () => {
    const notReady = pod('c-1', { phase: 'Running', conditions: [{ type: 'Ready', status: 'False', message: 'readiness probe failed' }] });
    expect(podProblems([notReady], NS, 'legate')).toEqual([`Pod c-1 in namespace ${NS} is not ready! Message: readiness probe failed`]);
    expect(podProblems([], NS, 'legate=x')).toEqual([
      `No pods with label legate=x found in namespace ${NS} (is Legate installed there? pass -n NAMESPACE)`,
    ]);
  });
});

describe('pods legatectl talks to', () => {
  it('uses the container port named for the component, else its default', () => {
    expect(containerPort(pod('p', readyStatus, { admin: 19001, http: 8080 }), PORTS.envoyAdmin)).toBe(19001);
    expect(containerPort(pod('p', readyStatus, { http: 8080 }), PORTS.envoyAdmin)).toBe(19000);
    expect(containerPort(pod('p', readyStatus), PORTS.controllerApi)).toBe(9095);
  });

  it('puts ready pods first, then by name', () => {
    const starting = pod('a', { phase: 'Pending' });
    expect(preferReady([starting, pod('c', readyStatus), pod('b', readyStatus)]).map((p) => p.metadata.name)).toEqual(['b', 'c', 'a']);
  });
});

describe('serviceUrl', () => {
  const svc = (spec: Service['spec'], status?: Service['status']): Service => ({
    metadata: { name: 'gateway-proxy', namespace: NS },
    spec,
    ...(status ? { status } : {}),
  });
  const ports = [
    { name: 'http', port: 80, nodePort: 30080 },
    { name: 'https', port: 443, nodePort: 30443 },
  ];
  const nodes = [{ metadata: { name: 'n' }, status: { addresses: [{ type: 'InternalIP', address: '10.1.0.5' }] } }];
  const lb = svc({ type: 'LoadBalancer', clusterIP: '10.0.0.7', ports }, { loadBalancer: { ingress: [{ hostname: 'lb.example.com' }] } });

  it("is the load balancer's address and the named port, or a node's address and node port with -l", () => {
    expect(serviceUrl(lb, 'http', { localCluster: false, nodes: [] })).toEqual({ url: 'http://lb.example.com:80' });
    expect(serviceUrl(lb, 'https', { localCluster: false, nodes: [] })).toEqual({ url: 'https://lb.example.com:443' });
    expect(serviceUrl(lb, 'http', { localCluster: true, nodes })).toEqual({ url: 'http://10.1.0.5:30080' });
    const v6 = svc({ type: 'LoadBalancer', ports }, { loadBalancer: { ingress: [{ ip: '2001:db8::1' }] } });
    expect(serviceUrl(v6, 'http', { localCluster: false, nodes: [] }).url).toBe('http://[2001:db8::1]:80');
  });

  it('says what there is instead: no address yet, a NodePort Service, a cluster-only address, no such port', () => {
    const pending = svc({ type: 'LoadBalancer', clusterIP: '10.0.0.7', ports });
    expect(() => serviceUrl(pending, 'http', { localCluster: false, nodes: [] })).toThrow(
      /has no ingress address yet .* try -l for node port 30080/,
    );
    expect(() => serviceUrl(svc({ type: 'NodePort', ports }), 'http', { localCluster: false, nodes: [] })).toThrow(/NodePort: use -l/);
    expect(serviceUrl(svc({ type: 'ClusterIP', clusterIP: '10.0.0.7', ports }), 'http', { localCluster: false, nodes: [] })).toEqual({
      url: 'http://10.0.0.7:80',
      note: `Service ${NS}/gateway-proxy is of type ClusterIP: this address is reachable from inside the cluster only`,
    });
    expect(() => serviceUrl(lb, 'grpc', { localCluster: false, nodes: [] })).toThrow('has no port named grpc (it has: http, https)');
    const clusterOnly = ports.map(({ name, port }) => ({ name, port }));
    expect(() =>
      serviceUrl(svc({ type: 'ClusterIP', clusterIP: '10.0.0.7', ports: clusterOnly }), 'http', { localCluster: true, nodes }),
    ).toThrow(/has no node port for http/);
    expect(() => serviceUrl(lb, 'http', { localCluster: true, nodes: [] })).toThrow(/no node with an address/);
  });
});
