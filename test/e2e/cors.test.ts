// CORS and CSRF end to end, with Gloo-shaped VirtualServices: browser-shaped preflights answered by Envoy
// itself, Access-Control-* headers on actual requests, a route's policy over its virtual host's,
// disableForRoute, corsPolicyMergeSettings UNION; and the CSRF filter refusing cross-origin writes on a
// virtual host, a route (shadow mode: counted in Envoy's stats, not refused) and weighted destinations.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type RequestOptions } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
let canary: EchoUpstream;

const upstream = (name: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }';

beforeAll(async () => {
  [app, canary] = await Promise.all([startEcho('app'), startEcho('canary')]);
  gw = await startGateway({
    'upstreams.yaml': [upstream('app', app.port), upstream('canary', canary.port)].join('---\n'),
    'web.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: web, namespace: gloo-system }
spec:
  virtualHost:
    domains: [web.example.com]
    options:
      cors:
        allowCredentials: true
        allowHeaders: [x-requested-with, content-type]
        allowMethods: [GET, POST]
        allowOrigin: [https://app.example.com]
        allowOriginRegex: ['https://[a-z]+\\.partner\\.example\\.org']
        exposeHeaders: [x-request-id]
        maxAge: 1d
    routes:
      - matchers: [{ prefix: /route-policy }]
        options:
          cors: { allowOrigin: [https://route.example.com], exposeHeaders: [x-route] }
        ${toApp}
      - matchers: [{ prefix: /no-cors }]
        options: { cors: { disableForRoute: true } }
        ${toApp}
      - matchers: [{ prefix: /mock }]
        options: { cors: { allowOrigin: [https://app.example.com], allowMethods: [GET] } }
        directResponseAction: { status: 200, body: mock }
      - ${toApp}
`,
    'merged.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: merged, namespace: gloo-system }
spec:
  virtualHost:
    domains: [merged.example.com]
    options:
      corsPolicyMergeSettings: { exposeHeaders: UNION }
      cors: { allowOrigin: [https://app.example.com], exposeHeaders: [origin, vh-header] }
    routes:
      - options:
          cors: { allowOrigin: [https://app.example.com], exposeHeaders: [origin, route-header] }
        ${toApp}
`,
    'forms.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: forms, namespace: gloo-system }
spec:
  virtualHost:
    domains: [forms.example.com]
    options:
      csrf:
        filterEnabled: { defaultValue: { numerator: 100, denominator: HUNDRED } }
        additionalOrigins: [{ suffix: trusted.example.com }]
    routes:
      - matchers: [{ prefix: /shadow }]
        options:
          csrf:
            shadowEnabled: { defaultValue: { numerator: 100, denominator: HUNDRED } }
        ${toApp}
      - ${toApp}
`,
    'split.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: split, namespace: gloo-system }
spec:
  virtualHost:
    domains: [split.example.com]
    routes:
      - routeAction:
          multi:
            destinations:
              - destination: { upstream: { name: app, namespace: gloo-system } }
                weight: 1
                options:
                  csrf: { filterEnabled: { defaultValue: { numerator: 100, denominator: HUNDRED } } }
              - destination: { upstream: { name: canary, namespace: gloo-system } }
                weight: 1
                options:
                  csrf:
                    filterEnabled: { defaultValue: { numerator: 100, denominator: HUNDRED } }
                    additionalOrigins: [{ exact: canary.example.com }]
`,
  });
  await gw.until('/', (r) => r.status === 200, { host: 'split.example.com' }, 30_000);
  for (const host of ['web.example.com', 'merged.example.com', 'forms.example.com']) {
    await gw.until('/', (r) => r.status === 200, { host }, 15_000);
  }
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([app?.close(), canary?.close()]);
});

const preflight = (origin: string, method = 'POST', headers = 'x-requested-with'): RequestOptions => ({
  host: 'web.example.com',
  method: 'OPTIONS',
  headers: { origin, 'access-control-request-method': method, 'access-control-request-headers': headers },
});
const from = (host: string, origin: string, method = 'GET'): RequestOptions => ({
  host,
  method,
  headers: { origin },
  ...(method === 'GET' ? {} : { body: '{}' }),
});
const optionsSeen = (): number => app.seen.filter((r) => r.method === 'OPTIONS').length;

async function stat(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${encodeURIComponent(`^${name}$`)}`)).text();
  const m = /: (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

describe('cors', () => {
  it('answers a preflight from an allowed origin itself, with the policy in Access-Control-* headers', async () => {
    const before = optionsSeen();
    const r = await gw.request('/items', preflight('https://app.example.com'));
    expect(r.status).toBe(200);
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(r.headers.get('access-control-allow-methods')).toBe('GET,POST');
    expect(r.headers.get('access-control-allow-headers')).toBe('x-requested-with,content-type');
    // Gloo's `maxAge: 1d`, sent as the seconds browsers read
    expect(r.headers.get('access-control-max-age')).toBe('86400');
    expect(r.headers.get('access-control-allow-credentials')).toBe('true');
    expect(r.headers.get('x-upstream')).toBeNull();
    expect(optionsSeen()).toBe(before);
  });

  it('adds Access-Control-Allow-Origin, expose headers and credentials to an allowed origin only', async () => {
    const ok = await gw.request('/items', from('web.example.com', 'https://app.example.com'));
    expect(ok.json()['upstream']).toBe('app');
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(ok.headers.get('access-control-expose-headers')).toBe('x-request-id');
    expect(ok.headers.get('access-control-allow-credentials')).toBe('true');

    const other = await gw.request('/items', from('web.example.com', 'https://evil.example.com'));
    expect(other.status).toBe(200);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(other.headers.get('access-control-allow-credentials')).toBeNull();
    const denied = await gw.request('/items', preflight('https://evil.example.com'));
    expect(denied.headers.get('access-control-allow-origin')).toBeNull();
    expect(denied.headers.get('access-control-allow-methods')).toBeNull();
  });

  it('matches allowOriginRegex against the whole origin', async () => {
    const ok = await gw.request('/items', preflight('https://shop.partner.example.org'));
    expect(ok.headers.get('access-control-allow-origin')).toBe('https://shop.partner.example.org');
    const longer = await gw.request('/items', from('web.example.com', 'https://shop.partner.example.org.evil.com'));
    expect(longer.headers.get('access-control-allow-origin')).toBeNull();
  });

  it("lets a route's policy override its virtual host's field by field", async () => {
    const route = await gw.request('/route-policy', preflight('https://route.example.com', 'GET'));
    expect(route.headers.get('access-control-allow-origin')).toBe('https://route.example.com');
    // not set on the route: the virtual host's
    expect(route.headers.get('access-control-allow-methods')).toBe('GET,POST');
    const get = await gw.request('/route-policy', from('web.example.com', 'https://route.example.com'));
    expect(get.headers.get('access-control-expose-headers')).toBe('x-route');
    // the route's origins replace the virtual host's
    const vhOrigin = await gw.request('/route-policy', from('web.example.com', 'https://app.example.com'));
    expect(vhOrigin.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('turns CORS off on a route with disableForRoute (the preflight reaches the upstream)', async () => {
    const before = optionsSeen();
    const r = await gw.request('/no-cors', preflight('https://app.example.com'));
    expect(r.headers.get('x-upstream')).toBe('app');
    expect(r.headers.get('access-control-allow-origin')).toBeNull();
    expect(optionsSeen()).toBe(before + 1);
  });

  it("gives a direct response its route's policy as fixed headers", async () => {
    const r = await gw.request('/mock', from('web.example.com', 'https://app.example.com'));
    expect(r.text).toBe('mock');
    expect(r.headers.get('access-control-allow-origin')).toBe('https://app.example.com');
    expect(r.headers.get('access-control-allow-methods')).toBe('GET');
  });

  it('joins the expose headers of virtual host and route with corsPolicyMergeSettings UNION', async () => {
    const r = await gw.request('/x', from('merged.example.com', 'https://app.example.com'));
    expect(r.headers.get('access-control-expose-headers')).toBe('origin,vh-header,route-header');
  });
});

describe('csrf', () => {
  it('refuses a cross-origin write (403) and lets same-origin writes and additional origins through', async () => {
    const seen = app.seen.length;
    const evil = await gw.request('/submit', from('forms.example.com', 'https://evil.example.com', 'POST'));
    expect(evil.status).toBe(403);
    expect(evil.text).toBe('Invalid origin');
    for (const method of ['PUT', 'DELETE', 'PATCH']) {
      expect((await gw.request('/submit', from('forms.example.com', 'https://evil.example.com', method))).status).toBe(403);
    }
    const missing = await gw.request('/submit', { host: 'forms.example.com', method: 'POST', body: '{}' });
    expect(missing.status).toBe(403);
    expect(app.seen.length).toBe(seen);

    expect((await gw.request('/submit', from('forms.example.com', 'https://forms.example.com', 'POST'))).status).toBe(200);
    expect((await gw.request('/submit', from('forms.example.com', 'https://www.trusted.example.com', 'POST'))).status).toBe(200);
    // reads are not checked
    expect((await gw.request('/submit', from('forms.example.com', 'https://evil.example.com'))).status).toBe(200);
  });

  it('only counts cross-origin writes where the policy is shadowEnabled', async () => {
    const invalid = await stat('http.http.csrf.request_invalid');
    const r = await gw.request('/shadow', from('forms.example.com', 'https://evil.example.com', 'POST'));
    expect(r.status).toBe(200);
    expect(r.json()['upstream']).toBe('app');
    expect(await stat('http.http.csrf.request_invalid')).toBe(invalid + 1);
  });

  it("applies each weighted destination's own policy", async () => {
    const served = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await gw.request('/', from('split.example.com', 'https://evil.example.com', 'POST'));
      expect(r.status).toBe(403);
      const same = await gw.request('/', from('split.example.com', 'https://split.example.com', 'POST'));
      expect(same.status).toBe(200);
      served.add(String(same.json()['upstream']));
    }
    expect([...served].sort()).toEqual(['app', 'canary']);
    // canary.example.com is an additional origin of the canary destination alone
    const fromCanary = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const r = await gw.request('/', from('split.example.com', 'https://canary.example.com', 'POST'));
      fromCanary.add(r.status === 200 ? String(r.json()['upstream']) : String(r.status));
    }
    expect([...fromCanary].sort()).toEqual(['403', 'canary']);
  });
});
