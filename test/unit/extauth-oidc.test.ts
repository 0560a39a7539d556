// The browser login step through the Authorizer, against the demo provider (discovery, no browser): the
// answers it shapes (a 302 with PKCE and a state cookie, logout, failOnRedirect's 401), and that cookies it
// did not seal open nothing. The whole flow in a browser: test/e2e/auth-oidc.test.ts.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AuthConfigConfig, CodeFlowStepConfig } from '../../common/auth-config.js';
import { CodeFlowStepSchema } from '../../common/auth-config.js';
import { createLogger } from '../../common/log.js';
import { DEFAULT_CLIENTS, startProvider, webClient, type RunningProvider } from '../../examples/apps/oauth-provider.mjs';
import { Authorizer, type EdgeGrant, type Outcome } from '../../extensions/extauth/authorizer.js';
import { sealCookieSession } from '../../extensions/extauth/steps/oauth2-code.js';
import { PlainRequest } from '../../extensions/extauth/request.js';

let provider: RunningProvider;
let authz: Authorizer;
const lines: string[] = [];
const KEY = Buffer.alloc(32, 7).toString('base64');

function step(extra: Partial<CodeFlowStepConfig> = {}): CodeFlowStepConfig {
  return CodeFlowStepSchema.parse({
    type: 'oauth2-code',
    flow: 'oidc',
    clientId: 'legate-web',
    clientSecret: 'legate-web-secret',
    issuerUrl: provider.issuer,
    appUrl: 'http://app.test/',
    callbackPath: '/callback',
    logoutPath: '/logout',
    afterLogoutUrl: 'http://app.test/bye',
    scopes: ['email'],
    session: { store: 'cookie', cookieName: '__session', cookieKey: KEY, allowRefreshing: false, cookie: { secure: false } },
    ...extra,
  });
}

const config = (name: string, s: CodeFlowStepConfig): AuthConfigConfig => ({ name, steps: [s] });

async function check(configId: string, path: string, cookie?: string): Promise<{ outcome: Outcome; grant: EdgeGrant }> {
  const grant: EdgeGrant = { key: '', until: 0 };
  const request = new PlainRequest({
    configId,
    method: 'GET',
    scheme: 'http',
    host: 'app.test',
    path,
    headers: cookie ? { cookie } : {},
  });
  const outcome = await authz.checkRequest(request, grant);
  return { outcome, grant };
}

const header = (grant: EdgeGrant, name: string): string[] =>
  (grant.answer?.denial?.headers ?? []).filter((h) => h.name === name).map((h) => h.value);

beforeAll(async () => {
  provider = await startProvider({
    port: 0,
    quiet: true,
    clients: [...DEFAULT_CLIENTS.filter((c) => !c.web), webClient(['http://app.test/callback'])],
  });
  authz = new Authorizer({ logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }) });
  const problems = authz.apply([config('ns.web', step()), config('ns.api', step({ failOnRedirect: true }))]).problems;
  expect(problems).toEqual([]);
});

afterAll(async () => {
  authz?.stop();
  await provider?.stop();
});

describe('browser login step', () => {
  it('redirects a request without a session to the provider, with PKCE, state, nonce and a sealed state cookie', async () => {
    const { outcome, grant } = await check('ns.web', '/orders?page=2');
    expect(outcome).toBe('redirect');
    expect(grant.answer?.denial?.status).toBe(302);
    const location = new URL(header(grant, 'location')[0]!);
    expect(`${location.origin}${location.pathname}`).toBe(`${provider.issuer}/auth`);
    const q = location.searchParams;
    expect(q.get('response_type')).toBe('code');
    expect(q.get('client_id')).toBe('legate-web');
    expect(q.get('redirect_uri')).toBe('http://app.test/callback');
    expect(q.get('scope')).toBe('openid email');
    expect(q.get('code_challenge_method')).toBe('S256');
    expect(q.get('code_challenge')).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(q.get('state')).toBeTruthy();
    expect(q.get('nonce')).toBeTruthy();
    const [state] = header(grant, 'set-cookie');
    expect(state).toMatch(/^__session_state=[A-Za-z0-9_-]+; Path=\/; Max-Age=600; HttpOnly; SameSite=Lax$/);
    // the state cookie holds nothing readable
    expect(state).not.toContain(q.get('state')!);
  });

  it('does not open a cookie it did not seal: a forged or tampered session is a new login', async () => {
    expect((await check('ns.web', '/orders', '__session=eyJhY2Nlc3NUb2tlbiI6IngiLCJleHBpcmVzQXQiOjk5OTk5OTk5OTk5OTl9')).outcome).toBe(
      'redirect',
    );
    expect((await check('ns.web', '/orders', `__session=${'A'.repeat(200)}`)).outcome).toBe('redirect');
  });

  it('starts over on a callback without a login in progress', async () => {
    const { outcome, grant } = await check('ns.web', '/callback?code=abc&state=forged');
    expect(outcome).toBe('redirect');
    expect(header(grant, 'location')[0]).toContain(`${provider.issuer}/auth?`);
  });

  it("logs out: the session cookie expired, then the provider's end-session endpoint, back to afterLogoutUrl", async () => {
    const { outcome, grant } = await check('ns.web', '/logout', '__session=x');
    expect(outcome).toBe('redirect');
    const location = new URL(header(grant, 'location')[0]!);
    // the discovered end_session_endpoint (RP-initiated logout); no id_token_hint without a session that opens
    expect(`${location.origin}${location.pathname}`).toBe(`${provider.issuer}/session/end`);
    expect(Object.fromEntries(location.searchParams)).toEqual({ client_id: 'legate-web', post_logout_redirect_uri: 'http://app.test/bye' });
    expect(header(grant, 'set-cookie')[0]).toMatch(/^__session=; Path=\/; Max-Age=0/);
  });

  it('endSessionProperties PostMethod: extauth posts the end-session request itself, the browser goes to afterLogoutUrl', async () => {
    const posted: string[] = [];
    const sink = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        posted.push(`${req.method} ${body}`);
        res.writeHead(200).end();
      });
    });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
    const endSessionEndpoint = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/logout`;
    authz.apply([
      config('ns.web', step()),
      config('ns.api', step({ failOnRedirect: true })),
      config('ns.post', step({ endSessionEndpoint, endSessionMethod: 'post' })),
    ]);
    const { outcome, grant } = await check('ns.post', '/logout', '__session=x');
    expect(outcome).toBe('redirect');
    expect(header(grant, 'location')).toEqual(['http://app.test/bye']);
    expect(posted).toEqual(['POST client_id=legate-web&post_logout_redirect_uri=http%3A%2F%2Fapp.test%2Fbye']);
    await new Promise<void>((r) => sink.close(() => r()));
  });

  it('marks cookies Secure on a request that came over TLS, even with notSecure', async () => {
    const grant: EdgeGrant = { key: '', until: 0 };
    await authz.checkRequest(new PlainRequest({ configId: 'ns.web', scheme: 'https', host: 'app.test', path: '/x' }), grant);
    expect(header(grant, 'set-cookie')[0]).toContain('; Secure');
  });

  it('answers 401 instead of redirecting with failOnRedirect', async () => {
    const { outcome, grant } = await check('ns.api', '/orders');
    expect(outcome).toBe('redirect');
    expect(grant.answer?.denial?.status).toBe(401);
    expect(grant.answer?.denial?.body).toBe('{"error":"login_required"}');
  });

  it('plain OAuth2: the configured endpoints, no discovery, no openid scope or nonce', async () => {
    const plain = new Authorizer({ logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }) });
    try {
      const s = step({
        flow: 'oauth2',
        authEndpoint: 'https://github.example/login/oauth/authorize',
        tokenEndpoint: 'https://github.example/login/oauth/access_token',
        scopes: ['read:user'],
      });
      delete s.issuerUrl;
      expect(plain.apply([config('ns.plain', s)]).problems).toEqual([]);
      const grant: EdgeGrant = { key: '', until: 0 };
      const outcome = await plain.checkRequest(new PlainRequest({ configId: 'ns.plain', host: 'app.test', path: '/x' }), grant);
      expect(outcome).toBe('redirect');
      const location = new URL(header(grant, 'location')[0]!);
      expect(`${location.origin}${location.pathname}`).toBe('https://github.example/login/oauth/authorize');
      expect(location.searchParams.get('scope')).toBe('read:user');
      expect(location.searchParams.get('nonce')).toBeNull();
      expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    } finally {
      plain.stop();
    }
  });

  it('denies as unavailable, with the reason logged, while the provider cannot be discovered', async () => {
    const down = new Authorizer({ logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }) });
    try {
      down.apply([config('ns.down', { ...step(), issuerUrl: 'http://127.0.0.1:1/' })]);
      const grant: EdgeGrant = { key: '', until: 0 };
      const outcome = await down.checkRequest(new PlainRequest({ configId: 'ns.down', host: 'app.test', path: '/x' }), grant);
      expect(outcome).toBe('unavailable');
      expect(lines.some((l) => l.includes('OIDC discovery failed'))).toBe(true);
    } finally {
      down.stop();
    }
  });
});

describe('browser login step: edge grants (docs/wasm.md)', () => {
  const idToken = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0.c2ln';
  const cookie = (expiresAt: number, name = '__session'): string =>
    `${name}=${sealCookieSession(KEY, name, { idToken, accessToken: 'at', expiresAt })}`;
  let edge: Authorizer;
  beforeAll(() => {
    edge = new Authorizer({ logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }) });
    const headers = { idTokenHeader: 'x-id-token', useBearerSchemaForAuthorization: false };
    const problems = edge.apply([
      { name: 'ns.edge', version: 'v1', steps: [step({ headers })] },
      { name: 'ns.meta', version: 'v1', steps: [step({ headers, dynamicMetadataFromClaims: { user: 'sub' } })] },
      { name: 'ns.regex', version: 'v1', steps: [step({ headers, callbackPath: '/cb.*', callbackPathIsRegex: true })] },
      { name: 'ns.noversion', steps: [step({ headers })] },
    ]).problems;
    expect(problems).toEqual([]);
  });
  afterAll(() => edge?.stop());

  async function edgeCheck(configId: string, path: string, c?: string): Promise<{ outcome: Outcome; grant: EdgeGrant }> {
    const grant: EdgeGrant = { key: '', until: 0 };
    const req = new PlainRequest({ configId, method: 'GET', scheme: 'http', host: 'app.test', path, headers: c ? { cookie: c } : {} });
    return { outcome: await edge.checkRequest(req, grant), grant };
  }

  it('grants a logged-in request keyed on the session cookie, with the ID token header, until the session needs a refresh', async () => {
    const now = Date.now();
    const { outcome, grant } = await edgeCheck('ns.edge', '/orders', cookie(now + 120_000));
    expect(outcome).toBe('allow');
    expect(grant.key).toBe('ns.edge@v1');
    expect(grant.credential).toBe('cookie:__session');
    expect(grant.headers).toBe(`x-id-token\0${idToken}`);
    expect(grant.answer?.upstreamHeaders).toEqual([{ name: 'x-id-token', value: idToken }]);
    // the session's expiry less preExpiryBuffer (2 s)
    expect(grant.until).toBeGreaterThan(now + 117_000);
    expect(grant.until).toBeLessThanOrEqual(now + 118_000 + 1000);
    // a long session: at most 10 minutes
    const long = await edgeCheck('ns.edge', '/orders', cookie(now + 86_400_000));
    expect(long.grant.until).toBeLessThanOrEqual(Date.now() + 600_000);
  });

  it('grants nothing for a session that needs a refresh, the callback, the logout, or a login', async () => {
    const expiring = await edgeCheck('ns.edge', '/orders', cookie(Date.now() + 1000));
    expect(expiring.outcome).toBe('redirect');
    expect(expiring.grant.until).toBe(0);
    const c = cookie(Date.now() + 120_000);
    for (const path of ['/logout', '/callback?code=x&state=y', '/callback']) {
      const r = await edgeCheck('ns.edge', path, c);
      expect(r.outcome, path).toBe('redirect');
      expect(r.grant.until, path).toBe(0);
    }
    expect((await edgeCheck('ns.edge', '/orders')).grant.until).toBe(0);
  });

  it('grants nothing when a hit could not reproduce the answer, or the filter could not match the callback', async () => {
    const c = cookie(Date.now() + 120_000);
    for (const id of ['ns.meta', 'ns.regex', 'ns.noversion']) {
      const r = await edgeCheck(id, '/orders', c);
      expect(r.outcome, id).toBe('allow');
      expect(r.grant.until, id).toBe(0);
      expect(r.grant.key, id).toBe('');
    }
  });
});
