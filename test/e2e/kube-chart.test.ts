// The Helm chart (install/helm/legate) and `legatectl install` / `uninstall` against a real
// kube-apiserver (test/support/kube.ts) with the helm `make kube-tools` builds: helm lint; the
// chart rendered with default values and with every option on, applied with server-side apply and
// every object accepted; the values reaching the objects; probes on endpoints that answer (a real
// Envoy started from the chart's bootstrap, fed by a controller running with the chart's RBAC);
// install/kubernetes/rbac.yaml being the chart's RBAC; legatectl installing, upgrading and removing
// the release. There is no kubelet: Deployments get no Pods, so nothing waits for them.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { DEFAULTS } from '../../cli/commands/common.js';
import { RBAC_FILE, rbacFromChart } from '../../install/helm/generate.js';
import { ROOT } from '../support/gateway.js';
import { CHART, HELM, helm, parseObjects, renderChart, type KubeObject } from '../support/helm.js';
import { controllerKubeconfig, startKubeApiServer, startKubeController, type KubeApiServer, type KubeController } from '../support/kube.js';
import { eventually, freePort, stopProcess } from '../support/util.js';

let kube: KubeApiServer;
let dir: string;
let allOnValues: string;
const stops: (() => Promise<void>)[] = [];

/** Every option on: Gloo groups, stats server, dev mode, two gateway proxies, a write namespace, levels. */
const ALL_ON = `
glooGroups: true
settings: { writeNamespace: gateways, watchNamespaces: [team-a, team-b], devMode: true }
controller: { logLevel: debug, startStatsServer: true, replicas: 2 }
extauth: { logLevel: warn }
graphql: { logLevel: error }
extensionServer: { http2Transport: node, maxConcurrentStreams: 50, http2Limits: { rapidResets: 200, connectionBodyBytes: 33554432 } }
gatewayProxies:
  gatewayProxy: { logLevel: warning }
  publicGw: { logLevel: debug, replicas: 3, exposeAdmin: true, service: { type: ClusterIP } }
`;

beforeAll(async () => {
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-chart-'));
  allOnValues = path.join(dir, 'all-on.yaml');
  fs.writeFileSync(allOnValues, ALL_ON);
}, 180_000);

afterAll(async () => {
  for (const stop of stops.reverse()) await stop().catch(() => undefined);
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// ---- reading rendered objects ----

interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: unknown }[];
  ports?: { name: string; containerPort: number }[];
  readinessProbe?: Record<string, unknown>;
  livenessProbe?: Record<string, unknown>;
  resources?: { requests?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  containers: Container[];
  initContainers?: Container[];
  volumes?: { name: string; emptyDir?: object; configMap?: { name: string }; secret?: { secretName: string } }[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
}

function find(objects: KubeObject[], kind: string, name: string): KubeObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} in: ${objects.map((x) => `${x.kind}/${x.metadata.name}`).join(', ')}`);
  return o;
}
const names = (objects: KubeObject[], kind: string): string[] =>
  objects
    .filter((o) => o.kind === kind)
    .map((o) => o.metadata.name)
    .sort();
const podSpec = (d: KubeObject): PodSpec => (d.spec as { template: { spec: PodSpec } }).template.spec;
const container = (d: KubeObject, name?: string): Container => {
  const cs = podSpec(d).containers;
  const c = name ? cs.find((x) => x.name === name) : cs[0];
  if (!c) throw new Error(`no container ${name ?? ''} in ${d.metadata.name}`);
  return c;
};
const env = (c: Container, name: string): string | undefined => c.env?.find((e) => e.name === name)?.value;
const argAfter = (c: Container, flag: string): string | undefined => c.args?.[c.args.indexOf(flag) + 1];
const servicePorts = (s: KubeObject): { name: string; port: number; targetPort: string | number }[] =>
  (s.spec as { ports: { name: string; port: number; targetPort: string | number }[] }).ports;

function legatectl(args: string[], envOverride: NodeJS.ProcessEnv = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'legatectl.js'), ...args], {
    encoding: 'utf8',
    timeout: 180_000,
    maxBuffer: 64 * 1024 * 1024,
    // never the machine's cluster
    env: { ...process.env, KUBECONFIG: path.join(dir, 'no-such-kubeconfig'), ...envOverride },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** Server-side apply of rendered objects: the CRDs first (Established), then the rest; every object accepted. */
function applyRendered(objects: KubeObject[], namespace: string): void {
  const crds = objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const rest = objects.filter((o) => o.kind !== 'CustomResourceDefinition');
  const apply = (items: KubeObject[]): string[] => {
    const input = items.map((o) => JSON.stringify(o)).join('\n---\n');
    const out = kube.kubectl(['apply', '--server-side', '--field-manager', 'legate-chart-test', '-f', '-'], { input }).stdout;
    return out.trim().split('\n');
  };
  if (crds.length) {
    expect(apply(crds)).toHaveLength(crds.length);
    kube.kubectl(['wait', '--for', 'condition=Established', '--timeout', '60s', ...crds.map((c) => `crd/${c.metadata.name}`)]);
  }
  kube.kubectl(['create', 'namespace', namespace]);
  const lines = apply(rest);
  expect(lines).toHaveLength(rest.length);
  for (const line of lines) expect(line).toMatch(/ serverside-applied$/);
  // and each one is there, as rendered
  for (const o of rest) {
    const ns = o.metadata.namespace ? ['-n', o.metadata.namespace] : [];
    const kind = o.kind === 'Settings' ? 'settings.legate.dev' : o.kind;
    const got = JSON.parse(kube.kubectl(['get', kind, o.metadata.name, ...ns, '-o', 'json']).stdout) as KubeObject;
    expect(got.metadata.labels?.['app.kubernetes.io/part-of']).toBe('legate');
  }
}

describe('the Helm chart', () => {
  it('passes helm lint with default values and with every option on', () => {
    for (const extra of [[], ['--values', allOnValues]]) {
      const r = helm(['lint', '--strict', CHART, ...extra]);
      expect(r.stdout).toMatch(/1 chart\(s\) linted, 0 chart\(s\) failed/);
    }
  });

  it('renders the components with default values, and what is off is absent', () => {
    const { objects } = renderChart('legate-system');
    expect(names(objects, 'Deployment')).toEqual(['controller', 'extauth', 'gateway-proxy', 'graphql', 'ratelimit']);
    expect(names(objects, 'Service')).toEqual(['controller', 'extauth', 'gateway-proxy', 'graphql', 'ratelimit']);
    expect(names(objects, 'CustomResourceDefinition')).toEqual([]); // crds/ are installed by helm, not templated

    const controller = find(objects, 'Deployment', 'controller');
    const c = container(controller);
    expect(c.args?.slice(0, 2)).toEqual(['controller', '--source=kubernetes']);
    expect(c.args).toContain('--xds-host=0.0.0.0');
    expect(c.args).toContain('--extauth-address=extauth.legate-system.svc.cluster.local:8083');
    expect(c.args).toContain('--graphql-address=graphql.legate-system.svc.cluster.local:8084');
    expect(c.args).toContain('--ratelimit-address=ratelimit.legate-system.svc.cluster.local:18081');
    expect(env(c, 'LOG_LEVEL')).toBe('info');
    expect(env(c, 'START_STATS_SERVER')).toBeUndefined();
    expect(podSpec(controller).serviceAccountName).toBe('legate-controller');
    expect(servicePorts(find(objects, 'Service', 'controller'))).toEqual([
      { name: 'grpc-xds', port: 9977, targetPort: 'grpc-xds', protocol: 'TCP' },
      { name: 'http-api', port: DEFAULTS.apiPort, targetPort: 'api', protocol: 'TCP' },
      { name: 'https-webhook', port: 443, targetPort: 'https-webhook', protocol: 'TCP' },
    ]);
    expect(c.ports?.map((p) => p.containerPort)).toEqual([9977, DEFAULTS.apiPort, 8443]);
    // the validating webhook: the controller serves it with the chart's Secret and keeps its CA in the configuration
    expect(c.args).toEqual(
      expect.arrayContaining([
        '--webhook-address=0.0.0.0:8443',
        '--webhook-tls=/etc/legate/webhook-tls',
        '--webhook-config=legate-validation-legate-system',
      ]),
    );
    const webhook = find(objects, 'ValidatingWebhookConfiguration', 'legate-validation-legate-system') as unknown as {
      webhooks: { clientConfig: { service: object; caBundle: string }; failurePolicy: string; rules: { apiGroups: string[] }[] }[];
    };
    const secret = find(objects, 'Secret', 'legate-webhook-tls');
    expect(webhook.webhooks[0]?.clientConfig.service).toEqual({
      name: 'controller',
      namespace: 'legate-system',
      path: '/validation',
      port: 443,
    });
    expect(webhook.webhooks[0]?.clientConfig.caBundle).toBe(secret.data?.['ca.crt']);
    expect(webhook.webhooks[0]?.failurePolicy).toBe('Ignore');
    expect(webhook.webhooks[0]?.rules[0]?.apiGroups).not.toContain('gateway.solo.io');
    const served = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    expect(served.checkHost('controller.legate-system.svc')).toBe('controller.legate-system.svc');
    expect(served.verify(new X509Certificate(Buffer.from(secret.data?.['ca.crt'] ?? '', 'base64')).publicKey)).toBe(true);
    expect(
      names(renderChart('legate-system', ['--set', 'gateway.validation.enabled=false']).objects, 'ValidatingWebhookConfiguration'),
    ).toEqual([]);

    // the extensions bind their pod's IP, serve on Legate's HTTP/2 server with the built-in limits, and admit only the
    // gateway proxies
    for (const name of ['extauth', 'graphql', 'ratelimit']) {
      const ext = container(find(objects, 'Deployment', name));
      expect(ext.args).toContain('--host=$(POD_IP)');
      expect(ext.env?.find((e) => e.name === 'POD_IP')?.valueFrom).toEqual({ fieldRef: { fieldPath: 'status.podIP' } });
      expect(ext.args).toEqual(
        expect.arrayContaining([
          '--http2-transport=legate',
          '--http2-max-concurrent-streams=100',
          '--http2-rapid-resets=1000',
          '--http2-connection-body-bytes=16777216',
          '--http2-settings-ack-timeout-ms=10000',
          '--http2-max-header-list-bytes=65536',
        ]),
      );
      const policy = find(objects, 'NetworkPolicy', name).spec as {
        podSelector: { matchLabels: Record<string, string> };
        policyTypes: string[];
        ingress: { from: { podSelector: { matchLabels: Record<string, string> } }[]; ports: { port: string }[] }[];
      };
      expect(policy.podSelector.matchLabels['legate']).toBe(name);
      expect(policy.policyTypes).toEqual(['Ingress']);
      expect(policy.ingress).toHaveLength(1);
      expect(policy.ingress[0]?.from.map((f) => f.podSelector.matchLabels['app.kubernetes.io/component'])).toEqual(['gateway-proxy']);
      expect(policy.ingress[0]?.ports).toEqual([{ port: 'grpc', protocol: 'TCP' }]);
    }
    // every gateway proxy's pods carry the labels the policies admit
    const admitted = (find(objects, 'NetworkPolicy', 'extauth').spec as { ingress: { from: { podSelector: { matchLabels: object } }[] }[] })
      .ingress[0]!.from[0]!.podSelector.matchLabels;
    const proxyPodLabels = (find(objects, 'Deployment', 'gateway-proxy').spec as { template: { metadata: { labels: object } } }).template
      .metadata.labels;
    expect(proxyPodLabels).toMatchObject(admitted);
    expect(names(renderChart('legate-system', ['--set', 'extensionServer.networkPolicy=false']).objects, 'NetworkPolicy')).toEqual([]);

    const proxy = find(objects, 'Deployment', 'gateway-proxy');
    const envoy = container(proxy, 'envoy');
    const pinned = fs.readFileSync(path.join(ROOT, 'envoy/VERSION'), 'utf8').trim();
    expect(envoy.image).toBe(`envoyproxy/envoy:v${pinned}`);
    expect(argAfter(envoy, '--log-level')).toBe('info');
    const svc = find(objects, 'Service', 'gateway-proxy');
    expect((svc.spec as { type: string }).type).toBe('LoadBalancer');
    expect(servicePorts(svc).map((p) => [p.name, p.port, p.targetPort])).toEqual([
      ['http', 80, 'http'],
      ['https', 443, 'https'],
    ]);
    expect(envoy.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['http', DEFAULTS.httpPort],
      ['https', DEFAULTS.httpsPort],
      ['ready', 19001],
      ['http-monitoring', 8081],
    ]);
    const bootstrap = parse(find(objects, 'ConfigMap', 'gateway-proxy-envoy-config').data?.['envoy.yaml'] ?? '') as {
      node: { metadata: { role: string } };
    };
    expect(bootstrap.node.metadata.role).toBe('legate-system~gateway-proxy');

    const settings = find(objects, 'Settings', 'default');
    expect(settings.spec).toEqual({
      writeNamespace: 'legate-system',
      discoveryNamespace: 'legate-system',
      devMode: false,
      gateway: { validation: { alwaysAccept: false, allowWarnings: true } },
    });
  });

  it('runs every component non-root on a read-only root, with requests and probes on the ports it serves', () => {
    const { objects } = renderChart('legate-system', ['--values', allOnValues]);
    const deployments = objects.filter((o) => o.kind === 'Deployment');
    expect(deployments).toHaveLength(6);
    for (const d of deployments) {
      const spec = podSpec(d);
      expect(spec.securityContext?.runAsNonRoot, d.metadata.name).toBe(true);
      expect(spec.securityContext?.runAsUser, d.metadata.name).toBeGreaterThan(0);
      // only the controller talks to the API server
      if (d.metadata.name !== 'controller') expect(spec.automountServiceAccountToken, d.metadata.name).toBe(false);
      for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
        const what = `${d.metadata.name}/${c.name}`;
        expect(c.securityContext, what).toMatchObject({
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
        });
        expect(Object.keys(c.resources?.requests ?? {}).sort(), what).toEqual(['cpu', 'memory']);
        // every writable path is an emptyDir (the webhook's Secret is mounted read-only)
        for (const m of c.volumeMounts ?? []) {
          const volume = spec.volumes?.find((v) => v.name === m.name);
          expect(
            volume?.emptyDir ?? volume?.configMap ?? (m.readOnly ? volume?.secret : undefined),
            `${what} ${m.mountPath}`,
          ).toBeDefined();
        }
      }
      for (const c of spec.containers) {
        expect(c.readinessProbe, `${d.metadata.name} readiness`).toBeDefined();
        expect(c.livenessProbe, `${d.metadata.name} liveness`).toBeDefined();
      }
    }
    // the probes name ports the components open
    const ctl = container(find(objects, 'Deployment', 'controller'));
    expect(ctl.readinessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'api' } });
    // the API on the pod IP (legatectl's pod proxy, the probe), and the filters fetched from its Service
    expect(ctl.args).toEqual(expect.arrayContaining(['--api-host=$(POD_IP)', `--api-port=${DEFAULTS.apiPort}`, '--wasm-source=remote']));
    expect(ctl.args).toContain(`--wasm-fetch-address=controller.legate-system.svc.cluster.local:${DEFAULTS.apiPort}`);
    expect(ctl.env?.find((e) => e.name === 'POD_IP')).toMatchObject({ valueFrom: { fieldRef: { fieldPath: 'status.podIP' } } });
    expect(ctl.livenessProbe).toMatchObject({ tcpSocket: { port: 'grpc-xds' } });
    for (const [name, port] of [
      ['extauth', DEFAULTS.extauthPort],
      ['graphql', DEFAULTS.graphqlPort],
      ['ratelimit', DEFAULTS.ratelimitPort],
    ] as const) {
      const c = container(find(objects, 'Deployment', name));
      expect(c.args).toContain(`--port=${port}`);
      expect(c.ports).toEqual([{ name: 'grpc', containerPort: port, protocol: 'TCP' }]);
      expect(c.readinessProbe).toMatchObject({ tcpSocket: { port: 'grpc' } });
    }
    const envoy = container(find(objects, 'Deployment', 'public-gw'), 'envoy');
    expect(envoy.readinessProbe).toMatchObject({ httpGet: { path: '/ready', port: 'ready' } });
  });

  it('carries every option to the objects: Gloo groups, stats server, dev mode, two proxies, levels', () => {
    const { objects } = renderChart('legate-all', ['--values', allOnValues]);
    expect(names(objects, 'Deployment')).toEqual(['controller', 'extauth', 'gateway-proxy', 'graphql', 'public-gw', 'ratelimit']);

    const controller = find(objects, 'Deployment', 'controller');
    const c = container(controller);
    expect(env(c, 'LOG_LEVEL')).toBe('debug');
    expect(env(c, 'START_STATS_SERVER')).toBe('true');
    expect((controller.spec as { replicas: number }).replicas).toBe(2);
    expect(c.args).toContain('--write-namespace=gateways');
    expect(c.args).toContain('--lease-namespace=legate-all');
    expect(c.ports?.map((p) => [p.name, p.containerPort])).toEqual([
      ['grpc-xds', 9977],
      ['api', DEFAULTS.apiPort],
      ['https-webhook', 8443],
      ['http-monitoring', DEFAULTS.stats.controller],
      ['dev-admin', DEFAULTS.devPort],
    ]);
    expect(servicePorts(find(objects, 'Service', 'controller')).map((p) => [p.name, p.port])).toEqual([
      ['grpc-xds', 9977],
      ['http-api', DEFAULTS.apiPort],
      ['https-webhook', 443],
      ['http-monitoring', 9091],
      ['dev-admin', 10010],
    ]);
    const rules = (
      find(objects, 'ValidatingWebhookConfiguration', 'legate-validation-legate-all') as unknown as {
        webhooks: { rules: { apiGroups: string[] }[] }[];
      }
    ).webhooks[0]?.rules[0]?.apiGroups;
    expect(rules).toEqual(expect.arrayContaining(['gateway.legate.dev', 'gateway.solo.io', 'gloo.solo.io']));
    expect(env(container(find(objects, 'Deployment', 'extauth')), 'LOG_LEVEL')).toBe('warn');
    const ratelimitArgs = container(find(objects, 'Deployment', 'ratelimit')).args;
    expect(ratelimitArgs).toEqual(
      expect.arrayContaining([
        '--http2-transport=node',
        '--http2-max-concurrent-streams=50',
        '--http2-rapid-resets=200',
        '--http2-connection-body-bytes=33554432',
        '--http2-pings=100',
      ]),
    );
    const publicGwLabels = (find(objects, 'Deployment', 'public-gw').spec as { template: { metadata: { labels: object } } }).template
      .metadata.labels;
    expect(publicGwLabels).toMatchObject(
      (find(objects, 'NetworkPolicy', 'graphql').spec as { ingress: { from: { podSelector: { matchLabels: object } }[] }[] }).ingress[0]!
        .from[0]!.podSelector.matchLabels,
    );

    expect(env(container(find(objects, 'Deployment', 'graphql')), 'LOG_LEVEL')).toBe('error');

    // each proxy: its own level, role and Service; what it does not set comes from gatewayProxy
    expect(argAfter(container(find(objects, 'Deployment', 'gateway-proxy'), 'envoy'), '--log-level')).toBe('warning');
    const pub = find(objects, 'Deployment', 'public-gw');
    expect(argAfter(container(pub, 'envoy'), '--log-level')).toBe('debug');
    expect((pub.spec as { replicas: number }).replicas).toBe(3);
    expect(container(pub, 'envoy').image).toBe(container(find(objects, 'Deployment', 'gateway-proxy'), 'envoy').image);
    expect(podSpec(pub).volumes?.find((v) => v.name === 'bootstrap')?.configMap?.name).toBe('public-gw-envoy-config');
    const bootstrap = parse(find(objects, 'ConfigMap', 'public-gw-envoy-config').data?.['envoy.yaml'] ?? '');
    expect(bootstrap.node.metadata.role).toBe('gateways~public-gw');
    // exposeAdmin: Envoy's admin on the pod's IP, its port named for legatectl; loopback otherwise
    expect(bootstrap.admin.address.socket_address.address).toBe('0.0.0.0');
    expect(container(pub, 'envoy').ports?.find((p) => p.name === 'admin')?.containerPort).toBe(19000);
    const defaultProxy = parse(find(objects, 'ConfigMap', 'gateway-proxy-envoy-config').data?.['envoy.yaml'] ?? '');
    expect(defaultProxy.admin.address.socket_address.address).toBe('127.0.0.1');
    expect(container(find(objects, 'Deployment', 'gateway-proxy'), 'envoy').ports?.map((p) => p.name)).not.toContain('admin');
    // the labels legatectl finds pods by
    expect((pub.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels).toMatchObject({
      app: 'legate',
      legate: 'gateway-proxy',
      'gateway-proxy-id': 'public-gw',
    });
    expect(JSON.stringify(bootstrap)).toContain('"address":"controller.legate-all.svc.cluster.local","port_value":9977');
    expect((find(objects, 'Service', 'public-gw').spec as { type: string }).type).toBe('ClusterIP');
    expect((find(objects, 'Service', 'public-gw').spec as { selector: Record<string, string> }).selector['gateway-proxy-id']).toBe(
      'public-gw',
    );

    const settings = find(objects, 'Settings', 'default');
    expect(settings.spec).toEqual({
      writeNamespace: 'gateways',
      discoveryNamespace: 'gateways',
      watchNamespaces: ['team-a', 'team-b'],
      devMode: true,
      gateway: { validation: { alwaysAccept: false, allowWarnings: true } },
    });

    const gloo = objects.filter((o) => o.kind === 'CustomResourceDefinition');
    expect(gloo.map((o) => o.metadata.name)).toContain('virtualservices.gateway.solo.io');
    expect(gloo.map((o) => o.metadata.name)).not.toContain('virtualservices.gateway.legate.dev');
    for (const crd of gloo) expect(crd.metadata.annotations?.['helm.sh/resource-policy']).toBe('keep');
  });

  it('refuses values its schema does not allow, naming them', () => {
    const bad = helm(['template', 'legate', CHART, '--set', 'controller.logLevel=loud'], { check: false });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toMatch(/controller.*logLevel/);
    const typo = helm(['template', 'legate', CHART, '--set', 'gatewayProxies.gatewayProxy.loglevel=debug'], { check: false });
    expect(typo.status).not.toBe(0);
    expect(typo.stderr).toMatch(/loglevel/);
    const root = helm(['template', 'legate', CHART, '--set', 'securityContext.runAsUser=0'], { check: false });
    expect(root.status).not.toBe(0);
    const limit = helm(['template', 'legate', CHART, '--set', 'extensionServer.http2Limits.rapidReset=5'], { check: false });
    expect(limit.status).not.toBe(0);
    expect(limit.stderr).toMatch(/rapidReset/);
  });

  it('applies to the API server with server-side apply, every object accepted (defaults, then every option on)', () => {
    applyRendered(renderChart('legate-system', [], { includeCrds: true }).objects, 'legate-system');
    applyRendered(renderChart('legate-all', ['--values', allOnValues], { includeCrds: true }).objects, 'legate-all');
    expect(kube.kubectl(['get', 'crd', 'virtualservices.gateway.solo.io', '-o', 'name']).stdout.trim()).toBe(
      'customresourcedefinition.apiextensions.k8s.io/virtualservices.gateway.solo.io',
    );
  });

  it("keeps one RBAC: install/kubernetes/rbac.yaml is the chart's template rendered", () => {
    expect(fs.readFileSync(RBAC_FILE, 'utf8'), 'stale: node --import tsx install/helm/generate.ts').toBe(rbacFromChart(HELM));
  });

  it("serves the proxies: a controller with the chart's RBAC feeds an Envoy from the chart's bootstrap, whose probe answers", async () => {
    // the chart's objects in legate-system are applied above; the controller runs as its ServiceAccount
    // one Settings: the every-option render's (write namespace gateways) would name other roles
    kube.kubectl(['delete', 'settings.legate.dev', 'default', '-n', 'legate-all']);
    const controller: KubeController = await startKubeController(kube, dir, 'controller', [], controllerKubeconfig(kube, dir));
    stops.push(() => controller.stop());
    const { objects } = renderChart('legate-system');
    const cm = find(objects, 'ConfigMap', 'gateway-proxy-envoy-config');
    const envoy = container(find(objects, 'Deployment', 'gateway-proxy'), 'envoy');
    // the pod's addresses become this machine's: the controller on loopback, free ports for admin, readiness and stats
    const [adminPort, readyPort, statsPort] = [await freePort(), await freePort(), await freePort()];
    const bootstrap = (cm.data?.['envoy.yaml'] ?? '')
      .replace('address: controller.legate-system.svc.cluster.local', 'address: 127.0.0.1')
      .replace('port_value: 9977', `port_value: ${controller.ports.xds}`)
      // the admin and the stats listener's admin cluster
      .replaceAll('port_value: 19000', `port_value: ${adminPort}`)
      .replace('port_value: 19001', `port_value: ${readyPort}`)
      .replace('port_value: 8081', `port_value: ${statsPort}`);
    const file = path.join(dir, 'envoy.yaml');
    fs.writeFileSync(file, bootstrap);
    const args = (envoy.args ?? []).map((a) =>
      a === '/etc/envoy/envoy.yaml' ? file : a.replace('$(POD_NAME).$(POD_NAMESPACE)', 'gw-1.legate-system'),
    );
    const logFile = path.join(dir, 'envoy.log');
    const log = fs.openSync(logFile, 'a');
    const child: ChildProcess = spawn(path.join(ROOT, '.venv/bin/envoy'), [...args, '--base-id', String(readyPort)], {
      stdio: ['ignore', log, log],
    });
    fs.closeSync(log);
    stops.push(() => stopProcess(child));

    const ready = await eventually(
      'the readiness listener',
      async () => {
        if (child.exitCode !== null) throw new Error(`envoy exited:\n${fs.readFileSync(logFile, 'utf8')}`);
        const res = await fetch(`http://127.0.0.1:${readyPort}/ready`).catch(() => undefined);
        return res?.status === 200 ? res : undefined;
      },
      30_000,
    );
    expect(ready.status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${readyPort}/config_dump`)).status).not.toBe(200); // only /ready: the admin stays private
    const info = (await (await fetch(`http://127.0.0.1:${adminPort}/server_info`)).json()) as { state: string; node: { id: string } };
    expect(info.state).toBe('LIVE');
    expect(info.node.id).toBe('gw-1.legate-system');
    // the controller serves this role its default gateway
    const listeners = await eventually('listeners from the controller', async () => {
      const text = await (await fetch(`http://127.0.0.1:${adminPort}/listeners`)).text();
      return text.includes(`listener-::-${controller.ports.http}`) ? text : undefined;
    });
    expect(listeners).toContain('legate-ready-0.0.0.0-19001');
    // Prometheus scrapes the pod's stats listener (its prometheus.io annotations): Envoy's metrics, nothing else of the admin
    const metrics = await fetch(`http://127.0.0.1:${statsPort}/metrics`);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toMatch(/^envoy_server_live\{[^}]*\} 1$/m);
    expect((await fetch(`http://127.0.0.1:${statsPort}/config_dump`)).status).toBe(404);
    // a draining Envoy fails the probe, so kubelet stops sending it traffic
    await fetch(`http://127.0.0.1:${adminPort}/healthcheck/fail`, { method: 'POST' });
    expect((await fetch(`http://127.0.0.1:${readyPort}/ready`)).status).toBe(503);
  }, 90_000);
});

describe('legatectl install / uninstall', () => {
  const NS = 'legate-inst';
  const target = (): string[] => ['--kubeconfig', kube.kubeconfig, '-n', NS, '--helm', HELM];
  const deployments = (): string[] =>
    kube.kubectl(['get', 'deployments', '-n', NS, '-o', 'name']).stdout.trim().split('\n').filter(Boolean).sort();

  it('says how to get helm when there is none', () => {
    const none = legatectl(['install', '--kubeconfig', kube.kubeconfig], { PATH: path.dirname(process.execPath) });
    expect(none.status).toBe(1);
    expect(none.stderr).toMatch(/helm.*not on PATH.*--helm PATH/s);
    const wrong = legatectl(['install', '--helm', path.join(dir, 'no-helm')]);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain(`--helm: ${path.join(dir, 'no-helm')} not found`);
    const badName = legatectl(['install', '-n', 'Legate_System', '--helm', HELM]);
    expect(badName.stderr).toMatch(/--namespace: "Legate_System" is not a valid name/);
  });

  it('--dry-run prints the manifests, CRDs included, without a cluster', () => {
    const r = legatectl(['install', '--dry-run', '-n', 'demo', '--set', 'glooGroups=true', '--helm', HELM]);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const objects = parseObjects(r.stdout);
    const crds = names(objects, 'CustomResourceDefinition');
    expect(crds).toContain('virtualservices.gateway.legate.dev');
    expect(crds).toContain('virtualservices.gateway.solo.io');
    expect(find(objects, 'Deployment', 'controller').metadata.namespace).toBe('demo');
  });

  it('installs the release into the cluster, upgrades it, and uninstall removes it (CRDs and namespace stay)', () => {
    const installed = legatectl(['install', ...target(), '--set', 'gatewayProxies.publicGw.logLevel=debug']);
    expect(installed.stderr).not.toMatch(/error/i);
    expect(installed.status).toBe(0);
    expect(installed.stdout).toContain(`Legate is installed in namespace ${NS} (release legate)`);
    expect(deployments()).toEqual([
      'deployment.apps/controller',
      'deployment.apps/extauth',
      'deployment.apps/gateway-proxy',
      'deployment.apps/graphql',
      'deployment.apps/public-gw',
      'deployment.apps/ratelimit',
    ]);
    expect(kube.kubectl(['get', 'settings.legate.dev', 'default', '-n', NS, '-o', 'jsonpath={.spec.writeNamespace}']).stdout).toBe(NS);
    expect(kube.kubectl(['get', 'clusterrole', `legate-controller-${NS}`, '-o', 'name']).status).toBe(0);
    const releases = JSON.parse(helm(['list', '-n', NS, '--kubeconfig', kube.kubeconfig, '-o', 'json']).stdout) as {
      name: string;
      status: string;
    }[];
    expect(releases.map((r) => [r.name, r.status])).toEqual([['legate', 'deployed']]);

    // again: an upgrade with a changed value
    const upgraded = legatectl(['install', ...target(), '--set', 'controller.logLevel=debug']);
    expect(upgraded.status).toBe(0);
    const level = kube.kubectl([
      'get',
      'deployment',
      'controller',
      '-n',
      NS,
      '-o',
      'jsonpath={.spec.template.spec.containers[0].env[0].value}',
    ]).stdout;
    expect(level).toBe('debug');
    expect(deployments()).not.toContain('deployment.apps/public-gw'); // not set this time

    const removed = legatectl(['uninstall', ...target()]);
    expect(removed.stderr).toBe('');
    expect(removed.status).toBe(0);
    expect(deployments()).toEqual([]);
    expect(kube.kubectl(['get', 'settings.legate.dev', '-n', NS, '-o', 'name']).stdout.trim()).toBe('');
    expect(kube.kubectl(['get', 'clusterrole', `legate-controller-${NS}`], { check: false }).status).not.toBe(0);
    expect(kube.kubectl(['get', 'crd', 'settings.legate.dev', '-o', 'name']).status).toBe(0);
    expect(kube.kubectl(['get', 'namespace', NS, '-o', 'name']).status).toBe(0);

    const again = legatectl(['uninstall', ...target()]);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`no release legate in namespace ${NS}`);
  });

  it('uninstall --all also deletes the CRDs (with the resources of their kinds) and the namespace', async () => {
    const installed = legatectl(['install', ...target(), '--set', 'glooGroups=true']);
    expect(installed.stderr).toBe('');
    expect(installed.status).toBe(0);
    kube.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: ${NS} }
spec: { virtualHost: { domains: [shop.example.com], routes: [{ directResponseAction: { status: 200 } }] } }
`,
    });
    // as in a cluster where Legate ran a while: every kind served (a CRD deleted while the API server
    // still initialises its storage waits on its finalizer's backoff)
    const kinds = kube.kubectl(['get', 'crd', '-l', 'app.kubernetes.io/part-of=legate', '-o', 'jsonpath={.items[*].metadata.name}']).stdout;
    await eventually(
      'every kind listed',
      () => (kube.kubectl(['get', kinds.split(' ').join(','), '-A'], { check: false }).status === 0 ? true : undefined),
      30_000,
    );

    const all = legatectl(['uninstall', ...target(), '--all']);
    expect(all.status).toBe(0);
    expect(all.stdout).toContain('deleted customresourcedefinition virtualservices.gateway.legate.dev');
    expect(all.stdout).toContain('deleted customresourcedefinition virtualservices.gateway.solo.io');
    expect(all.stdout).toContain(`deleted namespace ${NS}`);
    await eventually(
      'the CRDs gone',
      () => {
        const left = kube.kubectl(['get', 'crd', '-l', 'app.kubernetes.io/part-of=legate', '-o', 'name']).stdout.trim();
        if (left !== '') throw new Error(`left: ${left}`);
        return true;
      },
      30_000,
    );
    // no namespace controller runs here to finish the deletion: it is Terminating
    const phase = kube.kubectl(['get', 'namespace', NS, '-o', 'jsonpath={.status.phase}'], { check: false });
    expect(phase.status === 0 ? phase.stdout : 'gone').toMatch(/^(Terminating|gone)$/);
  }, 90_000);
});

describe("the chart's observability, console, Prometheus and Redis", () => {
  const OBS_ON = [
    '--set',
    'observability.enabled=true,console.enabled=true,prometheus.enabled=true,redis.enabled=true',
    '--set',
    'observability.logLevel=debug,console.logLevel=warn,prometheus.logLevel=warn,redis.logLevel=warning',
    '--set',
    'observability.grafana.url=http://grafana.monitoring:3000,observability.grafana.apiKeySecret=grafana-key',
    '--set',
    'extauth.startStatsServer=true,graphql.startStatsServer=true,ratelimit.startStatsServer=true,controller.startStatsServer=true',
  ];

  it('is off by default, and each part renders when enabled: non-root, probes, resources, levels', () => {
    const defaults = renderChart('legate-system').objects;
    for (const name of ['observability', 'console', 'prometheus', 'redis']) expect(names(defaults, 'Deployment')).not.toContain(name);
    const { objects } = renderChart('legate-obs', OBS_ON);
    expect(names(objects, 'Deployment')).toEqual([
      'console',
      'controller',
      'extauth',
      'gateway-proxy',
      'graphql',
      'observability',
      'prometheus',
      'ratelimit',
      'redis',
    ]);
    for (const name of ['observability', 'console', 'prometheus', 'redis']) {
      const d = find(objects, 'Deployment', name);
      const spec = podSpec(d);
      expect(spec.securityContext?.runAsNonRoot, name).toBe(true);
      expect(spec.securityContext?.runAsUser, name).toBeGreaterThan(0);
      // only Prometheus reads the Kubernetes API (pod discovery)
      if (name !== 'prometheus') expect(spec.automountServiceAccountToken, name).toBe(false);
      const c = container(d);
      expect(c.securityContext, name).toMatchObject({ readOnlyRootFilesystem: true, allowPrivilegeEscalation: false });
      expect(Object.keys(c.resources?.requests ?? {}).sort(), name).toEqual(['cpu', 'memory']);
      expect(c.readinessProbe, name).toBeDefined();
      expect(c.livenessProbe, name).toBeDefined();
      for (const m of c.volumeMounts ?? []) {
        const v = spec.volumes?.find((x) => x.name === m.name);
        expect(v?.emptyDir ?? v?.configMap, `${name} ${m.mountPath}`).toBeDefined();
      }
    }
    const obs = container(find(objects, 'Deployment', 'observability'));
    expect(obs.args).toEqual([
      'observability',
      `--controller=http://controller.legate-obs.svc.cluster.local:${DEFAULTS.apiPort}`,
      '--host=0.0.0.0',
      '--port=9096',
      '--out=/tmp/dashboards',
      '--grafana-url=http://grafana.monitoring:3000',
    ]);
    expect(env(obs, 'LOG_LEVEL')).toBe('debug');
    expect(obs.env?.find((e) => e.name === 'GRAFANA_API_KEY')).toMatchObject({
      valueFrom: { secretKeyRef: { name: 'grafana-key', key: 'apiKey' } },
    });
    expect(obs.readinessProbe).toMatchObject({ httpGet: { path: '/healthz', port: 'http' } });

    const con = container(find(objects, 'Deployment', 'console'));
    expect(con.args?.[0]).toBe('console');
    expect(con.args).toEqual(
      expect.arrayContaining([
        '--address=0.0.0.0',
        '--port=8090',
        `--api=http://controller.legate-obs.svc.cluster.local:${DEFAULTS.apiPort}`,
        '--prometheus=http://prometheus.legate-obs.svc.cluster.local:9090',
      ]),
    );
    expect(env(con, 'LOG_LEVEL')).toBe('warn');
    // beyond loopback the console needs a token: the chart's own Secret unless one is named
    expect(con.env?.find((e) => e.name === 'LEGATE_CONSOLE_TOKEN')).toMatchObject({
      valueFrom: { secretKeyRef: { name: 'legate-console-token', key: 'token' } },
    });
    expect(Buffer.from(find(objects, 'Secret', 'legate-console-token').data?.['token'] ?? '', 'base64').length).toBe(40);

    const prom = find(objects, 'Deployment', 'prometheus');
    expect(container(prom).image).toBe('prom/prometheus:v3.16.0');
    expect(container(prom).args).toContain('--log.level=warn');
    expect(podSpec(prom).serviceAccountName).toBe('legate-prometheus');
    const scrape = parse(find(objects, 'ConfigMap', 'prometheus-config').data?.['prometheus.yml'] ?? '') as {
      scrape_configs: { kubernetes_sd_configs: { role: string; namespaces: { names: string[] } }[] }[];
    };
    expect(scrape.scrape_configs[0]?.kubernetes_sd_configs[0]).toEqual({ role: 'pod', namespaces: { names: ['legate-obs'] } });
    expect((find(objects, 'Role', 'legate-prometheus') as unknown as { rules: { verbs: string[] }[] }).rules[0]?.verbs).toEqual([
      'get',
      'list',
      'watch',
    ]);

    // Redis: the ratelimit service keeps its counters there
    expect(container(find(objects, 'Deployment', 'redis')).args).toEqual(expect.arrayContaining(['--loglevel', 'warning']));
    const rl = container(find(objects, 'Deployment', 'ratelimit'));
    expect(rl.args).toContain('--redis=redis.legate-obs.svc.cluster.local:6379');
    // a Redis of one's own wins over the chart's
    const own = renderChart('legate-obs', [...OBS_ON, '--set', 'ratelimit.redis=cache:6379']).objects;
    expect(container(find(own, 'Deployment', 'ratelimit')).args).toContain('--redis=cache:6379');
    expect(container(find(own, 'Deployment', 'ratelimit')).args).not.toContain('--redis=redis.legate-obs.svc.cluster.local:6379');
  });

  it("puts every component's /metrics behind the scrape annotations Prometheus keeps", () => {
    const { objects } = renderChart('legate-obs', OBS_ON);
    const annotations = (d: KubeObject): Record<string, string> =>
      (d.spec as { template: { metadata: { annotations?: Record<string, string> } } }).template.metadata.annotations ?? {};
    for (const [name, port] of [
      ['controller', DEFAULTS.stats.controller],
      ['extauth', DEFAULTS.stats.extauth],
      ['graphql', DEFAULTS.stats.graphql],
      ['ratelimit', DEFAULTS.stats.ratelimit],
      ['gateway-proxy', 8081],
    ] as const) {
      const d = find(objects, 'Deployment', name);
      expect(annotations(d), name).toMatchObject({
        'prometheus.io/scrape': 'true',
        'prometheus.io/port': String(port),
        'prometheus.io/path': '/metrics',
      });
      const c = name === 'gateway-proxy' ? container(d, 'envoy') : container(d);
      expect(c.ports?.find((p) => p.name === 'http-monitoring')?.containerPort, name).toBe(port);
      if (name !== 'gateway-proxy' && name !== 'controller') {
        expect(env(c, 'START_STATS_SERVER'), name).toBe('true');
        expect(c.args, name).toEqual(expect.arrayContaining([`--stats-port=${port}`, '--admin-host=$(POD_IP)']));
      }
    }
    // off: no annotations, no port
    const off = renderChart('legate-system').objects;
    expect(annotations(find(off, 'Deployment', 'extauth'))).toEqual({});
  });

  it('refuses bad values of the new parts, naming them', () => {
    for (const [set, field] of [
      ['prometheus.scrapeInterval=often', /scrapeInterval/],
      ['redis.logLevel=loud', /logLevel/],
      ['observability.grafana.url=grafana', /url/],
      ['console.port=80', /port/],
    ] as const) {
      const r = helm(['template', 'legate', CHART, '--set', set], { check: false });
      expect(r.status, set).not.toBe(0);
      expect(r.stderr, set).toMatch(field);
    }
  });

  it('applies to the API server with server-side apply, every object accepted', () => {
    applyRendered(renderChart('legate-obs', OBS_ON, { includeCrds: true }).objects, 'legate-obs');
  });
});
