// Access-token authentication end to end: real Envoy (ext_authz) -> Legate's extauth -> a real OAuth2
// provider (oidc-provider) doing RFC 7662 introspection.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore, startProvider, type RunningProvider } from '../../examples/apps/oauth-provider.mjs';
import { startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, sleep } from '../support/util.js';

let gw: Gateway;
let app: EchoUpstream;
let provider: RunningProvider;
const store = createStore();

const authConfig = (name: string, scopes: string[], cacheTimeout = '10m') => `
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: http://127.0.0.1:${provider.port}/token/introspection
            clientId: legate-extauth
            clientSecretRef: { name: extauth-client, namespace: legate-system }
          cacheTimeout: ${cacheTimeout}
          requiredScopes: { scope: [${scopes.join(', ')}] }
`;

async function token(scope = 'products:read', clientSecret = 'legate-demo-secret'): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${provider.port}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`legate-demo:${clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
  });
  const body = (await res.json()) as { access_token: string };
  expect(res.status).toBe(200);
  return body.access_token;
}

async function revoke(t: string): Promise<void> {
  const res = await fetch(`http://127.0.0.1:${provider.port}/token/revocation`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('legate-extauth:legate-extauth-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token: t }),
  });
  expect(res.status).toBe(200);
}

const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` } });

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startProvider({ port: 0, store, quiet: true, ttlSeconds: 300 });
  gw = await startGateway({
    'auth.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: extauth-client, namespace: legate-system }
stringData: { clientSecret: legate-extauth-secret }
---
${authConfig('oauth', ['products:read'])}
---
${authConfig('no-cache', ['products:read'], '0s')}
---
${appBehindAuth(app.port, [
  ['/fresh', 'no-cache'],
  ['/typo', 'does-not-exist'],
  ['/', 'oauth'],
])}
`,
  });
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  // the extauth service has its configs once a good token passes
  const t = await token();
  await gw.until('/products', (r) => r.status === 200, bearer(t));
});

afterAll(async () => {
  await gw?.stop();
  await provider?.stop();
  await app?.close();
});

describe('access-token authentication', () => {
  it('forwards a request with a token from the client-credentials flow and returns the backend answer', async () => {
    const r = await gw.request('/products', bearer(await token()));
    expect(r.status).toBe(200);
    expect(r.json()['upstream']).toBe('app');
  });

  it('denies with 403: no header, not Bearer, garbage token', async () => {
    expect((await gw.request('/products')).status).toBe(403);
    expect((await gw.request('/products', { headers: { authorization: `Basic ${Buffer.from('a:b').toString('base64')}` } })).status).toBe(
      403,
    );
    expect((await gw.request('/products', bearer('not-a-real-token'))).status).toBe(403);
    expect((await gw.request('/products', { headers: { authorization: 'Bearer ' } })).status).toBe(403);
  });

  it('lets a route without auth configuration through with no token', async () => {
    expect((await gw.request('/public/x')).status).toBe(200);
  });

  it('denies a revoked token (no cache on that AuthConfig)', async () => {
    const t = await token();
    expect((await gw.request('/fresh', bearer(t))).status).toBe(200);
    await revoke(t);
    expect((await gw.request('/fresh', bearer(t))).status).toBe(403);
  });

  it('denies a token missing a required scope', async () => {
    const t = await token('products:write');
    expect((await gw.request('/products', bearer(t))).status).toBe(403);
  });

  it('denies on a route whose AuthConfig does not exist, and reports it', async () => {
    expect((await gw.request('/typo', bearer(await token()))).status).toBe(403);
    const vs = JSON.parse(gw.ctl('get', 'vs', 'shop', '-n', 'default', '-o', 'json').stdout);
    expect(vs.status.statuses['legate-system'].state).toBe('Warning');
    expect(vs.status.statuses['legate-system'].reason).toContain('AuthConfig legate-system.does-not-exist not found');
  });

  it('fails closed while the provider is down and recovers when it returns', async () => {
    const cachedOk = await token();
    const port = provider.port;
    await provider.stop();
    // a token nobody has seen must be introspected: the provider is down, so deny
    expect((await gw.request('/fresh', bearer(cachedOk))).status).toBe(403);
    expect(gw.log('extauth')).not.toContain(cachedOk);
    provider = await startProvider({ port, store, quiet: true, ttlSeconds: 300 });
    await gw.until('/fresh', (r) => r.status === 200, bearer(cachedOk));
  });

  it('applies an edited AuthConfig (a scope added) without restarts', async () => {
    const readOnly = await token('products:read');
    expect((await gw.request('/products', bearer(readOnly))).status).toBe(200);
    gw.write('scopes.yaml', authConfig('oauth', ['products:read', 'products:write']).replace('name: oauth', 'name: oauth'));
    // same name and namespace in another file replaces the resource
    await eventually('the new scope to apply', async () =>
      (await gw.request('/products', bearer(readOnly))).status === 403 ? true : undefined,
    );
    const both = await token('products:read products:write');
    expect((await gw.request('/products', bearer(both))).status).toBe(200);
    expect(gw.log('extauth')).toContain('"msg":"got new config"');
  });

  it('denies an expired token', async () => {
    const short = await startProvider({ port: 0, quiet: true, ttlSeconds: 2 });
    try {
      gw.write(
        'short.yaml',
        authConfig('short', ['products:read'])
          .replace(`127.0.0.1:${provider.port}`, `127.0.0.1:${short.port}`)
          .replace('name: short', 'name: oauth'),
      );
      const shortToken = async (): Promise<string> => {
        const res = await fetch(`http://127.0.0.1:${short.port}/token`, {
          method: 'POST',
          headers: {
            authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
          },
          body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'products:read' }),
        });
        return ((await res.json()) as { access_token: string }).access_token;
      };
      // a fresh token per attempt: the 2 s tokens must not expire while the edited AuthConfig propagates
      const t = await eventually('the short-lived provider to be in use', async () => {
        const fresh = await shortToken();
        return (await gw.request('/products', bearer(fresh))).status === 200 ? fresh : undefined;
      });
      await sleep(3200);
      expect((await gw.request('/products', bearer(t))).status).toBe(403);
    } finally {
      gw.remove('short.yaml');
      await short.stop();
    }
  });
});
