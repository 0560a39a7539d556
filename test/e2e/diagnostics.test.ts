// Diagnostics end to end: every legatectl command and every admin interface against a live
// `legate run` with START_STATS_SERVER set.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';

const LEGATECTL = path.join(ROOT, 'bin', 'legatectl.js');
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

let gw: Gateway;
let app: EchoUpstream;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-diag-'));

const good = (port: number) => `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: app, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes: [{ routeAction: { single: { upstream: { name: app, namespace: legate-system } } } }]
`;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'app.yaml': good(app.port) }, { env: { START_STATS_SERVER: 'true' } });
  await gw.until('/x', (r) => r.status === 200);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const json = async (url: string, init?: RequestInit) => {
  const res = await fetch(url, init);
  return { status: res.status, body: (await res.json()) as { status: string; data?: unknown; error?: string } };
};

describe('legatectl check', () => {
  it('passes on a healthy gateway, kind by kind, in order', async () => {
    const r = await eventually('a clean check', () => {
      const x = gw.ctl('check');
      return x.status === 0 ? x : undefined;
    });
    const lines = r.stdout.trim().split('\n');
    expect(lines.slice(0, 12)).toEqual(
      [
        'Deployments',
        'Pods',
        'Upstreams',
        'UpstreamGroups',
        'AuthConfigs',
        'RateLimitConfigs',
        'VirtualHostOptions',
        'RouteOptions',
        'Secrets',
        'VirtualServices',
        'Gateways',
        'Proxies',
      ].map((k) => `Checking ${k}... OK`),
    );
    expect(lines.at(-1)).toBe('No problems detected.');
  });

  it('names a virtual service with warnings and exits non-zero; -x and -o json work', async () => {
    gw.write(
      'bad.yaml',
      `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: my-vs, namespace: default }
spec:
  virtualHost:
    domains: [bad.example.com]
    routes: [{ routeAction: { single: { upstream: { name: missing, namespace: legate-system } } } }]
`,
    );
    const r = await eventually('the warning to show', () => {
      const x = gw.ctl('check');
      return x.status !== 0 ? x : undefined;
    });
    expect(r.stdout).toContain('Checking VirtualServices... 1 Errors!');
    expect(r.stdout).toContain(
      "Found virtual service with warnings by 'legate-system': default my-vs (Reason: virtualHost.routes[0].routeAction.single: Upstream " +
        'legate-system.missing not found)',
    );
    expect(r.stdout).not.toContain('No problems detected.');
    expect(gw.ctl('check', '-x', 'virtual-services').status).toBe(0);
    const j = gw.ctl('check', '-o', 'json');
    expect(j.status).toBe(1);
    const report = JSON.parse(j.stdout);
    expect(report.resources).toContainEqual({ name: 'VirtualServices', status: '1 Errors!' });
    expect(report.errors[0]).toContain('my-vs');
    gw.remove('bad.yaml');
    await eventually('a clean check again', () => (gw.ctl('check').status === 0 ? true : undefined));
  });

  it('reports a broken config file', async () => {
    gw.write('broken.yaml', 'kind: [unclosed\n');
    const r = await eventually('the file problem', () => {
      const x = gw.ctl('check');
      return x.stdout.includes('config files... 1 Errors!') ? x : undefined;
    });
    expect(r.stdout).toContain('broken.yaml');
    gw.remove('broken.yaml');
    await eventually('a clean check again', () => (gw.ctl('check').status === 0 ? true : undefined));
  });

  it('covers every kind Legate reads: a rejected GraphQLApi and Settings, and a document of a misspelt kind', async () => {
    gw.write(
      'more-bad.yaml',
      `
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: broken-api, namespace: default }
spec: { executableSchema: { schemaDefinition: 'type Query {', executor: { local: { resolutions: {} } } } }
---
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: extra, namespace: legate-system }
spec: { refreshRate: 12 }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualServce
metadata: { name: typo, namespace: default }
spec: {}
`,
    );
    const r = await eventually('the problems to show', () => {
      const x = gw.ctl('check');
      return x.stdout.includes('Checking GraphQLApis... 1 Errors!') && x.stdout.includes('Checking Settings... 1 Errors!') ? x : undefined;
    });
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('Checking RouteTables... OK');
    expect(r.stdout).toMatch(/Found rejected GraphQL API by 'legate-system': default broken-api/);
    expect(r.stdout).toMatch(/config files\.\.\. 1 Errors!/);
    expect(r.stdout).toContain('Found a problem in the config files: VirtualServce default.typo: unknown kind "VirtualServce"');
    // the file it is in, and the kind meant
    expect(r.stdout).toMatch(/unknown kind "VirtualServce" \(in more-bad\.yaml#\d+\); did you mean VirtualService\?/);
    expect(r.stdout).not.toContain('No problems detected.');
    expect(gw.ctl('check', '-x', 'graphqlapis,settings,config-files').status).toBe(0);
    gw.remove('more-bad.yaml');
    await eventually('a clean check again', () => (gw.ctl('check').status === 0 ? true : undefined));
  });

  it('rejects unknown -x names (a usage error)', () => {
    const r = gw.ctl('check', '-x', 'nonsense');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('unknown check "nonsense"');
  });
});

describe('legatectl proxy', () => {
  it('prints the proxy URL', () => {
    expect(gw.ctl('proxy', 'url').stdout.trim()).toBe(`http://127.0.0.1:${gw.ports.http}`);
  });

  it('with a Gateway on another port: the URL follows it, and the VirtualService no Gateway selects says so in check', async () => {
    const port = await freePort();
    gw.write(
      'gateway.yaml',
      `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: team, namespace: default }
spec:
  bindPort: ${port}
  httpGateway:
    virtualServiceSelector: { team: none }
`,
    );
    try {
      const url = await eventually('the URL of the Gateway listener', () => {
        const r = gw.ctl('proxy', 'url');
        return r.stdout.trim() === `http://127.0.0.1:${port}` ? r : undefined;
      });
      expect(url.stderr).toContain('the default one is not served');
      const https = gw.ctl('proxy', 'url', '--port', 'https');
      expect(https.status).not.toBe(0);
      expect(https.stderr).toContain('serves no https listener');
      const vs = JSON.parse(gw.ctl('get', 'vs', 'app', '-n', 'default', '-o', 'json').stdout);
      expect(vs.status.statuses['legate-system']).toMatchObject({ state: 'Warning' });
      expect(vs.status.statuses['legate-system'].reason).toContain('not served: no Gateway selects it');
      const check = gw.ctl('check');
      expect(check.status).not.toBe(0);
      expect(check.stdout + check.stderr).toContain('not served: no Gateway selects it');
    } finally {
      gw.remove('gateway.yaml');
      await eventually('the default listener back', () =>
        gw.ctl('proxy', 'url').stdout.trim() === `http://127.0.0.1:${gw.ports.http}` ? true : undefined,
      );
    }
  });

  it('prints the served config in sections', () => {
    const out = gw.ctl('proxy', 'served-config').stdout;
    expect(out).toMatch(/^#role: legate-system~gateway-proxy\n#clusters\n/);
    for (const s of ['#eds', '#listeners', '#rds']) expect(out).toContain(s);
    expect(out).toContain('app_legate-system');
  });

  it('dumps Envoy config, with endpoints on request', () => {
    const plain = gw.ctl('proxy', 'dump').stdout;
    expect(JSON.parse(plain).configs.length).toBeGreaterThan(3);
    expect(plain).not.toContain('EndpointsConfigDump');
    expect(gw.ctl('proxy', 'dump', '--include-eds').stdout).toContain('EndpointsConfigDump');
  });

  it('writes all of a large output to a pipe (more than 64 KiB), which stays valid JSON', () => {
    // gw.ctl reads stdout through a pipe, as `legatectl proxy dump --include-eds | jq` does
    const r = gw.ctl('proxy', 'dump', '--include-eds');
    expect(r.status).toBe(0);
    expect(Buffer.byteLength(r.stdout)).toBeGreaterThan(65_536);
    expect(JSON.parse(r.stdout).configs.length).toBeGreaterThan(3);
  });

  it('ends quietly when the reader of `proxy logs -f` goes away (| head)', async () => {
    const child = spawn(process.execPath, [LEGATECTL, 'proxy', 'logs', '-f', '--debug=false', '--state-dir', gw.stateDir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
    child.stdout.destroy(); // what `head` does once it has its lines
    // the next line Envoy logs is written into the closed pipe
    fs.appendFileSync(path.join(gw.stateDir, 'logs', 'envoy.log'), 'one more line\n');
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(stderr).not.toContain('EPIPE');
    expect(code).toBe(0);
  });

  it('prints stats and checks -n/--name', () => {
    expect(gw.ctl('proxy', 'stats', '-n', 'legate-system', '--name', 'gateway-proxy').stdout).toContain('control_plane.connected_state: 1');
    const wrong = gw.ctl('proxy', 'stats', '--name', 'other-proxy');
    expect(wrong.status).toBe(1);
    expect(wrong.stderr).toContain('no gateway proxy');
  });

  it('proxy logs --debug=false leaves the level alone (glooctl spelling)', () => {
    const r = gw.ctl('proxy', 'logs', '--debug=false');
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('logging?level=info');
  });

  it('proxy logs sets the level to debug and says how to set it back', async () => {
    const r = gw.ctl('proxy', 'logs');
    expect(r.status).toBe(0);
    expect(r.stderr).toContain('logging?level=info');
    const levels = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/logging`, { method: 'POST' })).text();
    expect(levels).toMatch(/router: debug/);
    await fetch(`http://127.0.0.1:${gw.ports.admin}/logging?level=info`, { method: 'POST' });
  });
});

describe('legatectl debug and version', () => {
  it('writes all logs, or only errors, to a file', () => {
    const file = path.join(tmp, 'logs.txt');
    expect(gw.ctl('debug', 'logs', '-f', file).status).toBe(0);
    const text = fs.readFileSync(file, 'utf8');
    for (const c of ['controller', 'envoy', 'extauth', 'graphql']) expect(text).toContain(`--- ${c} (`);
    const errors = gw.ctl('debug', 'logs', '--errors-only').stdout;
    for (const line of errors.split('\n').filter((l) => l.startsWith('{'))) {
      const entry = JSON.parse(line);
      expect(entry.level === 'error' || entry.msg === 'resource rejected', line).toBe(true);
    }
  });

  it('writes every resource with its status as one YAML stream', () => {
    const file = path.join(tmp, 'all.yaml');
    expect(gw.ctl('debug', 'yaml', '-f', file).status).toBe(0);
    const text = fs.readFileSync(file, 'utf8');
    expect(text).toContain('kind: VirtualService');
    expect(text).toContain('kind: Proxy');
    expect(text).toContain('state: Accepted');
    expect(text.split('\n---\n').length).toBeGreaterThan(2);
  });

  it('prints client and server versions', () => {
    const r = gw.ctl('version');
    expect(r.stdout).toMatch(/^Client version: \S+\nServer version: \S+\n$/);
    expect(r.stderr).toBe('');
  });

  it('prints versions as yaml or json, and refuses another -o', () => {
    expect(gw.ctl('version', '-o', 'yaml').stdout).toMatch(/^client: \S+\nserver: \S+\n$/);
    expect(JSON.parse(gw.ctl('version', '-o', 'json').stdout)).toHaveProperty('client');
    const bogus = gw.ctl('version', '-o', 'bogus');
    expect(bogus.status).toBe(2);
    expect(bogus.stderr).toContain('-o: expected table, yaml or json, got "bogus"');
  });

  it('gives one clear line and a non-zero exit when the controller is unreachable', () => {
    const r = gw.ctl('check', '--controller', 'http://127.0.0.1:1');
    expect(r.status).toBe(1);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toContain('cannot reach the Legate controller');
  });
});

describe('admin interfaces (START_STATS_SERVER)', () => {
  const components = () => ({ controller: gw.ports.controllerStats, extauth: gw.ports.extauthStats, graphql: gw.ports.graphqlStats });

  it('serve an index page, the log level, metrics and traces on each component', async () => {
    for (const [name, port] of Object.entries(components())) {
      const index = await (await fetch(`http://127.0.0.1:${port}/`)).text();
      expect(index, name).toContain('/metrics');
      expect(index, name).toContain('/debug/pprof/profile');
      expect(await json(`http://127.0.0.1:${port}/logging`)).toEqual({ status: 200, body: { status: 'ok', data: { level: 'debug' } } });
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics, name).toContain(`legate_${name}_process_cpu_user_seconds_total`);
      expect((await json(`http://127.0.0.1:${port}/zpages/tracez`)).body.status).toBe('ok');
    }
    const controller = await (await fetch(`http://127.0.0.1:${gw.ports.controllerStats}/metrics`)).text();
    expect(controller).toMatch(/legate_xds_connected\{role="legate-system~gateway-proxy"\} 1/);
    expect(controller).toMatch(/legate_xds_insync\{role="legate-system~gateway-proxy"\} 1/);
    expect(controller).toContain('legate_xds_nacks_total');
    expect(controller).toMatch(/legate_resources\{kind="VirtualService",state="Accepted"\} \d/);
  });

  it('changes the log level with PUT and answers errors in the envelope', async () => {
    const port = gw.ports.controllerStats;
    const put = (body: string, type = 'application/json') =>
      json(`http://127.0.0.1:${port}/logging`, { method: 'PUT', headers: { 'content-type': type }, body });
    expect(await put('{"level":"info"}')).toEqual({ status: 200, body: { status: 'ok', data: { level: 'info' } } });
    expect((await json(`http://127.0.0.1:${port}/logging`)).body.data).toEqual({ level: 'info' });
    const wrongType = await put('{"level":"info"}', 'text/plain');
    expect(wrongType.status).toBe(415);
    expect(wrongType.body).toEqual({ status: 'error', error: 'Content-Type must be application/json' });
    const badLevel = await put('{"level":"loud"}');
    expect(badLevel.status).toBe(400);
    expect(badLevel.body.error).toContain('invalid level');
    expect((await json(`http://127.0.0.1:${port}/nope`)).status).toBe(404);
  });

  it('profiles CPU on demand', async () => {
    const res = await fetch(`http://127.0.0.1:${gw.ports.graphqlStats}/debug/pprof/profile?seconds=1`);
    expect(res.status).toBe(200);
    const profile = (await res.json()) as { nodes: unknown[] };
    expect(profile.nodes.length).toBeGreaterThan(0);
    expect((await json(`http://127.0.0.1:${gw.ports.graphqlStats}/debug/pprof/profile?seconds=999`)).status).toBe(400);
  });

  it('takes a heap snapshot on demand', async () => {
    const res = await fetch(`http://127.0.0.1:${gw.ports.extauthStats}/debug/pprof/heap`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(JSON.parse(text).snapshot).toBeDefined();
  });
});

describe('dev mode (Settings devMode: true)', () => {
  it('serves the input snapshot, the IR and the xDS snapshots, with a deprecation warning', async () => {
    gw.write(
      'settings.yaml',
      `
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { devMode: true }
`,
    );
    const dev = `http://127.0.0.1:${gw.ports.dev}`;
    const index = await eventually('the dev-mode endpoint', async () => {
      const res = await fetch(dev).catch(() => undefined);
      return res?.ok ? res.text() : undefined;
    });
    expect(index).toContain('Developer API');
    const input = (await json(`${dev}/snapshots/input`)).body.data as { resources: { kind: string }[] };
    expect(input.resources.map((r) => r.kind)).toContain('Settings');
    expect(JSON.stringify((await json(`${dev}/snapshots/ir`)).body.data)).toContain('listener-::-');
    expect((await json(`${dev}/xds`)).body.data).toContain('legate-system~gateway-proxy');
    expect(JSON.stringify((await json(`${dev}/xds/${encodeURIComponent('legate-system~gateway-proxy')}`)).body.data)).toContain(
      'RouteConfiguration',
    );
    expect((await json(`${dev}/xds/nope`)).status).toBe(404);
    expect(gw.log('controller')).toContain('devMode is deprecated');
    gw.remove('settings.yaml');
    await eventually('the dev-mode endpoint to stop', async () => ((await fetch(dev).catch(() => undefined)) ? undefined : true));
  });
});

describe('finding and guarding the running instance', () => {
  const LEGATE = path.join(ROOT, 'bin', 'legate.js');
  const run = (args: string[], cwd = ROOT) =>
    spawnSync(process.execPath, args, { cwd, encoding: 'utf8', timeout: 60_000, env: { ...process.env, LEGATE_STATE_DIR: '' } });

  it('refuses a second legate run on the same state dir and leaves the running one alone', async () => {
    const before = fs.readFileSync(path.join(gw.stateDir, 'run.json'), 'utf8');
    const r = run([LEGATE, 'run', '--config', gw.dir, '--state-dir', gw.stateDir, '--http-port', '0', '--admin-port', '0']);
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('legate run is already running');
    expect(fs.readFileSync(path.join(gw.stateDir, 'run.json'), 'utf8')).toBe(before);
    expect(gw.ctl('check').status).toBe(0);
  });

  it('refuses to start on ports in use, naming them, and writes no state', () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-second-'));
    try {
      const r = run([LEGATE, 'run', '--config', gw.dir, '--state-dir', other, '--http-port', String(gw.ports.http)]);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`${gw.ports.http} (--http-port)`);
      expect(fs.existsSync(path.join(other, 'run.json'))).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });

  it("refuses when a legate.values.yaml process's PORT is taken (the example apps), naming it", async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-second-'));
    const config = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-values-'));
    const busy = net.createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
    const port = (busy.address() as net.AddressInfo).port;
    try {
      fs.writeFileSync(
        path.join(config, 'legate.values.yaml'),
        `processes:\n  - name: products\n    command: [node, -e, "setInterval(() => {}, 1000)"]\n    env: { PORT: "${port}" }\n`,
      );
      const r = run([LEGATE, 'run', '--config', config, '--state-dir', other, '--http-port', '0', '--admin-port', '0']);
      expect(r.status).toBe(2);
      expect(r.stderr).toContain(`${port} (PORT of process products in legate.values.yaml)`);
      expect(fs.existsSync(path.join(other, 'run.json'))).toBe(false);
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
      fs.rmSync(other, { recursive: true, force: true });
      fs.rmSync(config, { recursive: true, force: true });
    }
  });

  it('legatectl finds the instance from a subdirectory, and says where it looked when there is none', () => {
    const project = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-project-'));
    try {
      fs.symlinkSync(gw.stateDir, path.join(project, '.legate'));
      fs.mkdirSync(path.join(project, 'a', 'b'), { recursive: true });
      const found = run([LEGATECTL, 'proxy', 'url'], path.join(project, 'a', 'b'));
      expect(found.stdout.trim()).toBe(`http://127.0.0.1:${gw.ports.http}`);
      fs.rmSync(path.join(project, '.legate'));
      const none = run([LEGATECTL, 'get', 'vs'], path.join(project, 'a', 'b'));
      expect(none.status).toBe(1);
      expect(none.stderr).toContain(`no running 'legate run' found (looked for ${path.join(project, 'a', 'b', '.legate', 'run.json')}`);
    } finally {
      fs.rmSync(project, { recursive: true, force: true });
    }
  });
});
