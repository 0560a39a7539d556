// The route tester's matcher on a hand-written IR: Envoy's order of virtual hosts and routes, and the
// reason each one that did not take the request gives.
import { describe, expect, it } from 'vitest';
import { matchRequest } from '../../controller/routetest/match.js';
import type { ListenerIR, MatcherIR, ProxyIR, RouteIR, VirtualHostIR } from '../../controller/translate/ir.js';

const src = (name: string) => ({ kind: 'VirtualService', namespace: 'default', name });
const m = (path: MatcherIR['path'], more: Partial<MatcherIR> = {}): MatcherIR => ({
  path,
  caseSensitive: true,
  headers: [],
  queryParameters: [],
  methods: [],
  ...more,
});
const route = (name: string, matchers: MatcherIR[], cluster = 'echo_default'): RouteIR => ({
  name,
  matchers,
  action: { type: 'route', clusters: [{ cluster, weight: 1 }] },
  timeout: { seconds: 15 },
});
const vh = (name: string, domains: string[], routes: RouteIR[]): VirtualHostIR => ({ name, domains, routes, source: src(name) });
const listener = (port: number, virtualHosts: VirtualHostIR[], more: Partial<ListenerIR> = {}): ListenerIR => ({
  name: `listener-::-${port}`,
  bindAddress: '::',
  bindPort: port,
  ssl: false,
  virtualHosts,
  source: { kind: 'Gateway', namespace: 'gloo-system', name: 'gateway-proxy' },
  ...more,
});

const proxy: ProxyIR = {
  name: 'gateway-proxy',
  namespace: 'gloo-system',
  listeners: [
    listener(8080, [
      vh('catchall', ['*'], [route('all', [m({ prefix: '/' })], 'fallback_default')]),
      vh(
        'shop',
        ['shop.example.com', 'shop.example.com:8080'],
        [
          route('admin', [m({ prefix: '/admin' }, { headers: [{ name: 'x-admin', match: { exact: 'yes' }, invert: false }] })]),
          route('no-debug', [m({ prefix: '/nd' }, { headers: [{ name: 'x-debug', invert: true }] })]),
          route('items', [m({ regex: '/items/[0-9]+' }, { methods: ['GET', 'HEAD'] })], 'items_default'),
          route('query', [m({ exact: '/q' }, { queryParameters: [{ name: 'lang', match: { regex: 'en|fr' } }] })]),
          route('two', [m({ exact: '/A' }, { caseSensitive: false }), m({ prefix: '/two' })], 'two_default'),
        ],
      ),
      vh('wild', ['*.example.com'], [route('wild', [m({ prefix: '/' })], 'wild_default')]),
      vh('prefixed', ['api.*'], [route('prefixed', [m({ prefix: '/' })], 'prefixed_default')]),
    ]),
    listener(8443, [vh('tls', ['*'], [route('tls', [m({ prefix: '/' })], 'tls_default')])]),
  ],
};

const test = (req: Parameters<typeof matchRequest>[1]) => matchRequest([proxy], req);

describe('route tester', () => {
  it('picks the exact domain over wildcards, ignoring the port, and the first route that matches', () => {
    const r = test({ method: 'GET', host: 'shop.example.com:8080', path: '/items/42?x=1', port: 8080 });
    expect(r.match).toMatchObject({ virtualHost: 'shop', route: 'items', clusters: [{ cluster: 'items_default', weight: 1 }] });
    const shop = r.listeners[0]!.virtualHosts.find((v) => v.name === 'shop')!;
    expect(shop.routes[0]).toEqual({ name: 'admin', matched: false, why: ['path /items/42 does not start with /admin'] });
    expect(shop.routes[3]!.why).toEqual(['an earlier route (items) took the request']);
    const wild = r.listeners[0]!.virtualHosts.find((v) => v.name === 'wild')!;
    expect(wild.why).toBe('a more specific domain of shop (shop.example.com:8080) takes shop.example.com');
    expect(r.listeners[1]).toMatchObject({ matched: false, why: 'listens on port 8443, not 8080' });
  });

  it('orders suffix wildcards before prefix wildcards before *', () => {
    expect(test({ method: 'GET', host: 'www.example.com', path: '/' }).match?.virtualHost).toBe('wild');
    expect(test({ method: 'GET', host: 'api.internal', path: '/' }).match?.virtualHost).toBe('prefixed');
    expect(test({ method: 'GET', host: 'other.org', path: '/', port: 8080 }).match?.virtualHost).toBe('catchall');
  });

  it('says why headers, methods, query parameters and case did not match', () => {
    const why = (req: Parameters<typeof matchRequest>[1], name: string): string[] =>
      test({ port: 8080, ...req })
        .listeners[0]!.virtualHosts.find((v) => v.name === 'shop')!
        .routes.find((x) => x.name === name)!.why;
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/admin' }, 'admin')).toEqual(['header x-admin is missing']);
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/admin', headers: { 'X-Admin': 'no' } }, 'admin')).toEqual([
      'header x-admin: "no" is not "yes"',
    ]);
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/nd', headers: { 'x-debug': '1' } }, 'no-debug')).toEqual([
      'header x-debug must not be present',
    ]);
    expect(why({ method: 'POST', host: 'shop.example.com', path: '/items/1' }, 'items')).toEqual(['method POST is not one of GET, HEAD']);
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/items/x' }, 'items')).toEqual([
      'path /items/x does not match the regex /items/[0-9]+',
    ]);
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/q?lang=de' }, 'query')).toEqual([
      'query parameter lang: "de" is not matched by the regex en|fr',
    ]);
    expect(why({ method: 'GET', host: 'shop.example.com', path: '/B' }, 'two')).toEqual([
      'matcher 0: path /B is not /A (ignoring case)',
      'matcher 1: path /B does not start with /two',
    ]);
    const two = test({ method: 'GET', host: 'shop.example.com', path: '/a', port: 8080 });
    expect(two.match?.route).toBe('two');
    expect(two.listeners[0]!.virtualHosts.find((v) => v.name === 'shop')!.routes.find((x) => x.name === 'two')!.matcher).toBe(0);
  });

  it('reports no match when the chosen virtual host has no route for the request (Envoy: 404)', () => {
    const r = test({ method: 'GET', host: 'shop.example.com', path: '/nothing', port: 8080 });
    expect(r.match).toBeUndefined();
    expect(r.listeners[0]!.why).toBe('virtual host shop has no route for this request (Envoy answers 404)');
  });

  it('skips TCP listeners', () => {
    const tcp: ProxyIR = { ...proxy, listeners: [listener(9000, [], { tcp: { hosts: [] } as unknown as ListenerIR['tcp'] })] };
    expect(matchRequest([tcp], { method: 'GET', host: 'x', path: '/' }).listeners[0]!.why).toBe('a TCP listener (no HTTP routes)');
  });
});
