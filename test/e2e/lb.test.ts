// Load balancing end to end, as a Gloo user writes it: an Upstream of three hosts balanced by ring hash,
// sticky routes by cookie, header and client address (options.lbHash), subset routing by host metadata, routing by a
// cluster named in a request header, and the other load balancers as Envoy runs them.
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let hosts: EchoUpstream[];
let solo: EchoUpstream;

const HOST = { host: 'lb.example.com' };
const to = (name: string): string => `{ upstream: { name: ${name}, namespace: legate-system } }`;

beforeAll(async () => {
  hosts = await Promise.all(['a', 'b', 'c'].map((n) => startEcho(n)));
  solo = await startEcho('solo');
  const [a, b, c] = hosts.map((h) => h.port);
  const one = (name: string, lb: string): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${a} }, { addr: 127.0.0.1, port: ${b} }] }
  loadBalancerConfig: ${lb}
`;
  gw = await startGateway({
    'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: trio, namespace: legate-system }
spec:
  static:
    hosts:
      - { addr: 127.0.0.1, port: ${a}, metadata: { envoy.lb: { name: a, track: stable } } }
      - { addr: 127.0.0.1, port: ${b}, metadata: { envoy.lb: { name: b, track: stable } } }
      - { addr: 127.0.0.1, port: ${c}, metadata: { envoy.lb: { name: c, track: canary } } }
    subsetSpec:
      selectors: [{ keys: [track] }, { keys: [name] }]
  loadBalancerConfig:
    ringHash:
      ringHashConfig: { minimumRingSize: 1024, maximumRingSize: 8192 }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: solo, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${solo.port} }] }
---
${one('least', '{ leastRequest: { choiceCount: 3 }, healthyPanicThreshold: 40 }')}
---
${one('rand', '{ random: {} }')}
---
${one('magic', '{ maglev: {} }')}
`,
    'lb.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: lb, namespace: default }
spec:
  virtualHost:
    domains: [lb.example.com]
    routes:
      - matchers: [{ prefix: /cookie }]
        routeAction: { single: ${to('trio')} }
        options:
          lbHash:
            hashPolicies:
              - cookie: { name: session }
      - matchers: [{ prefix: /sticky }]
        routeAction: { single: ${to('trio')} }
        options:
          lbHash:
            hashPolicies:
              - cookie: { name: sticky, ttl: 60s, path: /sticky }
      - matchers: [{ prefix: /header }]
        routeAction: { single: ${to('trio')} }
        options:
          lbHash:
            hashPolicies:
              - header: x-user
                terminal: true
              - sourceIp: true
      - matchers: [{ prefix: /canary }]
        routeAction: { single: { upstream: { name: trio, namespace: legate-system }, subset: { values: { track: canary } } } }
      - matchers: [{ prefix: /only-b }]
        routeAction: { single: { upstream: { name: trio, namespace: legate-system }, subset: { values: { name: b } } } }
      - matchers: [{ prefix: /split }]
        routeAction:
          multi:
            destinations:
              - { destination: { upstream: { name: trio, namespace: legate-system }, subset: { values: { name: a } } }, weight: 1 }
              - { destination: { upstream: { name: trio, namespace: legate-system }, subset: { values: { name: c } } }, weight: 1 }
      - matchers: [{ prefix: /by-cluster }]
        routeAction: { clusterHeader: x-cluster }
      - matchers: [{ prefix: /least }]
        routeAction: { single: ${to('least')} }
        # least request does not hash: served, with a warning in the status
        options: { lbHash: { hashPolicies: [{ header: x-user }] } }
      - matchers: [{ prefix: /rand }]
        routeAction: { single: ${to('rand')} }
      - matchers: [{ prefix: /magic }]
        routeAction: { single: ${to('magic')} }
        options: { lbHash: { hashPolicies: [{ header: x-user }] } }
      - matchers: [{ prefix: /source }]
        routeAction: { single: ${to('trio')} }
        options: { lbHash: { hashPolicies: [{ sourceIp: true }] } }
`,
  });
  await gw.until('/canary', (r) => r.status === 200 && r.json()['upstream'] === 'c', HOST, 30_000);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all([...(hosts ?? []).map((h) => h.close()), solo?.close()]);
});

/** Which upstream answered a request from the client address `from` (any of 127.0.0.0/8 reaches the gateway). */
function servedFrom(path: string, from: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: gw.ports.http, path, localAddress: from, headers: HOST, agent: false, timeout: 10_000 },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve(String((JSON.parse(body) as { upstream: unknown }).upstream)));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** Which upstream answered each of `n` requests made by `headers(i)`. */
async function served(path: string, n: number, headers: (i: number) => Record<string, string>): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await gw.request(path, { ...HOST, headers: headers(i) });
    expect(r.status).toBe(200);
    names.push(String(r.json()['upstream']));
  }
  return names;
}

describe('load balancing', () => {
  it('a cookie hash policy sends every request with the same cookie to one host, and spreads different cookies', async () => {
    const same = await served('/cookie', 100, () => ({ cookie: 'session=alice' }));
    expect(new Set(same).size).toBe(1);
    const spread = await served('/cookie', 60, (i) => ({ cookie: `session=user-${i}` }));
    expect(new Set(spread).size).toBeGreaterThan(1);
  });

  it('a cookie with a ttl is generated when the client has none, and then keeps the client on its host', async () => {
    const first = await gw.request('/sticky', HOST);
    const setCookie = first.headers.get('set-cookie') ?? '';
    expect(setCookie).toMatch(/^sticky=[^;]+;.*Max-Age=60/);
    expect(setCookie).toContain('Path=/sticky');
    const cookie = setCookie.split(';')[0] ?? '';
    const again = await served('/sticky', 30, () => ({ cookie }));
    expect(new Set(again)).toEqual(new Set([String(first.json()['upstream'])]));
  });

  it('a header hash policy does the same by header value', async () => {
    const same = await served('/header', 100, () => ({ 'x-user': 'bob' }));
    expect(new Set(same).size).toBe(1);
    const spread = await served('/header', 60, (i) => ({ 'x-user': `user-${i}` }));
    expect(new Set(spread).size).toBeGreaterThan(1);
  });

  it('a sourceIp hash policy keeps each client address on one host, and spreads different addresses', async () => {
    const same: string[] = [];
    for (let i = 0; i < 30; i++) same.push(await servedFrom('/source', '127.0.0.1'));
    expect(new Set(same).size).toBe(1);
    const spread: string[] = [];
    for (let i = 2; i < 42; i++) spread.push(await servedFrom('/source', `127.0.0.${i}`));
    expect(new Set(spread).size).toBeGreaterThan(1);
    // each of those addresses stays where it went
    expect(await servedFrom('/source', '127.0.0.7')).toBe(spread[5]);
  });

  it('a destination subset sends the route only to the hosts whose metadata match', async () => {
    expect(new Set(await served('/canary', 30, () => ({})))).toEqual(new Set(['c']));
    expect(new Set(await served('/only-b', 30, () => ({})))).toEqual(new Set(['b']));
    // weighted destinations, each with its own subset
    const split = await served('/split', 60, (i) => ({ 'x-i': String(i) }));
    expect(new Set(split)).toEqual(new Set(['a', 'c']));
  });

  it('clusterHeader routes to the cluster the request names (<upstream>_<namespace>)', async () => {
    const bySolo = await gw.request('/by-cluster', { ...HOST, headers: { 'x-cluster': 'solo_legate-system' } });
    expect(bySolo.json()['upstream']).toBe('solo');
    const byTrio = await gw.request('/by-cluster', { ...HOST, headers: { 'x-cluster': 'trio_legate-system' } });
    expect(['a', 'b', 'c']).toContain(byTrio.json()['upstream']);
    // an unknown cluster or no header: Envoy answers 503 (no cluster to route to)
    expect((await gw.request('/by-cluster', { ...HOST, headers: { 'x-cluster': 'nope_default' } })).status).toBe(503);
    expect((await gw.request('/by-cluster', HOST)).status).toBe(503);
  });

  it('least request, random and maglev are what Envoy runs, and they serve', async () => {
    const res = await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_active_clusters`);
    const dump = (await res.json()) as { configs: { cluster: Record<string, unknown> }[] };
    const cluster = (name: string): Record<string, unknown> | undefined => dump.configs.find((c) => c.cluster['name'] === name)?.cluster;
    expect(cluster('least_legate-system')).toMatchObject({
      lb_policy: 'LEAST_REQUEST',
      least_request_lb_config: { choice_count: 3 },
      common_lb_config: { healthy_panic_threshold: { value: 40 } },
    });
    expect(cluster('rand_legate-system')).toMatchObject({ lb_policy: 'RANDOM' });
    expect(cluster('magic_legate-system')).toMatchObject({ lb_policy: 'MAGLEV' });
    expect(cluster('trio_legate-system')).toMatchObject({
      lb_policy: 'RING_HASH',
      ring_hash_lb_config: { minimum_ring_size: '1024', maximum_ring_size: '8192' },
      lb_subset_config: { fallback_policy: 'ANY_ENDPOINT' },
    });
    for (const p of ['/least', '/rand']) {
      const names = await served(p, 40, () => ({}));
      expect(new Set(names)).toEqual(new Set(['a', 'b']));
    }
    const sticky = await served('/magic', 30, () => ({ 'x-user': 'carol' }));
    expect(new Set(sticky).size).toBe(1);
  });

  it('says in the status when a route hashes onto an upstream that does not hash', () => {
    const vs = JSON.parse(gw.ctl('get', 'vs', 'lb', '-n', 'default', '-o', 'json').stdout);
    expect(vs.status.statuses['legate-system'].state).toBe('Warning');
    expect(vs.status.statuses['legate-system'].reason).toBe(
      'virtualHost.routes[7].options.lbHash: Upstream legate-system.least does not hash (loadBalancerConfig ringHash or maglev), ' +
        'so these hash policies have no effect on it',
    );
  });
});
