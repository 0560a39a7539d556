// legatectl's Kubernetes backend against a real kube-apiserver, a controller with --source kubernetes
// and a real Envoy. The cluster has no kubelet or controller-manager, so the test writes what they
// would: Deployment and Pod statuses, the Service's load balancer address. The Pods' IP is this
// side of a veth pair (198.18.0.0/15), where Envoy's admin and the controller API (--api-host)
// listen: the API server's pod proxy dials it, as it dials a real pod. legatectl runs as a user with
// exactly the rights docs/kubernetes.md lists, so a missing one fails a test.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/gateway.js';
import {
  controllerKubeconfig,
  installCrds,
  startKubeApiServer,
  startKubeController,
  type KubeApiServer,
  type KubeController,
} from '../support/kube.js';
import {
  createDeployment,
  createNode,
  createPod,
  setDeploymentAvailable,
  setLoadBalancerIngress,
  setPodState,
} from '../support/kube-workloads.js';
import { startLocalEnvoy, type LocalEnvoy } from '../support/envoy.js';
import { createTestHost, type TestHost } from '../support/netns.js';
import { eventually, freePort } from '../support/util.js';

const LEGATECTL = path.join(ROOT, 'bin', 'legatectl.js');
const NS = 'legate-system';

let kube: KubeApiServer;
let dir: string;
let controller: KubeController;
let host: TestHost;
let envoy: LocalEnvoy | undefined;
let adminPort: number;
let kubeconfig: string;
const lbAddress = '198.18.254.10'; // from the test range; never contacted

/** legatectl as the `reader` user (docs/kubernetes.md's rights), from a directory with no `legate run` */
function ctl(args: string[], env: Record<string, string> = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [LEGATECTL, ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, LEGATE_STATE_DIR: '', LEGATE_CONTROLLER: '', LEGATE_BACKEND: '', KUBECONFIG: '', LEGATE_NAMESPACE: '', ...env },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}
const kctl = (...args: string[]) => ctl([...args, '--kubeconfig', kubeconfig, '--kube-context', 'reader']);

async function envoyAdmin(pathAndQuery: string, method = 'GET'): Promise<string> {
  return (await fetch(`http://${host.hostAddress}:${adminPort}${pathAndQuery}`, { method })).text();
}

/** The rights docs/kubernetes.md says legatectl needs (the YAML block after `<!-- legatectl-rbac -->`, or another marker). */
function documentedRbac(marker = 'legatectl-rbac'): string {
  const doc = fs.readFileSync(path.join(ROOT, 'docs', 'kubernetes.md'), 'utf8');
  const m = new RegExp(`<!-- ${marker} -->\\s*\`\`\`yaml\\n([\\s\\S]*?)\`\`\``).exec(doc);
  if (!m?.[1]) throw new Error(`docs/kubernetes.md has no ${marker} YAML block`);
  return m[1];
}

function writeKubeconfig(file: string, users: Record<string, string>, current: string): void {
  fs.writeFileSync(
    file,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{ name: test, cluster: { server: "${kube.url}", insecure-skip-tls-verify: true } }]`,
      `users: [${Object.entries(users).map(([n, t]) => `{ name: ${n}, user: { token: ${t} } }`)}]`,
      `contexts: [${Object.keys(users).map((n) => `{ name: ${n}, context: { cluster: test, user: ${n} } }`)}]`,
      `current-context: ${current}`,
      '',
    ].join('\n'),
  );
}

const proxyPod = {
  name: 'gateway-proxy-7d9f8-abcde',
  labels: { app: 'legate', legate: 'gateway-proxy', 'gateway-proxy-id': 'gateway-proxy' },
};
const controllerPod = { name: 'legate-controller-5c6b7-fghij', labels: { app: 'legate', legate: 'controller' } };

const action = (upstream?: string) =>
  upstream
    ? `routeAction: { single: { upstream: { name: ${upstream}, namespace: ${NS} } } }`
    : 'directResponseAction: { status: 200, body: ok }';
const vs = (name: string, domain: string, upstream?: string) => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${domain}]
    routes:
      - matchers: [{ prefix: / }]
        ${action(upstream)}
`;

beforeAll(async () => {
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-ctl-'));
  installCrds(kube);
  const asController = controllerKubeconfig(kube, dir); // creates legate-system too
  host = createTestHost();
  // the controller API on the pod address, where the API server's pod proxy reaches it
  controller = await startKubeController(kube, dir, 'controller', ['--api-host', host.hostAddress], asController);

  // Envoy, its admin interface on the pod address
  envoy = await startLocalEnvoy(dir, controller.ports.xds, { adminHost: host.hostAddress, logLevel: 'info' });
  adminPort = envoy.adminPort;

  // what the chart installs and the kubelet and controller-manager would report (the latter also
  // creates each namespace's default ServiceAccount, which a Pod needs)
  kube.kubectl(['create', 'serviceaccount', 'default', '-n', NS]);
  // the pods' node: its "kubelet" is a port on the test address where nothing listens
  await createNode(kube, 'node-1', host.hostAddress, await freePort());
  await createDeployment(kube, NS, 'gateway-proxy', { legate: 'gateway-proxy' });
  await createDeployment(kube, NS, 'legate-controller', { legate: 'controller' });
  for (const d of ['gateway-proxy', 'legate-controller']) await setDeploymentAvailable(kube, NS, d, true);
  await createPod(kube, { ...proxyPod, namespace: NS, nodeName: 'node-1', containers: { envoy: { admin: adminPort, http: 8080 } } });
  await setPodState(kube, NS, proxyPod.name, ['envoy'], { ready: true, podIP: host.hostAddress });
  await createPod(kube, {
    ...controllerPod,
    namespace: NS,
    nodeName: 'node-1',
    containers: { controller: { api: controller.ports.api, xds: 9977 } },
  });
  await setPodState(kube, NS, controllerPod.name, ['controller'], { ready: true, podIP: host.hostAddress });
  kube.kubectl(['apply', '-f', '-'], {
    input: `apiVersion: v1
kind: Service
metadata: { name: gateway-proxy, namespace: ${NS}, labels: { legate: gateway-proxy } }
spec:
  type: LoadBalancer
  selector: { legate: gateway-proxy }
  ports: [{ name: http, port: 80, targetPort: 8080 }, { name: https, port: 443, targetPort: 8443 }]
`,
  });

  // the user legatectl runs as: exactly the documented rights, bound to a ServiceAccount
  kube.kubectl(['apply', '-f', '-'], { input: documentedRbac() });
  kube.kubectl(['create', 'serviceaccount', 'reader', '-n', 'default']);
  kube.kubectl(['create', 'clusterrolebinding', 'legatectl-reader', '--clusterrole', 'legatectl', '--serviceaccount', 'default:reader']);
  kube.kubectl(['create', 'rolebinding', 'legatectl-reader', '-n', NS, '--role', 'legatectl', '--serviceaccount', 'default:reader']);
  kube.kubectl(['create', 'serviceaccount', 'nobody', '-n', 'default']);
  // the writing commands' user: the read rights and the documented write rights
  kube.kubectl(['apply', '-f', '-'], { input: documentedRbac('legatectl-write-rbac') });
  kube.kubectl(['create', 'serviceaccount', 'writer', '-n', 'default']);
  kube.kubectl(['create', 'clusterrolebinding', 'legatectl-writer', '--clusterrole', 'legatectl', '--serviceaccount', 'default:writer']);
  kube.kubectl([
    'create',
    'clusterrolebinding',
    'legatectl-writer-w',
    '--clusterrole',
    'legatectl-write',
    '--serviceaccount',
    'default:writer',
  ]);
  kube.kubectl(['create', 'rolebinding', 'legatectl-writer', '-n', NS, '--role', 'legatectl', '--serviceaccount', 'default:writer']);
  const token = (sa: string) => kube.kubectl(['create', 'token', sa, '-n', 'default', '--duration', '1h']).stdout.trim();
  kubeconfig = path.join(dir, 'legatectl.kubeconfig');
  writeKubeconfig(kubeconfig, { admin: kube.token, reader: token('reader'), nobody: token('nobody'), writer: token('writer') }, 'admin');

  kube.kubectl(['apply', '-f', '-'], { input: vs('shop', 'shop.example.com') });
  await eventually(
    'shop Accepted',
    () =>
      kube.kubectl(['get', 'virtualservices.gateway.solo.io', 'shop', '-o', 'jsonpath={.status.state}']).stdout === 'Accepted'
        ? true
        : undefined,
    30_000,
  );
}, 300_000);

afterAll(async () => {
  await envoy?.stop();
  await host?.remove();
  await controller?.stop();
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// tests in a file run in order (the later ones build on the earlier ones' objects)
describe('legatectl on a cluster', () => {
  it('check: Deployments and Pods from the API server, every kind from its status, the proxy through the pod proxy', async () => {
    const r = await eventually(
      'a clean check',
      () => {
        const x = kctl('check');
        return x.status === 0 ? x : undefined;
      },
      30_000,
    ).catch(() => kctl('check'));
    expect(r.stderr).toBe('');
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, 12)).toEqual(
      ['Deployments', 'Pods', 'Upstreams', 'UpstreamGroups', 'AuthConfigs', 'RateLimitConfigs', 'VirtualHostOptions', 'RouteOptions']
        .concat(['Secrets', 'VirtualServices', 'Gateways', 'Proxies'])
        .map((k) => `Checking ${k}... OK`),
    );
    expect(r.stdout).toContain('Checking xds metrics... OK');
    expect(lines.at(-1)).toBe('No problems detected.');
    expect(r.status).toBe(0);
  });

  it('check: an unavailable Deployment, a pod in CrashLoopBackOff and a VirtualService with warnings, glooctl-style', async () => {
    await setDeploymentAvailable(kube, NS, 'gateway-proxy', false);
    await createPod(kube, {
      name: 'extauth-6f7d-klmno',
      namespace: NS,
      labels: { app: 'legate', legate: 'extauth' },
      containers: { extauth: {} },
    });
    await setPodState(kube, NS, 'extauth-6f7d-klmno', ['extauth'], {
      ready: false,
      waiting: {
        container: 'extauth',
        reason: 'CrashLoopBackOff',
        message: 'back-off 40s restarting failed container=extauth',
        restarts: 4,
      },
    });
    kube.kubectl(['apply', '-f', '-'], { input: vs('broken', 'broken.example.com', 'missing') });
    const r = await eventually(
      'the warning',
      () => {
        const x = kctl('check');
        return x.stdout.includes('Checking VirtualServices... 1 Errors!') ? x : undefined;
      },
      30_000,
    );
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('Checking Deployments... 1 Errors!');
    expect(r.stdout).toContain(
      `Deployment gateway-proxy in namespace ${NS} is not available! Message: Deployment does not have minimum availability.`,
    );
    expect(r.stdout).toContain('Checking Pods... 1 Errors!');
    expect(r.stdout).toContain(
      `Pod extauth-6f7d-klmno in namespace ${NS} is not ready! Message: container extauth is waiting: CrashLoopBackOff ` +
        '(back-off 40s restarting failed container=extauth), restarted 4 times',
    );
    // a route to a missing upstream is a warning, as in Gloo (the other routes keep serving)
    expect(r.stdout).toMatch(/Found virtual service with warnings by 'legate-system': default broken \(Reason: .*missing.*\)/);
    expect(r.stdout).not.toContain('No problems detected.');
    const j = kctl('check', '-o', 'json');
    expect(j.status).toBe(1);
    expect(JSON.parse(j.stdout).resources).toContainEqual({ name: 'Pods', status: '1 Errors!' });
    expect(kctl('check', '-x', 'deployments,pods,virtual-services').status).toBe(0);
    // a pod selector that matches nothing is a problem too, not a silent OK
    expect(kctl('check', '-p', 'legate=nothing').stdout).toContain('No pods with label legate=nothing found in namespace legate-system');

    await setDeploymentAvailable(kube, NS, 'gateway-proxy', true);
    kube.kubectl(['delete', 'pod', 'extauth-6f7d-klmno', '-n', NS, '--wait=false']);
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'broken']);
    await eventually('a clean check again', () => (kctl('check').status === 0 ? true : undefined), 30_000);
  });

  it('get: resources and their statuses as stored in the API server, Proxies and discovered Upstreams from the controller', async () => {
    const table = kctl('get', 'vs');
    expect(table.status).toBe(0);
    expect(table.stdout).toMatch(/^NAMESPACE\s+NAME\s+STATUS/);
    expect(table.stdout).toMatch(/default\s+shop\s+Accepted\s+domains=shop.example.com routes=1/);
    // a status written straight to the status subresource is what legatectl shows: it reads the API server
    const statusPath = '/apis/gateway.solo.io/v1/namespaces/default/virtualservices/shop/status';
    const patch = (state: string, reason: string | null) =>
      kube.api('PATCH', statusPath, { status: { statuses: { [NS]: { state, reason } } } }, 'application/merge-patch+json');
    expect((await patch('Warning', 'written by the test')).status).toBe(200);
    expect(kctl('get', 'vs', 'shop', '-n', 'default').stdout).toMatch(/shop\s+Warning\s+.*written by the test/);
    await patch('Accepted', null);
    const one = JSON.parse(kctl('get', 'vs', 'shop', '-n', 'default', '-o', 'json').stdout);
    expect(one).toMatchObject({ apiVersion: 'gateway.solo.io/v1', kind: 'VirtualService', status: { observedGeneration: 1 } });
    expect(one.status.statuses[NS]).toMatchObject({ state: 'Accepted', reportedBy: 'legate' });
    expect(one.metadata.managedFields).toBeUndefined();
    expect(kctl('get', 'vs', 'nope', '-n', 'default').stderr).toContain('VirtualService default.nope not found');

    const proxies = kctl('get', 'proxies');
    expect(proxies.stdout).toMatch(/legate-system\s+gateway-proxy\s+Accepted/);
    // a stored Upstream is listed once (the API server's copy), discovered ones come from the controller:
    // the gateway-proxy Service itself is discovered as an Upstream
    kube.kubectl(['apply', '-f', '-'], {
      input:
        `apiVersion: gloo.solo.io/v1\nkind: Upstream\nmetadata: { name: pets, namespace: ${NS} }\n` +
        `spec: { static: { hosts: [{ addr: ${lbAddress}, port: 80 }] } }\n`,
    });
    const us = await eventually('pets Accepted', () => {
      const x = kctl('get', 'us').stdout;
      return /pets\s+Accepted/.test(x) ? x : undefined;
    });
    expect(us.match(/ pets /g)).toHaveLength(1);
    expect(us).toMatch(/legate-system\s+legate-system-gateway-proxy-80\s+Accepted\s+kube legate-system\/gateway-proxy:80/);
  });

  it('proxy url: the load balancer address of the gateway-proxy Service, else what there is', async () => {
    const pending = kctl('proxy', 'url');
    expect(pending.status).toBe(1);
    expect(pending.stderr).toContain(`the load balancer of Service ${NS}/gateway-proxy has no ingress address yet`);
    await setLoadBalancerIngress(kube, NS, 'gateway-proxy', lbAddress);
    expect(kctl('proxy', 'url')).toMatchObject({ status: 0, stdout: `http://${lbAddress}:80\n` });
    expect(kctl('proxy', 'url', '--port', 'https').stdout).toBe(`https://${lbAddress}:443\n`);
    expect(kctl('proxy', 'url', '--port', 'grpc').stderr).toContain('has no port named grpc (it has: http, https)');
    expect(kctl('proxy', 'url', '--name', 'other').stderr).toContain(`no Service ${NS}/other`);
    // -l: a node's address and the node port
    const nodePort = kube.kubectl(['get', 'svc', 'gateway-proxy', '-n', NS, '-o', 'jsonpath={.spec.ports[0].nodePort}']).stdout;
    expect(kctl('proxy', 'url', '-l').stdout).toBe(`http://${host.hostAddress}:${nodePort}\n`);
  });

  it('proxy dump, stats and served-config through the API server', () => {
    const dump = kctl('proxy', 'dump');
    expect(dump.status).toBe(0);
    expect(JSON.parse(dump.stdout).configs.length).toBeGreaterThan(3);
    expect(dump.stdout).not.toContain('EndpointsConfigDump');
    expect(kctl('proxy', 'dump', '--include-eds').stdout).toContain('EndpointsConfigDump');
    expect(kctl('proxy', 'stats', '-n', NS, '--name', 'gateway-proxy').stdout).toContain('control_plane.connected_state: 1');
    expect(kctl('proxy', 'stats', '--name', 'other-proxy').stderr).toContain('no gateway proxy');
    const served = kctl('proxy', 'served-config').stdout;
    expect(served).toMatch(/^#role: legate-system~gateway-proxy\n#clusters\n/);
    for (const s of ['#eds', '#listeners', '#rds']) expect(served).toContain(s);
    expect(served).toContain('default_shop');
  });

  it('proxy logs sets the level through the pod proxy; the log itself needs a kubelet, and says so', async () => {
    const r = kctl('proxy', 'logs');
    expect(await envoyAdmin('/logging', 'POST')).toMatch(/router: debug/);
    expect(r.stderr).toContain("Envoy's log level is now debug");
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(
      /cannot read the log of pod legate-system\/gateway-proxy-7d9f8-abcde \(container envoy\) through the pod logs API/,
    );
    // the hint sets it back, as printed
    const hint = /\n {2}(kubectl create --raw '([^']+)' -f \/dev\/null)\n/.exec(r.stderr);
    expect(hint?.[2]).toBe(`/api/v1/namespaces/${NS}/pods/${proxyPod.name}:${adminPort}/proxy/logging?level=info`);
    kube.kubectl(['create', '--raw', hint?.[2] ?? '', '-f', '/dev/null']);
    expect(await envoyAdmin('/logging', 'POST')).toMatch(/router: info/);
  });

  it('debug logs names each pod whose log cannot be read; debug yaml writes every resource and the install namespace', () => {
    const logs = kctl('debug', 'logs');
    expect(logs.status).toBe(1);
    expect(logs.stderr).toContain(`cannot read the log of pod ${NS}/${controllerPod.name} (container controller)`);
    expect(logs.stderr).toContain(`cannot read the log of pod ${NS}/${proxyPod.name} (container envoy)`);

    const file = path.join(dir, 'all.yaml');
    const r = kctl('debug', 'yaml', '-f', file);
    expect(r.status).toBe(0);
    const text = fs.readFileSync(file, 'utf8');
    for (const k of ['VirtualService', 'Proxy', 'Upstream', 'Deployment', 'Service', 'ServiceAccount', 'Role'])
      expect(text, k).toMatch(new RegExp(`^kind: ${k}$`, 'm'));
    expect(text).toContain('apiVersion: gateway.solo.io/v1');
    expect(text).toContain('state: Accepted');
    expect(text).not.toMatch(/^kind: Secret$/m);
    expect(text).not.toContain('managedFields');
  });

  it('version: client, server (the controller, through the pod proxy) and Kubernetes', () => {
    const r = kctl('version');
    expect(r.stdout).toMatch(/^Client version: \S+\nServer version: \S+\nKubernetes version: v1\.37\.2\n$/);
    expect(JSON.parse(kctl('version', '-o', 'json').stdout)).toMatchObject({ kubernetes: 'v1.37.2' });
  });

  it('picks the cluster when asked or when there is no local legate run, and says what it tried', () => {
    // KUBECONFIG and no .legate from here: the cluster, as kubectl would
    expect(ctl(['get', 'vs'], { KUBECONFIG: kubeconfig }).stdout).toMatch(/default\s+shop\s+Accepted/);
    expect(ctl(['get', 'vs'], { LEGATE_BACKEND: 'kubernetes', KUBECONFIG: kubeconfig }).status).toBe(0);
    // an unreachable cluster chosen that way: the error says why that cluster
    const gone = path.join(dir, 'gone.kubeconfig');
    fs.writeFileSync(gone, fs.readFileSync(kubeconfig, 'utf8').replace(kube.url, 'https://127.0.0.1:1'));
    const r = ctl(['get', 'vs'], { KUBECONFIG: gone });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('cannot reach the Kubernetes API server https://127.0.0.1:1 (context admin of KUBECONFIG=');
    expect(r.stderr).toContain(`chosen because no local 'legate run' was found (looked for ${path.join(dir, '.legate', 'run.json')}`);
    // the file backend when told, with its own error; conflicting flags are a usage error
    const file = ctl(['get', 'vs', '--backend', 'file'], { KUBECONFIG: kubeconfig });
    expect(file.stderr).toContain("no running 'legate run' found");
    expect(ctl(['get', 'vs', '--state-dir', dir, '--kubeconfig', kubeconfig]).status).toBe(2);
    expect(ctl(['check', '--backend', 'file', '-n', NS]).stderr).toContain(
      "-n names the install namespace in a cluster; this is a local 'legate run'",
    );
    expect(ctl(['get', 'vs', '--kubeconfig', kubeconfig, '--kube-context', 'nope']).stderr).toContain(
      '--kube-context nope: no such context',
    );
  });

  it('a user without the documented rights is told which one is missing', () => {
    const as = (...args: string[]) => ctl([...args, '--kubeconfig', kubeconfig, '--kube-context', 'nobody']);
    const stats = as('proxy', 'stats');
    expect(stats.status).toBe(1);
    expect(stats.stderr).toContain('forbidden');
    const get = as('get', 'vs');
    expect(get.status).toBe(1);
    expect(get.stderr).toContain("legatectl needs 'list' on virtualservices.gateway.legate.dev");
  });

  it('create, add route, remove route, edit and delete go through the API server with server-side apply', async () => {
    const w = (...args: string[]) => ctl([...args, '--kubeconfig', kubeconfig, '--kube-context', 'writer']);
    const jsonpath = (what: string, name: string, p: string) =>
      kube.kubectl(['get', what, name, '-n', 'default', '-o', `jsonpath=${p}`]).stdout;
    const us = w('create', 'upstream', 'static', 'app', '-n', 'default', '--static-hosts', `${lbAddress}:80`);
    expect(us.stderr).toContain('created upstream default.app');
    expect(us.status).toBe(0);
    expect(w('create', 'vs', 'web', '-n', 'default', '--domains', 'web.example.com').status).toBe(0);
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.spec.virtualHost.domains[0]}')).toBe('web.example.com');
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.metadata.managedFields[0].manager}')).toBe('legatectl');
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.metadata.managedFields[0].operation}')).toBe('Apply');
    expect(w('create', 'vs', 'web', '-n', 'default').stderr).toContain('VirtualService default.web already exists');

    const add = w('add', 'route', '--name', 'web', '-n', 'default', '-p', '/api', '-u', 'app', '-s', 'default', '--prefix-rewrite', '/');
    expect(add.stderr).toContain('added route 0 to virtualservice default.web');
    expect(w('add', 'route', '--name', 'web', '-e', '/health', '-u', 'app', '-s', 'default', '-x', '1').status).toBe(0);
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.spec.virtualHost.routes[*].matchers[0]}')).toBe(
      '{"prefix":"/api"} {"exact":"/health"}',
    );
    await eventually('web Accepted with its routes', () => {
      const x = kctl('get', 'vs', 'web', '-n', 'default', '-o', 'wide').stdout;
      return /web\s+gateway.legate.dev\/v1\s+Accepted\s+domains=web.example.com routes=2 \/api->default.app/.test(x) ? x : undefined;
    });
    expect(w('remove', 'route', '--name', 'web', '-x', '0').stderr).toContain('removed route 0 from virtualservice default.web');
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.spec.virtualHost.routes[*].matchers[0]}')).toBe('{"exact":"/health"}');
    const unchanged = ctl(['edit', 'vs', 'web', '-n', 'default', '--kubeconfig', kubeconfig, '--kube-context', 'writer'], {
      EDITOR: 'true',
    });
    expect(unchanged).toMatchObject({ status: 0, stderr: 'Edit cancelled, no changes made.\n' });
    const edited = ctl(['edit', 'virtualservice', 'web', '--kubeconfig', kubeconfig, '--kube-context', 'writer'], {
      EDITOR: 'sed -i s/web.example.com/www.example.com/',
    });
    expect(edited.stderr).toContain('edited virtualservice default.web');
    expect(jsonpath('virtualservices.gateway.legate.dev', 'web', '{.spec.virtualHost.domains[0]}')).toBe('www.example.com');
    const rejected = ctl(['edit', 'vs', 'web', '--kubeconfig', kubeconfig, '--kube-context', 'writer'], {
      EDITOR: 'sed -i s/virtualHost/virtualHots/',
    });
    expect(rejected.status).toBe(1);
    expect(rejected.stderr).toContain('spec.virtualHots: unknown field; did you mean virtualHost?');

    expect(w('create', 'secret', 'apikey', 'alice', '-n', 'default', '--apikey', 'k-1', '--apikey-labels', 'team=shop').status).toBe(0);
    expect(Buffer.from(jsonpath('secret', 'alice', '{.data.api-key}'), 'base64').toString()).toBe('k-1');
    expect(jsonpath('secret', 'alice', '{.type}')).toBe('extauth.solo.io/apikey');
    expect(w('create', 'secret', 'oauth', 'idp', '-n', 'default', '--client-secret', 's').status).toBe(0);
    const fixtures = path.join(ROOT, 'test', 'e2e', 'fixtures');
    const crt = path.join(fixtures, 'secure.example.com.crt');
    expect(
      w('create', 'secret', 'tls', 'web-tls', '-n', 'default', '--certchain', crt, '--privatekey', crt.replace(/crt$/, 'key')).status,
    ).toBe(0);
    expect(jsonpath('secret', 'web-tls', '{.type}')).toBe('kubernetes.io/tls');
    const kubeUs = w(
      'create',
      'upstream',
      'kube',
      'proxy-svc',
      '-n',
      'default',
      '--kube-service',
      'gateway-proxy',
      '--kube-service-namespace',
      NS,
    );
    expect(kubeUs.stderr).toContain('created upstream default.proxy-svc');
    expect(jsonpath('upstreams.legate.dev', 'proxy-svc', '{.spec.kube.serviceName}')).toBe('gateway-proxy');
    expect(w('create', 'authconfig', 'keys', '-n', 'default', '--apikey-label-selector', 'team=shop').status).toBe(0);
    expect(jsonpath('authconfigs.enterprise.legate.dev', 'keys', '{.spec.configs[0].apiKeyAuth.labelSelector.team}')).toBe('shop');
    // glooctl's OIDC and OPA flags in one AuthConfig (steps in glooctl's order), with the oauth Secret above and a Rego ConfigMap
    kube.kubectl(['apply', '-f', '-'], {
      input:
        'apiVersion: v1\nkind: ConfigMap\nmetadata: { name: rules, namespace: default }\n' +
        'data:\n  policy.rego: |\n    package test\n    default allow = false\n    allow { input.http_request.method == "GET" }\n',
    });
    const login = w(
      ...['create', 'authconfig', 'login', '-n', 'default', '--enable-oidc-auth', '--oidc-auth-issuer-url', 'https://accounts.google.com'],
      ...['--oidc-auth-app-url', 'https://web.example.com', '--oidc-auth-client-id', 'web', '--oidc-auth-client-secret-name', 'idp'],
      ...['--enable-opa-auth', '--opa-query', 'data.test.allow == true', '--opa-module-ref', 'default.rules'],
    );
    expect(login.stderr).toContain('created authconfig default.login');
    expect(login.status).toBe(0);
    const ac = (p: string) => jsonpath('authconfigs.enterprise.legate.dev', 'login', p);
    expect(ac('{.spec.configs[0].oauth2.oidcAuthorizationCode.callbackPath}')).toBe('/oidc-gloo-callback');
    expect(ac('{.spec.configs[0].oauth2.oidcAuthorizationCode.clientSecretRef}')).toBe('{"name":"idp","namespace":"default"}');
    expect(ac('{.spec.configs[1].opaAuth.modules[0]}')).toBe('{"name":"rules","namespace":"default"}');
    expect(ac('{.metadata.managedFields[0].operation}')).toBe('Apply');
    await eventually('login Accepted', () =>
      /login\s+Accepted/.test(kctl('get', 'ac', 'login', '-n', 'default').stdout) ? true : undefined,
    );

    const all = kctl('get', 'vs', '-A', '-o', 'kube-yaml').stdout;
    expect(all).toContain('name: web');
    expect(all).not.toContain('managedFields');
    expect(all).not.toMatch(/^status:/m);

    expect(w('delete', 'vs', 'web', '-n', 'default').stderr).toContain('deleted virtualservice default.web');
    expect(kube.kubectl(['get', 'virtualservices.gateway.legate.dev', 'web', '-n', 'default'], { check: false }).status).not.toBe(0);
    // the read-only user may not write, and is told so by the API server
    expect(kctl('create', 'vs', 'nope', '-n', 'default').stderr).toContain('forbidden');
  });

  it("dashboard says when no console is running; check-crds compares the cluster's CRDs with this version's", () => {
    const d = kctl('dashboard');
    expect(d.status).toBe(1);
    expect(d.stderr).toContain('no console running');
    const ok = kctl('check-crds');
    expect(ok.stdout).toContain('All CRDs are up to date.');
    expect(ok.status).toBe(0);
    kube.kubectl(['delete', 'crd', 'tcpgateways.gateway.solo.io']);
    kube.kubectl([
      'patch',
      'crd',
      'httpgateways.gateway.legate.dev',
      '--type',
      'json',
      '-p',
      '[{"op":"remove","path":"/spec/names/categories"}]',
    ]);
    const stale = kctl('check-crds');
    expect(stale.status).toBe(1);
    expect(stale.stdout).toContain('CRD tcpgateways.gateway.solo.io is missing');
    expect(stale.stdout).toContain("CRD httpgateways.gateway.legate.dev differs from this version's (first at spec.names.categories)");
    expect(stale.stdout).toContain('legate crds | kubectl apply --server-side -f -');
  });
});
