// The Helm chart's generated files are what the code generates now (install/helm/generate.ts:
// `legate crds`, `legate crds --gloo-groups`, `legate bootstrap`), and its versions are the
// package's and Envoy's. Fix a failure with: node --import tsx install/helm/generate.ts
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { customResourceDefinitions } from '../../controller/api/crds.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_CONCURRENT_STREAMS } from '../../extensions/common/h2/limits.js';
import { BOOTSTRAP_PLACEHOLDERS, CHART_DIR, ROOT, findHelm, generatedChartFiles } from '../../install/helm/generate.js';

const read = (file: string): string => fs.readFileSync(file, 'utf8');
const names = (text: string): string[] =>
  parseAllDocuments(text)
    .map((d) => (d.toJS() as { metadata?: { name?: string } } | null)?.metadata?.name)
    .filter((n): n is string => n !== undefined)
    .sort();

describe('Helm chart files', () => {
  for (const [rel, text] of generatedChartFiles()) {
    it(`${rel} is current`, () => {
      const file = path.join(CHART_DIR, rel);
      expect(fs.existsSync(file), `${rel} is missing: node --import tsx install/helm/generate.ts`).toBe(true);
      // a plain equality: a stale file shows as a diff
      expect(read(file), `${rel} is stale: node --import tsx install/helm/generate.ts`).toBe(text);
    });
  }

  it("values.yaml's extension server limits are the built-in defaults, each in the values schema", () => {
    const values = parse(read(path.join(CHART_DIR, 'values.yaml'))) as {
      extensionServer: { maxConcurrentStreams: number; http2Limits: Record<string, number> };
    };
    expect(values.extensionServer.http2Limits).toEqual(DEFAULT_LIMITS);
    expect(values.extensionServer.maxConcurrentStreams).toBe(DEFAULT_MAX_CONCURRENT_STREAMS);
    const schema = JSON.parse(read(path.join(CHART_DIR, 'values.schema.json'))) as {
      properties: { extensionServer: { properties: { http2Limits: { properties: Record<string, unknown> } } } };
    };
    expect(Object.keys(schema.properties.extensionServer.properties.http2Limits.properties).sort()).toEqual(
      Object.keys(DEFAULT_LIMITS).sort(),
    );
  });

  it('the CRDs in crds/ and files/ are exactly those of legate crds --gloo-groups', () => {
    const chart = [
      ...names(read(path.join(CHART_DIR, 'crds/legate.yaml'))),
      ...names(read(path.join(CHART_DIR, 'files/crds-gloo-groups.yaml'))),
    ];
    const all = customResourceDefinitions({ glooGroups: true }).map((d) => (d as { metadata: { name: string } }).metadata.name);
    expect(chart.sort()).toEqual(all.sort());
    expect(names(read(path.join(CHART_DIR, 'crds/legate.yaml')))).toContain('settings.legate.dev');
    expect(names(read(path.join(CHART_DIR, 'files/crds-gloo-groups.yaml')))).toContain('virtualservices.gateway.solo.io');
  });

  it('the bootstrap carries each placeholder the chart replaces, and the readiness listener', () => {
    const text = read(path.join(CHART_DIR, 'files/envoy-bootstrap.yaml'));
    for (const p of Object.values(BOOTSTRAP_PLACEHOLDERS)) expect(text).toContain(p);
    const template = read(path.join(CHART_DIR, 'templates/gateway-proxy.yaml'));
    for (const p of Object.values(BOOTSTRAP_PLACEHOLDERS)) expect(template).toContain(`replace "${p}"`);
    const config = parse(text) as { static_resources: { listeners: { address: { socket_address: { port_value: number } } }[] } };
    expect(config.static_resources.listeners.map((l) => l.address.socket_address.port_value)).toEqual([19001]);
  });

  it("the chart's version and appVersion are the package's, the proxy image is the pinned Envoy", () => {
    const pkg = JSON.parse(read(path.join(ROOT, 'package.json'))) as { version: string };
    const chart = parse(read(path.join(CHART_DIR, 'Chart.yaml'))) as { version: string; appVersion: string };
    expect({ version: chart.version, appVersion: chart.appVersion }).toEqual({ version: pkg.version, appVersion: pkg.version });
    const values = parse(read(path.join(CHART_DIR, 'values.yaml'))) as {
      gatewayProxies: { gatewayProxy: { image: { repository: string; tag: string } } };
    };
    const envoy = read(path.join(ROOT, 'envoy/VERSION')).trim();
    expect(values.gatewayProxies.gatewayProxy.image).toEqual({
      repository: 'envoyproxy/envoy',
      tag: `v${envoy}`,
      pullPolicy: 'IfNotPresent',
    });
  });

  // helm from `make kube-tools` (or PATH); the generated-file checks above need none
  const helm = findHelm();
  it.skipIf(!helm)('the gateway-proxy serves /metrics on :8081 with the prometheus.io annotations, unless stats.enabled is false', () => {
    type Pod = {
      metadata: { annotations: Record<string, string> };
      spec: { containers: { ports: { name: string; containerPort: number }[] }[] };
    };
    type Doc = { kind: string; metadata: { name: string }; spec?: { template: Pod }; data?: Record<string, string> };
    const render = (...set: string[]): Doc[] => {
      const r = spawnSync(helm!, ['template', 'legate', CHART_DIR, '--namespace', 'legate-system', ...set.flatMap((v) => ['--set', v])], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).toBe('');
      return parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as Doc)
        .filter((d) => d !== null);
    };
    const proxy = (docs: Doc[]) => {
      const pod = docs.find((d) => d.kind === 'Deployment' && d.metadata.name === 'gateway-proxy')!.spec!.template;
      const bootstrap = docs.find((d) => d.kind === 'ConfigMap' && d.metadata.name === 'gateway-proxy-envoy-config')!.data!['envoy.yaml']!;
      return { pod, bootstrap };
    };
    const on = proxy(render());
    expect(on.pod.metadata.annotations).toMatchObject({
      'prometheus.io/scrape': 'true',
      'prometheus.io/port': '8081',
      'prometheus.io/path': '/metrics',
    });
    expect(on.pod.spec.containers[0]!.ports).toContainEqual(expect.objectContaining({ name: 'http-monitoring', containerPort: 8081 }));
    const config = parse(on.bootstrap) as { static_resources: { listeners: { address: { socket_address: { port_value: number } } }[] } };
    expect(config.static_resources.listeners.map((l) => l.address.socket_address.port_value)).toEqual([19001, 8081]);
    // Envoy accepts the bootstrap the chart renders
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-chart-bs-'));
    const file = path.join(dir, 'envoy.yaml');
    fs.writeFileSync(file, on.bootstrap.replaceAll('controller.legate-system.svc.cluster.local', '127.0.0.1'));
    const envoy = spawnSync(
      path.join(ROOT, '.venv/bin/envoy'),
      ['--mode', 'validate', '-c', file, '--disable-hot-restart', '-l', 'error'],
      {
        encoding: 'utf8',
        timeout: 30_000,
      },
    );
    fs.rmSync(dir, { recursive: true, force: true });
    expect(envoy.status, envoy.stderr).toBe(0);

    const moved = proxy(render('gatewayProxies.gatewayProxy.stats.port=9102'));
    expect(moved.pod.metadata.annotations['prometheus.io/port']).toBe('9102');
    const off = proxy(render('gatewayProxies.gatewayProxy.stats.enabled=false'));
    expect(Object.keys(off.pod.metadata.annotations).filter((k) => k.startsWith('prometheus.io/'))).toEqual([]);
    expect(off.bootstrap).not.toContain('legate-stats');
  });

  it.skipIf(!helm)('extensionServer.tls mounts the Secret into the extensions and the proxies, and tells each side its files', () => {
    type Container = { args?: string[]; volumeMounts?: { name: string; mountPath: string }[] };
    type Pod = { spec: { containers: Container[]; volumes?: { name: string; secret?: { secretName: string } }[] } };
    type Doc = { kind: string; metadata: { name: string }; spec?: { template: Pod } };
    const render = (...set: string[]): Doc[] => {
      const r = spawnSync(helm!, ['template', 'legate', CHART_DIR, '--namespace', 'legate-system', ...set.flatMap((v) => ['--set', v])], {
        encoding: 'utf8',
        timeout: 60_000,
      });
      expect(r.stderr).toBe('');
      return parseAllDocuments(r.stdout)
        .map((d) => d.toJS() as Doc)
        .filter((d) => d !== null);
    };
    const pod = (docs: Doc[], name: string): Pod => docs.find((d) => d.kind === 'Deployment' && d.metadata.name === name)!.spec!.template;
    const secretOf = (p: Pod): string | undefined => p.spec.volumes?.find((v) => v.name === 'extensions-tls')?.secret?.secretName;
    const mounted = (p: Pod): boolean =>
      p.spec.containers[0]!.volumeMounts?.some((m) => m.name === 'extensions-tls' && m.mountPath === '/etc/legate/extensions-tls') ?? false;
    const dir = '/etc/legate/extensions-tls';

    const off = render();
    for (const name of ['extauth', 'graphql', 'ratelimit', 'gateway-proxy']) {
      expect(secretOf(pod(off, name)), name).toBeUndefined();
      expect(pod(off, name).spec.containers[0]!.args?.some((a) => a.startsWith('--tls-')) ?? false).toBe(false);
    }
    expect(pod(off, 'controller').spec.containers[0]!.args).not.toContain(`--extensions-tls=${dir}`);

    const on = render('extensionServer.tls.enabled=true');
    for (const name of ['extauth', 'graphql', 'ratelimit']) {
      expect(secretOf(pod(on, name)), name).toBe('legate-extensions-tls');
      expect(mounted(pod(on, name)), name).toBe(true);
      expect(pod(on, name).spec.containers[0]!.args).toEqual(
        expect.arrayContaining([`--tls-cert=${dir}/tls.crt`, `--tls-key=${dir}/tls.key`, `--tls-client-ca=${dir}/ca.crt`]),
      );
    }
    expect(secretOf(pod(on, 'gateway-proxy'))).toBe('legate-extensions-tls');
    expect(mounted(pod(on, 'gateway-proxy'))).toBe(true);
    expect(pod(on, 'controller').spec.containers[0]!.args).toContain(`--extensions-tls=${dir}`);

    // Envoy's own certificate from another Secret
    const split = render(
      'extensionServer.tls.enabled=true',
      'extensionServer.tls.secretName=ext-server',
      'extensionServer.tls.clientSecretName=envoy-client',
    );
    expect(secretOf(pod(split, 'extauth'))).toBe('ext-server');
    expect(secretOf(pod(split, 'gateway-proxy'))).toBe('envoy-client');
  });
});
