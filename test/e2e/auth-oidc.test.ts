// Browser login end to end: a real chromium -> Envoy (ext_authz) -> Legate's extauth, OIDC authorization code
// with PKCE against a real provider (oidc-provider with its login form) -> the app (an echo upstream). The
// AuthConfig is Gloo's documented one (Dex guide) with the provider's address, plus the fields this test
// exercises: the ID token header, logout (ending the provider's session too), refresh. A second AuthConfig keeps
// its sessions in a real redis-server; a third is Gloo's OPA guide ("Validate JWTs with Open Policy Agent": the
// OIDC step, then an opaAuth policy on input.state.jwt); a fourth authenticates the client by privateKeyJwt (a
// client assertion signed with the key of a Secret, which the provider verifies with the client's registered public
// key). Skipped where chromium is not installed.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_CLIENTS,
  createStore,
  signingKeys,
  startProvider,
  webClient,
  type RunningProvider,
} from '../../examples/apps/oauth-provider.mjs';
import { browserPath, launchBrowser } from '../support/browser.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort, sleep, stopProcess } from '../support/util.js';

const REDIS = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
const OPA = process.env['LEGATE_OPA'] || path.join(process.cwd(), '.cache/opa/bin/opa');
const HAS_OPA = fs.existsSync(OPA);
const ID_TOKEN_TTL = 6;

let gw: Gateway;
let app: EchoUpstream;
let provider: RunningProvider;
let browser: Browser;
let redis: ChildProcess | undefined;
let redisDir = '';
let redisPort = 0;
let base = '';
const store = createStore();
const jwks = signingKeys();
/** the private_key_jwt client's key pair: the private key in a Secret, the public one registered at the provider */
const clientKey = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const clientPem = clientKey.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();

/** Gloo's documented AuthConfig (the Dex guide), pointed at this test's provider, plus `extra` fields. */
const authConfig = (name: string, extra: string) => `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata:
  name: ${name}
  namespace: gloo-system
spec:
  configs:
  - oauth2:
      oidcAuthorizationCode:
        appUrl: ${base}/
        callbackPath: /callback
        clientId: gloo
        clientSecretRef:
          name: oauth
          namespace: gloo-system
        issuerUrl: http://127.0.0.1:${provider.port}/
        scopes:
        - email
${extra}`;

const startProviderOn = (port: number): Promise<RunningProvider> =>
  startProvider({
    port,
    store,
    jwks,
    quiet: true,
    idTokenTtlSeconds: ID_TOKEN_TTL,
    clients: [
      ...DEFAULT_CLIENTS.filter((c) => !c.web),
      webClient([`${base}/callback`, `${base}/r/callback`, `${base}/opa/callback`], 'secretvalue', 'gloo', [`${base}/public/bye`]),
      {
        ...webClient([`${base}/k/callback`], '', 'gloo-pkjwt'),
        jwks: { keys: [{ ...clientKey.publicKey.export({ format: 'jwk' }), use: 'sig', alg: 'ES256' }] },
      },
    ],
  });

async function login(page: Page, url: string, user = 'alice'): Promise<void> {
  await page.goto(url);
  // oidc-provider's login form (any user, any password)
  await page.waitForSelector('input[name="login"]', { timeout: 15_000 });
  await page.fill('input[name="login"]', user);
  await page.fill('input[name="password"]', 'any');
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(base), { timeout: 15_000 }), page.click('button[type="submit"]')]);
}

/** The echo upstream's answer shown in the page. */
async function echoed(page: Page): Promise<{ upstream: string; path: string; headers: Record<string, string> }> {
  return JSON.parse((await page.textContent('body')) ?? '{}') as { upstream: string; path: string; headers: Record<string, string> };
}

/** An Envoy counter (0 when absent): ext_authz calls, credential-check's edge-cache hits. */
async function stat(name: string): Promise<number> {
  const filter = encodeURIComponent(`^${name.replace(/\./g, '\\.')}$`);
  const m = /: (\d+)/.exec(await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${filter}`)).text());
  return m ? Number(m[1]) : 0;
}
const EXT_AUTHZ_CALLS = 'cluster.legate-extauth.upstream_rq_total';
const EDGE_HITS = 'wasmcustom.legate_credential_check_hits';

const skip = browserPath() === undefined;

beforeAll(async () => {
  if (skip) return;
  app = await startEcho('app');
  gw = await startGateway(
    {
      'app.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
`,
    },
    HAS_OPA ? { env: { LEGATE_OPA: OPA } } : {},
  );
  base = `http://127.0.0.1:${gw.ports.http}`;
  provider = await startProviderOn(0);
  if (REDIS) {
    redisPort = await freePort();
    redisDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-oidc-redis-'));
    redis = spawn(REDIS, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir], {
      stdio: 'ignore',
    });
  }
  gw.write(
    'auth.yaml',
    `
apiVersion: v1
kind: Secret
type: extauth.solo.io/oauth
metadata:
  name: oauth
  namespace: gloo-system
data:
  # The value is a base64 encoding of the following YAML:
  # client_secret: secretvalue
  # Gloo Edge expects OAuth client secrets in this format.
  client-secret: Y2xpZW50U2VjcmV0OiBzZWNyZXR2YWx1ZQo=
---
${authConfig(
  'oidc-dex',
  `        session:
          cookieOptions:
            notSecure: true
          cookie:
            allowRefreshing: true
        headers:
          idTokenHeader: x-id-token
        logoutPath: /logout
        afterLogoutUrl: ${base}/public/bye
`,
)}
---
${authConfig(
  'oidc-redis',
  `        session:
          cookieOptions:
            notSecure: true
          redis:
            cookieName: redis-session
            keyPrefix: 'legate-oidc:'
            options:
              host: 127.0.0.1:${redisPort || 1}
        headers:
          idTokenHeader: x-id-token
        logoutPath: /r/logout
        afterLogoutUrl: ${base}/public/bye
`,
).replace('callbackPath: /callback', 'callbackPath: /r/callback')}
---
# Gloo's OPA guide: the policy file check-jwt.rego and the multi-step AuthConfig (its oauth step as oauth2)
apiVersion: v1
kind: ConfigMap
metadata: { name: allow-jwt, namespace: gloo-system }
data:
  check-jwt.rego: |
    package test

    default allow = false

    allow {
        [header, payload, signature] = io.jwt.decode(input.state.jwt)
        payload["email"] = "admin@example.com"
    }
    allow {
        [header, payload, signature] = io.jwt.decode(input.state.jwt)
        payload["email"] = "user@example.com"
        not startswith(input.http_request.path, "/opa/owners")
    }
---
${authConfig(
  'jwt-opa',
  `        session:
          cookieOptions:
            notSecure: true
            path: /opa
          cookie:
            keyPrefix: opa
  - opaAuth:
      modules:
      - name: allow-jwt
        namespace: gloo-system
      query: "data.test.allow == true"
`,
).replace('callbackPath: /callback', 'callbackPath: /opa/callback')}
---
apiVersion: v1
kind: Secret
metadata: { name: client-key, namespace: gloo-system }
stringData:
  tls.key: |
${clientPem
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
---
${authConfig(
  'oidc-pkjwt',
  `        clientAuthentication:
          privateKeyJwt:
            signingKeyRef: { name: client-key, namespace: gloo-system }
            validFor: 30s
        session:
          cookieOptions:
            notSecure: true
            path: /k
          cookie:
            keyPrefix: pkjwt
        headers:
          idTokenHeader: x-id-token
`,
)
  .replace('callbackPath: /callback', 'callbackPath: /k/callback')
  .replace('clientId: gloo\n', 'clientId: gloo-pkjwt\n')
  .replace(/\n {8}clientSecretRef:\n {10}name: oauth\n {10}namespace: gloo-system/, '')}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: petclinic
  namespace: gloo-system
spec:
  virtualHost:
    domains:
    - '*'
    routes:
    - matchers: [{ prefix: /public }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options: { extauth: { disable: true } }
    - matchers: [{ prefix: /r/ }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options:
        extauth:
          configRef:
            name: oidc-redis
            namespace: gloo-system
    - matchers: [{ prefix: /k/ }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options:
        extauth:
          configRef:
            name: oidc-pkjwt
            namespace: gloo-system
    - matchers: [{ prefix: /opa/ }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options:
        extauth:
          configRef:
            name: jwt-opa
            namespace: gloo-system
    - matchers:
      - prefix: /
      routeAction:
        single:
          upstream: { name: app, namespace: gloo-system }
    options:
      extauth:
        configRef:
          name: oidc-dex
          namespace: gloo-system
`,
  );
  await gw.until('/public', (r) => r.status === 200, {}, 30_000);
  // the config is loaded once a protected page redirects to the provider
  await gw.until('/owners', (r) => r.status === 302 && (r.headers.get('location') ?? '').startsWith(provider.issuer), {}, 30_000);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await gw?.stop();
  await provider?.stop();
  await app?.close();
  if (redis) await stopProcess(redis);
  if (redisDir) fs.rmSync(redisDir, { recursive: true, force: true });
});

describe.skipIf(skip)('OIDC authorization code in a browser', () => {
  let context: BrowserContext;
  let page: Page;
  let firstIdToken = '';

  it('redirects a protected page to the login form, and after the login shows the page with the ID token upstream', async () => {
    context = await browser.newContext();
    page = await context.newPage();
    const first = await fetch(`${base}/owners?x=1`, { redirect: 'manual' });
    expect(first.status).toBe(302);
    const location = new URL(first.headers.get('location')!);
    expect(location.origin).toBe(provider.issuer);
    expect(location.searchParams.get('code_challenge_method')).toBe('S256');
    expect(location.searchParams.get('scope')).toBe('openid email');
    expect(location.searchParams.get('redirect_uri')).toBe(`${base}/callback`);
    await login(page, `${base}/owners?x=1`);
    expect(page.url()).toBe(`${base}/owners?x=1`);
    const body = await echoed(page);
    expect(body.upstream).toBe('app');
    firstIdToken = body.headers['x-id-token'] ?? '';
    expect(firstIdToken.split('.')).toHaveLength(3);
    const claims = JSON.parse(Buffer.from(firstIdToken.split('.')[1]!, 'base64url').toString()) as Record<string, unknown>;
    expect(claims['sub']).toBe('alice');
    expect(claims['aud']).toBe('gloo');
    const cookie = (await context.cookies()).find((c) => c.name === '__session');
    expect(cookie?.httpOnly).toBe(true);
    expect(cookie?.sameSite).toBe('Lax');
    // the tokens are sealed: the cookie shows none of them
    expect(cookie?.value).not.toContain(firstIdToken.split('.')[1]!);
  });

  it('keeps the session on reload (the cookie), without another login', async () => {
    await page.reload();
    expect(page.url()).toBe(`${base}/owners?x=1`);
    expect((await echoed(page)).headers['x-id-token']).toBe(firstIdToken);
  });

  it('refreshes an expired ID token with the refresh token', async () => {
    await sleep(ID_TOKEN_TTL * 1000 + 500);
    await page.goto(`${base}/owners/2`);
    expect(page.url()).toBe(`${base}/owners/2`);
    const refreshed = (await echoed(page)).headers['x-id-token'] ?? '';
    expect(refreshed.split('.')).toHaveLength(3);
    expect(refreshed).not.toBe(firstIdToken);
    // the refreshed session, logged in: ext_authz answers its first request (and grants the edge cache until the
    // session needs a refresh again, ID token exp less 2 s), Envoy the next one, with the ID token header still set
    const cookie = `__session=${(await context.cookies()).find((c) => c.name === '__session')!.value}`;
    const calls = await stat(EXT_AUTHZ_CALLS);
    const hits = await stat(EDGE_HITS);
    const echoedToken = async (): Promise<string | undefined> => {
      const r = await gw.request('/owners/3', { headers: { cookie } });
      expect(r.status).toBe(200);
      return (JSON.parse(r.text) as { headers: Record<string, string> }).headers['x-id-token'];
    };
    expect(await echoedToken()).toBe(refreshed);
    expect(await echoedToken()).toBe(refreshed);
    // one Check for both at most (none when the browser's own next request, e.g. its favicon, was first)
    expect((await stat(EXT_AUTHZ_CALLS)) - calls).toBeLessThanOrEqual(1);
    expect((await stat(EDGE_HITS)) - hits).toBeGreaterThanOrEqual(1);
  });

  it('fails closed while the provider is down (reason logged, no token), and recovers without a restart', async () => {
    const cookie = (await context.cookies()).find((c) => c.name === '__session')!;
    const port = provider.port;
    await provider.stop();
    await sleep(ID_TOKEN_TTL * 1000 + 500);
    // the session needs a refresh and the provider is down: denied, not redirected
    const down = await gw.request('/owners', { headers: { cookie: `__session=${cookie.value}` } });
    expect(down.status).toBe(403);
    const log = gw.log('extauth');
    expect(log).toContain('browser login failed; denying');
    expect(log).not.toContain(cookie.value);
    provider = await startProviderOn(port);
    await gw.until('/owners', (r) => r.status === 200, { headers: { cookie: `__session=${cookie.value}` } }, 20_000);
  });

  it('logs out of Legate and of the provider (RP-initiated logout): the next visit asks for the login again', async () => {
    // the refresh above (a plain client's) rotated the refresh token: the browser logs in again
    await context.clearCookies();
    await login(page, `${base}/owners`);
    expect(page.url()).toBe(`${base}/owners`);
    // while the provider's session lives, a lost Legate session is a silent login (no form)
    const before = (await context.cookies()).filter((c) => c.name !== '__session');
    await context.clearCookies();
    await context.addCookies(before);
    await page.goto(`${base}/owners/silent`);
    expect(page.url()).toBe(`${base}/owners/silent`);
    // logout: Legate's cookie cleared, the browser sent to the provider's end_session_endpoint with id_token_hint
    const sent: string[] = [];
    page.on('request', (r) => sent.push(r.url()));
    await page.goto(`${base}/logout`);
    const endSession = new URL(sent.find((u) => u.startsWith(`${provider.issuer}/session/end`))!);
    expect(endSession.searchParams.get('post_logout_redirect_uri')).toBe(`${base}/public/bye`);
    expect(endSession.searchParams.get('id_token_hint')?.split('.')).toHaveLength(3);
    // oidc-provider asks to confirm, then sends the browser back to afterLogoutUrl
    await Promise.all([
      page.waitForURL(`${base}/public/bye`, { timeout: 15_000 }),
      page.click('button[name="logout"][value="yes"]', { timeout: 15_000 }),
    ]);
    expect((await context.cookies()).find((c) => c.name === '__session')).toBeUndefined();
    const after = await fetch(`${base}/owners`, { redirect: 'manual', headers: { cookie: '' } });
    expect(after.status).toBe(302);
    // the browser, logged in a moment ago (its session granted at the edge), is sent to the login again
    const again = await context.request.get(`${base}/owners`, { maxRedirects: 0 });
    expect(again.status()).toBe(302);
    expect(again.headers()['location']?.startsWith(provider.issuer)).toBe(true);
    // the provider's session is gone too: the next visit shows its login form again
    await page.goto(`${base}/owners`);
    await page.waitForSelector('input[name="login"]', { timeout: 15_000 });
    expect(page.url().startsWith(provider.issuer)).toBe(true);
    await context.close();
  });

  it.skipIf(!HAS_OPA)("Gloo's OIDC + OPA guide: the policy decides on the ID token in input.state.jwt", async () => {
    const admin = await browser.newContext();
    const a = await admin.newPage();
    await login(a, `${base}/opa/owners`, 'admin');
    expect(a.url()).toBe(`${base}/opa/owners`);
    expect((await echoed(a)).upstream).toBe('app');
    await admin.close();
    const user = await browser.newContext();
    const u = await user.newPage();
    await login(u, `${base}/opa/vets`, 'user');
    expect(u.url()).toBe(`${base}/opa/vets`);
    expect((await echoed(u)).upstream).toBe('app');
    const denied = await u.goto(`${base}/opa/owners`);
    expect(denied?.status()).toBe(403);
    await user.close();
  });

  it('privateKeyJwt: the code exchange authenticated by a client assertion the provider verifies, no client secret', async () => {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await login(p, `${base}/k/orders`);
    expect(p.url()).toBe(`${base}/k/orders`);
    const seen = await echoed(p);
    expect(seen.upstream).toBe('app');
    expect(seen.headers['x-id-token']?.split('.')).toHaveLength(3);
    await ctx.close();
  });

  it.skipIf(!REDIS)('keeps sessions in Redis: the cookie holds only an id, and logout deletes the session', async () => {
    const ctx = await browser.newContext();
    const p = await ctx.newPage();
    await login(p, `${base}/r/orders`);
    expect(p.url()).toBe(`${base}/r/orders`);
    expect((await echoed(p)).headers['x-id-token']?.split('.')).toHaveLength(3);
    const cookie = (await ctx.cookies()).find((c) => c.name === 'redis-session')!;
    expect(cookie.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const keys = spawnSync('redis-cli', ['-p', String(redisPort), 'KEYS', 'legate-oidc:*'], { encoding: 'utf8' }).stdout;
    expect(keys).toContain(`legate-oidc:${cookie.value}`);
    await p.reload();
    expect(p.url()).toBe(`${base}/r/orders`);
    // granted at the edge: the old id is answered by Envoy until the logout below ends the grant
    const hits = await stat(EDGE_HITS);
    expect((await gw.request('/r/orders', { headers: { cookie: `redis-session=${cookie.value}` } })).status).toBe(200);
    expect((await gw.request('/r/orders', { headers: { cookie: `redis-session=${cookie.value}` } })).status).toBe(200);
    expect((await stat(EDGE_HITS)) - hits).toBeGreaterThanOrEqual(1);
    await p.goto(`${base}/r/logout`);
    await Promise.all([
      p.waitForURL(`${base}/public/bye`, { timeout: 15_000 }),
      p.click('button[name="logout"][value="yes"]', { timeout: 15_000 }),
    ]);
    // the old id no longer opens a session: a new login starts
    const replay = await gw.request('/r/orders', { headers: { cookie: `redis-session=${cookie.value}` } });
    expect(replay.status).toBe(302);
    await ctx.close();
    await eventually('no session left in redis', () =>
      spawnSync('redis-cli', ['-p', String(redisPort), 'EXISTS', `legate-oidc:${cookie.value}`], { encoding: 'utf8' }).stdout.trim() === '0'
        ? true
        : undefined,
    );
  });
});
