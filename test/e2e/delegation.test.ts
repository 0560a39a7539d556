// Delegation end to end: Gloo's docs examples of RouteTables (by ref, nested, by selector), applied
// unchanged but for the upstreams' addresses, routed by a real Envoy; a RouteTable edit reroutes; a
// cycle shows in `legatectl get rt` and `legatectl check` while the rest keeps serving; what a delegating
// route passes down with inheritableMatchers / inheritablePathMatchers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
const echoes: Record<string, EchoUpstream> = {};

// the docs name the upstreams without a namespace: each resolves in the namespace of the table using it
const upstream = (name: string, ns: string): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: ${ns} }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echoes[name]!.port} }] }
`;

// guides/traffic_management/destination_types/delegation: "Delegation via direct reference"
const BY_REF = `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: 'example'
  namespace: 'gloo-system'
spec:
  virtualHost:
    domains:
    - 'example.com'
    routes:
    - matchers:
       - prefix: '/a' # delegate ownership of routes for \`example.com/a\`
      delegateAction:
        ref:
          name: 'a-routes'
          namespace: 'a'
    - matchers:
       - prefix: '/b' # delegate ownership of routes for \`example.com/b\`
      delegateAction:
        ref:
          name: 'b-routes'
          namespace: 'b'
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata:
  name: 'a-routes'
  namespace: 'a'
spec:
  routes:
    - matchers:
        # the path matchers in this RouteTable must begin with the prefix \`/a/\`
       - prefix: '/a/1'
      routeAction:
        single:
          upstream:
            name: 'foo-upstream'
    - matchers:
       - prefix: '/a/2'
      routeAction:
        single:
          upstream:
            name: 'bar-upstream'
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata:
  name: 'b-routes'
  namespace: 'b'
spec:
  routes:
    - matchers:
        # the path matchers in this RouteTable must begin with the prefix \`/b/\`
       - regex: '/b/3'
      routeAction:
        single:
          upstream:
            name: 'baz-upstream'
    - matchers:
       - prefix: '/b/c/'
      # routes in the RouteTable can perform any action, including a delegateAction
      delegateAction:
        ref:
          name: 'c-routes'
          namespace: 'c'
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata:
  name: 'c-routes'
  namespace: 'c'
spec:
  routes:
    - matchers:
       - exact: '/b/c/4'
      routeAction:
        single:
          upstream:
            name: 'qux-upstream'
`;

// the same guide: "Delegation via route table selector"
const BY_SELECTOR = `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: 'example'
  namespace: 'gloo-system'
spec:
  virtualHost:
    domains:
    - 'example.com'
    routes:
    - matchers:
       - prefix: '/' # delegate ownership of all routes for \`example.com\`
      delegateAction:
        selector:
          labels:
            domain: example.com
          namespaces:
          - gloo-system
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata:
  name: 'a-routes'
  namespace: 'gloo-system'
  labels:
    domain: example.com
spec:
  weight: 20
  routes:
    - matchers:
        # the path matchers in this RouteTable can begin with any prefix
       - prefix: '/a'
      routeAction:
        single:
          upstream:
            name: 'foo-upstream'
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata:
  name: 'a-b-routes'
  namespace: 'gloo-system'
  labels:
    domain: example.com
spec:
  weight: 10
  routes:
    - matchers:
        # the path matchers in this RouteTable can begin with any prefix
       - regex: '/a/b'
      routeAction:
        single:
          upstream:
            name: 'bar-upstream'
`;

const teamTable = (body: string): string => `
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: team, namespace: default }
spec:
  routes:
    - matchers: [{ prefix: /team/version }]
      directResponseAction: { status: 200, body: "${body}" }
`;

const LOOP = `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: looping, namespace: default }
spec:
  virtualHost:
    domains: [loop.example.com]
    routes:
      - matchers: [{ prefix: /loop }]
        delegateAction: { ref: { name: loop-a } }
      - directResponseAction: { status: 200, body: still serving }
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: loop-a, namespace: default }
spec:
  routes:
    - matchers: [{ prefix: /loop/a }]
      directResponseAction: { status: 200, body: a }
    - matchers: [{ prefix: /loop/b }]
      delegateAction: { ref: { name: loop-b } }
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: loop-b, namespace: default }
spec:
  routes:
    - matchers: [{ prefix: /loop/b }]
      delegateAction: { ref: { name: loop-a } }
`;

beforeAll(async () => {
  for (const name of ['foo-upstream', 'bar-upstream', 'baz-upstream', 'qux-upstream']) echoes[name] = await startEcho(name);
  gw = await startGateway({
    'upstreams.yaml': [
      upstream('foo-upstream', 'a'),
      upstream('bar-upstream', 'a'),
      upstream('baz-upstream', 'b'),
      upstream('qux-upstream', 'c'),
      upstream('foo-upstream', 'gloo-system'),
      upstream('bar-upstream', 'gloo-system'),
    ].join('---\n'),
    'docs-example.yaml': BY_REF,
    'team.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: team, namespace: default }
spec:
  virtualHost:
    domains: [team.example.com]
    routes:
      - matchers: [{ prefix: /team }]
        delegateAction: { ref: { name: team } }
`,
    'team-rt.yaml': teamTable('v1'),
  });
  await gw.until('/b/c/4', (r) => r.status === 200, { host: 'example.com' }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all(Object.values(echoes).map((e) => e.close()));
});

const upstreamOf = async (path: string, host = 'example.com'): Promise<unknown> => {
  const r = await gw.request(path, { host });
  return r.status === 200 ? r.json()['upstream'] : r.status;
};

// a delegating route's headers and methods go down to every route below it (nested tables too), and another's path
const INHERIT = `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: inherit, namespace: default }
spec:
  virtualHost:
    domains: [inherit.example.com]
    routes:
      - matchers: [{ prefix: /api, headers: [{ name: x-team, value: blue }], methods: [GET] }]
        inheritableMatchers: true
        delegateAction: { ref: { name: api } }
      - matchers: [{ prefix: /fixed }]
        inheritablePathMatchers: true
        delegateAction: { ref: { name: fixed } }
      - directResponseAction: { status: 200, body: fallback }
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: api, namespace: default }
spec:
  routes:
    - matchers: [{ prefix: /api/users }]
      directResponseAction: { status: 200, body: users }
    - matchers: [{ prefix: /api/orders }]
      delegateAction: { ref: { name: orders } }
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: orders, namespace: default }
spec:
  routes:
    - matchers: [{ prefix: /api/orders }]
      directResponseAction: { status: 200, body: orders }
---
apiVersion: gateway.solo.io/v1
kind: RouteTable
metadata: { name: fixed, namespace: default }
spec:
  routes:
    - matchers: [{ methods: [POST] }]
      directResponseAction: { status: 200, body: fixed post }
    - matchers: [{ methods: [GET] }]
      directResponseAction: { status: 200, body: fixed get }
`;

describe('delegation', () => {
  it("routes Gloo's delegation-by-reference example, nested tables included", async () => {
    expect(await upstreamOf('/a/1')).toBe('foo-upstream');
    expect(await upstreamOf('/a/2/x')).toBe('bar-upstream');
    expect(await upstreamOf('/b/3')).toBe('baz-upstream');
    expect(await upstreamOf('/b/c/4')).toBe('qux-upstream');
    // nothing else is routed: /b/c/5 is under the nested table's prefix but matches none of its routes
    expect(await upstreamOf('/b/c/5')).toBe(404);
    expect(await upstreamOf('/a/3')).toBe(404);
    const rts = gw.ctl('get', 'rt');
    expect(rts.status).toBe(0);
    expect(rts.stdout).toMatch(/^b\s+b-routes\s+Accepted\s+routes=2 delegating=1 weight=0/m);
    expect(rts.stdout).toMatch(/^c\s+c-routes\s+Accepted/m);
  });

  it('reroutes when a RouteTable is edited', async () => {
    expect((await gw.request('/team/version', { host: 'team.example.com' })).text).toBe('v1');
    gw.write('team-rt.yaml', teamTable('v2'));
    await gw.until('/team/version', (r) => r.text === 'v2', { host: 'team.example.com' });
    // a bad edit keeps the last good version serving, and says why
    gw.write('team-rt.yaml', teamTable('v3').replace('prefix: /team/version', "regex: '/team/(version'"));
    const statusOf = (state: string) =>
      eventually(() => {
        const got = JSON.parse(gw.ctl('get', 'rt', 'team', '-n', 'default', '-o', 'json').stdout) as Listed;
        return Object.values(got.status.statuses)[0]?.state === state ? Object.values(got.status.statuses)[0] : undefined;
      });
    expect((await statusOf('Rejected'))?.reason).toContain('invalid regex "/team/(version"');
    expect((await gw.request('/team/version', { host: 'team.example.com' })).text).toBe('v2');
    gw.write('team-rt.yaml', teamTable('v4'));
    await gw.until('/team/version', (r) => r.text === 'v4', { host: 'team.example.com' });
    // as in Gloo, a route outside its parent's prefix is left out with a warning; the table's others serve
    gw.write('team-rt.yaml', teamTable('v5') + '    - matchers: [{ prefix: /elsewhere }]\n      directResponseAction: { status: 200 }\n');
    await gw.until('/team/version', (r) => r.text === 'v5', { host: 'team.example.com' });
    expect((await statusOf('Warning'))?.reason).toContain(
      'required prefix: /team, prefix: /elsewhere: invalid route: ' +
        "route table matchers must begin with the prefix of their parent route's matcher",
    );
    expect((await gw.request('/elsewhere', { host: 'team.example.com' })).status).toBe(404);
    gw.write('team-rt.yaml', teamTable('v6'));
    await statusOf('Accepted');
  });

  it("routes Gloo's delegation-by-selector example in weight order", async () => {
    gw.write('docs-example.yaml', BY_SELECTOR);
    // a-b-routes (weight 10) comes before a-routes (weight 20), so /a/b is not taken by the /a prefix
    await gw.until('/a/b', (r) => r.status === 200 && r.json()['upstream'] === 'bar-upstream', { host: 'example.com' });
    expect(await upstreamOf('/a/x')).toBe('foo-upstream');
    expect(await upstreamOf('/b/c/4')).toBe(404);
  });

  it('reports a delegation cycle on every RouteTable in it and keeps serving the rest', async () => {
    gw.write('loop.yaml', LOOP);
    await gw.until('/anything', (r) => r.text === 'still serving', { host: 'loop.example.com' });
    const rts = await eventually(() => {
      const out = gw.ctl('get', 'rt').stdout;
      return /loop-a\s+Rejected/.test(out) && /loop-b\s+Rejected/.test(out) ? out : undefined;
    });
    expect(rts).toMatch(
      /loop-a\s+Rejected\s+.*delegation cycle detected: \[default\.loop-a\] -> \[default\.loop-b\] -> \[default\.loop-a\]/,
    );
    expect(rts).toMatch(
      /loop-b\s+Rejected\s+.*delegation cycle detected: \[default\.loop-b\] -> \[default\.loop-a\] -> \[default\.loop-b\]/,
    );
    // the tables in the cycle serve nothing (/loop/a falls through to the catch-all); everything else does
    expect((await gw.request('/loop/a', { host: 'loop.example.com' })).text).toBe('still serving');
    expect(await upstreamOf('/a/b')).toBe('bar-upstream');
    const check = gw.ctl('check');
    expect(check.status).toBe(1);
    expect(check.stdout).toContain('Checking RouteTables... 2 Errors!');
    // and the VirtualService that delegates into the cycle says so
    expect(check.stdout).toMatch(
      /Found virtual service with warnings by '[^']+': default looping \(Reason: .*route table default\.loop-a is rejected/,
    );
    expect(check.stdout).toMatch(
      /Found rejected route table by '[^']+': default loop-a \(Reason: invalid route: delegation cycle detected/,
    );
    expect(check.stdout).toMatch(
      /Found rejected route table by '[^']+': default loop-b \(Reason: invalid route: delegation cycle detected/,
    );
  });
  it('passes the parent matchers down: headers and methods with inheritableMatchers, the path with inheritablePathMatchers', async () => {
    gw.write('inherit.yaml', INHERIT);
    const on = (method: string, team?: string) => ({
      host: 'inherit.example.com',
      method,
      headers: (team ? { 'x-team': team } : {}) as Record<string, string>,
    });
    const body = async (path: string, o: ReturnType<typeof on>): Promise<string> => (await gw.request(path, o)).text;
    await gw.until('/api/users', (r) => r.text === 'users', on('GET', 'blue'));
    // the parent's header and method are the child's too: without them the request falls through
    expect(await body('/api/users', on('GET'))).toBe('fallback');
    expect(await body('/api/users', on('GET', 'red'))).toBe('fallback');
    expect(await body('/api/users', on('POST', 'blue'))).toBe('fallback');
    // inherited down two levels (the flag itself is inherited)
    expect(await body('/api/orders/7', on('GET', 'blue'))).toBe('orders');
    expect(await body('/api/orders/7', on('GET'))).toBe('fallback');
    // the children of /fixed have no path of their own: the parent's applies, the methods tell them apart
    expect(await body('/fixed/a', on('POST'))).toBe('fixed post');
    expect(await body('/fixed/b', on('GET'))).toBe('fixed get');
    expect(await body('/other', on('POST'))).toBe('fallback');
    gw.remove('inherit.yaml');
  });
});

interface Listed {
  status: { statuses: Record<string, { state: string; reason?: string }> };
}

async function eventually<T>(get: () => T | undefined, timeoutMs = 15_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = get();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 250));
  }
}
