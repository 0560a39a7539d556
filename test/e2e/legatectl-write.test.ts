// legatectl's writing commands in file mode (glooctl's create, add route, remove route, edit, delete),
// and get -A / -o wide / -o kube-yaml, against a real controller watching the directory they write.
// The controller runs alone (the commands need no proxy); a run.json like the one `legate run` writes
// points legatectl at it and at the watched directory, as it would find a running instance.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/gateway.js';
import { eventually, freePort, stopProcess } from '../support/util.js';

const LEGATE = path.join(ROOT, 'bin', 'legate.js');
const LEGATECTL = path.join(ROOT, 'bin', 'legatectl.js');
const NS = 'legate-system';

let tmp: string;
let config: string;
let stateDir: string;
let controller: ChildProcess;
let api: string;

function ctl(args: string[], env: Record<string, string> = {}): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, [LEGATECTL, ...args], {
    cwd: tmp,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, LEGATE_STATE_DIR: stateDir, LEGATE_CONTROLLER: '', LEGATE_BACKEND: '', KUBECONFIG: '', ...env },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
}

/** The STATUS column of `get KIND NAME`, once the controller has read the files. */
function state(kind: string, name: string): string | undefined {
  const r = ctl(['get', kind, name, '-o', 'json']);
  if (r.status !== 0) return undefined;
  const st = Object.values((JSON.parse(r.stdout) as { status: { statuses: Record<string, { state: string }> } }).status.statuses)[0];
  return st?.state;
}
const accepted = (kind: string, name: string) =>
  eventually(`${kind} ${name} Accepted`, () => (state(kind, name) === 'Accepted' ? true : undefined), 30_000);

const HAND_WRITTEN = `# the shop's routes: keep this comment
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: docs # inline comment
  namespace: default
spec:
  virtualHost:
    domains: [docs.example.com]
    routes:
      # the catch-all
      - matchers: [{ prefix: / }]
        directResponseAction: { status: 200, body: docs }
---
# a second document in the same file
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: other, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: 9 }] }
`;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legatectl-write-'));
  config = path.join(tmp, 'config');
  stateDir = path.join(tmp, '.legate');
  fs.mkdirSync(config);
  fs.mkdirSync(stateDir);
  fs.writeFileSync(path.join(config, 'hand.yaml'), HAND_WRITTEN);
  const [apiPort, xdsPort] = [await freePort(), await freePort()];
  api = `http://127.0.0.1:${apiPort}`;
  const log = fs.openSync(path.join(tmp, 'controller.log'), 'a');
  controller = spawn(
    process.execPath,
    [LEGATE, 'controller', '--config', config, '--api-port', String(apiPort), '--xds-port', String(xdsPort)],
    {
      stdio: ['ignore', log, log],
    },
  );
  fs.writeFileSync(
    path.join(stateDir, 'run.json'),
    JSON.stringify({
      version: 'test',
      pid: process.pid,
      startedAt: new Date().toISOString(),
      configDir: config,
      logDir: tmp,
      writeNamespace: NS,
      proxyRole: `${NS}~gateway-proxy`,
      components: { controller: { pid: controller.pid, log: path.join(tmp, 'controller.log'), endpoints: { api } } },
    }),
  );
  await accepted('vs', 'docs');
}, 120_000);

afterAll(async () => {
  if (controller) await stopProcess(controller);
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('legatectl create (file mode)', () => {
  it('writes one resource per file, <kind>-<ns>-<name>.yaml, in the watched directory, and the controller accepts it', async () => {
    const us = ctl(['create', 'upstream', 'static', 'app', '--static-hosts', '127.0.0.1:9001']);
    expect(us.stderr).toContain(`created upstream ${NS}.app (${path.join(config, `upstream-${NS}-app.yaml`)})`);
    expect(us.status).toBe(0);
    const vs = ctl(['create', 'vs', '--name', 'shop', '--domains', 'shop.example.com', '-o', 'yaml']);
    expect(vs.status).toBe(0);
    expect(vs.stdout).toContain('kind: VirtualService');
    expect(fs.readFileSync(path.join(config, `virtualservice-${NS}-shop.yaml`), 'utf8')).toContain('- shop.example.com');
    // a Service the kube Upstream names (the controller rejects one for a missing Service: nothing is written then)
    const kubeArgs = ['create', 'upstream', 'kube', 'pets', '--kube-service', 'pets', '--kube-service-port', '8080', '-n', 'default'];
    expect(ctl(kubeArgs).stderr).toContain(
      'Upstream default.pets would be Rejected: kube: Service default.pets not found; nothing written',
    );
    fs.writeFileSync(
      path.join(config, 'svc.yaml'),
      'apiVersion: v1\nkind: Service\nmetadata: { name: pets, namespace: default }\nspec: { ports: [{ name: http, port: 8080 }] }\n',
    );
    const kube = ctl(kubeArgs);
    expect(kube.status).toBe(0);
    expect(fs.readFileSync(path.join(config, 'upstream-default-pets.yaml'), 'utf8')).toContain('serviceName: pets');
    await accepted('us', 'app');
    await accepted('vs', 'shop');
    // again: refused, nothing overwritten
    const again = ctl(['create', 'vs', 'shop']);
    expect(again.status).toBe(1);
    expect(again.stderr).toContain(`VirtualService ${NS}.shop already exists`);
  });

  it('creates TLS, OAuth and API key Secrets and an AuthConfig that selects the keys', async () => {
    const fixtures = path.join(ROOT, 'test', 'e2e', 'fixtures');
    const tls = ctl([
      ...['create', 'secret', 'tls', 'shop-tls'],
      ...['--certchain', path.join(fixtures, 'secure.example.com.crt'), '--privatekey', path.join(fixtures, 'secure.example.com.key')],
    ]);
    expect(tls.status).toBe(0);
    expect(fs.readFileSync(path.join(config, `secret-${NS}-shop-tls.yaml`), 'utf8')).toMatch(/type: kubernetes.io\/tls[\s\S]*tls.crt: /);
    expect(ctl(['create', 'secret', 'oauth', 'idp', '--client-secret', 's3cret']).status).toBe(0);
    const key = ctl(['create', 'secret', 'apikey', 'alice', '--apikey', 'k-123', '--apikey-labels', 'team=shop']);
    expect(key.status).toBe(0);
    const text = fs.readFileSync(path.join(config, `secret-${NS}-alice.yaml`), 'utf8');
    expect(text).toContain(`api-key: ${Buffer.from('k-123').toString('base64')}`);
    expect(text).toMatch(/labels:\n\s+team: shop/);
    expect(ctl(['create', 'authconfig', 'keys', '--apikey-label-selector', 'team=shop']).status).toBe(0);
    await accepted('ac', 'keys');
    expect(ctl(['get', 'secrets', 'alice']).stdout).toMatch(/alice\s+\S+\s+type=extauth.solo.io\/apikey keys=api-key/);
  });

  it("creates an OIDC AuthConfig and an OPA one with glooctl's flags, in files the controller accepts", async () => {
    // Gloo's OIDC guide, with the oauth Secret the previous test made
    const oidc = ctl([
      ...['create', 'authconfig', 'google', '--enable-oidc-auth', '--oidc-auth-client-secret-name', 'idp'],
      ...['--oidc-auth-client-secret-namespace', NS, '--oidc-auth-issuer-url', 'https://accounts.google.com'],
      ...['--oidc-auth-client-id', 'my-client', '--oidc-auth-app-url', 'http://localhost:8080/', '--oidc-auth-callback-path', '/callback'],
      ...['--oidc-scope', 'email', '-o', 'yaml'],
    ]);
    expect(oidc.stderr).toContain(`created authconfig ${NS}.google (${path.join(config, `authconfig-${NS}-google.yaml`)})`);
    expect(oidc.status).toBe(0);
    expect(oidc.stdout).toMatch(/oidcAuthorizationCode:\n\s+appUrl: http:\/\/localhost:8080\/\n\s+callbackPath: \/callback\n/);
    await accepted('ac', 'google');
    // OPA: a module ConfigMap that is not there yet is the controller's reason, and nothing is written
    const opaArgs = ['create', 'ac', 'allow-get', '--enable-opa-auth', '--opa-query', 'data.test.allow == true'];
    const missing = ctl([...opaArgs, '--opa-module-ref', `${NS}.allow-get-users`]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain(`AuthConfig ${NS}.allow-get would be Rejected: configs[0].opaAuth.modules[0]: ConfigMap`);
    expect(fs.existsSync(path.join(config, `authconfig-${NS}-allow-get.yaml`))).toBe(false);
    fs.writeFileSync(
      path.join(config, 'rego.yaml'),
      `apiVersion: v1\nkind: ConfigMap\nmetadata: { name: allow-get-users, namespace: ${NS} }\n` +
        'data:\n  policy.rego: |\n    package test\n    default allow = false\n    allow { input.http_request.method == "GET" }\n',
    );
    expect(ctl([...opaArgs, '--opa-module-ref', `${NS}.allow-get-users`]).status).toBe(0);
    expect(fs.readFileSync(path.join(config, `authconfig-${NS}-allow-get.yaml`), 'utf8')).toContain(
      `opaAuth:\n        modules:\n          - namespace: ${NS}\n            name: allow-get-users\n`,
    );
    await accepted('ac', 'allow-get');
  });
});

describe('legatectl add route / remove route (file mode)', () => {
  it('inserts a route at --index and the controller serves the VirtualService with it', async () => {
    const r = ctl(['add', 'route', '--name', 'shop', '--path-prefix', '/api', '--dest-name', 'app', '--prefix-rewrite', '/']);
    expect(r.stderr).toContain(`added route 0 to virtualservice ${NS}.shop`);
    expect(r.status).toBe(0);
    expect(ctl(['add', 'route', '--name', 'shop', '-e', '/health', '-u', 'app', '-x', '1']).status).toBe(0);
    const wide = await eventually('both routes', () => {
      const x = ctl(['get', 'vs', 'shop', '-o', 'wide']).stdout;
      return x.includes('routes=2') ? x : undefined;
    });
    expect(wide).toMatch(/APIVERSION/);
    expect(wide).toContain(`routes=2 /api->${NS}.app /health->${NS}.app`);
    await accepted('vs', 'shop');
    const bad = ctl(['add', 'route', '--name', 'shop', '-p', '/x', '-u', 'app', '-x', '7']);
    expect(bad.status).toBe(2);
    expect(bad.stderr).toContain('--index 7: the VirtualService has 2 routes');
  });

  it("keeps the file's comments and its other documents", () => {
    expect(ctl(['add', 'route', '--name', 'docs', '-n', 'default', '-p', '/v2', '-u', 'app', '-s', NS]).status).toBe(0);
    let text = fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8');
    for (const c of [
      "# the shop's routes: keep this comment",
      '# inline comment',
      '# the catch-all',
      '# a second document in the same file',
    ]) {
      expect(text).toContain(c);
    }
    expect(text).toContain('kind: Upstream');
    expect(text.indexOf('/v2')).toBeLessThan(text.indexOf('# the catch-all'));
    const removed = ctl(['remove', 'route', '--name', 'docs', '--index', '0']);
    expect(removed.stderr).toContain('removed route 0 from virtualservice default.docs');
    text = fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8');
    expect(text).not.toContain('/v2');
    expect(text).toContain('# the catch-all');
  });

  it('creates the VirtualService when it does not exist, for domain *', async () => {
    const r = ctl(['add', 'route', '--name', 'catchall', '-p', '/', '-u', 'app']);
    expect(r.stderr).toContain(`created virtualservice ${NS}.catchall with the route`);
    await accepted('vs', 'catchall');
  });
});

describe('legatectl edit (file mode)', () => {
  it("opens the resource in $EDITOR, validates and writes it, with the file's comments", async () => {
    const r = ctl(['edit', 'vs', 'docs'], { EDITOR: 'sed -i s/docs.example.com/docs2.example.com/' });
    expect(r.stderr).toContain('edited virtualservice default.docs');
    expect(r.status).toBe(0);
    const text = fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8');
    expect(text).toContain('docs2.example.com');
    expect(text).toContain("# the shop's routes: keep this comment");
    expect(text).toContain('# a second document in the same file');
    await eventually('the new domain', () => (ctl(['get', 'vs', 'docs']).stdout.includes('docs2.example.com') ? true : undefined));
  });

  it('writes nothing when the edit would be Rejected or changes nothing, and keeps the edited copy', () => {
    const before = fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8');
    const bad = ctl(['edit', 'vs', 'docs', '-n', 'default'], { EDITOR: 'sed -i s/directResponseAction/directResponseActon/' });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(
      /VirtualService default.docs would be Rejected: .*directResponseActon: unknown field; did you mean directResponseAction\?/,
    );
    const kept = /your edit is kept in (\S+)\)/.exec(bad.stderr)?.[1];
    expect(kept && fs.readFileSync(kept, 'utf8')).toContain('directResponseActon');
    if (kept) fs.rmSync(kept);
    expect(fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8')).toBe(before);
    const none = ctl(['edit', 'vs', 'docs'], { EDITOR: 'true' });
    expect(none).toMatchObject({ status: 0, stderr: 'Edit cancelled, no changes made.\n' });
  });
});

describe('legatectl get (file mode)', () => {
  it('-A lists every namespace, -o kube-yaml prints what one applies, gql has details', async () => {
    fs.writeFileSync(
      path.join(config, 'gql.yaml'),
      `apiVersion: graphql.gloo.solo.io/v1beta1
kind: GraphQLApi
metadata: { name: hello, namespace: ${NS} }
spec:
  executableSchema:
    schemaDefinition: 'type Query { hello: String @resolve(name: "hi") }'
    executor: { local: { resolutions: { hi: { mockResolver: { syncResponse: hi } } } } }
`,
    );
    const gql = await eventually('the GraphQLApi', () => {
      const x = ctl(['get', 'gql']).stdout;
      return x.includes('hello') ? x : undefined;
    });
    expect(gql).toMatch(/legate-system\s+hello\s+\S+\s+local resolvers=1/);
    const all = ctl(['get', 'vs', '-A']).stdout;
    expect(all).toMatch(/default\s+docs/);
    expect(all).toMatch(/legate-system\s+shop/);
    expect(ctl(['get', 'vs', '-A', '-n', 'default']).status).toBe(2);
    const kube = ctl(['get', 'vs', 'shop', '-o', 'kube-yaml']).stdout;
    expect(kube).toMatch(/^apiVersion: gateway.legate.dev\/v1\nkind: VirtualService\nmetadata:\n {2}name: shop\n/);
    expect(kube).not.toContain('status:');
  });
});

describe('legatectl delete (file mode)', () => {
  it("removes a resource's file, or its document from a file that holds others", async () => {
    expect(ctl(['delete', 'vs', 'catchall']).stderr).toContain(`deleted virtualservice ${NS}.catchall`);
    expect(fs.existsSync(path.join(config, `virtualservice-${NS}-catchall.yaml`))).toBe(false);
    expect(ctl(['delete', 'virtualservice', 'docs', '-n', 'default']).status).toBe(0);
    const text = fs.readFileSync(path.join(config, 'hand.yaml'), 'utf8');
    expect(text).not.toContain('kind: VirtualService');
    expect(text).toContain('kind: Upstream');
    await eventually('docs gone', () => (ctl(['get', 'vs', 'docs']).status === 1 ? true : undefined));
    const missing = ctl(['delete', 'vs', 'nope']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('VirtualService nope not found');
  });
});

describe('legatectl dashboard and check-crds (file mode)', () => {
  it('say clearly that there is no console, and that a local run has no CRDs', () => {
    const d = ctl(['dashboard']);
    expect(d.status).toBe(1);
    expect(d.stderr).toContain('no console running');
    // a run that records a console: its address
    const runJson = path.join(stateDir, 'run.json');
    const run = JSON.parse(fs.readFileSync(runJson, 'utf8')) as { components: Record<string, unknown> };
    run.components['console'] = { log: path.join(tmp, 'console.log'), endpoints: { http: 'http://127.0.0.1:9096' } };
    fs.writeFileSync(runJson, JSON.stringify(run));
    expect(ctl(['dashboard'])).toMatchObject({ status: 0, stdout: 'http://127.0.0.1:9096\n' });
    const c = ctl(['check-crds']);
    expect(c.status).toBe(1);
    expect(c.stderr).toContain("check-crds compares a cluster's CRDs");
  });
});
