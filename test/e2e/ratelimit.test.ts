// Rate limiting end to end: real Envoy (ratelimit and local_ratelimit filters) -> Legate's ratelimit
// service (in-memory counters, the embedded default), configured by the controller over xDS. N requests
// pass within a window, the next gets 429 with retry-after and x-ratelimit-* headers; nested descriptors
// count per header value; other routes are unaffected; ratelimitBasic limits per client address and per
// credential; localRatelimit's token bucket answers in Envoy itself.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayResponse } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { burst as burstOf, freshMinute } from '../support/ratelimit.js';

let gw: Gateway;
let app: EchoUpstream;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }';

function resources(port: number): string {
  return `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: per-client, namespace: default }
spec:
  raw:
    descriptors:
      - key: generic_key
        value: probe
        rateLimit: { requestsPerUnit: 100000, unit: MINUTE }
      - key: generic_key
        value: limited
        rateLimit: { requestsPerUnit: 3, unit: MINUTE }
        descriptors:
          - key: client
            rateLimit: { requestsPerUnit: 2, unit: MINUTE }
          - key: client
            value: vip
            rateLimit: { unlimited: true }
    rateLimits:
      - actions: [{ genericKey: { descriptorValue: limited } }]
---
apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: per-header, namespace: default }
spec:
  raw:
    descriptors:
      - key: generic_key
        value: limited
        descriptors:
          - { key: client, rateLimit: { requestsPerUnit: 2, unit: MINUTE } }
          - { key: client, value: vip, rateLimit: { unlimited: true } }
    rateLimits:
      - actions: [{ genericKey: { descriptorValue: limited } }, { requestHeaders: { headerName: x-client, descriptorKey: client } }]
---
apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: probe, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: probe, rateLimit: { requestsPerUnit: 100000, unit: MINUTE } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: probe } }] }]
---
apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: parallel, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: parallel, rateLimit: { requestsPerUnit: 10, unit: MINUTE } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: parallel } }] }]
---
apiVersion: v1
kind: Secret
metadata: { name: client-a, namespace: legate-system }
stringData: { api-key: key-a }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: apikey, namespace: legate-system }
spec:
  configs: [{ apiKeyAuth: { apiKeySecretRefs: [{ name: client-a }] } }]
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /probe }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: probe }] } }
      - matchers: [{ prefix: /limited }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: per-client }] } }
      - matchers: [{ prefix: /client }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: per-header }] } }
      - matchers: [{ prefix: /basic }]
        ${toApp}
        options:
          ratelimitBasic:
            anonymousLimits: { requestsPerUnit: 2, unit: MINUTE }
            authorizedLimits: { requestsPerUnit: 3, unit: MINUTE }
      - matchers: [{ prefix: /parallel }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: parallel }] } }
      - matchers: [{ prefix: /guarded }]
        ${toApp}
        options:
          extauth: { configRef: { name: apikey, namespace: legate-system } }
          ratelimitBasic: { anonymousLimits: { requestsPerUnit: 2, unit: MINUTE } }
      - matchers: [{ prefix: /local }]
        ${toApp}
        options: { localRatelimit: { maxTokens: 2, tokensPerFill: 1, fillInterval: 3600s } }
      - matchers: [{ prefix: /gloo-local }]
        ${toApp}
        options: { ratelimit: { localRatelimit: { maxTokens: 1, tokensPerFill: 1, fillInterval: 3600s } } }
      - matchers: [{ prefix: / }]
        ${toApp}
`;
}

const burst = (path: string, n: number, headers?: Record<string, string>): Promise<GatewayResponse[]> => burstOf(gw, path, n, headers);

/** Settings ratelimitServer with the x-ratelimit-* headers (off by default, as in Gloo) and `more` fields. */
const settings = (more: string): string =>
  'apiVersion: legate.dev/v1\nkind: Settings\nmetadata: { name: default, namespace: legate-system }\n' +
  `spec: { ratelimitServer: { ${more}enableXRatelimitHeaders: true } }\n`;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'shop.yaml': resources(app.port), 'settings.yaml': settings('') });
  // the service has every config once the probe route's limit shows in the headers
  await gw.until('/probe', (r) => r.status === 200 && r.headers.get('x-ratelimit-limit') !== null, undefined, 30_000);
  await freshMinute(45_000);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

describe('rate limiting through Envoy', () => {
  it('admits N requests in a window, then 429 with retry-after and x-ratelimit-* headers', async () => {
    const rs = await burst('/limited', 4);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(rs[0]!.headers.get('x-ratelimit-limit')).toMatch(/^3(,|$)/);
    expect(rs[0]!.headers.get('x-ratelimit-remaining')).toBe('2');
    expect(Number(rs[0]!.headers.get('x-ratelimit-reset'))).toBeGreaterThan(0);
    expect(rs[2]!.headers.get('x-ratelimit-remaining')).toBe('0');
    const denied = rs[3]!;
    expect(denied.headers.get('x-envoy-ratelimited')).toBe('true');
    const retry = Number(denied.headers.get('retry-after'));
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    expect(denied.headers.get('x-ratelimit-remaining')).toBe('0');
    // the upstream saw only the admitted ones
    expect(app.seen.filter((s) => s.path === '/limited')).toHaveLength(3);
  });

  it('admits exactly N of concurrent requests spread over connections (and Envoy workers)', async () => {
    const rs = await Promise.all(Array.from({ length: 30 }, () => gw.request('/parallel')));
    expect(rs.filter((r) => r.status === 200)).toHaveLength(10);
    expect(rs.filter((r) => r.status === 429)).toHaveLength(20);
  });

  it('leaves other routes alone', async () => {
    const rs = await burst('/other', 5);
    expect(rs.every((r) => r.status === 200)).toBe(true);
    expect(rs[0]!.headers.get('x-ratelimit-limit')).toBeNull();
  });

  it('counts each value of a nested descriptor on its own; unlimited values pass', async () => {
    const a = await burst('/client', 3, { 'x-client': 'alice' });
    expect(a.map((r) => r.status)).toEqual([200, 200, 429]);
    const b = await burst('/client', 2, { 'x-client': 'bob' });
    expect(b.map((r) => r.status)).toEqual([200, 200]);
    const vip = await burst('/client', 5, { 'x-client': 'vip' });
    expect(vip.every((r) => r.status === 200)).toBe(true);
    // without the header Envoy sends no descriptor for the entry: not limited here
    const none = await burst('/client', 3);
    expect(none.every((r) => r.status === 200)).toBe(true);
  });

  it('ratelimitBasic: per client address when anonymous, per credential when authenticated', async () => {
    const anon = await burst('/basic', 3);
    expect(anon.map((r) => r.status)).toEqual([200, 200, 429]);
    const alice = await burst('/basic', 4, { authorization: 'Bearer alice' });
    expect(alice.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    const bob = await burst('/basic', 1, { authorization: 'Bearer bob' });
    expect(bob[0]!.status).toBe(200);
  });

  it('localRatelimit: Envoy answers 429 from its token bucket, without the service', async () => {
    const rs = await burst('/local', 3);
    expect(rs.map((r) => r.status)).toEqual([200, 200, 429]);
    // as in Gloo, a route's own bucket adds no x-ratelimit-* headers
    expect(rs[2]!.headers.get('x-ratelimit-limit')).toBeNull();
    // Gloo's spelling of the same bucket
    expect((await burst('/gloo-local', 2)).map((r) => r.status)).toEqual([200, 429]);
  });

  it('runs after auth by default (denied requests are not counted), before it with rateLimitBeforeAuth', async () => {
    // extauth has the AuthConfig once a request without the key is 401 (403 while it is unknown)
    await gw.until('/guarded', (r) => r.status === 401, undefined, 20_000);
    // ext_authz first: requests without the key are 401 and never reach the rate limit
    expect((await burst('/guarded', 4)).map((r) => r.status)).toEqual([401, 401, 401, 401]);
    const keyed = await burst('/guarded', 3, { 'api-key': 'key-a' });
    expect(keyed.map((r) => r.status)).toEqual([200, 200, 429]);
    gw.write('settings.yaml', settings('rateLimitBeforeAuth: true, '));
    // the rate limit now answers first: the exhausted anonymous limit is 429 even without the key
    await gw.until('/guarded', (r) => r.status === 429, undefined, 20_000);
  });

  it('legatectl check reports the RateLimitConfigs', () => {
    const r = gw.ctl('check');
    expect(r.stdout).toContain('Checking RateLimitConfigs... OK');
  });

  it('rejects a RateLimitConfig with an undeclared key, with the reason in status, and serves the rest', async () => {
    gw.write(
      'bad.yaml',
      `apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: bad, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: x, rateLimit: { requestsPerUnit: 0, unit: MINUTE } }]
    rateLimits: [{ actions: [{ requestHeaders: { headerName: x-user, descriptorKey: user } }] }]
`,
    );
    const status = await eventually('bad to be rejected', () => {
      const r = gw.ctl('get', 'rlc', 'bad', '-n', 'default', '-o', 'json');
      if (r.status !== 0) return undefined;
      const s = (JSON.parse(r.stdout) as { status?: { statuses?: Record<string, { state: string; reason?: string }> } }).status;
      const mine = s?.statuses?.['legate-system'];
      return mine?.state === 'Rejected' ? mine : undefined;
    });
    expect(status.reason).toContain('requestsPerUnit: must be at least 1');
    expect(status.reason).toContain('descriptor key "user" is not declared');
    expect(gw.ctl('check').stdout).toContain('Checking RateLimitConfigs... 1 Errors!');
    // the other configs keep serving: the probe's limit still applies, other routes pass
    const probe = await gw.request('/probe');
    expect(probe.status).toBe(200);
    expect(probe.headers.get('x-ratelimit-limit')).toMatch(/^100000/);
    expect((await gw.request('/other')).status).toBe(200);
  });
});
