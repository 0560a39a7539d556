// Routing end to end: resources written to a watched directory, served by `legate run` through a real
// Envoy to real upstreams on loopback.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let blue: EchoUpstream;
let green: EchoUpstream;
let slow: EchoUpstream;

const upstream = (name: string, port: number, ns = 'legate-system'): string => `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: ${name}, namespace: ${ns} }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;

const to = (name: string): string => `routeAction: { single: { upstream: { name: ${name}, namespace: legate-system } } }`;

beforeAll(async () => {
  [blue, green, slow] = await Promise.all([startEcho('blue'), startEcho('green'), startEcho('slow', { delayMs: 1500 })]);
  gw = await startGateway({
    'upstreams.yaml': [upstream('blue', blue.port), upstream('green', green.port), upstream('slow', slow.port)].join('---\n'),
    'shop.yaml': `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: [shop.example.com]
    routes:
      - matchers: [{ prefix: /blue }]
        ${to('blue')}
      - matchers: [{ prefix: /green }]
        ${to('green')}
`,
    'matchers.yaml': `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: matchers, namespace: default }
spec:
  virtualHost:
    domains: [match.example.com]
    routes:
      - matchers: [{ exact: /exact }]
        directResponseAction: { status: 200, body: exact }
      - matchers: [{ regex: '/items/[0-9]+' }]
        directResponseAction: { status: 200, body: regex }
      - matchers: [{ prefix: /h, headers: [{ name: x-version, value: v2 }] }]
        directResponseAction: { status: 200, body: header-exact }
      - matchers: [{ prefix: /h, headers: [{ name: x-tenant, value: 'team-[a-z]+', regex: true }] }]
        directResponseAction: { status: 200, body: header-regex }
      - matchers: [{ prefix: /h, headers: [{ name: x-debug, invertMatch: true }] }]
        directResponseAction: { status: 200, body: header-absent }
      - matchers: [{ prefix: /q, queryParameters: [{ name: lang, value: en }] }]
        directResponseAction: { status: 200, body: query-en }
      - matchers: [{ prefix: /q, queryParameters: [{ name: page }] }]
        directResponseAction: { status: 200, body: query-page }
      - matchers: [{ prefix: /m, methods: [POST, PUT] }]
        directResponseAction: { status: 200, body: method-write }
      - matchers: [{ prefix: /CaSe, caseSensitive: false }]
        directResponseAction: { status: 200, body: case-insensitive }
      - matchers: [{ prefix: /weighted }]
        routeAction:
          multi:
            destinations:
              - { destination: { upstream: { name: blue, namespace: legate-system } }, weight: 75 }
              - { destination: { upstream: { name: green, namespace: legate-system } }, weight: 25 }
      - matchers: [{ prefix: /never-green }]
        routeAction:
          multi:
            destinations:
              - { destination: { upstream: { name: blue, namespace: legate-system } }, weight: 1 }
              - { destination: { upstream: { name: green, namespace: legate-system } }, weight: 0 }
      - matchers: [{ prefix: /rewrite/ }]
        ${to('blue')}
        options: { prefixRewrite: /inner/ }
      - matchers: [{ prefix: /old }]
        redirectAction: { hostRedirect: new.example.com, pathRedirect: /new }
      - matchers: [{ prefix: /moved }]
        redirectAction: { pathRedirect: /store/products }
      - matchers: [{ prefix: /elsewhere }]
        redirectAction: { hostRedirect: 'other.example.com:9443', pathRedirect: /x }
      - matchers: [{ prefix: /slow-short }]
        ${to('slow')}
        options: { timeout: 500ms }
      - matchers: [{ prefix: /slow-long }]
        ${to('slow')}
        options: { timeout: 5s }
      - ${to('green')}
`,
  });
  await gw.until('/blue', (r) => r.status === 200, { host: 'shop.example.com' }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([blue?.close(), green?.close(), slow?.close()]);
});

const on = (host: string) => ({ host });
const bodyOf = async (p: string, opts: Parameters<Gateway['request']>[1] = {}) =>
  (await gw.request(p, { host: 'match.example.com', ...opts })).text;

describe('routing', () => {
  it('routes by domain and prefix', async () => {
    expect((await gw.request('/blue/x', on('shop.example.com'))).json()['upstream']).toBe('blue');
    expect((await gw.request('/green/y', on('shop.example.com'))).json()['upstream']).toBe('green');
    // the port in the Host header does not stop the domain from matching
    expect((await gw.request('/blue', on(`shop.example.com:${gw.ports.http}`))).json()['upstream']).toBe('blue');
  });

  it('answers 404 for unmatched paths and unknown domains', async () => {
    expect((await gw.request('/purple', on('shop.example.com'))).status).toBe(404);
    expect((await gw.request('/blue', on('unknown.example.com'))).status).toBe(404);
  });

  it('matches exact paths and regexes over the whole path', async () => {
    expect(await bodyOf('/exact')).toBe('exact');
    expect((await gw.request('/exact/more', on('match.example.com'))).json()['upstream']).toBe('green');
    expect(await bodyOf('/items/42')).toBe('regex');
    expect((await gw.request('/items/42x', on('match.example.com'))).json()['upstream']).toBe('green');
  });

  it('matches headers by value, regex and absence', async () => {
    expect(await bodyOf('/h', { headers: { 'x-version': 'v2', 'x-debug': '1' } })).toBe('header-exact');
    expect(await bodyOf('/h', { headers: { 'x-tenant': 'team-blue', 'x-debug': '1' } })).toBe('header-regex');
    expect(await bodyOf('/h', { headers: { 'x-tenant': 'team-42', 'x-debug': '1' } })).not.toBe('header-regex');
    expect(await bodyOf('/h')).toBe('header-absent');
  });

  it('matches query parameters and methods', async () => {
    expect(await bodyOf('/q?lang=en')).toBe('query-en');
    expect(await bodyOf('/q?lang=fr&page=2')).toBe('query-page');
    expect(await bodyOf('/m', { method: 'POST', body: '{}' })).toBe('method-write');
    expect(await bodyOf('/m', { method: 'PUT', body: '{}' })).toBe('method-write');
    expect(JSON.parse(await bodyOf('/m'))['upstream']).toBe('green');
  });

  it('matches case-insensitively when caseSensitive is false', async () => {
    expect(await bodyOf('/case/x')).toBe('case-insensitive');
    expect(await bodyOf('/CASE')).toBe('case-insensitive');
  });

  it('splits traffic by weight', async () => {
    const counts: Record<string, number> = { blue: 0, green: 0 };
    for (let i = 0; i < 400; i++) {
      const r = await gw.request('/weighted', on('match.example.com'));
      counts[r.json<{ upstream: string }>().upstream]! += 1;
    }
    expect(counts['blue']! + counts['green']!).toBe(400);
    expect(counts['blue']! / 400).toBeGreaterThan(0.65);
    expect(counts['blue']! / 400).toBeLessThan(0.85);
    for (let i = 0; i < 50; i++) expect((await gw.request('/never-green', on('match.example.com'))).json()['upstream']).toBe('blue');
  });

  it('rewrites prefixes and redirects', async () => {
    const r = await gw.request('/rewrite/a/b?x=1', on('match.example.com'));
    expect(r.json()['upstream']).toBe('blue');
    expect(r.json()['path']).toBe('/inner/a/b?x=1');
    const redirect = await gw.request('/old', on('match.example.com'));
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('http://new.example.com/new');
  });

  it("keeps the gateway's port in redirects unless the redirect names one (curl -L follows them)", async () => {
    const host = `match.example.com:${gw.ports.http}`;
    const moved = await gw.request('/moved', on(host));
    expect(moved.status).toBe(301);
    expect(moved.headers.get('location')).toBe(`http://${host}/store/products`);
    // the upstream sees the Host as the client sent it
    expect((await gw.request('/anything', on(host))).json<{ headers: Record<string, string> }>().headers['host']).toBe(host);
    const elsewhere = await gw.request('/elsewhere', on(host));
    expect(elsewhere.headers.get('location')).toBe('http://other.example.com:9443/x');
  });

  it('applies route timeouts', async () => {
    expect((await gw.request('/slow-short', on('match.example.com'))).status).toBe(504);
    expect((await gw.request('/slow-long', on('match.example.com'))).status).toBe(200);
  });

  it('falls through to a route without matchers (prefix /)', async () => {
    expect((await gw.request('/anything/else', on('match.example.com'))).json()['upstream']).toBe('green');
  });
});

describe('applying changes', () => {
  it('serves direct responses and replaces a resource applied again with the same name', async () => {
    const vs = (body: string) => `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: live, namespace: default }
spec:
  virtualHost:
    domains: [live.example.com]
    routes:
      - matchers: [{ prefix: /v }]
        directResponseAction: { status: 201, body: ${body} }
`;
    gw.write('live.yaml', vs('one'));
    const first = await gw.until('/v', (r) => r.status === 201, on('live.example.com'));
    expect(first.text).toBe('one');
    gw.write('live.yaml', vs('two'));
    await gw.until('/v', (r) => r.text === 'two', on('live.example.com'));
    // the same resource moved to another file still replaces, not duplicates
    gw.remove('live.yaml');
    gw.write('live-moved.yaml', vs('three'));
    await gw.until('/v', (r) => r.text === 'three', on('live.example.com'));
    const listed = JSON.parse(gw.ctl('get', 'vs', 'live', '-n', 'default', '-o', 'json').stdout);
    expect(listed.status.statuses['legate-system'].state).toBe('Accepted');
  });

  it('warns about a route to a missing upstream (as Gloo does) and keeps the others serving; recovers when fixed', async () => {
    const bad = `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: broken, namespace: default }
spec:
  virtualHost:
    domains: [broken.example.com]
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: does-not-exist, namespace: legate-system } } }
`;
    gw.write('broken.yaml', bad);
    const status = await waitForStatus('broken', (s) => s.state === 'Warning');
    expect(status.reason).toContain('Upstream legate-system.does-not-exist not found');
    // served on first apply: the route names a cluster Envoy does not have, which Envoy answers with 503
    expect((await gw.until('/', (r) => r.status === 503, on('broken.example.com'))).status).toBe(503);
    expect((await gw.request('/blue', on('shop.example.com'))).json()['upstream']).toBe('blue');

    gw.write('broken.yaml', bad.replace('does-not-exist', 'blue'));
    await gw.until('/', (r) => r.status === 200, on('broken.example.com'));
    expect((await waitForStatus('broken', (s) => s.state === 'Accepted')).state).toBe('Accepted');
  });

  it('keeps the last accepted version when an edit is rejected', async () => {
    const vs = (extra: string) => `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: careful, namespace: default }
spec:
  virtualHost:
    domains: [careful.example.com]
    routes:
      - matchers: [{ prefix: /${extra} }]
        directResponseAction: { status: 200, body: good }
`;
    gw.write('careful.yaml', vs(''));
    await gw.until('/', (r) => r.text === 'good', on('careful.example.com'));
    gw.write('careful.yaml', vs('').replace('prefix: /', 'prefx: /'));
    const status = await waitForStatus('careful', (s) => s.state === 'Rejected');
    expect(status.reason).toContain('prefx: unknown field');
    expect(status.reason).toContain('serving the last accepted version');
    expect((await gw.request('/', on('careful.example.com'))).text).toBe('good');
  });

  it('survives a malformed YAML file without losing other files', async () => {
    gw.write('garbage.yaml', 'apiVersion: [unclosed\n  kind: : :\n');
    gw.write(
      'after-garbage.yaml',
      `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: after-garbage, namespace: default }
spec:
  virtualHost:
    domains: [after.example.com]
    routes: [{ directResponseAction: { status: 200, body: loaded } }]
`,
    );
    await gw.until('/', (r) => r.text === 'loaded', on('after.example.com'));
    expect((await gw.request('/blue', on('shop.example.com'))).json()['upstream']).toBe('blue');
    expect(gw.log('controller')).toContain('garbage.yaml');
  });

  it('applies a Gloo Edge manifest unchanged', async () => {
    gw.write(
      'gloo.yaml',
      `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata:
  name: gloo-blue
  namespace: gloo-system
spec:
  static:
    hosts:
      - addr: 127.0.0.1
        port: ${blue.port}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: gloo-vs
  namespace: gloo-system
spec:
  virtualHost:
    domains:
      - 'gloo.example.com'
    routes:
      - matchers:
          - prefix: /posts
        routeAction:
          single:
            upstream:
              name: gloo-blue
              namespace: gloo-system
        options:
          prefixRewrite: /api/posts
`,
    );
    const r = await gw.until('/posts/1', (x) => x.status === 200, on('gloo.example.com'));
    expect(r.json()['path']).toBe('/api/posts/1');
    expect(gw.ctl('get', 'upstream', 'gloo-blue', '-n', 'gloo-system', '-o', 'yaml').stdout).toContain('state: Accepted');
  });

  it('routes to Kubernetes services through Service/Endpoints and lists discovered upstreams', async () => {
    gw.write(
      'kube.yaml',
      `
apiVersion: v1
kind: Service
metadata: { name: pets, namespace: shop }
spec:
  ports: [{ name: http, port: 80, targetPort: 8080 }]
---
apiVersion: v1
kind: Endpoints
metadata: { name: pets, namespace: shop }
subsets:
  - addresses: [{ ip: 127.0.0.1 }]
    ports: [{ name: http, port: ${green.port} }]
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: pets, namespace: shop }
spec:
  virtualHost:
    domains: [pets.example.com]
    routes:
      - matchers: [{ prefix: /kube }]
        routeAction: { single: { kube: { ref: { name: pets, namespace: shop }, port: 80 } } }
      - matchers: [{ prefix: /discovered }]
        routeAction: { single: { upstream: { name: shop-pets-80, namespace: legate-system } } }
`,
    );
    expect((await gw.until('/kube', (r) => r.status === 200, on('pets.example.com'))).json()['upstream']).toBe('green');
    expect((await gw.request('/discovered', on('pets.example.com'))).json()['upstream']).toBe('green');
    const list = gw.ctl('get', 'upstreams');
    expect(list.status).toBe(0);
    expect(list.stdout).toMatch(/legate-system\s+shop-pets-80\s+Accepted/);
  });

  it('keeps a VirtualService serving when a Service it routes to disappears, and says why', async () => {
    gw.write(
      'deps-service.yaml',
      `
apiVersion: v1
kind: Service
metadata: { name: deps-details, namespace: default }
spec: { ports: [{ port: 80, targetPort: 8080 }] }
---
apiVersion: v1
kind: Endpoints
metadata: { name: deps-details, namespace: default }
subsets: [{ addresses: [{ ip: 127.0.0.1 }], ports: [{ port: ${green.port} }] }]
`,
    );
    gw.write(
      'deps-vs.yaml',
      `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: deps, namespace: default }
spec:
  virtualHost:
    domains: [deps.example.com]
    routes:
      - matchers: [{ prefix: /details }]
        routeAction: { single: { kube: { ref: { name: deps-details, namespace: default }, port: 80 } } }
      - matchers: [{ exact: /hello }]
        directResponseAction: { status: 200, body: hello }
`,
    );
    await gw.until('/details', (r) => r.status === 200, on('deps.example.com'));
    gw.remove('deps-service.yaml');
    const status = await waitForStatus('deps', (s) => s.state === 'Warning');
    expect(status.reason).toMatch(/Service default\.deps-details not found$/);
    // the unrelated route keeps answering; the one to the vanished Service fails on its own
    expect((await gw.request('/hello', on('deps.example.com'))).text).toBe('hello');
    expect((await gw.until('/details', (r) => r.status !== 200, on('deps.example.com'))).status).toBeGreaterThanOrEqual(500);
    expect(gw.ctl('check').stdout).not.toMatch(/rejected proxy/i);
  });
});

async function waitForStatus(name: string, check: (s: { state: string; reason?: string }) => boolean) {
  const { eventually } = await import('../support/util.js');
  return eventually(`status of ${name}`, () => {
    const out = gw.ctl('get', 'vs', name, '-n', 'default', '-o', 'json');
    if (out.status !== 0) return undefined;
    const s = JSON.parse(out.stdout).status.statuses['legate-system'] as { state: string; reason?: string };
    return check(s) ? s : undefined;
  });
}
