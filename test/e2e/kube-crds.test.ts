// Legate's CRDs on a real kube-apiserver (test/support/kube.ts): `legate crds --gloo-groups`
// applies with every object accepted and established; an unchanged Gloo Edge manifest applies;
// the schemas keep unknown fields (the controller and webhook report them) and refuse wrong types; the status
// subresource and the State column work.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/gateway.js';
import { startKubeApiServer, type KubeApiServer } from '../support/kube.js';

let kube: KubeApiServer;

beforeAll(async () => {
  kube = await startKubeApiServer();
}, 180_000);

afterAll(async () => {
  await kube?.stop();
});

function legate(...args: string[]): string {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', 'legate.js'), ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`legate ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

describe('CRDs on a real API server', () => {
  it('applies every CRD, Legate and Gloo groups, and each becomes Established', () => {
    const crds = legate('crds', '--gloo-groups');
    const applied = kube.kubectl(['apply', '--server-side', '-f', '-'], { input: crds });
    const count = (crds.match(/^kind: CustomResourceDefinition$/gm) ?? []).length;
    expect(applied.stdout.trim().split('\n')).toHaveLength(count);
    kube.kubectl(['wait', '--for', 'condition=Established', '--timeout', '60s', 'crd', '-l', 'app.kubernetes.io/part-of=legate']);
    const names = kube.kubectl(['get', 'crd', '-o', 'name']).stdout;
    for (const n of ['virtualservices.gateway.legate.dev', 'virtualservices.gateway.solo.io', 'authconfigs.enterprise.gloo.solo.io']) {
      expect(names).toContain(`customresourcedefinition.apiextensions.k8s.io/${n}`);
    }
  });

  it('takes an unchanged Gloo Edge manifest', () => {
    kube.kubectl(['create', 'namespace', 'gloo-system']);
    const manifest = fs.readFileSync(path.join(ROOT, 'test/golden/translate/gloo-manifest.in.yaml'), 'utf8');
    kube.kubectl(['apply', '--server-side', '-f', '-'], { input: manifest });
    const vs = JSON.parse(kube.kubectl(['get', 'virtualservices.gateway.solo.io', 'default', '-n', 'gloo-system', '-o', 'json']).stdout);
    expect(vs.spec.virtualHost.routes[0].options.prefixRewrite).toBe('/posts');
  });

  it("takes the Settings Gloo's own chart writes, unchanged (strict field validation)", () => {
    const golden = fs.readFileSync(path.join(ROOT, 'test/golden/translate/settings-gloo-chart.in.yaml'), 'utf8');
    const settings = golden.split(/^---$/m).find((d) => /^kind: Settings$/m.test(d));
    expect(settings).toBeDefined();
    kube.kubectl(['apply', '--server-side', '--validate=strict', '-f', '-'], { input: settings });
    const got = JSON.parse(kube.kubectl(['get', 'settings.gloo.solo.io', 'default', '-n', 'gloo-system', '-o', 'json']).stdout);
    expect(got.spec.kubernetesArtifactSource).toEqual({});
    expect(got.spec.gateway.validation.alwaysAccept).toBe(true);
    expect(got.spec.refreshRate).toBe('60s');
  });

  it('keeps an unknown field (never pruned unseen: the controller and webhook report it) and refuses a wrong type', () => {
    const vs = (spec: string): string => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: typo, namespace: default }
spec: ${spec}
`;
    const unknown = kube.kubectl(['apply', '-f', '-'], { input: vs('{ virtualHost: { domainz: [a.example.com] } }'), check: false });
    expect(unknown.status).toBe(0);
    const stored = kube.kubectl(['get', 'virtualservices.gateway.legate.dev', 'typo', '-n', 'default', '-o', 'json']).stdout;
    expect(JSON.parse(stored).spec.virtualHost).toEqual({ domainz: ['a.example.com'] });
    kube.kubectl(['delete', 'virtualservices.gateway.legate.dev', 'typo', '-n', 'default']);
    const wrongType = kube.kubectl(['apply', '-f', '-'], { input: vs('{ virtualHost: { domains: a.example.com } }'), check: false });
    expect(wrongType.status).not.toBe(0);
    expect(wrongType.stderr).toMatch(/spec.virtualHost.domains.*(array|list)/i);
  });

  it('has the status subresource, the short name and a State column', () => {
    kube.kubectl(['apply', '-f', '-'], {
      input: `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec: { virtualHost: { domains: [shop.example.com], routes: [{ directResponseAction: { status: 200 } }] } }
`,
    });
    const status = { state: 'Accepted', statuses: { 'legate-system': { state: 'Accepted', reportedBy: 'legate' } } };
    const legateVs = 'virtualservices.gateway.legate.dev';
    kube.kubectl(['patch', legateVs, 'shop', '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status })]);
    const table = kube.kubectl(['get', legateVs, 'shop']).stdout;
    expect(table).toMatch(/^NAME\s+STATE\s+AGE/m);
    expect(table).toMatch(/^shop\s+Accepted\s+/m);
  });

  it("with Gloo's groups installed, Gloo's short names list Gloo's resources, as Gloo's docs type them", () => {
    // the Gloo manifest applied above has a VirtualService `default` in gloo-system
    expect(kube.kubectl(['get', 'vs', '-n', 'gloo-system', '-o', 'name']).stdout).toMatch(/virtualservice.gateway.solo.io\/default/);
    expect(kube.kubectl(['get', 'us', '-n', 'gloo-system', '-o', 'name']).stdout).toMatch(/upstream.gloo.solo.io\//);
    expect(kube.kubectl(['get', 'gloo', '-n', 'gloo-system', '-o', 'name']).stdout).toMatch(/virtualservice.gateway.solo.io\/default/);
  });
});
