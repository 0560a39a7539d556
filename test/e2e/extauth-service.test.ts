// The extauth service driven directly over gRPC (Authorization/Check, as Envoy calls it), against a
// real OAuth2 server (oidc-provider, examples/apps/oauth-provider.mjs) and the controller's real ADS
// server feeding it AuthConfigs. No Envoy: the gateway-level suite covers the filter wiring.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { ExtensionTypeUrls, encodeExtensionConfig, type AuthConfigConfig } from '../../common/contract.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { AdsServer } from '../../controller/xds/server.js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { startExtauthService, type RunningExtauthService } from '../../extensions/extauth/service.js';
import { createStore, startProvider, type RunningProvider } from '../../examples/apps/oauth-provider.mjs';
import { eventually, sleep } from '../support/util.js';

interface CheckResponseMsg {
  status?: { code?: number; message?: string };
  ok_response?: Record<string, unknown>;
  denied_response?: { status?: { code?: string | number }; headers?: Array<{ header: { key: string; value: string } }>; body?: string };
}

const lines: string[] = [];
const tokens = new Set<string>();
const store = createStore();
let provider: RunningProvider;
let shortProvider: RunningProvider;
let providerPort = 0;
let cache: SnapshotCache;
let ads: AdsServer;
let svc: RunningExtauthService;
let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;

const EXTAUTH = { clientId: 'legate-extauth', clientSecret: 'legate-extauth-secret' };
const DEMO = { clientId: 'legate-demo', clientSecret: 'legate-demo-secret' };

function step(introspectionUrl: string, cacheTimeoutMs: number, requiredScopes: string[]): AuthConfigConfig['steps'][number] {
  return { type: 'oauth2-introspection', introspectionUrl, ...EXTAUTH, cacheTimeoutMs, requiredScopes };
}

function publish(configs: AuthConfigConfig[]): void {
  cache.set(
    'extauth',
    new Map([[ExtensionTypeUrls.authConfig, configs.map((c) => ({ name: c.name, resource: c as unknown as Record<string, unknown> }))]]),
    {
      encoders: { [ExtensionTypeUrls.authConfig]: (_t, r) => encodeExtensionConfig(r) },
    },
  );
}

function baseConfigs(oauthScopes: string[] = ['products:read']): AuthConfigConfig[] {
  return [
    { name: 'legate-system.oauth', steps: [step(provider.urls.introspection, 60_000, oauthScopes)] },
    { name: 'legate-system.nocache', steps: [step(provider.urls.introspection, 0, [])] },
    { name: 'legate-system.short', steps: [step(shortProvider.urls.introspection, 600_000, [])] },
  ];
}

async function getToken(p: RunningProvider, scope: string): Promise<string> {
  const res = await fetch(p.urls.token, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${DEMO.clientId}:${DEMO.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ grant_type: 'client_credentials', scope }),
  });
  expect(res.status).toBe(200);
  const body = (await res.json()) as { access_token: string; token_type: string };
  expect(body.token_type).toBe('Bearer');
  tokens.add(body.access_token);
  return body.access_token;
}

async function revoke(token: string): Promise<void> {
  const res = await fetch(provider.urls.revocation, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from(`${DEMO.clientId}:${DEMO.clientSecret}`).toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ token, token_type_hint: 'access_token' }),
  });
  expect(res.status).toBe(200);
}

function check(configId: string | undefined, authorization?: string): Promise<CheckResponseMsg> {
  const headers: Record<string, string> = {
    ':authority': 'api.example.com',
    ':path': '/api/v1/products',
    ':method': 'GET',
    'user-agent': 'vitest',
  };
  if (authorization !== undefined) headers['authorization'] = authorization;
  const request = {
    attributes: {
      source: { address: { socket_address: { address: '127.0.0.1', port_value: 40000 } } },
      request: { http: { method: 'GET', path: '/api/v1/products', host: 'api.example.com', headers, protocol: 'HTTP/1.1' } },
      context_extensions: configId === undefined ? {} : { config_id: configId, source_type: 'route', source_name: 'r0' },
    },
  };
  return new Promise((resolve, reject) =>
    client['Check']!(request, (err: grpc.ServiceError | null, res: CheckResponseMsg) => (err ? reject(err) : resolve(res))),
  );
}

function outcome(res: CheckResponseMsg): { allowed: boolean; http?: string | number; error?: string } {
  if ((res.status?.code ?? 0) === 0) {
    expect(res.ok_response).toBeDefined();
    return { allowed: true };
  }
  expect(res.status?.code).toBe(7);
  const d = res.denied_response!;
  const ct = d.headers?.find((h) => h.header.key === 'content-type')?.header.value;
  expect(ct).toBe('application/json');
  return { allowed: false, http: d.status?.code, error: (JSON.parse(d.body ?? '{}') as { error: string }).error };
}

const logged = (): Array<Record<string, unknown>> => lines.map((l) => JSON.parse(l) as Record<string, unknown>);

beforeAll(async () => {
  provider = await startProvider({ port: 0, store, ttlSeconds: 300, quiet: true });
  providerPort = provider.port;
  shortProvider = await startProvider({ port: 0, ttlSeconds: 2, quiet: true });
  cache = new SnapshotCache();
  ads = new AdsServer(cache, { logger: createLogger('xds', { level: 'warn' }) });
  const { port: xdsPort } = await ads.start({ host: '127.0.0.1', port: 0 });
  publish(baseConfigs());
  svc = await startExtauthService({
    host: '127.0.0.1',
    port: 0,
    xdsAddress: `127.0.0.1:${xdsPort}`,
    logger: createLogger('extauth', { level: 'debug', write: (l) => lines.push(l) }),
    introspectionTimeoutMs: 1000,
  });
  const Authorization = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization');
  client = new Authorization(`127.0.0.1:${svc.port}`, grpc.credentials.createInsecure()) as typeof client;
  await eventually('extauth to load its configs', () => (svc.ready() && Object.keys(svc.configs()).length === 3 ? true : undefined));
});

afterAll(async () => {
  client?.close();
  await svc?.stop();
  await ads?.stop();
  await provider?.stop();
  await shortProvider?.stop();
  // no token in any log line
  const all = lines.join('\n');
  for (const t of tokens) expect(all).not.toContain(t);
  expect(all).not.toContain(EXTAUTH.clientSecret);
});

describe('extauth service', () => {
  it('logs its startup line and "got new config" with config names and no secrets', () => {
    expect(logged()).toContainEqual(
      expect.objectContaining({ msg: `extauth server running in insecure gRPC mode, listening at 127.0.0.1:${svc.port}` }),
    );
    const got = logged().filter((l) => l['msg'] === 'got new config');
    expect(got.length).toBeGreaterThanOrEqual(1);
    expect(Object.keys(got.at(-1)!['configs'] as object).sort()).toEqual([
      'legate-system.nocache',
      'legate-system.oauth',
      'legate-system.short',
    ]);
    expect(JSON.stringify(got)).not.toContain(EXTAUTH.clientSecret);
  });

  it('allows a client-credentials token from the provider', async () => {
    const t = await getToken(provider, 'products:read');
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
    expect(outcome(await check('legate-system.nocache', `bearer ${t}`))).toEqual({ allowed: true });
  });

  it('denies without a header, with garbage, and with other schemes', async () => {
    expect(outcome(await check('legate-system.oauth'))).toEqual({ allowed: false, http: 'Forbidden', error: 'missing_token' });
    expect(outcome(await check('legate-system.oauth', 'Bearer garbage-token-that-the-provider-never-issued'))).toEqual({
      allowed: false,
      http: 'Forbidden',
      error: 'invalid_token',
    });
    expect(outcome(await check('legate-system.oauth', 'Bearer not a token!'))).toEqual({
      allowed: false,
      http: 'Forbidden',
      error: 'invalid_request',
    });
    expect(
      outcome(await check('legate-system.oauth', `Basic ${Buffer.from(`${DEMO.clientId}:${DEMO.clientSecret}`).toString('base64')}`)),
    ).toMatchObject({ allowed: false, error: 'invalid_request' });
    expect(outcome(await check('legate-system.oauth', ''))).toMatchObject({ allowed: false, error: 'invalid_request' });
  });

  it('denies a token missing a required scope', async () => {
    const t = await getToken(provider, 'products:write');
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({
      allowed: false,
      http: 'Forbidden',
      error: 'insufficient_scope',
    });
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toEqual({ allowed: true });
  });

  it('denies a revoked token (cache off at once; cached until the cache entry expires)', async () => {
    const t = await getToken(provider, 'products:read');
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toEqual({ allowed: true });
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
    await revoke(t);
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toMatchObject({ allowed: false, error: 'invalid_token' });
    // the 60 s cache of legate-system.oauth still holds the active result (the documented trade-off)
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
  });

  it('denies an expired token, even from a long cache', async () => {
    const t = await getToken(shortProvider, '');
    expect(outcome(await check('legate-system.short', `Bearer ${t}`))).toEqual({ allowed: true });
    const before = svc.stats().introspections;
    expect(outcome(await check('legate-system.short', `Bearer ${t}`))).toEqual({ allowed: true });
    expect(svc.stats().introspections).toBe(before); // from the cache
    await sleep(3100); // ttl 2 s; exp has whole-second precision
    expect(outcome(await check('legate-system.short', `Bearer ${t}`))).toMatchObject({ allowed: false, error: 'invalid_token' });
  });

  it('fails closed while the provider is down and recovers when it returns', async () => {
    const t = await getToken(provider, 'products:read');
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toEqual({ allowed: true });
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
    await provider.stop();
    const before = lines.length;
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toEqual({
      allowed: false,
      http: 'Forbidden',
      error: 'temporarily_unavailable',
    });
    const errors = logged()
      .slice(before)
      .filter((l) => l['level'] === 'error');
    expect(errors).toContainEqual(
      expect.objectContaining({
        msg: 'token introspection failed; denying',
        config_id: 'legate-system.nocache',
        kind: 'unreachable',
        token: expect.stringMatching(/^sha256:/),
      }),
    );
    // a token that is still in a cache keeps working (that is what the cache is for)
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
    // same port, same token store: the provider is back
    provider = await startProvider({ port: providerPort, store, ttlSeconds: 300, quiet: true });
    expect(outcome(await check('legate-system.nocache', `Bearer ${t}`))).toEqual({ allowed: true });
  });

  it('denies and logs an unknown config_id (and a missing one)', async () => {
    const t = await getToken(provider, 'products:read');
    const before = lines.length;
    expect(outcome(await check('legate-system.nope', `Bearer ${t}`))).toEqual({
      allowed: false,
      http: 'Forbidden',
      error: 'access_denied',
    });
    expect(logged().slice(before)).toContainEqual(
      expect.objectContaining({
        level: 'error',
        msg: 'Auth Server does not contain auth configuration with the given ID',
        config_id: 'legate-system.nope',
      }),
    );
    expect(outcome(await check(undefined, `Bearer ${t}`))).toMatchObject({ allowed: false, error: 'access_denied' });
  });

  it('applies a config update (required scope added) without a restart, and logs it', async () => {
    const t = await getToken(provider, 'products:read');
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toEqual({ allowed: true });
    const gotBefore = logged().filter((l) => l['msg'] === 'got new config').length;
    publish(baseConfigs(['products:read', 'products:write']));
    await eventually('the new scope to apply', async () =>
      (await check('legate-system.oauth', `Bearer ${t}`)).status?.code === 7 ? true : undefined,
    );
    expect(outcome(await check('legate-system.oauth', `Bearer ${t}`))).toMatchObject({ allowed: false, error: 'insufficient_scope' });
    expect(svc.configs()['legate-system.oauth']!.steps[0]!.requiredScopes).toEqual(['products:read', 'products:write']);
    expect(logged().filter((l) => l['msg'] === 'got new config').length).toBeGreaterThan(gotBefore);
    const both = await getToken(provider, 'products:read products:write');
    expect(outcome(await check('legate-system.oauth', `Bearer ${both}`))).toEqual({ allowed: true });
    // removing a config denies its routes
    publish(baseConfigs().filter((c) => c.name !== 'legate-system.oauth'));
    await eventually('the config to go away', () => (svc.configs()['legate-system.oauth'] ? undefined : true));
    expect(outcome(await check('legate-system.oauth', `Bearer ${both}`))).toMatchObject({ allowed: false, error: 'access_denied' });
  });

  it('single-flight over gRPC: concurrent checks of a new token make one introspection', async () => {
    publish(baseConfigs());
    await eventually('configs back', () => (svc.configs()['legate-system.oauth'] ? true : undefined));
    const t = await getToken(provider, 'products:read');
    const before = svc.stats();
    const results = await Promise.all(Array.from({ length: 20 }, () => check('legate-system.oauth', `Bearer ${t}`)));
    expect(results.map((r) => outcome(r).allowed)).toEqual(Array(20).fill(true));
    const after = svc.stats();
    expect(after.introspections - before.introspections).toBe(1);
  });
});
