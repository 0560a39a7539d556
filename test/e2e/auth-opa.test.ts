// opaAuth and opaServerAuth end to end with the real OPA (built by `make opa`): Gloo's guide policy in a
// ConfigMap and its AuthConfig unchanged, compiled to wasm and evaluated inside extauth; and the same policy
// served by `opa run --server`, asked by opaServerAuth. The OPA server going away denies (reason logged) and
// requests pass again when it is back, without restarting anything.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort, stopProcess } from '../support/util.js';

const OPA = process.env['LEGATE_OPA'] || path.join(ROOT, '.cache/opa/bin/opa');
const POLICY = `package test

default allow = false
allow {
    startswith(input.http_request.path, "/api/pets")
    input.http_request.method == "GET"
}
allow {
    input.http_request.path == "/api/pets/2"
    any({input.http_request.method == "GET",
        input.http_request.method == "DELETE"
    })
}
`;

// served by the OPA server only, in Rego v1 (the import: the server runs --v0-compatible for the guide's policy)
const GATE = `package gate

import rego.v1

default allow := false

allow if {
	startswith(input.http_request.path, "/server/ok")
	input.http_request.headers["x-team"] == "shop"
}
`;

let gw: Gateway;
let app: EchoUpstream;
let opa: ChildProcess | undefined;
let opaPort = 0;
let opaDir = '';

async function startOpa(): Promise<void> {
  opa = spawn(OPA, ['run', '--server', '--v0-compatible', '--addr', `127.0.0.1:${opaPort}`, '--log-level', 'error', opaDir], {
    stdio: 'ignore',
  });
  await eventually('OPA to answer', async () => ((await fetch(`http://127.0.0.1:${opaPort}/health`)).ok ? true : undefined), 20_000);
}

describe.skipIf(!fs.existsSync(OPA))('OPA', () => {
  beforeAll(async () => {
    opaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-opa-'));
    fs.writeFileSync(path.join(opaDir, 'policy.rego'), POLICY);
    fs.writeFileSync(path.join(opaDir, 'gate.rego'), GATE);
    opaPort = await freePort();
    await startOpa();
    app = await startEcho('app');
    const indented = POLICY.split('\n')
      .map((l) => `    ${l}`)
      .join('\n');
    gw = await startGateway(
      {
        'auth.yaml': `
apiVersion: v1
kind: ConfigMap
metadata: { name: allow-get-users, namespace: legate-system }
data:
  policy.rego: |
${indented}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa, namespace: legate-system }
spec:
  configs:
  - opaAuth:
      modules:
      - name: allow-get-users
        namespace: legate-system
      query: "data.test.allow == true"
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa-server, namespace: legate-system }
spec:
  configs:
  - opaServerAuth:
      package: gate
      ruleName: allow
      serverAddr: "127.0.0.1:${opaPort}"
---
${appBehindAuth(app.port, [
  ['/server', 'opa-server'],
  ['/', 'opa'],
])}
`,
      },
      { env: { LEGATE_OPA: OPA } },
    );
    await gw.until('/public', (r) => r.status === 200, {}, 30_000);
    await gw.until('/api/pets', (r) => r.status === 200, {}, 30_000);
  }, 120_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
    if (opa) await stopProcess(opa);
    if (opaDir) fs.rmSync(opaDir, { recursive: true, force: true });
  });

  it("opaAuth decides as Gloo's guide says (403 outside /api/pets, DELETE only on pets/2)", async () => {
    expect((await gw.request('/api/pets')).status).toBe(200);
    expect((await gw.request('/api/')).status).toBe(403);
    expect((await gw.request('/api/pets/1', { method: 'DELETE' })).status).toBe(403);
    expect((await gw.request('/api/pets/2', { method: 'DELETE' })).status).toBe(200);
  });

  it("Rego that does not compile is a reason on its AuthConfig (with opa's message); the other configs keep working", async () => {
    const status = (name: string): { state?: string; reason?: string } =>
      (
        JSON.parse(gw.ctl('get', 'authconfig', name, '-n', 'legate-system', '-o', 'json').stdout || '{}') as {
          status?: { statuses?: Record<string, { state?: string; reason?: string }> };
        }
      ).status?.statuses?.['legate-system'] ?? {};
    // the policy's ConfigMap edited into something opa cannot parse
    gw.write(
      'broken.yaml',
      `
apiVersion: v1
kind: ConfigMap
metadata: { name: broken-policy, namespace: legate-system }
data:
  policy.rego: |
    package test
    allow {{ nope
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa-broken, namespace: legate-system }
spec:
  configs:
  - opaAuth:
      modules: [{ name: broken-policy, namespace: legate-system }]
      query: "data.test.allow == true"
`,
    );
    await eventually('the broken policy to be rejected', () => (status('opa-broken').state === 'Rejected' ? true : undefined), 20_000);
    expect(status('opa-broken').reason).toMatch(/configs\[0\]\.opaAuth: the Rego does not compile: .*policy\.rego.*rego_parse_error/);
    expect(status('opa').state).toBe('Accepted');
    expect((await gw.request('/api/pets')).status).toBe(200);
  }, 60_000);

  it('opaServerAuth asks the OPA server, whose policy sees the path and headers', async () => {
    expect((await gw.request('/server/ok', { headers: { 'x-team': 'shop' } })).status).toBe(200);
    expect((await gw.request('/server/ok', { headers: { 'x-team': 'other' } })).status).toBe(403);
    expect((await gw.request('/server/no', { headers: { 'x-team': 'shop' } })).status).toBe(403);
  });

  it('fails closed while the OPA server is down and recovers without a restart', async () => {
    await stopProcess(opa!);
    const team = { headers: { 'x-team': 'shop' } };
    const down = await gw.request('/server/ok', team);
    expect(down.status).toBe(403);
    expect(down.text).toContain('temporarily_unavailable');
    expect(gw.log('extauth')).toMatch(/opa/i);
    // opaAuth runs inside extauth: unaffected
    expect((await gw.request('/api/pets')).status).toBe(200);
    await startOpa();
    await gw.until('/server/ok', (r) => r.status === 200, team, 20_000);
  }, 60_000);
});
