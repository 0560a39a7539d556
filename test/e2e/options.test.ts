// Shared options and error isolation through the real Envoy: a route to a missing upstream is only a
// Warning (the other routes serve on the first apply) and answers as Settings gloo.invalidConfigPolicy
// says; VirtualHostOption / RouteOption resources referenced with optionsConfigRefs (the inline options
// win); UpstreamGroups routing by weight. The YAML is what a Gloo user writes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayResponse } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

let gw: Gateway;
let blue: EchoUpstream;
let green: EchoUpstream;
let slow: EchoUpstream;

const upstream = (name: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;

const BODY = 'Legate has invalid configuration. Administrators should run `legatectl check` to find and fix config errors.';

beforeAll(async () => {
  [blue, green, slow] = await Promise.all([startEcho('blue'), startEcho('green'), startEcho('slow', { delayMs: 1500 })]);
  gw = await startGateway({
    'upstreams.yaml': [upstream('blue', blue.port), upstream('green', green.port), upstream('slow', slow.port)].join('---\n'),
    // one route to an upstream that does not exist (yet), one good route
    'isolated.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: isolated, namespace: gloo-system }
spec:
  virtualHost:
    domains: [iso.example.com]
    routes:
      - matchers: [{ prefix: /bad }]
        routeAction: { single: { upstream: { name: not-yet, namespace: gloo-system } } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: blue, namespace: gloo-system } } }
`,
    'options.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualHostOption
metadata: { name: two-per-hour, namespace: opts }
spec:
  options:
    localRatelimit: { maxTokens: 2, tokensPerFill: 2, fillInterval: 1h }
---
apiVersion: gateway.solo.io/v1
kind: RouteOption
metadata: { name: rewrite, namespace: opts }
spec:
  options:
    prefixRewrite: /from-ref/
---
apiVersion: gateway.solo.io/v1
kind: RouteOption
metadata: { name: impatient, namespace: opts }
spec:
  options:
    timeout: 500ms
---
apiVersion: gateway.solo.io/v1
kind: RouteOption
metadata: { name: attached, namespace: opts }
spec:
  targetRefs:
    - { group: gateway.networking.k8s.io, kind: HTTPRoute, name: my-httproute }
  options: { timeout: 1s }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: route-options, namespace: gloo-system }
spec:
  virtualHost:
    domains: [a.example.com]
    routes:
      - matchers: [{ prefix: /ref/ }]
        routeAction: { single: { upstream: { name: blue, namespace: gloo-system } } }
        optionsConfigRefs:
          delegateOptions: [{ name: rewrite, namespace: opts }]
      - matchers: [{ prefix: /inline/ }]
        routeAction: { single: { upstream: { name: blue, namespace: gloo-system } } }
        options: { prefixRewrite: /from-inline/ }
        optionsConfigRefs:
          delegateOptions: [{ name: rewrite, namespace: opts }]
      - matchers: [{ prefix: /slow }]
        routeAction: { single: { upstream: { name: slow, namespace: gloo-system } } }
        optionsConfigRefs:
          delegateOptions: [{ name: impatient, namespace: opts }]
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shared-b, namespace: gloo-system }
spec:
  virtualHost:
    domains: [b.example.com]
    optionsConfigRefs:
      delegateOptions: [{ name: two-per-hour, namespace: opts }]
    routes:
      - routeAction: { single: { upstream: { name: green, namespace: gloo-system } } }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shared-d, namespace: gloo-system }
spec:
  virtualHost:
    domains: [d.example.com]
    optionsConfigRefs:
      delegateOptions: [{ name: two-per-hour, namespace: opts }]
    routes:
      - routeAction: { single: { upstream: { name: blue, namespace: gloo-system } } }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: own-limit, namespace: gloo-system }
spec:
  virtualHost:
    domains: [c.example.com]
    options:
      localRatelimit: { maxTokens: 4, tokensPerFill: 4, fillInterval: 1h }
    optionsConfigRefs:
      delegateOptions: [{ name: two-per-hour, namespace: opts }]
    routes:
      - routeAction: { single: { upstream: { name: green, namespace: gloo-system } } }
`,
    'groups.yaml': `
apiVersion: gloo.solo.io/v1
kind: UpstreamGroup
metadata: { name: all-blue, namespace: gloo-system }
spec:
  destinations:
    - { destination: { upstream: { name: blue } }, weight: 100 }
    - { destination: { upstream: { name: green } }, weight: 0 }
---
apiVersion: gloo.solo.io/v1
kind: UpstreamGroup
metadata: { name: half, namespace: gloo-system }
spec:
  destinations:
    - { destination: { upstream: { name: blue } }, weight: 50 }
    - { destination: { upstream: { name: green } }, weight: 50 }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: grouped, namespace: gloo-system }
spec:
  virtualHost:
    domains: [ug.example.com]
    routes:
      - matchers: [{ prefix: /all-blue }]
        routeAction: { upstreamGroup: { name: all-blue, namespace: gloo-system } }
      - matchers: [{ prefix: /half }]
        routeAction: { upstreamGroup: { name: half, namespace: gloo-system } }
      - matchers: [{ prefix: /nowhere }]
        routeAction: { upstreamGroup: { name: nowhere } }
`,
  });
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([blue?.close(), green?.close(), slow?.close()]);
});

const on = (host: string) => ({ host });
const statusOf = (kind: string, name: string, ns = 'gloo-system') =>
  eventually(`status of ${kind} ${name}`, () => {
    const out = gw.ctl('get', kind, name, '-n', ns, '-o', 'json');
    if (out.status !== 0) return undefined;
    return JSON.parse(out.stdout).status.statuses['legate-system'] as { state: string; reason?: string } | undefined;
  });

describe('error isolation', () => {
  it('serves the good route on the first apply; the route to a missing upstream answers 503 and is a Warning', async () => {
    const good = await gw.until('/hello', (r) => r.status === 200, on('iso.example.com'));
    expect(good.json()['upstream']).toBe('blue');
    // Gloo's default (replaceInvalidRoutes false): the route names a cluster Envoy does not have
    const bad = await gw.request('/bad', on('iso.example.com'));
    expect([bad.status, bad.text]).toEqual([503, '']);
    const s = await statusOf('vs', 'isolated');
    expect(s.state).toBe('Warning');
    expect(s.reason).toBe('virtualHost.routes[0].routeAction.single: Upstream gloo-system.not-yet not found');
    const check = gw.ctl('check');
    expect(check.status).not.toBe(0);
    expect(check.stdout).toContain("Found virtual service with warnings by 'legate-system': gloo-system isolated (Reason: ");
  });

  it('answers invalidRouteResponseCode and Body with replaceInvalidRoutes, and serves once the upstream exists', async () => {
    gw.write(
      'settings.yaml',
      `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  gloo:
    invalidConfigPolicy:
      replaceInvalidRoutes: true
      invalidRouteResponseCode: 404
      invalidRouteResponseBody: ${JSON.stringify(BODY)}
`,
    );
    const replaced = await gw.until('/bad', (r) => r.status === 404, on('iso.example.com'));
    expect(replaced.text).toBe(BODY);
    expect((await gw.request('/', on('iso.example.com'))).json()['upstream']).toBe('blue');

    gw.write('late.yaml', upstream('not-yet', green.port));
    const fixed = await gw.until('/bad', (r) => r.status === 200, on('iso.example.com'));
    expect(fixed.json()['upstream']).toBe('green');
    expect((await statusOf('vs', 'isolated')).state).toBe('Accepted');
    gw.remove('late.yaml');
    await gw.until('/bad', (r) => r.status === 404, on('iso.example.com'));
    gw.remove('settings.yaml');
    await gw.until('/bad', (r) => r.status === 503, on('iso.example.com'));
  });

  it('replaces a route whose header Secret is not applied yet; without the policy the last accepted version serves', async () => {
    gw.write(
      'settings.yaml',
      `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  gloo:
    invalidConfigPolicy: { replaceInvalidRoutes: true, invalidRouteResponseCode: 418, invalidRouteResponseBody: no key yet }
`,
    );
    gw.write(
      'keyed.yaml',
      `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: keyed, namespace: gloo-system }
spec:
  virtualHost:
    domains: [keyed.example.com]
    routes:
      - matchers: [{ prefix: /keyed }]
        options:
          headerManipulation:
            requestHeadersToAdd: [{ headerSecretRef: { name: api-key, namespace: gloo-system } }]
        routeAction: { single: { upstream: { name: green, namespace: gloo-system } } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: blue, namespace: gloo-system } } }
`,
    );
    // the first apply, before the Secret: the other route serves, this one answers the policy's response
    const replaced = await gw.until('/keyed', (r) => r.status === 418, on('keyed.example.com'));
    expect(replaced.text).toBe('no key yet');
    expect((await gw.request('/', on('keyed.example.com'))).json()['upstream']).toBe('blue');
    const s = await statusOf('vs', 'keyed');
    expect(s.state).toBe('Warning');
    expect(s.reason).toBe(
      'virtualHost.routes[0].options.headerManipulation.requestHeadersToAdd[0].headerSecretRef: Secret gloo-system.api-key not found; ' +
        'the route answers 418 instead (Settings gloo.invalidConfigPolicy.replaceInvalidRoutes)',
    );

    gw.write(
      'key.yaml',
      `
apiVersion: v1
kind: Secret
type: gloo.solo.io/header
metadata: { name: api-key, namespace: gloo-system }
stringData: { x-api-key: from-the-secret }
`,
    );
    const keyed = await gw.until('/keyed', (r) => r.status === 200, on('keyed.example.com'));
    expect(keyed.json()['upstream']).toBe('green');
    expect(keyed.json<{ headers: Record<string, string> }>().headers['x-api-key']).toBe('from-the-secret');
    await eventually('keyed Accepted', async () => ((await statusOf('vs', 'keyed')).state === 'Accepted' ? true : undefined));

    // Gloo's default: the route's problem rejects the VirtualService, whose last accepted version keeps serving
    gw.remove('settings.yaml');
    gw.remove('key.yaml');
    await eventually('keyed Rejected', async () => ((await statusOf('vs', 'keyed')).state === 'Rejected' ? true : undefined));
    const kept = await gw.request('/keyed', on('keyed.example.com'));
    expect([kept.status, kept.json()['upstream']]).toEqual([200, 'green']);
    gw.remove('keyed.yaml');
    // served before the next tests: a route configuration update starts their local rate-limit buckets afresh
    await gw.until('/keyed', (r) => r.status === 404, on('keyed.example.com'));
  });
});

describe('VirtualHostOption and RouteOption', () => {
  it('applies a VirtualHostOption shared by two VirtualServices, each with its own limit; inline options win', async () => {
    const statuses = async (host: string, n: number): Promise<number[]> => {
      const out: number[] = [];
      for (let i = 0; i < n; i++) out.push((await gw.request('/', on(host))).status);
      return out;
    };
    // the first 200 takes a token of each virtual host's own bucket
    await gw.until('/', (r) => r.status === 200, on('b.example.com'));
    expect(await statuses('b.example.com', 2)).toEqual([200, 429]);
    await gw.until('/', (r) => r.status === 200, on('d.example.com'));
    expect(await statuses('d.example.com', 2)).toEqual([200, 429]);
    await gw.until('/', (r) => r.status === 200, on('c.example.com'));
    // own-limit's inline localRatelimit (4) wins over the referenced one (2)
    expect(await statuses('c.example.com', 4)).toEqual([200, 200, 200, 429]);
    expect((await statusOf('vho', 'two-per-hour', 'opts')).state).toBe('Accepted');
  });

  it('applies RouteOptions referenced by routes: the inline prefixRewrite wins, the timeout applies', async () => {
    const ref = await gw.until('/ref/x', (r) => r.status === 200, on('a.example.com'));
    expect(ref.json()['path']).toBe('/from-ref/x');
    const inline = await gw.request('/inline/x', on('a.example.com'));
    expect(inline.json()['path']).toBe('/from-inline/x');
    const started = Date.now();
    const timedOut: GatewayResponse = await gw.request('/slow', on('a.example.com'));
    expect([timedOut.status, Date.now() - started < 1400]).toEqual([504, true]);
  });

  it('refuses targetRefs with the reason, and lists the kinds and their check lines', async () => {
    const attached = await statusOf('rto', 'attached', 'opts');
    expect(attached.state).toBe('Rejected');
    expect(attached.reason).toContain('NotSupported: spec.targetRefs is not supported by Legate (targetRefs attach options');
    expect(gw.ctl('get', 'vho').stdout).toMatch(/opts\s+two-per-hour\s+Accepted\s+options=localRatelimit/);
    expect(gw.ctl('get', 'rto').stdout).toMatch(/opts\s+rewrite\s+Accepted/);
    const check = gw.ctl('check').stdout;
    expect(check).toContain('Checking VirtualHostOptions... OK');
    expect(check).toContain('Checking RouteOptions... 1 Errors!');
    expect(check).toContain("Found rejected route option by 'legate-system': opts attached (Reason: NotSupported:");
  });
});

describe('UpstreamGroup', () => {
  it('routes by the group weights: 100/0 and 50/50', async () => {
    await gw.until('/all-blue', (r) => r.status === 200, on('ug.example.com'));
    const seen = { '/all-blue': new Set<string>(), '/half': new Map<string, number>() };
    for (let i = 0; i < 40; i++) {
      seen['/all-blue'].add((await gw.request('/all-blue', on('ug.example.com'))).json<{ upstream: string }>().upstream);
      const half = (await gw.request('/half', on('ug.example.com'))).json<{ upstream: string }>().upstream;
      seen['/half'].set(half, (seen['/half'].get(half) ?? 0) + 1);
    }
    expect([...seen['/all-blue']]).toEqual(['blue']);
    expect([...seen['/half'].keys()].sort()).toEqual(['blue', 'green']);
    // a group that does not exist: a Warning, and that route answers as any route to a missing destination
    expect((await gw.request('/nowhere', on('ug.example.com'))).status).toBe(503);
    const s = await statusOf('vs', 'grouped');
    expect([s.state, s.reason]).toEqual([
      'Warning',
      'virtualHost.routes[2].routeAction.upstreamGroup: UpstreamGroup gloo-system.nowhere not found',
    ]);
    expect(gw.ctl('get', 'ug', '-n', 'gloo-system').stdout).toMatch(/gloo-system\s+half\s+Accepted\s+blue=50,green=50/);
    expect(gw.ctl('check').stdout).toContain('Checking UpstreamGroups... OK');
  });
});
