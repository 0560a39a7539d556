// Browser login (OIDC authorization code) with what it depends on taken away: the Redis that holds the sessions
// (paused, so every call hangs; then killed and started again empty) and the OIDC provider (stopped while a
// session needs a refresh). Protected requests are denied (403 temporarily_unavailable), extauth logs why and
// never the session id or a token, and service comes back with the dependency, with no restart of anything.
// A real chromium logs in (the demo provider's form); the checks then replay its session cookie. Skipped where
// chromium or redis-server is missing.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
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
import { figure } from './figures.js';
import { componentPid } from './procs.js';

const ITEM = 'oidc-faults';
const REDIS = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
const ID_TOKEN_TTL = 4;

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

const startProviderOn = (port: number): Promise<RunningProvider> =>
  startProvider({
    port,
    store,
    jwks,
    quiet: true,
    idTokenTtlSeconds: ID_TOKEN_TTL,
    clients: [...DEFAULT_CLIENTS.filter((c) => !c.web), webClient([`${base}/callback`, `${base}/r/callback`], 'secretvalue', 'gloo')],
  });

function startRedis(): ChildProcess {
  return spawn(REDIS, ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', redisDir], {
    stdio: 'ignore',
  });
}

const redisUp = (): boolean => spawnSync('redis-cli', ['-p', String(redisPort), 'PING'], { encoding: 'utf8' }).stdout.trim() === 'PONG';

/** Gloo's documented AuthConfig (the Dex guide) pointed at this test's provider, with `session`. */
const authConfig = (name: string, callback: string, session: string): string => `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: ${name}, namespace: gloo-system }
spec:
  configs:
  - oauth2:
      oidcAuthorizationCode:
        appUrl: ${base}/
        callbackPath: ${callback}
        clientId: gloo
        clientSecretRef: { name: oauth, namespace: gloo-system }
        issuerUrl: http://127.0.0.1:${provider.port}/
        scopes: [email]
        session:
${session}`;

async function login(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector('input[name="login"]', { timeout: 15_000 });
  await page.fill('input[name="login"]', 'alice');
  await page.fill('input[name="password"]', 'any');
  await Promise.all([page.waitForURL((u) => u.toString().startsWith(base), { timeout: 15_000 }), page.click('button[type="submit"]')]);
}

/** A session cookie of a browser that logged in at `url`. */
async function sessionCookie(url: string, name: string): Promise<string> {
  const ctx = await browser.newContext();
  const page = await ctx.newPage();
  await login(page, url);
  expect(page.url()).toBe(url);
  const value = (await ctx.cookies()).find((c) => c.name === name)?.value ?? '';
  await ctx.close();
  expect(value).not.toBe('');
  return value;
}

async function timed(p: string, cookie: string): Promise<{ status: number; ms: number; text: string }> {
  const t = performance.now();
  const r = await gw.request(p, { headers: { cookie } });
  return { status: r.status, ms: Math.round(performance.now() - t), text: r.text };
}

const skip = browserPath() === undefined || !REDIS;

describe.skipIf(skip)('browser login: its dependencies down', () => {
  beforeAll(async () => {
    app = await startEcho('app');
    gw = await startGateway({
      // extauth's own behaviour is what is measured: with Envoy's edge cache on, a session extauth allowed in the
      // last minute keeps being served while Redis is down (as a cached token is while its provider is)
      'settings.yaml': `
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    bearerCheck: { enabled: true, cacheEntries: 0 }
`,
      'app.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
`,
    });
    base = `http://127.0.0.1:${gw.ports.http}`;
    provider = await startProviderOn(0);
    redisPort = await freePort();
    redisDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-faults-redis-'));
    redis = startRedis();
    await eventually('redis to answer', () => (redisUp() ? true : undefined), 20_000);
    gw.write(
      'auth.yaml',
      `
apiVersion: v1
kind: Secret
type: extauth.solo.io/oauth
metadata: { name: oauth, namespace: gloo-system }
data:
  client-secret: Y2xpZW50U2VjcmV0OiBzZWNyZXR2YWx1ZQo=
---
${authConfig(
  'oidc-cookie',
  '/callback',
  `          cookieOptions: { notSecure: true }
          cookie: { allowRefreshing: true }`,
)}
---
${authConfig(
  'oidc-redis',
  '/r/callback',
  `          cookieOptions: { notSecure: true }
          redis:
            cookieName: redis-session
            options: { host: '127.0.0.1:${redisPort}' }`,
)}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: app, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
    - matchers: [{ prefix: /public }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options: { extauth: { disable: true } }
    - matchers: [{ prefix: /r/ }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options: { extauth: { configRef: { name: oidc-redis, namespace: gloo-system } } }
    - matchers: [{ prefix: / }]
      routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
      options: { extauth: { configRef: { name: oidc-cookie, namespace: gloo-system } } }
`,
    );
    await gw.until('/public', (r) => r.status === 200, {}, 30_000);
    await gw.until('/r/x', (r) => r.status === 302 && (r.headers.get('location') ?? '').startsWith(provider.issuer), {}, 30_000);
    await gw.until('/x', (r) => r.status === 302, {}, 30_000);
    browser = await launchBrowser();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await gw?.stop();
    await provider?.stop();
    await app?.close();
    if (redis) {
      redis.kill('SIGCONT');
      await stopProcess(redis);
    }
    if (redisDir) fs.rmSync(redisDir, { recursive: true, force: true });
  });

  it('Redis paused: denied within the timeout, logged without the session id; the session works again on resume', async () => {
    const id = await sessionCookie(`${base}/r/orders`, 'redis-session');
    const cookie = `redis-session=${id}`;
    expect((await gw.request('/r/orders', { headers: { cookie } })).status).toBe(200);
    const extauthPid = componentPid(gw, 'extauth');
    redis!.kill('SIGSTOP');
    const denials = [];
    for (let i = 0; i < 3; i++) denials.push(await timed('/r/orders', cookie));
    // a visitor without a session cannot start a login either (its state goes to Redis)
    const fresh = await timed('/r/orders', '');
    redis!.kill('SIGCONT');
    const t = performance.now();
    await gw.until('/r/orders', (r) => r.status === 200, { headers: { cookie } }, 20_000);
    const recoveredMs = Math.round(performance.now() - t);
    figure(ITEM, 'redis paused: denials', [...denials, fresh].map((d) => d.status).join(', '));
    figure(ITEM, 'redis paused: slowest denial', Math.max(...denials.map((d) => d.ms), fresh.ms), 'ms');
    figure(ITEM, 'redis paused: session served again after resume', recoveredMs, 'ms');
    for (const d of [...denials, fresh]) {
      expect(d.status).toBe(403);
      expect(d.text).toContain('temporarily_unavailable');
      expect(d.ms).toBeLessThan(6000);
    }
    // the cookie-session config does not need Redis
    expect((await gw.request('/public/x')).status).toBe(200);
    expect(componentPid(gw, 'extauth')).toBe(extauthPid);
    const log = gw.log('extauth');
    expect(log).toContain('session redis');
    expect(log).not.toContain(id);
  }, 90_000);

  it('Redis killed: denied fast; started again (empty), a new login starts without a restart', async () => {
    const id = await sessionCookie(`${base}/r/orders`, 'redis-session');
    const cookie = `redis-session=${id}`;
    const extauthPid = componentPid(gw, 'extauth');
    await stopProcess(redis!);
    const denials = [];
    for (let i = 0; i < 3; i++) denials.push(await timed('/r/orders', cookie));
    redis = startRedis();
    const t = performance.now();
    // the sessions were in memory only: the old cookie now starts a new login (a 302 to the provider)
    await gw.until('/r/orders', (r) => r.status === 302, { headers: { cookie } }, 20_000);
    const recoveredMs = Math.round(performance.now() - t);
    figure(ITEM, 'redis killed: denials', denials.map((d) => d.status).join(', '));
    figure(ITEM, 'redis killed: slowest denial', Math.max(...denials.map((d) => d.ms)), 'ms');
    figure(ITEM, 'redis restarted: logins served again after', recoveredMs, 'ms');
    for (const d of denials) {
      expect(d.status).toBe(403);
      expect(d.ms).toBeLessThan(3000);
    }
    expect(componentPid(gw, 'extauth')).toBe(extauthPid);
    expect(gw.log('extauth')).not.toContain(id);
    // and a full login works again
    await sessionCookie(`${base}/r/again`, 'redis-session');
  }, 90_000);

  it('OIDC provider down: a session that needs a refresh is denied, logged without a token; served again once it is back', async () => {
    const value = await sessionCookie(`${base}/owners`, '__session');
    const cookie = `__session=${value}`;
    const extauthPid = componentPid(gw, 'extauth');
    const port = provider.port;
    await provider.stop();
    // the ID token expires: the refresh needs the provider
    await sleep(ID_TOKEN_TTL * 1000 + 500);
    const denials = [];
    for (let i = 0; i < 3; i++) denials.push(await timed('/owners', cookie));
    provider = await startProviderOn(port);
    const t = performance.now();
    await gw.until('/owners', (r) => r.status === 200, { headers: { cookie } }, 20_000);
    const recoveredMs = Math.round(performance.now() - t);
    figure(ITEM, 'provider down: denials', denials.map((d) => d.status).join(', '));
    figure(ITEM, 'provider down: slowest denial', Math.max(...denials.map((d) => d.ms)), 'ms');
    figure(ITEM, 'provider: refreshed session served again after it came back', recoveredMs, 'ms');
    for (const d of denials) {
      expect(d.status).toBe(403);
      expect(d.text).toContain('temporarily_unavailable');
      expect(d.ms).toBeLessThan(6000);
    }
    expect(componentPid(gw, 'extauth')).toBe(extauthPid);
    const log = gw.log('extauth');
    expect(log).toContain('browser login failed; denying');
    expect(log).not.toContain(value);
  }, 90_000);
});
