// JWT verification and claims-based RBAC in Envoy itself (Gloo's jwt / jwtStaged / rbac options), end to
// end: tokens signed here with jose, checked by Envoy's jwt_authn against a local JWKS and a remote one
// (a small JWKS server behind an Upstream); claims copied to upstream headers; allowMissingOrFailedJwt;
// a route that turns JWT off; RBAC by claim, path prefix and method; and the order against ext_authz
// (an API-key AuthConfig) of the beforeExtAuth and afterExtAuth stages; Gloo's `jwt: {}` AuthConfig step in a
// booleanExpr (a JWT verified by Envoy, or an API key).
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, type JWTPayload } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

const API_KEY = `k-${crypto.randomBytes(16).toString('hex')}`;
const ISSUER = 'https://issuer.test';

const local = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const remote = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
const stranger = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const localPem = local.publicKey.export({ format: 'pem', type: 'spki' }).toString();
// a shared secret (HS256): Gloo accepts symmetric keys in a local JWKS; Legate must never show them
const hmacSecret = crypto.randomBytes(32);
const hmacJwks = JSON.stringify({ keys: [{ kty: 'oct', k: hmacSecret.toString('base64url'), kid: 'h1', alg: 'HS256' }] });
const remoteJwks = JSON.stringify({ keys: [{ ...remote.publicKey.export({ format: 'jwk' }), kid: 'r1', alg: 'RS256', use: 'sig' }] });

interface Sign {
  claims?: JWTPayload;
  key?: crypto.KeyObject;
  alg?: string;
  iss?: string;
  aud?: string;
  exp?: string | number;
}
const sign = ({ claims = {}, key = local.privateKey, alg = 'ES256', iss = ISSUER, aud = 'api', exp = '5m' }: Sign): Promise<string> =>
  new SignJWT({ sub: 'alice', team: 'dev', ...claims })
    .setProtectedHeader({ alg, kid: alg === 'RS256' ? 'r1' : 'k1' })
    .setIssuer(iss)
    .setAudience(aud)
    .setIssuedAt()
    .setExpirationTime(exp)
    .sign(key);
const bearer = async (s: Sign = {}): Promise<Record<string, string>> => ({ authorization: `Bearer ${await sign(s)}` });

let gw: Gateway;
let app: EchoUpstream;
let jwksServer: http.Server;
let jwksFetches = 0;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: default } } }';
/** The local provider's fields (issuer, audience, the PEM key), indented by `pad` spaces. */
const localProvider = (pad = 12): string =>
  [
    `issuer: ${ISSUER}`,
    'audiences: [api]',
    'jwks:',
    '  local:',
    '    key: |',
    ...localPem
      .trim()
      .split('\n')
      .map((l) => `      ${l}`),
  ]
    .map((l) => `\n${' '.repeat(pad)}${l}`)
    .join('');

beforeAll(async () => {
  app = await startEcho('app');
  jwksServer = http.createServer((req, res) => {
    jwksFetches++;
    res.writeHead(req.url === '/keys' ? 200 : 404, { 'content-type': 'application/json' });
    res.end(req.url === '/keys' ? remoteJwks : '{}');
  });
  await new Promise<void>((resolve) => jwksServer.listen(0, '127.0.0.1', () => resolve()));
  const jwksPort = (jwksServer.address() as AddressInfo).port;
  gw = await startGateway({
    'jwt.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: jwks, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${jwksPort} }] }
---
apiVersion: v1
kind: Secret
metadata: { name: client, namespace: default }
stringData: { api-key: ${API_KEY} }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: default }
spec:
  configs:
    - apiKeyAuth: { apiKeySecretRefs: [{ name: client, namespace: default }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: local, namespace: default }
spec:
  virtualHost:
    domains: [local.test]
    options:
      jwt:
        providers:
          local:${localProvider()}
            claimsToHeaders:
              - { claim: sub, header: x-sub }
              - { claim: team, header: x-team }
    routes:
      - matchers: [{ prefix: /open }]
        options: { jwt: { disable: true } }
        ${toApp}
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: remote, namespace: default }
spec:
  virtualHost:
    domains: [remote.test]
    options:
      jwt:
        providers:
          remote:
            issuer: ${ISSUER}
            jwks:
              remote:
                url: http://127.0.0.1:${jwksPort}/keys
                upstreamRef: { name: jwks, namespace: default }
                cacheDuration: 300s
            tokenSource:
              headers: [{ header: x-token }]
            keepToken: true
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: lenient, namespace: default }
spec:
  virtualHost:
    domains: [lenient.test]
    options:
      jwt:
        allowMissingOrFailedJwt: true
        providers:
          local:${localProvider()}
            claimsToHeaders: [{ claim: sub, header: x-sub }]
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: rbac, namespace: default }
spec:
  virtualHost:
    domains: [rbac.test]
    options:
      jwt:
        providers:
          local:${localProvider()}
      rbac:
        policies:
          viewer:
            permissions:
              methods:
              - GET
              pathPrefix: /api/pets
            principals:
            - jwtPrincipal:
                claims:
                  team: dev
          nested:
            nestedClaimDelimiter: .
            permissions: { pathPrefix: /admin }
            principals:
            - jwtPrincipal: { claims: { org.role: admin }, provider: local }
            - jwtPrincipal: { claims: { groups: admins }, matcher: LIST_CONTAINS }
    routes:
      - matchers: [{ prefix: /static }]
        options: { rbac: { disable: true } }
        ${toApp}
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: before, namespace: default }
spec:
  virtualHost:
    domains: [before.test]
    options:
      extauth: { configRef: { name: apikey, namespace: default } }
      jwtStaged:
        beforeExtAuth:
          providers:
            local:${localProvider(14)}
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: after, namespace: default }
spec:
  virtualHost:
    domains: [after.test]
    options:
      extauth: { configRef: { name: apikey, namespace: default } }
      jwtStaged:
        afterExtAuth:
          providers:
            local:${localProvider(14)}
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: jwt-or-apikey, namespace: default }
spec:
  booleanExpr: jwt || apikey
  configs:
    - name: jwt
      jwt: {}
    - name: apikey
      apiKeyAuth: { apiKeySecretRefs: [{ name: client, namespace: default }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: either, namespace: default }
spec:
  virtualHost:
    domains: [either.test]
    options:
      extauth: { configRef: { name: jwt-or-apikey, namespace: default } }
      jwtStaged:
        beforeExtAuth:
          allowMissingOrFailedJwt: true
          providers:
            local:${localProvider(14)}
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: hmac, namespace: default }
spec:
  virtualHost:
    domains: [hmac.test]
    options:
      jwt:
        providers:
          shared:
            issuer: ${ISSUER}
            jwks: { local: { key: '${hmacJwks}' } }
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
`,
  });
  await gw.until('/open', (r) => r.status === 200, { host: 'local.test' }, 30_000);
  // the extauth service has its AuthConfig
  await gw.until('/x', (r) => r.status === 200, { host: 'after.test', headers: { ...(await bearer()), 'api-key': API_KEY } });
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
  await new Promise<void>((resolve) => (jwksServer ? jwksServer.close(() => resolve()) : resolve()));
});

describe('jwt: local JWKS', () => {
  it('passes a valid token and copies its claims to upstream headers; the token is not forwarded', async () => {
    const r = await gw.request('/pets', { host: 'local.test', headers: await bearer() });
    expect(r.status).toBe(200);
    const headers = r.json<{ headers: Record<string, string> }>().headers;
    expect(headers['x-sub']).toBe('alice');
    expect(headers['x-team']).toBe('dev');
    expect(headers['authorization']).toBeUndefined();
  });

  it('refuses a missing, expired, wrong-issuer or foreign-key token with 401, a wrong-audience one with 403', async () => {
    const missing = await gw.request('/pets', { host: 'local.test' });
    expect(missing.status).toBe(401);
    expect(missing.text).toBe('Jwt is missing');
    const past = Math.floor(Date.now() / 1000) - 3600;
    for (const s of [{ exp: past }, { iss: 'https://other.test' }, { key: stranger.privateKey }] satisfies Sign[]) {
      expect((await gw.request('/pets', { host: 'local.test', headers: await bearer(s) })).status).toBe(401);
    }
    // Envoy (so Gloo too) answers a token for another audience with 403
    const aud = await gw.request('/pets', { host: 'local.test', headers: await bearer({ aud: 'web' }) });
    expect(aud.status).toBe(403);
    expect(aud.text).toBe('Audiences in Jwt are not allowed');
    expect((await gw.request('/pets', { host: 'local.test', headers: { authorization: 'Bearer not.a.jwt' } })).status).toBe(401);
  });

  it('a client cannot forge a claim header: the claim replaces it', async () => {
    const r = await gw.request('/pets', { host: 'local.test', headers: { ...(await bearer()), 'x-sub': 'mallory' } });
    expect(r.status).toBe(200);
    expect(r.json<{ headers: Record<string, string> }>().headers['x-sub']).toBe('alice');
  });

  it('route jwt.disable turns verification off', async () => {
    expect((await gw.request('/open', { host: 'local.test' })).status).toBe(200);
  });
});

describe('jwt: remote JWKS through an Upstream', () => {
  it('fetches the keys from the JWKS server and verifies a token read from a custom header', async () => {
    const token = await sign({ key: remote.privateKey, alg: 'RS256' });
    const r = await gw.request('/pets', { host: 'remote.test', headers: { 'x-token': token } });
    expect(r.status).toBe(200);
    expect(r.json<{ headers: Record<string, string> }>().headers['x-token']).toBe(token); // keepToken
    expect(jwksFetches).toBeGreaterThan(0);
    // the default source (Authorization: Bearer) is not read when tokenSource names headers
    expect((await gw.request('/pets', { host: 'remote.test', headers: { authorization: `Bearer ${token}` } })).status).toBe(401);
    expect((await gw.request('/pets', { host: 'remote.test', headers: { 'x-token': await sign({}) } })).status).toBe(401);
  });
});

describe('jwt: allowMissingOrFailedJwt', () => {
  it('lets a request without a token, or with a bad one, through; a good one still gets its claims', async () => {
    expect((await gw.request('/pets', { host: 'lenient.test' })).status).toBe(200);
    const bad = await gw.request('/pets', { host: 'lenient.test', headers: await bearer({ iss: 'https://other.test' }) });
    expect(bad.status).toBe(200);
    expect(bad.json<{ headers: Record<string, string> }>().headers['x-sub']).toBeUndefined();
    const good = await gw.request('/pets', { host: 'lenient.test', headers: await bearer() });
    expect(good.json<{ headers: Record<string, string> }>().headers['x-sub']).toBe('alice');
  });
});

describe('rbac: claims, path prefix, methods', () => {
  it('allows a token with the right claim on GET under the prefix, refuses the rest with 403', async () => {
    const dev = await bearer();
    expect((await gw.request('/api/pets/1', { host: 'rbac.test', headers: dev })).status).toBe(200);
    const ops = await gw.request('/api/pets/1', { host: 'rbac.test', headers: await bearer({ claims: { team: 'ops' } }) });
    expect(ops.status).toBe(403);
    expect(ops.text).toBe('RBAC: access denied');
    expect((await gw.request('/api/pets/1', { host: 'rbac.test', method: 'POST', headers: dev })).status).toBe(403);
    expect((await gw.request('/api/other', { host: 'rbac.test', headers: dev })).status).toBe(403);
    // no token: the JWT filter answers first
    expect((await gw.request('/api/pets/1', { host: 'rbac.test' })).status).toBe(401);
  });

  it('matches nested claims and list members', async () => {
    const nested = await bearer({ claims: { team: 'ops', org: { role: 'admin' } } });
    expect((await gw.request('/admin/x', { host: 'rbac.test', method: 'DELETE', headers: nested })).status).toBe(200);
    const listed = await bearer({ claims: { team: 'ops', groups: ['users', 'admins'] } });
    expect((await gw.request('/admin/x', { host: 'rbac.test', headers: listed })).status).toBe(200);
    const neither = await bearer({ claims: { team: 'ops', org: { role: 'user' }, groups: ['users'] } });
    expect((await gw.request('/admin/x', { host: 'rbac.test', headers: neither })).status).toBe(403);
  });

  it('a route with rbac.disable needs only a valid token', async () => {
    expect((await gw.request('/static/a.css', { host: 'rbac.test', headers: await bearer({ claims: { team: 'ops' } }) })).status).toBe(200);
  });
});

describe('stages: before and after ext_authz', () => {
  it('beforeExtAuth: the JWT is checked first, then the API key', async () => {
    const noJwt = await gw.request('/x', { host: 'before.test', headers: { 'api-key': API_KEY } });
    expect(noJwt.status).toBe(401);
    expect(noJwt.text).toBe('Jwt is missing');
    const noKey = await gw.request('/x', { host: 'before.test', headers: await bearer() });
    expect(noKey.status).toBe(401);
    expect(JSON.parse(noKey.text)).toEqual({ error: 'missing_api_key' });
    expect((await gw.request('/x', { host: 'before.test', headers: { ...(await bearer()), 'api-key': API_KEY } })).status).toBe(200);
  });

  it('afterExtAuth: the API key is checked first, then the JWT', async () => {
    const neither = await gw.request('/x', { host: 'after.test' });
    expect(neither.status).toBe(401);
    expect(JSON.parse(neither.text)).toEqual({ error: 'missing_api_key' });
    const noJwt = await gw.request('/x', { host: 'after.test', headers: { 'api-key': API_KEY } });
    expect(noJwt.status).toBe(401);
    expect(noJwt.text).toBe('Jwt is missing');
    expect((await gw.request('/x', { host: 'after.test', headers: { ...(await bearer()), 'api-key': API_KEY } })).status).toBe(200);
  });
});

describe("Gloo's jwt AuthConfig step", () => {
  it('jwt || apikey: a JWT Envoy verified, or an API key, allows; neither (or a bad JWT) is denied by extauth', async () => {
    expect((await gw.request('/x', { host: 'either.test', headers: await bearer() })).status).toBe(200);
    expect((await gw.request('/x', { host: 'either.test', headers: { 'api-key': API_KEY } })).status).toBe(200);
    // allowMissingOrFailedJwt let these through Envoy's JWT filter; extauth finds no verified payload
    const neither = await gw.request('/x', { host: 'either.test' });
    expect(neither.status).toBe(401);
    const bad = await gw.request('/x', { host: 'either.test', headers: await bearer({ key: stranger.privateKey }) });
    expect(bad.status).toBe(401);
    const expired = await gw.request('/x', { host: 'either.test', headers: await bearer({ exp: Math.floor(Date.now() / 1000) - 600 }) });
    expect(expired.status).toBe(401);
  });
});

describe('jwt: a symmetric key', () => {
  it('verifies an HS256 token, and the shared secret appears nowhere Legate shows: served config, the Proxy, logs', async () => {
    const hs = await new SignJWT({ sub: 'bob' }).setProtectedHeader({ alg: 'HS256', kid: 'h1' }).setIssuer(ISSUER).sign(hmacSecret);
    expect((await gw.request('/x', { host: 'hmac.test', headers: { authorization: `Bearer ${hs}` } })).status).toBe(200);
    expect((await gw.request('/x', { host: 'hmac.test', headers: await bearer() })).status).toBe(401);
    const served = await (await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/served`)).text();
    expect(served).toContain('local_jwks');
    const proxies = await (await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/resources?kind=Proxy`)).text();
    expect(proxies).toContain('localJwks');
    const secret = hmacSecret.toString('base64url');
    for (const text of [served, proxies, gw.log('controller')]) expect(text).not.toContain(secret);
  });
});

describe('status', () => {
  it('every resource is accepted', () => {
    for (const vs of ['before', 'after', 'local', 'remote', 'lenient', 'rbac', 'hmac']) {
      const got = JSON.parse(gw.ctl('get', 'virtualservice', vs, '-n', 'default', '-o', 'json').stdout);
      const status = got.status.statuses['legate-system'];
      expect(status.state, vs).toBe('Accepted');
      expect(status.reason, vs).toBeUndefined();
    }
  });
});

// last: with RBAC required, the VirtualServices above without rbac are Warnings
describe('Settings rbac.requireRbac', () => {
  it('refuses (403) what no rbac option allows; rbac policies and rbac.disable still decide where set', async () => {
    gw.write(
      'require-rbac.yaml',
      'apiVersion: gloo.solo.io/v1\nkind: Settings\nmetadata: { name: default, namespace: gloo-system }\n' +
        'spec:\n  rbac:\n    requireRbac: true\n',
    );
    try {
      await gw.until('/open', (r) => r.status === 403, { host: 'local.test' }, 30_000);
      const denied = await gw.request('/pets', { host: 'local.test', headers: await bearer() });
      expect(denied.status).toBe(403);
      expect(denied.text).toBe('RBAC: access denied');
      expect((await gw.request('/api/pets/1', { host: 'rbac.test', headers: await bearer() })).status).toBe(200);
      expect((await gw.request('/api/pets/1', { host: 'rbac.test', headers: await bearer({ claims: { team: 'ops' } }) })).status).toBe(403);
      expect((await gw.request('/static/a.css', { host: 'rbac.test', headers: await bearer({ claims: { team: 'ops' } }) })).status).toBe(
        200,
      );
      const local = (): { state: string; reason?: string } =>
        JSON.parse(gw.ctl('get', 'virtualservice', 'local', '-n', 'default', '-o', 'json').stdout).status.statuses['legate-system'];
      await expect.poll(() => local().state, { timeout: 10_000 }).toBe('Warning');
      expect(local().reason).toContain('Settings rbac.requireRbac is true');
    } finally {
      gw.remove('require-rbac.yaml');
    }
    await gw.until('/open', (r) => r.status === 200, { host: 'local.test' }, 30_000);
  });
});
