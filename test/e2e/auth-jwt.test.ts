// JWT access tokens end to end: real Envoy (ext_authz) -> Legate's extauth verifying the token with
// the provider's JWK set -> a real oidc-provider issuing JWT access tokens (resource indicators,
// accessTokenFormat 'jwt', ES256) from the client-credentials grant. The provider is never called per
// request: its JWKS is fetched when the AuthConfig arrives, and tokens keep verifying while it is down.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';

/** The part of oidc-provider used here (the package ships no types; examples/apps types its own wrapper). */
type OidcProvider = new (issuer: string, configuration: Record<string, unknown>) => { callback(): http.RequestListener };
const OIDC_PROVIDER = 'oidc-provider';

const RESOURCE = 'https://api.legate.test';
const SCOPES = 'products:read products:write';

let gw: Gateway;
let app: EchoUpstream;
let idp: http.Server;
let issuer: string;
const hits = { jwks: 0, token: 0, other: 0 };
const issued: string[] = [];

/** oidc-provider with JWT access tokens for RESOURCE (the default resource of every token request). */
async function startJwtProvider(): Promise<void> {
  let handler: http.RequestListener = (_req, res) => void res.writeHead(503).end();
  idp = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path === '/jwks') hits.jwks++;
    else if (path === '/token') hits.token++;
    else hits.other++;
    handler(req, res);
  });
  await new Promise<void>((r) => idp.listen(0, '127.0.0.1', r));
  issuer = `http://127.0.0.1:${(idp.address() as AddressInfo).port}`;
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  const { default: Provider } = (await import(OIDC_PROVIDER)) as { default: OidcProvider };
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: 'legate-demo',
        client_secret: 'legate-demo-secret',
        grant_types: ['client_credentials'],
        response_types: [],
        redirect_uris: [],
        token_endpoint_auth_method: 'client_secret_basic',
        id_token_signed_response_alg: 'ES256', // the provider's only key is an ES256 one
        scope: SCOPES,
      },
    ],
    scopes: SCOPES.split(' '),
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => RESOURCE,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx: unknown, resource: string) => ({
          scope: SCOPES,
          audience: resource,
          accessTokenFormat: 'jwt',
          accessTokenTTL: 300,
          jwt: { sign: { alg: 'ES256' } },
        }),
      },
    },
    jwks: { keys: [{ ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256', kid: crypto.randomUUID() }] },
    cookies: { keys: [crypto.randomBytes(32).toString('base64url')] },
  });
  handler = provider.callback();
}

async function token(scope = 'products:read'): Promise<string> {
  const res = await fetch(`${issuer}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
  });
  const body = (await res.json()) as { access_token: string };
  expect(res.status, JSON.stringify(body)).toBe(200);
  issued.push(body.access_token);
  return body.access_token;
}

const bearer = (t: string) => ({ headers: { authorization: `Bearer ${t}` } });

const jwtAuthConfig = (name: string, jwt: string, scopes: string[] = ['products:read'], cacheTimeout?: string) => `
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          jwt: ${jwt}
          requiredScopes: { scope: [${scopes.join(', ')}] }${cacheTimeout ? `\n          cacheTimeout: ${cacheTimeout}` : ''}
`;

/** ext_authz Check calls Envoy made so far. */
async function extAuthzCalls(): Promise<number> {
  const filter = encodeURIComponent('^cluster\\.legate-extauth\\.upstream_rq_total$');
  const m = /: (\d+)/.exec(await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${filter}`)).text());
  return m ? Number(m[1]) : 0;
}

beforeAll(async () => {
  app = await startEcho('app');
  await startJwtProvider();
  const remote = `{ remoteJwks: { url: '${issuer}/jwks' }, issuer: '${issuer}', audiences: ['${RESOURCE}'] }`;
  gw = await startGateway({
    'auth.yaml': `
${jwtAuthConfig('jwt', remote)}
---
${jwtAuthConfig('jwt-writers', remote, ['products:write'])}
---
${jwtAuthConfig('jwt-other-issuer', `{ remoteJwks: { url: '${issuer}/jwks' }, issuer: 'https://elsewhere.test' }`)}
---
${jwtAuthConfig('jwt-broken', `{ remoteJwks: { url: 'ftp://${issuer.slice(7)}/jwks' } }`)}
---
${jwtAuthConfig('jwt-short', remote, ['products:read'], '2s')}
---
${appBehindAuth(app.port, [
  ['/short', 'jwt-short'],
  ['/write', 'jwt-writers'],
  ['/other', 'jwt-other-issuer'],
  ['/', 'jwt'],
])}
`,
  });
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  const t = await token();
  await gw.until('/products', (r) => r.status === 200, bearer(t));
});

afterAll(async () => {
  await gw?.stop();
  idp?.closeAllConnections();
  await new Promise<void>((r) => (idp ? idp.close(() => r()) : r()));
  await app?.close();
});

describe('JWT access tokens (oidc-provider, remote JWKS)', () => {
  it('the provider issues JWT access tokens for the resource', async () => {
    const t = await token();
    expect(t.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(t.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(claims).toMatchObject({ iss: issuer, aud: RESOURCE, scope: 'products:read', client_id: 'legate-demo' });
  });

  it('forwards requests with a valid token and never calls the provider per request', async () => {
    const jwksBefore = hits.jwks;
    const t = await token();
    for (let i = 0; i < 10; i++) {
      const r = await gw.request('/products', bearer(t));
      expect(r.status).toBe(200);
      expect(r.json()['upstream']).toBe('app');
    }
    expect(hits.jwks).toBe(jwksBefore);
    expect(hits.other).toBe(0); // no introspection, no userinfo, nothing else
  });

  it('serves a verified token from the edge cache: one ext_authz call, again only after cacheTimeout', async () => {
    const t = await token();
    const before = await extAuthzCalls();
    for (let i = 0; i < 5; i++) expect((await gw.request('/products', bearer(t))).status).toBe(200);
    expect(await extAuthzCalls()).toBe(before + 1);
    // cacheTimeout 2s (the token lives 300 s): reused for 2 s, then checked again
    const short = await token();
    const t0 = Date.now();
    expect((await gw.request('/short', bearer(short))).status).toBe(200);
    const first = await extAuthzCalls();
    for (let i = 0; i < 3; i++) expect((await gw.request('/short', bearer(short))).status).toBe(200);
    if (Date.now() - t0 < 1800) expect(await extAuthzCalls()).toBe(first);
    await new Promise((r) => setTimeout(r, Math.max(0, t0 + 2300 - Date.now())));
    expect((await gw.request('/short', bearer(short))).status).toBe(200);
    expect(await extAuthzCalls()).toBe(first + 1);
    // denials are never cached: each one is judged
    const denied = await extAuthzCalls();
    for (let i = 0; i < 3; i++) expect((await gw.request('/write', bearer(t))).status).toBe(403);
    expect(await extAuthzCalls()).toBe(denied + 3);
  });

  it('denies with the same responses as introspection: garbage, missing scope, other issuer', async () => {
    const garbage = await gw.request('/products', bearer('not.a.jwt'));
    expect(garbage.status).toBe(403);
    expect(garbage.headers.get('www-authenticate')).toBe('Bearer error="invalid_token"');
    expect(JSON.parse(garbage.text)).toEqual({ error: 'invalid_token' });
    const readOnly = await token('products:read');
    const scoped = await gw.request('/write', bearer(readOnly));
    expect(scoped.status).toBe(403);
    expect(scoped.headers.get('www-authenticate')).toBe('Bearer error="insufficient_scope"');
    expect((await gw.request('/write', bearer(await token(SCOPES)))).status).toBe(200);
    expect((await gw.request('/other', bearer(readOnly))).status).toBe(403);
    const missing = await gw.request('/products');
    expect(missing.status).toBe(403);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer');
  });

  it('denies a token whose signature was tampered with', async () => {
    const [h, p, s] = (await token()).split('.');
    const sig = Buffer.from(s!, 'base64url');
    sig[0] = sig[0]! ^ 1;
    const forged = `${h}.${p}.${sig.toString('base64url')}`;
    issued.push(forged);
    expect((await gw.request('/products', bearer(forged))).status).toBe(403);
  });

  it('reports a bad JWT AuthConfig in its status', () => {
    const ac = JSON.parse(gw.ctl('get', 'authconfig', 'jwt-broken', '-n', 'legate-system', '-o', 'json').stdout);
    expect(ac.status.statuses['legate-system'].state).toBe('Rejected');
    expect(ac.status.statuses['legate-system'].reason).toContain('jwt.remoteJwks.url: must be an http or https URL');
  });

  it('keeps verifying with the cached keys while the provider is down', async () => {
    const t = await token();
    idp.closeAllConnections();
    await new Promise<void>((r) => idp.close(() => r()));
    expect((await gw.request('/products', bearer(t))).status).toBe(200);
  });

  it('logs denials with a reason and never a token', () => {
    const log = gw.log('extauth');
    expect(log).toContain('"detail":"jwt claim iss check_failed"');
    for (const t of issued) expect(log).not.toContain(t.split('.')[2]!);
  });
});
