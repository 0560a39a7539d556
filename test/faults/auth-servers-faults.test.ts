// The servers the credential steps need, taken away: the LDAP server (ldap step, Debian slapd) and the OPA
// server (opaServerAuth, the real OPA). Protected requests are denied (403 temporarily_unavailable) quickly,
// extauth logs why (never the credential), the other steps keep working, and when the server is back the next
// request passes, with no restart of anything. Skipped where slapd or the opa binary (make opa) is missing.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { GLOO_GUIDE_LDIF, SLAPD, startLdap, type LdapServer } from '../support/ldap.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort, stopProcess } from '../support/util.js';
import { figure } from './figures.js';
import { componentPid } from './procs.js';

const ITEM = 'auth-server-faults';
const OPA = process.env['LEGATE_OPA'] || path.join(ROOT, '.cache/opa/bin/opa');
const PASSWORD = 'rickpwd';
const RICK = { authorization: `Basic ${Buffer.from(`rick:${PASSWORD}`).toString('base64')}` };
const POLICY = 'package gate\n\nimport rego.v1\n\ndefault allow := false\n\nallow if startswith(input.http_request.path, "/opa")\n';

let gw: Gateway;
let app: EchoUpstream;
let ldap: LdapServer;
let opa: ChildProcess | undefined;
let opaPort = 0;
let opaDir = '';

async function startOpa(): Promise<void> {
  opa = spawn(OPA, ['run', '--server', '--addr', `127.0.0.1:${opaPort}`, '--log-level', 'error', opaDir], { stdio: 'ignore' });
  await eventually('OPA to answer', async () => ((await fetch(`http://127.0.0.1:${opaPort}/health`)).ok ? true : undefined), 20_000);
}

async function timed(p: string, headers: Record<string, string> = {}): Promise<{ status: number; ms: number; text: string }> {
  const t = performance.now();
  const r = await gw.request(p, { headers });
  return { status: r.status, ms: Math.round(performance.now() - t), text: r.text };
}

describe.skipIf(!SLAPD || !fs.existsSync(OPA))('auth servers down', () => {
  beforeAll(async () => {
    ldap = await startLdap({ suffix: 'dc=solo,dc=io', ldif: GLOO_GUIDE_LDIF });
    opaDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-opa-'));
    fs.writeFileSync(path.join(opaDir, 'gate.rego'), POLICY);
    opaPort = await freePort();
    await startOpa();
    app = await startEcho('app');
    gw = await startGateway({
      'faults.yaml': `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ldap, namespace: legate-system }
spec:
  configs:
  - ldap:
      address: "127.0.0.1:${ldap.port}"
      userDnTemplate: "uid=%s,ou=people,dc=solo,dc=io"
      allowedGroups: ["cn=managers,ou=groups,dc=solo,dc=io"]
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa, namespace: legate-system }
spec:
  configs:
  - opaServerAuth: { package: gate, ruleName: allow, serverAddr: "127.0.0.1:${opaPort}" }
---
${appBehindAuth(app.port, [
  ['/ldap', 'ldap'],
  ['/opa', 'opa'],
])}
`,
    });
    await gw.until('/ldap/x', (r) => r.status === 200, { headers: RICK }, 30_000);
    await gw.until('/opa/x', (r) => r.status === 200, {}, 30_000);
  }, 120_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
    await ldap?.close();
    if (opa) await stopProcess(opa);
    if (opaDir) fs.rmSync(opaDir, { recursive: true, force: true });
  });

  it('LDAP down: denied fast, the reason logged without the password, served again once it is back', async () => {
    const extauthPid = componentPid(gw, 'extauth');
    await ldap.stop();
    // another password each time: the step's outcome cache cannot answer
    const denials = [];
    for (let i = 0; i < 3; i++) {
      const creds = { authorization: `Basic ${Buffer.from(`rick:try-${i}`).toString('base64')}` };
      denials.push(await timed('/ldap/x', creds));
    }
    const other = await timed('/opa/x');
    await ldap.start();
    const t = performance.now();
    await gw.until(
      '/ldap/x',
      (r) => r.status === 200,
      { headers: { authorization: `Basic ${Buffer.from(`rick:${PASSWORD}`).toString('base64')}` } },
      20_000,
    );
    const recoveredMs = Math.round(performance.now() - t);
    figure(ITEM, 'ldap down: denials', denials.map((d) => d.status).join(', '));
    figure(ITEM, 'ldap down: slowest denial', Math.max(...denials.map((d) => d.ms)), 'ms');
    figure(ITEM, 'ldap: served again after the server came back', recoveredMs, 'ms');
    for (const d of denials) {
      expect(d.status).toBe(403);
      expect(d.text).toContain('temporarily_unavailable');
      expect(d.ms).toBeLessThan(3000);
    }
    expect(other.status).toBe(200);
    expect(componentPid(gw, 'extauth')).toBe(extauthPid);
    const log = gw.log('extauth');
    expect(log).toContain('LDAP server unavailable; denying');
    expect(log).not.toContain('try-0');
    expect(log).not.toContain(PASSWORD);
  }, 90_000);

  it('OPA server down: denied fast, logged, served again once it is back', async () => {
    const extauthPid = componentPid(gw, 'extauth');
    await stopProcess(opa!);
    const denials = [];
    for (let i = 0; i < 3; i++) denials.push(await timed('/opa/x'));
    const other = await timed('/ldap/x', RICK);
    await startOpa();
    const t = performance.now();
    await gw.until('/opa/x', (r) => r.status === 200, {}, 20_000);
    const recoveredMs = Math.round(performance.now() - t);
    figure(ITEM, 'opa server down: denials', denials.map((d) => d.status).join(', '));
    figure(ITEM, 'opa server down: slowest denial', Math.max(...denials.map((d) => d.ms)), 'ms');
    figure(ITEM, 'opa: served again after the server came back', recoveredMs, 'ms');
    for (const d of denials) {
      expect(d.status).toBe(403);
      expect(d.text).toContain('temporarily_unavailable');
      expect(d.ms).toBeLessThan(3000);
    }
    expect(other.status).toBe(200);
    expect(componentPid(gw, 'extauth')).toBe(extauthPid);
    expect(gw.log('extauth')).toContain('OPA server unavailable; denying');
  }, 90_000);
});
