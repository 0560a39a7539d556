// Gloo Enterprise's set-style rate limits and Envoy's further action kinds end to end, as Gloo's docs write
// them: a RateLimitConfig's setDescriptors matched by setActions whatever the order the actions produce their
// entries in (two routes, actions in opposite orders, one counter), the Settings' setDescriptors for raw
// options.ratelimit setActions, rule weights, a queryParameterValueMatch action and a dynamicMetadata action
// (its defaultValue when the metadata is absent) counting against their descriptors, a maskedRemoteAddress action
// with a limit override that the metadata does not carry, and one a JWT's payload carries.
import crypto from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { burstStatuses, freshMinute } from '../support/ratelimit.js';

let gw: Gateway;
let app: EchoUpstream;

// a JWT provider whose verified payload (Envoy's dynamic metadata) may carry a limit override
const ISSUER = 'https://issuer.test';
const signer = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const signerPem = signer.publicKey.export({ format: 'pem', type: 'spki' }).toString();
const token = async (claims: Record<string, unknown>): Promise<Record<string, string>> => {
  const jwt = await new SignJWT(claims)
    .setProtectedHeader({ alg: 'ES256' })
    .setIssuer(ISSUER)
    .setExpirationTime('5m')
    .sign(signer.privateKey);
  return { host: 'tokens.test', authorization: `Bearer ${jwt}` };
};

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }';

function resources(port: number): string {
  return `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  # the readiness probes below read x-ratelimit-limit
  ratelimitServer: { enableXRatelimitHeaders: true }
  ratelimit:
    descriptors:
      - key: generic_key
        value: probe
        rateLimit: { requestsPerUnit: 100000, unit: MINUTE }
      - key: query_match
        value: debug
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
    setDescriptors:
      - simpleDescriptors: [{ key: account }, { key: plan, value: free }]
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
      - simpleDescriptors: [{ key: account }]
        rateLimit: { requestsPerUnit: 4, unit: MINUTE }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: messages, namespace: default }
spec:
  raw:
    setDescriptors:
      - simpleDescriptors: [{ key: type, value: Messenger }, { key: number }]
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
      - simpleDescriptors: [{ key: type, value: Whatsapp }]
        rateLimit: { requestsPerUnit: 1, unit: MINUTE }
    rateLimits:
      - setActions:
          - requestHeaders: { descriptorKey: type, headerName: x-type }
          - requestHeaders: { descriptorKey: number, headerName: x-number }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: messages-reversed, namespace: default }
spec:
  raw:
    setDescriptors:
      - simpleDescriptors: [{ key: number }, { key: type, value: Messenger }]
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
    rateLimits:
      - setActions:
          - remoteAddress: {}
          - requestHeaders: { descriptorKey: number, headerName: x-number }
          - requestHeaders: { descriptorKey: type, headerName: x-type }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: subjects, namespace: default }
spec:
  raw:
    descriptors:
      - key: subject
        value: anonymous
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
    rateLimits:
      - actions:
          - dynamicMetadata:
              descriptorKey: subject
              metadataKey: { key: envoy.filters.http.jwt_authn, path: [{ key: principal }, { key: sub }] }
              defaultValue: anonymous
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: weighted, namespace: default }
spec:
  raw:
    descriptors:
      - key: generic_key
        value: per-route
        rateLimit: { requestsPerUnit: 1, unit: MINUTE }
      - key: tenant
        weight: 1
        rateLimit: { requestsPerUnit: 3, unit: MINUTE }
    rateLimits:
      - actions: [{ genericKey: { descriptorValue: per-route } }]
      - actions: [{ requestHeaders: { descriptorKey: tenant, headerName: x-tenant } }]
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: networks, namespace: default }
spec:
  raw:
    descriptors:
      - key: masked_remote_address
        rateLimit: { requestsPerUnit: 2, unit: MINUTE }
    rateLimits:
      - actions: [{ maskedRemoteAddress: { v4PrefixMaskLen: 24, v6PrefixMaskLen: 64 } }]
        limit: { dynamicMetadata: { metadataKey: { key: envoy.filters.http.ext_authz, path: [{ key: limit }] } } }
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: overridable, namespace: default }
spec:
  raw:
    descriptors:
      - key: generic_key
        value: tokens
        rateLimit: { requestsPerUnit: 100, unit: MINUTE }
    rateLimits:
      - actions: [{ genericKey: { descriptorValue: tokens } }]
        limit:
          dynamicMetadata:
            metadataKey:
              key: envoy.filters.http.jwt_authn
              path: [{ key: default_tokens/afterExtAuth/issuer }, { key: limit }]
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: tokens, namespace: default }
spec:
  virtualHost:
    domains: [tokens.test]
    options:
      rateLimitConfigs: { refs: [{ name: overridable }] }
      jwt:
        providers:
          issuer:
            issuer: ${ISSUER}
            jwks:
              local:
                key: |
${signerPem
  .trim()
  .split('\n')
  .map((l) => `                  ${l}`)
  .join('\n')}
    routes:
      - matchers: [{ prefix: / }]
        ${toApp}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /probe }]
        ${toApp}
        options: { ratelimit: { rateLimits: [{ actions: [{ genericKey: { descriptorValue: probe } }] }] } }
      - matchers: [{ prefix: /messages }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: messages }] } }
      - matchers: [{ prefix: /reversed }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: messages-reversed }] } }
      - matchers: [{ prefix: /accounts }]
        ${toApp}
        options:
          ratelimit:
            rateLimits:
              - setActions:
                  - requestHeaders: { descriptorKey: plan, headerName: x-plan }
                  - requestHeaders: { descriptorKey: account, headerName: x-account }
      - matchers: [{ prefix: /search }]
        ${toApp}
        options:
          ratelimit:
            rateLimits:
              - actions:
                  - queryParameterValueMatch:
                      descriptorValue: debug
                      queryParameters: [{ name: debug, presentMatch: true }]
      - matchers: [{ prefix: /subjects }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: subjects }] } }
      - matchers: [{ prefix: /weighted }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: weighted }] } }
      - matchers: [{ prefix: /networks }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: networks }] } }
      - matchers: [{ prefix: / }]
        ${toApp}
`;
}

const burst = (path: string, n: number, headers?: Record<string, string>): Promise<number[]> => burstStatuses(gw, path, n, headers);

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'shop.yaml': resources(app.port) });
  // the service has the Settings' rules once the probe route's limit shows in the headers
  await gw.until('/probe', (r) => r.status === 200 && r.headers.get('x-ratelimit-limit') !== null, undefined, 30_000);
  // and the RateLimitConfigs once a limited route reports its limit
  await gw.until(
    '/weighted',
    (r) => r.status === 200 && r.headers.get('x-ratelimit-limit') !== null,
    { headers: { 'x-tenant': 'probe' } },
    30_000,
  );
  await freshMinute();
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

describe('set-style rate limits and further actions through Envoy', () => {
  it('a set descriptor matches its entries in any order, extra entries allowed: one counter, then 429', async () => {
    const messenger = { 'x-type': 'Messenger', 'x-number': '555' };
    expect(await burst('/messages', 2, messenger)).toEqual([200, 200]);
    expect(await burst('/messages', 1, messenger)).toEqual([429]);
    // another number counts on its own; a value the rule names must match (no rule for Sms: not limited)
    expect(await burst('/messages', 1, { ...messenger, 'x-number': '556' })).toEqual([200]);
    expect(await burst('/messages', 3, { 'x-type': 'Sms', 'x-number': '555' })).toEqual([200, 200, 200]);
    // a header the set rule does not need may be absent (skipped): Whatsapp alone matches its rule
    expect(await burst('/messages', 2, { 'x-type': 'Whatsapp' })).toEqual([200, 429]);
    // the reversed route: actions in the opposite order, and a remote address the rule does not name
    expect(await burst('/reversed', 3, { 'x-number': '7', 'x-type': 'Messenger' })).toEqual([200, 200, 429]);
  });

  it("the Settings' setDescriptors limit raw setActions: the first matching rule applies", async () => {
    expect(await burst('/accounts', 3, { 'x-account': 'a', 'x-plan': 'free' })).toEqual([200, 200, 429]);
    // without the free plan the less specific rule, further down, applies
    expect(await burst('/accounts', 5, { 'x-account': 'b' })).toEqual([200, 200, 200, 200, 429]);
  });

  it('a queryParameterValueMatch action counts the requests with the parameter', async () => {
    expect(await burst('/search?debug=1', 2)).toEqual([200, 200]);
    expect(await burst('/search?debug=2', 1)).toEqual([429]);
    expect(await burst('/search?q=x', 3)).toEqual([200, 200, 200]);
  });

  it('a dynamicMetadata action counts with its defaultValue when the metadata is absent', async () => {
    expect(await burst('/subjects', 3)).toEqual([200, 200, 429]);
  });

  it("a maskedRemoteAddress action counts per network; with no override in the metadata, the config's limit holds", async () => {
    expect(await burst('/networks', 3)).toEqual([200, 200, 429]);
  });

  it("a limit override in the request's dynamic metadata (a JWT's claim) replaces the config's limit", async () => {
    const overridden = await token({ sub: 'a', limit: { requests_per_unit: 2, unit: 'MINUTE' } });
    expect(await burst('/', 3, overridden)).toEqual([200, 200, 429]);
    // without the claim the config's limit (100 a minute) decides
    expect(await burst('/', 3, await token({ sub: 'b' }))).toEqual([200, 200, 200]);
  });

  it('rule weights: the tenant rule (weight 1) replaces the per-route one while it matches', async () => {
    // with x-tenant only the tenant rule counts (3 per minute; the per-route rule, 1, is not counted)
    expect(await burst('/weighted', 3, { 'x-tenant': 't1' })).toEqual([200, 200, 200]);
    expect(await burst('/weighted', 1, { 'x-tenant': 't1' })).toEqual([429]);
    // without it the per-route rule applies, and has counted nothing so far (bar the warm-up probe's tenant)
    expect(await burst('/weighted', 2)).toEqual([200, 429]);
  });
});
