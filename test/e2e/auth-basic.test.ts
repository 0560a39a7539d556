// basicAuth, hmacAuth and apiKeyAuth's Gloo 1.17 storage form end to end: real Envoy -> Legate's extauth.
// The AuthConfigs are Gloo's docs' examples (apr, and encryption sha1 + userList: user / password); hmacAuth
// with a Secret holding the user's shared secret; API keys from k8sSecretApikeyStorage whose metadata
// (headersFromMetadataEntry) reaches the upstream as headers.
import { createHmac } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
const basic = (user: string, password: string): string => `basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({
    'auth.yaml': `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: basic-auth, namespace: legate-system }
spec:
  configs:
  - basicAuth:
      apr:
        users:
          user:
            salt: "TYiryv0/"
            hashedPassword: "8BvzLUO9IfGPGGsPnAgSu1"
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: basic-sha1, namespace: legate-system }
spec:
  configs:
  - basicAuth:
      realm: shop
      encryption:
        sha1: {}
      userList:
        users:
          user:
            salt: "TYiryv0/"
            hashedPassword: "010eb058a59f4ac5ba05639b0263cf91b4345fd6"
---
apiVersion: v1
kind: Secret
metadata: { name: hmac-alice, namespace: legate-system }
stringData: { username: alice, password: alice-shared-secret }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: hmac, namespace: legate-system }
spec:
  configs:
  - hmacAuth:
      secretRefs:
        secretRefs: [{ name: hmac-alice, namespace: legate-system }]
      parametersInHeaders: {}
---
apiVersion: v1
kind: Secret
metadata: { name: user-id-one, namespace: legate-system, labels: { team: infrastructure } }
type: extauth.solo.io/apikey
stringData: { api-key: key-of-user-one, user-id: user-one, user-email: one@example.com }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: legate-system }
spec:
  configs:
  - apiKeyAuth:
      headerName: api-key
      k8sSecretApikeyStorage:
        labelSelector:
          team: infrastructure
      headersFromMetadataEntry:
        x-user-id:
          name: user-id
          required: true
        x-user-email:
          name: user-email
---
${appBehindAuth(app.port, [
  ['/sha1', 'basic-sha1'],
  ['/hmac', 'hmac'],
  ['/keys', 'apikey'],
  ['/', 'basic-auth'],
])}
`,
  });
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  await gw.until('/posts/1', (r) => r.status === 200, { headers: { authorization: basic('user', 'password') } });
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

describe('basicAuth (Gloo guide)', () => {
  it('apr: 401 with a Basic challenge without credentials or with a wrong password; the right one passes', async () => {
    const none = await gw.request('/posts/1');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Basic realm=""');
    expect((await gw.request('/posts/1', { headers: { authorization: basic('user', 'wrong') } })).status).toBe(401);
    expect((await gw.request('/posts/1', { headers: { authorization: basic('nobody', 'password') } })).status).toBe(401);
    const ok = await gw.request('/posts/1', { headers: { authorization: 'basic dXNlcjpwYXNzd29yZA==' } });
    expect(ok.status).toBe(200);
    expect(ok.json()['upstream']).toBe('app');
  });

  it('encryption sha1 + userList: the same credentials, the realm in the challenge', async () => {
    expect((await gw.request('/sha1', { headers: { authorization: basic('user', 'password') } })).status).toBe(200);
    const denied = await gw.request('/sha1', { headers: { authorization: basic('user', 'nope') } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('www-authenticate')).toBe('Basic realm="shop"');
  });

  it('never logs the password', () => {
    const logs = ['controller', 'extauth', 'envoy'].map((c) => gw.log(c)).join('\n');
    expect(logs).not.toContain('dXNlcjpwYXNzd29yZA==');
    expect(logs).not.toContain('alice-shared-secret');
  });
});

describe('hmacAuth', () => {
  const signed = (secret: string, path = '/hmac/a?b=1', date = new Date().toUTCString()) => {
    const text = `date: ${date}\nget ${path}`;
    const signature = createHmac('sha1', secret).update(text).digest('base64');
    return {
      date,
      authorization: `hmac username="alice", algorithm="hmac-sha1", headers="date @request-target", signature="${signature}"`,
    };
  };
  it('allows a request signed with the shared secret, denies a wrong, stale or re-targeted one', async () => {
    expect((await gw.request('/hmac/a?b=1', { headers: signed('alice-shared-secret') })).status).toBe(200);
    expect((await gw.request('/hmac/a?b=1', { headers: signed('guess') })).status).toBe(401);
    expect((await gw.request('/hmac/a?b=1')).status).toBe(401);
    const old = new Date(Date.now() - 3_600_000).toUTCString();
    expect((await gw.request('/hmac/a?b=1', { headers: signed('alice-shared-secret', '/hmac/a?b=1', old) })).status).toBe(401);
    // a signature for another path does not open this one
    expect((await gw.request('/hmac/other', { headers: signed('alice-shared-secret') })).status).toBe(401);
  });
});

describe('apiKeyAuth k8sSecretApikeyStorage', () => {
  it("allows a stored key and sends the key's metadata upstream as headers", async () => {
    const ok = await gw.request('/keys', { headers: { 'api-key': 'key-of-user-one' } });
    expect(ok.status).toBe(200);
    const headers = ok.json<{ headers: Record<string, string> }>().headers;
    expect(headers['x-user-id']).toBe('user-one');
    expect(headers['x-user-email']).toBe('one@example.com');
    expect((await gw.request('/keys', { headers: { 'api-key': 'other' } })).status).toBe(401);
  });
  it('a client cannot set the metadata headers itself', async () => {
    const r = await gw.request('/keys', { headers: { 'api-key': 'key-of-user-one', 'x-user-id': 'admin' } });
    expect(r.json<{ headers: Record<string, string> }>().headers['x-user-id']).toBe('user-one');
  });
});
