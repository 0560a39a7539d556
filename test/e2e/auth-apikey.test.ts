// API keys end to end: real Envoy (ext_authz, sending the API key headers) -> Legate's extauth comparing
// sha256 digests of keys the controller read from Secrets (by reference, by label selector). And a
// booleanExpr: an API key OR a JWT (local JWK set). The keys appear nowhere: not in status, not in the
// served config, not in any log.
import fs from 'node:fs';
import crypto from 'node:crypto';
import path from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';

const KEY = `k-${crypto.randomBytes(16).toString('hex')}`;
const TEAM_KEY = `t-${crypto.randomBytes(16).toString('hex')}`;
const WRONG = `w-${crypto.randomBytes(16).toString('hex')}`;

let gw: Gateway;
let app: EchoUpstream;
const { privateKey, publicKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: 'k1', alg: 'ES256', use: 'sig' }] });

const jwt = (): Promise<string> =>
  new SignJWT({ scope: 'products:read' })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer('https://issuer.test')
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(privateKey);

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({
    'auth.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: client-a, namespace: legate-system }
data: { api-key: ${Buffer.from(KEY).toString('base64')} }
---
apiVersion: v1
kind: Secret
metadata: { name: client-b, namespace: default, labels: { team: shop } }
stringData: { api-key: ${TEAM_KEY} }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: apikey, namespace: legate-system }
spec:
  configs:
    - apiKeyAuth: { apiKeySecretRefs: [{ name: client-a }] }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: team, namespace: legate-system }
spec:
  configs:
    - apiKeyAuth: { labelSelector: { team: shop }, headerName: X-Team-Key }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: key-or-jwt, namespace: legate-system }
spec:
  booleanExpr: 'apikey || jwt'
  configs:
    - name: apikey
      apiKeyAuth: { apiKeySecretRefs: [{ name: client-a }] }
    - name: jwt
      oauth2:
        accessTokenValidation:
          jwt: { localJwks: { inlineString: '${jwk}' }, issuer: https://issuer.test }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: missing, namespace: legate-system }
spec:
  configs:
    - apiKeyAuth: { apiKeySecretRefs: [{ name: nowhere }] }
---
${appBehindAuth(app.port, [
  ['/team', 'team'],
  ['/either', 'key-or-jwt'],
  ['/', 'apikey'],
])}
`,
  });
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  await gw.until('/products', (r) => r.status === 200, { headers: { 'api-key': KEY } });
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

describe('API keys from Secrets', () => {
  it('forwards a request with the right key, denies a missing (401) or wrong (401) one', async () => {
    const ok = await gw.request('/products', { headers: { 'api-key': KEY } });
    expect(ok.status).toBe(200);
    expect(ok.json()['upstream']).toBe('app');
    const missing = await gw.request('/products');
    expect(missing.status).toBe(401);
    expect(JSON.parse(missing.text)).toEqual({ error: 'missing_api_key' });
    const wrong = await gw.request('/products', { headers: { 'api-key': WRONG } });
    expect(wrong.status).toBe(401);
    expect(JSON.parse(wrong.text)).toEqual({ error: 'invalid_api_key' });
    // another Secret's key, or the right key in another header, is not enough
    expect((await gw.request('/products', { headers: { 'api-key': TEAM_KEY } })).status).toBe(401);
    expect((await gw.request('/products', { headers: { 'x-team-key': KEY } })).status).toBe(401);
  });

  it('reads keys by label selector, from a custom header', async () => {
    expect((await gw.request('/team', { headers: { 'x-team-key': TEAM_KEY } })).status).toBe(200);
    expect((await gw.request('/team', { headers: { 'api-key': TEAM_KEY } })).status).toBe(401);
    expect((await gw.request('/team', { headers: { 'x-team-key': KEY } })).status).toBe(401);
  });

  it('booleanExpr: an API key or a JWT', async () => {
    expect((await gw.request('/either', { headers: { 'api-key': KEY } })).status).toBe(200);
    expect((await gw.request('/either', { headers: { authorization: `Bearer ${await jwt()}` } })).status).toBe(200);
    const neither = await gw.request('/either', { headers: { 'api-key': WRONG } });
    expect(neither.status).toBe(403);
    expect(neither.headers.get('www-authenticate')).toBe('Bearer');
    expect((await gw.request('/either', { headers: { authorization: 'Bearer not.a.jwt' } })).status).toBe(403);
  });

  it("cannot skip ext_authz with the edge cache's verified header, even holding its secret value", async () => {
    // bearer-check (which drops a client's copy) is off on API-key routes; Envoy removes it first
    const secret = fs.readFileSync(path.join(gw.stateDir, 'edge-secret'), 'utf8').trim();
    const forged = { 'x-legate-token-verified': secret };
    expect((await gw.request('/products', { headers: forged })).status).toBe(401);
    expect((await gw.request('/either', { headers: { ...forged, 'api-key': WRONG } })).status).not.toBe(200);
  });

  it('reports a missing Secret in status', () => {
    const ac = JSON.parse(gw.ctl('get', 'authconfig', 'missing', '-n', 'legate-system', '-o', 'json').stdout);
    expect(ac.status.statuses['legate-system'].state).toBe('Rejected');
    expect(ac.status.statuses['legate-system'].reason).toContain('Secret legate-system.nowhere not found');
  });

  it('the keys appear nowhere: status, served config, logs', async () => {
    const served = await (await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/served`)).text();
    expect(served).toContain(crypto.createHash('sha256').update(KEY).digest('hex'));
    const statuses = ['apikey', 'team', 'key-or-jwt', 'missing']
      .map((n) => gw.ctl('get', 'authconfig', n, '-n', 'legate-system', '-o', 'json').stdout)
      .join('\n');
    const logs = ['controller', 'extauth', 'envoy'].map((c) => gw.log(c)).join('\n');
    expect(logs).toContain('invalid_api_key');
    for (const k of [KEY, TEAM_KEY, WRONG, Buffer.from(KEY).toString('base64')]) {
      expect(served).not.toContain(k);
      expect(statuses).not.toContain(k);
      expect(logs).not.toContain(k);
    }
  });
});
