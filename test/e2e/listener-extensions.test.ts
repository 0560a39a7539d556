// A Gateway's listener extensions end to end, through the real Envoy of one `legate run`:
// - httpGateway.options.wasm: a user's proxy-wasm filter (test/unit/wasm-fixtures/add-header.ts, built here with asc)
//   by file and by uri, pinned by sha256, sets a response header from its config; a wrong sha256 is refused with the
//   path and the last accepted Gateway keeps serving; a filePath without sha256 (Gloo's manifest) is read and run;
// - httpGateway.options.extauth / ratelimitServer: listeners of one proxy whose ext_authz and ratelimit filters ask
//   other servers or fail otherwise (failureModeAllow, statusOnError, denyOnFail) than the default listener's;
// - the stats listener (legate run --stats-listener-port): Prometheus scrapes GET /metrics and gets Envoy's metrics,
//   and nothing else of the admin is reachable through it.
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

let gw: Gateway;
let echo: EchoUpstream;
let tmp: string;
let wasmFile: string;
let wasmSha: string;
const ports = { wasm: 0, remote: 0, plain: 0, stats: 0, lenient: 0, strict: 0, rlDeny: 0, dead: 0 };
/** serves the module over HTTP, for a filter named by uri */
let moduleServer: http.Server;
let moduleFetches = 0;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
}

function get(port: number, pathAndQuery: string, method = 'GET', headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: pathAndQuery, method, headers, timeout: 10_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`${pathAndQuery} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

const wasmGateway = (sha256: string | undefined, header: string): string => `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: wasm, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.wasm}
  httpGateway:
    options:
      wasm:
        filters:
          - name: add-header
            rootId: add_header
            filePath: ${wasmFile}${sha256 ? `\n            sha256: "${sha256}"` : ''}
            config:
              "@type": type.googleapis.com/google.protobuf.StringValue
              value: "x-wasm: ${header}"
`;

/** A Gateway's status, as legatectl shows it. */
function gatewayStatus(name: string): { state: string; reason?: string } {
  const out = gw.ctl('get', 'gateways', name, '-n', 'gloo-system', '-o', 'json');
  const doc = JSON.parse(out.stdout) as { status?: { statuses?: Record<string, { state: string; reason?: string }> } };
  return Object.values(doc.status?.statuses ?? {})[0] ?? { state: 'unknown' };
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-lext-'));
  wasmFile = path.join(tmp, 'add-header.wasm');
  execFileSync(
    process.execPath,
    [
      path.join(ROOT, 'node_modules/assemblyscript/bin/asc.js'),
      'test/unit/wasm-fixtures/add-header.ts',
      '--target',
      'release',
      '-o',
      wasmFile,
    ],
    { cwd: ROOT, stdio: 'pipe' },
  );
  wasmSha = createHash('sha256').update(fs.readFileSync(wasmFile)).digest('hex');
  echo = await startEcho('echo');
  const moduleBytes = fs.readFileSync(wasmFile);
  moduleServer = http.createServer((req, res) => {
    moduleFetches++;
    if (req.url !== '/filters/add-header.wasm') res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'application/wasm' }).end(moduleBytes);
  });
  await new Promise<void>((resolve) => moduleServer.listen(0, '127.0.0.1', () => resolve()));
  const modulePort = (moduleServer.address() as { port: number }).port;
  ports.wasm = await freePort();
  ports.remote = await freePort();
  ports.plain = await freePort();
  ports.lenient = await freePort();
  ports.strict = await freePort();
  ports.rlDeny = await freePort();
  // nothing listens here: the servers the lenient and strict listeners ask cannot answer
  ports.dead = await freePort();
  ports.stats = await freePort();
  gw = await startGateway(
    {
      'app.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: echo, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echo.port} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: plain, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.plain}
  httpGateway: {}
---
# auth.example.com: Legate's extauth (its AuthConfig's introspection endpoint is down, so a token is refused) and a
# generous basic rate limit
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: oauth, namespace: gloo-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation: { introspectionUrl: 'http://127.0.0.1:${ports.dead}/introspect' }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: auth, namespace: gloo-system }
spec:
  virtualHost:
    domains: [auth.example.com]
    options:
      extauth: { configRef: { name: oauth, namespace: gloo-system } }
      ratelimitBasic: { authorizedLimits: { requestsPerUnit: 1000, unit: MINUTE } }
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: down, namespace: gloo-system }
spec:
  useHttp2: true
  static: { hosts: [{ addr: 127.0.0.1, port: ${ports.dead} }] }
---
# another ext_authz server that is down, and failureModeAllow: requests go through
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: lenient, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.lenient}
  httpGateway:
    options:
      extauth:
        extauthzServerRef: { name: down }
        requestTimeout: 1s
        failureModeAllow: true
      ratelimitServer: { enableXRatelimitHeaders: true }
---
# the same server, failing closed with Gloo's statusOnError
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: strict, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.strict}
  httpGateway:
    options:
      extauth:
        extauthzServerRef: { name: down }
        statusOnError: 503
---
# past ext_authz as on the lenient listener, then a ratelimit server that is down, with denyOnFail
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: rl-deny, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.rlDeny}
  httpGateway:
    options:
      extauth: { extauthzServerRef: { name: down }, failureModeAllow: true }
      ratelimitServer:
        ratelimitServerRef: { name: down }
        denyOnFail: true
`,
      'wasm.yaml': wasmGateway(wasmSha, 'hello'),
      'remote.yaml': `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: remote-wasm, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${ports.remote}
  httpGateway:
    options:
      wasm:
        filters:
          - name: fetched
            rootId: add_header
            uri: http://127.0.0.1:${modulePort}/filters/add-header.wasm
            sha256: "${wasmSha}"
            filterStage: { stage: AuthNStage, predicate: Before }
            config:
              "@type": type.googleapis.com/google.protobuf.StringValue
              value: "x-wasm-remote: fetched"
`,
    },
    { args: ['--stats-listener-port', String(ports.stats)] },
  );
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  await new Promise<void>((resolve) => (moduleServer ? moduleServer.close(() => resolve()) : resolve()));
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('httpGateway.options.wasm', () => {
  it('runs the user filter: the response carries the header its config names', async () => {
    // V8 compiles the module before the listener opens
    const r = await eventually(
      'the wasm listener',
      async () => {
        const a = await get(ports.wasm, '/hello');
        return a.headers['x-wasm'] === 'hello' ? a : undefined;
      },
      30_000,
    );
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toMatchObject({ upstream: 'echo', path: '/hello' });
    expect(gatewayStatus('wasm').state).toBe('Accepted');
    // the other listener of the proxy has no user filter
    const plain = await get(ports.plain, '/hello');
    expect(plain.status).toBe(200);
    expect(plain.headers['x-wasm']).toBeUndefined();
  });

  it('a module named by uri: Envoy fetches it, checks its sha256 and runs it', async () => {
    const r = await eventually(
      'the remote wasm listener',
      async () => {
        const a = await get(ports.remote, '/fetched');
        return a.headers['x-wasm-remote'] === 'fetched' ? a : undefined;
      },
      30_000,
    );
    expect(r.status).toBe(200);
    expect(moduleFetches).toBeGreaterThan(0);
    expect(gatewayStatus('remote-wasm').state).toBe('Accepted');
  });

  it('refuses a sha256 the file does not have, names the path, and keeps serving the last accepted filter', async () => {
    const wrong = 'ab'.repeat(32);
    gw.write('wasm.yaml', wasmGateway(wrong, 'changed'));
    const status = await eventually('the Gateway to be rejected', () => {
      const s = gatewayStatus('wasm');
      return s.state === 'Rejected' ? s : undefined;
    });
    expect(status.reason).toContain(`httpGateway.options.wasm.filters[0].sha256: ${wasmFile} has SHA-256 ${wasmSha}, not the ${wrong}`);
    expect(status.reason).toContain('serving the last accepted version');
    for (let i = 0; i < 5; i++) expect((await get(ports.wasm, '/still')).headers['x-wasm']).toBe('hello');
    // the right sha256 again, with a new config: applied
    gw.write('wasm.yaml', wasmGateway(wasmSha, 'again'));
    await eventually('the new config', async () => ((await get(ports.wasm, '/again')).headers['x-wasm'] === 'again' ? true : undefined));
    expect(gatewayStatus('wasm').state).toBe('Accepted');
  });

  it("applies Gloo's manifest unchanged: a filePath without sha256, the controller reads the module's digest", async () => {
    gw.write('wasm.yaml', wasmGateway(undefined, 'gloo'));
    await eventually('the Gloo filter', async () => ((await get(ports.wasm, '/gloo')).headers['x-wasm'] === 'gloo' ? true : undefined));
    expect(gatewayStatus('wasm').state).toBe('Accepted');
    const proxy = gw.ctl('get', 'proxies', '-o', 'json').stdout;
    expect(proxy).toContain(wasmSha);
  });
});

describe('httpGateway.options.extauth and ratelimitServer', () => {
  const auth = { host: 'auth.example.com', authorization: 'Bearer not-a-valid-token' };

  it("the default listener asks Legate's extauth service, which refuses the token", async () => {
    const r = await eventually('the auth virtual host', async () => {
      const a = await get(ports.plain, '/private', 'GET', auth);
      return a.status !== 404 && a.status !== 0 ? a : undefined;
    });
    expect([401, 403]).toContain(r.status);
    expect(gatewayStatus('lenient').state).toBe('Accepted');
    expect(gatewayStatus('strict').state).toBe('Accepted');
  });

  it('a listener whose server is down lets requests through with failureModeAllow', async () => {
    const r = await eventually('the lenient listener', async () => {
      const a = await get(ports.lenient, '/private', 'GET', auth);
      return a.status === 200 ? a : undefined;
    });
    expect(JSON.parse(r.text)).toMatchObject({ upstream: 'echo', path: '/private' });
    // Legate's bearer pre-check still runs before ext_authz
    expect((await get(ports.lenient, '/private', 'GET', { host: auth.host })).status).toBe(403);
  });

  it('a listener whose ext_authz server is down fails closed with its statusOnError', async () => {
    const r = await eventually('the strict listener', async () => {
      const a = await get(ports.strict, '/private', 'GET', auth);
      return a.status === 503 ? a : undefined;
    });
    expect(r.status).toBe(503);
  });

  it('a listener whose ratelimit server is down denies with denyOnFail; the others count with Legate', async () => {
    const r = await eventually('the rl-deny listener', async () => {
      const a = await get(ports.rlDeny, '/private', 'GET', auth);
      return a.status === 500 ? a : undefined;
    });
    expect(r.status).toBe(500);
    // the lenient listener asks Legate's ratelimit service: its limit leaves room
    const ok = await get(ports.lenient, '/private', 'GET', auth);
    expect(ok.status).toBe(200);
    expect(ok.headers['x-ratelimit-limit']).toBeDefined();
  });
});

describe('stats listener (--stats-listener-port)', () => {
  it("serves Envoy's Prometheus metrics on GET /metrics", async () => {
    const r = await get(ports.stats, '/metrics');
    expect(r.status).toBe(200);
    expect(r.text).toMatch(/^# TYPE envoy_\w+ (counter|gauge|histogram)$/m);
    expect(r.text).toMatch(/^envoy_server_live\{[^}]*\} 1$/m);
    // the listeners' own traffic is there, as Prometheus would scrape it
    expect(r.text).toMatch(/^envoy_http_downstream_rq_total\{[^}]*envoy_http_conn_manager_prefix="http"[^}]*\} \d+$/m);
  });

  it('answers nothing else of the admin', async () => {
    for (const p of ['/stats', '/config_dump', '/metrics/../quitquitquit', '/logging', '/'])
      expect((await get(ports.stats, p)).status).toBe(404);
    expect((await get(ports.stats, '/metrics', 'POST')).status).toBe(404);
    expect((await get(ports.stats, '/quitquitquit', 'POST')).status).toBe(404);
    // Envoy is still up
    expect((await get(ports.stats, '/metrics')).status).toBe(200);
  });
});
