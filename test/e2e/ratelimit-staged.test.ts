// Raw and staged rate limits end to end, as Gloo's docs write them: descriptors in the Settings
// (`ratelimit.descriptors`), actions on routes (`options.ratelimit.rateLimits`), the virtual host's
// limits on a route with includeVhRateLimits, and the two stages around ext_authz: an early limit
// counts requests ext_authz then denies, a regular one counts only those it lets through; a raw action key the
// Settings do not declare is a Warning, as Gloo does not check it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { burstStatuses, freshMinute } from '../support/ratelimit.js';

let gw: Gateway;
let app: EchoUpstream;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }';
const apiKey = 'extauth: { configRef: { name: apikey, namespace: legate-system } }';

function resources(port: number): string {
  return `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  ratelimitServer: { enableXRatelimitHeaders: true }
  ratelimit:
    descriptors:
      - key: generic_key
        value: probe
        rateLimit: { requestsPerUnit: 100000, unit: MINUTE }
      - key: generic_key
        value: per-minute
        rateLimit: { requestsPerUnit: 3, unit: MINUTE }
      - key: type
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
      - key: generic_key
        value: early
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
      - key: generic_key
        value: regular
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
      - key: generic_key
        value: vh
        rateLimit: { requestsPerUnit: 3, unit: MINUTE }
      - key: generic_key
        value: own
        rateLimit: { requestsPerUnit: 100, unit: MINUTE }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: early-config, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: early-config, rateLimit: { requestsPerUnit: 2, unit: MINUTE } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: early-config } }] }]
---
apiVersion: v1
kind: Secret
metadata: { name: client-a, namespace: legate-system }
stringData: { api-key: key-a }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: legate-system }
spec:
  configs: [{ apiKeyAuth: { apiKeySecretRefs: [{ name: client-a }] } }]
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    options:
      ratelimit:
        rateLimits: [{ actions: [{ genericKey: { descriptorValue: vh } }] }]
    routes:
      - matchers: [{ prefix: /probe }]
        ${toApp}
        options: { ratelimit: { rateLimits: [{ actions: [{ genericKey: { descriptorValue: probe } }] }] } }
      - matchers: [{ prefix: /raw }]
        ${toApp}
        options:
          ratelimit:
            rateLimits: [{ actions: [{ genericKey: { descriptorValue: per-minute } }] }]
      - matchers: [{ prefix: /typed }]
        ${toApp}
        options:
          ratelimit:
            rateLimits: [{ actions: [{ requestHeaders: { descriptorKey: type, headerName: x-type } }] }]
      - matchers: [{ prefix: /early-config }]
        ${toApp}
        options:
          ${apiKey}
          rateLimitEarlyConfigs: { refs: [{ name: early-config }] }
      - matchers: [{ prefix: /early }]
        ${toApp}
        options:
          ${apiKey}
          ratelimitEarly: { rateLimits: [{ actions: [{ genericKey: { descriptorValue: early } }] }] }
      - matchers: [{ prefix: /regular }]
        ${toApp}
        options:
          ${apiKey}
          ratelimitRegular: { rateLimits: [{ actions: [{ genericKey: { descriptorValue: regular } }] }] }
      - matchers: [{ prefix: /with-vh }]
        ${toApp}
        options:
          ratelimit:
            includeVhRateLimits: true
            rateLimits: [{ actions: [{ genericKey: { descriptorValue: own } }] }]
      - matchers: [{ prefix: /without-vh }]
        ${toApp}
        options:
          ratelimit:
            rateLimits: [{ actions: [{ genericKey: { descriptorValue: own } }] }]
      - matchers: [{ prefix: / }]
        ${toApp}
`;
}

const burst = (path: string, n: number, headers?: Record<string, string>): Promise<number[]> => burstStatuses(gw, path, n, headers);

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'shop.yaml': resources(app.port) });
  // the service has the Settings' descriptors once the probe route's limit shows in the headers
  await gw.until('/probe', (r) => r.status === 200 && r.headers.get('x-ratelimit-limit') !== null, undefined, 30_000);
  // and extauth the AuthConfig once a request without the key is 401 (403 while it is unknown)
  await gw.until('/regular', (r) => r.status === 401, undefined, 20_000);
  await freshMinute();
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

describe('raw and staged rate limits through Envoy', () => {
  it('raw actions count against the Settings descriptors: N per window, then 429', async () => {
    expect(await burst('/raw', 4)).toEqual([200, 200, 200, 429]);
    const typed = await burst('/typed', 3, { 'x-type': 'a' });
    expect(typed).toEqual([200, 200, 429]);
    // each value of a descriptor without one counts on its own
    expect(await burst('/typed', 1, { 'x-type': 'b' })).toEqual([200]);
  });

  it('an early limit counts requests ext_authz then denies', async () => {
    // without the key: 401 from ext_authz, but the early limit has counted them
    expect(await burst('/early', 3)).toEqual([401, 401, 429]);
    expect(await burst('/early', 1, { 'api-key': 'key-a' })).toEqual([429]);
    // rateLimitEarlyConfigs: the same with a RateLimitConfig
    expect(await burst('/early-config', 3)).toEqual([401, 401, 429]);
  });

  it('a regular limit counts only what ext_authz lets through', async () => {
    expect(await burst('/regular', 4)).toEqual([401, 401, 401, 401]);
    expect(await burst('/regular', 3, { 'api-key': 'key-a' })).toEqual([200, 200, 429]);
  });

  it("includeVhRateLimits: the virtual host's limits apply on the route too; without it the route's own replace them", async () => {
    expect(await burst('/without-vh', 5)).toEqual([200, 200, 200, 200, 200]);
    expect(await burst('/with-vh', 4)).toEqual([200, 200, 200, 429]);
    // a route without limits of its own gets the virtual host's, whose window is used up now
    expect(await burst('/other', 1)).toEqual([429]);
  });

  // last: until it serves, requests for its domain reach the catch-all virtual host and count against its limits
  it('a raw action key the Settings do not declare is a Warning: the route serves (as Gloo, which does not check it)', async () => {
    gw.write(
      'undeclared.yaml',
      `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: undeclared, namespace: legate-system }
spec:
  virtualHost:
    domains: [undeclared.example.com]
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
        options:
          ratelimit: { rateLimits: [{ actions: [{ requestHeaders: { headerName: x-plan, descriptorKey: plan } }] }] }
`,
    );
    const served = await gw.until('/', (r) => r.status === 200, { host: 'undeclared.example.com' });
    expect(served.json()['upstream']).toBe('app');
    const vs = JSON.parse(gw.ctl('get', 'vs', 'undeclared', '-n', 'legate-system', '-o', 'json').stdout) as {
      status: { statuses: Record<string, { state: string; reason?: string }> };
    };
    const status = vs.status.statuses['legate-system'];
    expect(status?.state).toBe('Warning');
    expect(status?.reason).toContain('descriptor key "plan" is not declared by any settings.ratelimit descriptor');
    gw.remove('undeclared.yaml');
  });
});
