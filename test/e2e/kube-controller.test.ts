// The controller in Kubernetes mode against a real kube-apiserver, feeding a real Envoy: resources
// applied with kubectl are served, statuses land in the status subresource (with
// observedGeneration, written only when they change), a route to a missing upstream is a Warning while the others
// keep serving, edits and deletes take effect, and Services + EndpointSlices become discovered
// upstreams `<ns>-<svc>-<port>`.
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  controllerKubeconfig,
  installCrds,
  startKubeApiServer,
  startKubeController,
  type KubeApiServer,
  type KubeController,
} from '../support/kube.js';
import { httpGet, startLocalEnvoy, type LocalEnvoy } from '../support/envoy.js';
import { createTestHost } from '../support/netns.js';
import { eventually } from '../support/util.js';

let kube: KubeApiServer;
let dir: string;
let controller: KubeController;
let envoy: LocalEnvoy | undefined;
const ports = { http: 0, admin: 0 };

const get = httpGet;
const fixtures = path.join(import.meta.dirname, 'fixtures');

function httpsGet(port: number, servername: string, ca: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/', servername, headers: { host: servername }, ca, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const api = <T>(pathAndQuery: string): Promise<T> => controller.api<T>(pathAndQuery);

function status(kind: string, name: string, ns = 'default'): { state?: string; reason?: string; observedGeneration?: number } {
  const r = kube.kubectl(['get', kind, name, '-n', ns, '-o', 'jsonpath={.status}'], { check: false });
  return r.stdout ? (JSON.parse(r.stdout) as { state?: string }) : {};
}

const vs = (name: string, domain: string, body: string, extra = ''): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${domain}]
    routes:
      - matchers: [{ prefix: / }]
        directResponseAction: { status: 200, body: ${body} }
${extra}`;

beforeAll(async () => {
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-ctl-'));
  installCrds(kube);
  // the controller runs with the install's ServiceAccount: a right it lacks fails these tests
  const asController = controllerKubeconfig(kube, dir); // also creates legate-system, where the Lease lives
  controller = await startKubeController(kube, dir, 'controller', [], asController);
  ports.http = controller.ports.http;
  envoy = await startLocalEnvoy(dir, controller.ports.xds);
  ports.admin = envoy.adminPort;
}, 240_000);

afterAll(async () => {
  await envoy?.stop();
  await controller?.stop();
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('controller with --source kubernetes', () => {
  it('serves a VirtualService applied with kubectl and writes Accepted with observedGeneration', async () => {
    kube.kubectl(['apply', '-f', '-'], { input: vs('shop', 'shop.example.com', 'shop-v1') });
    const res = await eventually('shop served', async () => {
      const r = await get(ports.http, '/', 'shop.example.com');
      return r.status === 200 && r.body === 'shop-v1' ? r : undefined;
    });
    expect(res.body).toBe('shop-v1');
    const s = await eventually('status written', () =>
      status('virtualservices.gateway.solo.io', 'shop').state ? status('virtualservices.gateway.solo.io', 'shop') : undefined,
    );
    expect(s).toMatchObject({ state: 'Accepted', observedGeneration: 1 });
    // a status write is a watch event: written only when it changes, so nothing loops
    const version = () =>
      kube.kubectl(['get', 'virtualservices.gateway.solo.io', 'shop', '-o', 'jsonpath={.metadata.resourceVersion}']).stdout;
    const before = version();
    await new Promise((r) => setTimeout(r, 1500));
    expect(version()).toBe(before);
  });

  it('warns about a route to a missing upstream in its status while the good one keeps serving', async () => {
    const bad = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: broken, namespace: default }
spec:
  virtualHost:
    domains: [broken.example.com]
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: missing, namespace: default } } }
`;
    kube.kubectl(['apply', '-f', '-'], { input: bad });
    const s = await eventually('warning', () => {
      const x = status('virtualservices.gateway.solo.io', 'broken');
      return x.state === 'Warning' ? x : undefined;
    });
    expect(s.reason).toContain('Upstream default.missing not found');
    expect((await get(ports.http, '/', 'shop.example.com')).body).toBe('shop-v1');
  });

  it('applies an edit (observedGeneration follows) and a delete', async () => {
    kube.kubectl(['apply', '-f', '-'], { input: vs('shop', 'shop.example.com', 'shop-v2') });
    await eventually('edit served', async () => ((await get(ports.http, '/', 'shop.example.com')).body === 'shop-v2' ? true : undefined));
    await eventually('observedGeneration 2', () =>
      status('virtualservices.gateway.solo.io', 'shop').observedGeneration === 2 ? true : undefined,
    );
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'shop']);
    await eventually('delete served', async () => ((await get(ports.http, '/', 'shop.example.com')).status === 404 ? true : undefined));
  });

  it('discovers an upstream from a Service and its EndpointSlice', async () => {
    kube.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: v1
kind: Service
metadata: { name: pets, namespace: default }
spec: { ports: [{ name: http, port: 8080, targetPort: 9000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: pets-abc, namespace: default, labels: { kubernetes.io/service-name: pets } }
addressType: IPv4
endpoints: [{ addresses: [198.18.0.10], conditions: { ready: true } }, { addresses: [198.18.0.11], conditions: { ready: false } }]
ports: [{ name: http, port: 9000, protocol: TCP }]
`,
    });
    const upstream = await eventually('discovered upstream', async () => {
      const items = await api<{ metadata: { name: string }; spec: unknown }[]>('/api/v1/resources?kind=Upstream');
      return items.find((u) => u.metadata.name === 'default-pets-8080');
    });
    expect(upstream.spec).toMatchObject({ kube: { serviceName: 'pets', serviceNamespace: 'default', servicePort: 8080 } });
    const served = await eventually('endpoints served', async () => {
      const roles = await api<Record<string, Record<string, { cluster_name?: string; endpoints?: unknown[] }[]>>>('/api/v1/served');
      const cla = Object.values(roles)
        .flatMap((r) => r['type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment'] ?? [])
        .find((c) => c.cluster_name === 'default-pets-8080_legate-system');
      return cla && JSON.stringify(cla).includes('198.18.0.10') ? cla : undefined;
    });
    // only the ready endpoint, at the target port
    expect(JSON.stringify(served)).toContain('"port_value":9000');
    expect(JSON.stringify(served)).not.toContain('198.18.0.11');
  });

  it('keeps serving while the API server is away, says why, and catches up when it is back', async () => {
    kube.kubectl(['apply', '-f', '-'], { input: vs('steady', 'steady.example.com', 'steady') });
    await eventually('steady served', async () =>
      (await get(ports.http, '/', 'steady.example.com')).body === 'steady' ? true : undefined,
    );
    await kube.killApiServer();
    const source = await eventually(
      'the source says it is not current',
      async () => {
        const s = await api<{ description: string; problems: string[] }>('/api/v1/source');
        return s.problems.length ? s : undefined;
      },
      30_000,
    );
    expect(source.problems.join('\n')).toContain('serving the last objects');
    expect((await get(ports.http, '/', 'steady.example.com')).body).toBe('steady');
    await kube.startApiServer();
    kube.kubectl(['apply', '-f', '-'], { input: vs('steady', 'steady.example.com', 'steady-v2') });
    await eventually(
      'edit after the restart served',
      async () => ((await get(ports.http, '/', 'steady.example.com')).body === 'steady-v2' ? true : undefined),
      45_000,
    );
    await eventually(
      'current again',
      async () => ((await api<{ problems: string[] }>('/api/v1/source')).problems.length === 0 ? true : undefined),
      45_000,
    );
  });

  it("reads only the Settings' watchNamespaces, and everything again when they go", async () => {
    kube.kubectl(['create', 'namespace', 'team-a']);
    kube.kubectl(['apply', '-f', '-'], {
      input: vs('team', 'team.example.com', 'team').replace('namespace: default', 'namespace: team-a'),
    });
    await eventually('team served', async () => ((await get(ports.http, '/', 'team.example.com')).body === 'team' ? true : undefined));
    const settings = `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { watchNamespaces: [team-a, legate-system] }
`;
    kube.kubectl(['apply', '-f', '-'], { input: settings });
    await eventually('default namespace no longer read', async () =>
      (await get(ports.http, '/', 'steady.example.com')).status === 404 ? true : undefined,
    );
    expect((await get(ports.http, '/', 'team.example.com')).body).toBe('team');
    kube.kubectl(['delete', 'settings.legate.dev', 'default', '-n', 'legate-system']);
    await eventually('default namespace read again', async () =>
      (await get(ports.http, '/', 'steady.example.com')).status === 200 ? true : undefined,
    );
  });

  it('terminates TLS with a kubernetes.io/tls Secret and reads client secrets from Secrets, never showing them', async () => {
    const cert = path.join(fixtures, 'secure.example.com.crt');
    kube.kubectl([
      'create',
      'secret',
      'tls',
      'secure-cert',
      '-n',
      'default',
      '--cert',
      cert,
      '--key',
      path.join(fixtures, 'secure.example.com.key'),
    ]);
    const tlsVs = (name: string, secret: string, domain: string): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  sslConfig: { secretRef: { name: ${secret}, namespace: default }, sniDomains: [${domain}] }
  virtualHost:
    domains: [${domain}]
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200, body: ${name} } }]
`;
    kube.kubectl(['apply', '-f', '-'], { input: tlsVs('secure', 'secure-cert', 'secure.example.com') });
    const ca = fs.readFileSync(cert, 'utf8');
    const served = await eventually('served over TLS', async () => {
      const r = await httpsGet(controller.ports.https, 'secure.example.com', ca).catch(() => undefined);
      return r?.status === 200 ? r : undefined;
    });
    expect(served.body).toBe('secure');
    // a VirtualService whose Secret does not exist is Rejected; the other keeps serving
    kube.kubectl(['apply', '-f', '-'], { input: tlsVs('unsigned', 'no-such-cert', 'unsigned.example.com') });
    const rejected = await eventually('rejected for its Secret', () => {
      const x = status('virtualservices.gateway.solo.io', 'unsigned');
      return x.state === 'Rejected' ? x : undefined;
    });
    expect(rejected.reason).toContain('no-such-cert');
    expect((await httpsGet(controller.ports.https, 'secure.example.com', ca)).body).toBe('secure');

    // an AuthConfig's client secret from a Secret (stored base64 in data, as kubectl writes it)
    const clientSecret = 'kube-client-s3cret-value';
    kube.kubectl(['create', 'secret', 'generic', 'extauth-client', '-n', 'legate-system', `--from-literal=client-secret=${clientSecret}`]);
    kube.kubectl(['create', 'secret', 'generic', 'wrong-keys', '-n', 'legate-system', '--from-literal=password=x']);
    const authConfig = (name: string, secret: string): string => `apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: http://auth.example.com/introspect
            clientId: legate
            clientSecretRef: { name: ${secret}, namespace: legate-system }
`;
    kube.kubectl(['apply', '-f', '-'], {
      input: [authConfig('with-secret', 'extauth-client'), authConfig('bad-secret', 'wrong-keys')].join('---\n'),
    });
    const kind = 'authconfigs.enterprise.gloo.solo.io';
    await eventually('AuthConfig accepted', () => (status(kind, 'with-secret', 'legate-system').state === 'Accepted' ? true : undefined));
    const bad = await eventually('AuthConfig rejected', () => {
      const x = status(kind, 'bad-secret', 'legate-system');
      return x.state === 'Rejected' ? x : undefined;
    });
    expect(bad.reason).toContain('wrong-keys');
    // the secret's value shows nowhere the controller reports to
    const everything = [
      kube.kubectl(['get', kind, '-A', '-o', 'json']).stdout,
      JSON.stringify(await api('/api/v1/resources')),
      JSON.stringify(await api('/api/v1/served')),
      controller.log(),
    ].join('\n');
    expect(everything).not.toContain(clientSecret);
    expect(everything).not.toContain(Buffer.from(clientSecret).toString('base64'));
  });

  it('routes through Envoy to a discovered backend behind a non-loopback address (a network namespace)', async () => {
    const host = createTestHost();
    try {
      const backend = host.spawn(process.execPath, [
        '-e',
        `require('node:http').createServer((q, s) => s.end('from ' + q.url)).listen(9000, '${host.address}', () => console.log('up'))`,
      ]);
      await new Promise<void>((resolve, reject) => {
        backend.stdout?.once('data', () => resolve());
        backend.once('exit', (c) => reject(new Error(`backend exited ${c}`)));
      });
      kube.kubectl(['apply', '-f', '-'], {
        input: `apiVersion: v1
kind: Service
metadata: { name: far, namespace: default }
spec: { ports: [{ name: http, port: 80, targetPort: 9000 }] }
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: { name: far-1, namespace: default, labels: { kubernetes.io/service-name: far } }
addressType: IPv4
endpoints: [{ addresses: [${host.address}], conditions: { ready: true } }]
ports: [{ name: http, port: 9000, protocol: TCP }]
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: far, namespace: default }
spec:
  virtualHost:
    domains: [far.example.com]
    routes: [{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: default-far-80, namespace: legate-system } } } }]
`,
      });
      const r = await eventually('served from the namespace', async () => {
        const x = await get(ports.http, '/hello', 'far.example.com');
        return x.status === 200 ? x : undefined;
      });
      expect(r.body).toBe('from /hello');
    } finally {
      await host.remove();
    }
  });
});
