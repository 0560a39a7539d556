// Headers end to end, as Gloo users write them: headerManipulation on virtual hosts, routes and weighted
// destinations (values inline and from a header Secret) seen by the upstream and by the client, the
// Host rewrites seen by the upstream, and extauth on weighted destinations (each destination checked
// with its own AuthConfig, the wasm bearer pre-check and edge cache included) through a real Envoy.
import crypto from 'node:crypto';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway, type GatewayResponse } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

const SECRET_VALUE = `Basic ${crypto.randomBytes(12).toString('base64')}%`;
const API_KEY = `k-${crypto.randomBytes(16).toString('hex')}`;

let gw: Gateway;
let blue: EchoUpstream;
let green: EchoUpstream;

const issuers = {
  a: crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  b: crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' }),
};
const jwks = (name: 'a' | 'b'): string =>
  JSON.stringify({ keys: [{ ...issuers[name].publicKey.export({ format: 'jwk' }), kid: name, alg: 'ES256', use: 'sig' }] });
const jwt = (name: 'a' | 'b'): Promise<string> =>
  new SignJWT({})
    .setProtectedHeader({ alg: 'ES256', kid: name })
    .setIssuer(`https://${name}.issuer.test`)
    .setIssuedAt()
    .setExpirationTime('5m')
    .sign(issuers[name].privateKey);

const upstream = (name: string, addr: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: ${addr}, port: ${port} }] }
`;
const to = (name: string): string => `routeAction: { single: { upstream: { name: ${name}, namespace: gloo-system } } }`;
const dest = (name: string, weight: number, options = ''): string =>
  `- destination: { upstream: { name: ${name}, namespace: gloo-system } }
                weight: ${weight}${options ? `\n                options: ${options}` : ''}`;

/** Destination options that tag the request and the response with `x-variant: <name>`. */
const variant = (name: string): string => {
  const header = `{ header: { key: x-variant, value: ${name} } }`;
  return `{ headerManipulation: { requestHeadersToAdd: [${header}], responseHeadersToAdd: [${header}] } }`;
};

beforeAll(async () => {
  [blue, green] = await Promise.all([startEcho('blue'), startEcho('green')]);
  gw = await startGateway({
    'upstreams.yaml': [upstream('blue', '127.0.0.1', blue.port), upstream('green', '127.0.0.1', green.port)].join('---\n'),
    // the same echo server, addressed by DNS name: a STRICT_DNS cluster, where autoHostRewrite applies
    'by-name.yaml': upstream('blue-by-name', 'localhost', blue.port),
    'secret.yaml': `
apiVersion: v1
kind: Secret
type: gloo.solo.io/header
metadata: { name: upstream-auth, namespace: gloo-system }
data: { authorization: ${Buffer.from(SECRET_VALUE).toString('base64')} }
`,
    'shop.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: gloo-system }
spec:
  virtualHost:
    domains: [shop.example.com]
    options:
      headerManipulation:
        requestHeadersToAdd:
          - header: { key: x-gateway, value: legate }
            append: false
          - header: { key: x-layer, value: virtual-host }
            append: false
          - header: { key: x-both, value: virtual-host }
        requestHeadersToRemove: [x-internal]
        responseHeadersToAdd:
          - header: { key: x-served-by, value: 100%% legate }
          - header: { key: x-layer, value: virtual-host }
            append: false
        responseHeadersToRemove: [x-upstream]
    routes:
      - matchers: [{ prefix: /layers }]
        ${to('blue')}
        options:
          headerManipulation:
            requestHeadersToAdd:
              - header: { key: x-layer, value: route }
                append: false
              - header: { key: x-both, value: route }
              - header: { key: x-route-only, value: yes }
            responseHeadersToAdd:
              - header: { key: x-layer, value: route }
                append: false
              - header: { key: x-route-only, value: yes }
      - matchers: [{ prefix: /secret }]
        ${to('blue')}
        options:
          headerManipulation:
            requestHeadersToAdd:
              - headerSecretRef: { name: upstream-auth, namespace: gloo-system }
                append: false
      - matchers: [{ prefix: /split }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 1, variant('blue'))}
              ${dest('green', 1, variant('green'))}
      - matchers: [{ prefix: /one-left }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 0, `{ headerManipulation: { requestHeadersToAdd: [{ header: { key: x-variant, value: blue } }] } }`)}
              ${dest('green', 1, `{ headerManipulation: { requestHeadersToAdd: [{ header: { key: x-variant, value: green } }] } }`)}
      - matchers: [{ prefix: /host-literal-plain }]
        ${to('blue')}
        options: { hostRewrite: rewritten.example.com }
      - matchers: [{ prefix: /host-literal }]
        ${to('blue')}
        options: { hostRewrite: rewritten.example.com, appendXForwardedHost: true }
      - matchers: [{ prefix: /host-auto }]
        ${to('blue-by-name')}
        options: { autoHostRewrite: true }
      - matchers: [{ prefix: /tenants/ }]
        ${to('blue')}
        options:
          hostRewritePathRegex:
            pattern: { regex: '^/tenants/([^/]+)/.*$' }
            substitution: '\\1.tenants.internal'
      - matchers: [{ prefix: /host-header }]
        ${to('blue')}
        options: { hostRewriteHeader: x-upstream-host }
      - matchers: [{ exact: /healthz }]
        directResponseAction: { status: 200, body: ok }
        options:
          headerManipulation:
            responseHeadersToAdd: [{ header: { key: cache-control, value: no-store }, append: false }]
`,
    'auth.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: client-key, namespace: gloo-system }
stringData: { api-key: ${API_KEY} }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: jwt-a, namespace: gloo-system }
spec:
  configs:
    - oauth2: { accessTokenValidation: { jwt: { localJwks: { inlineString: '${jwks('a')}' }, issuer: https://a.issuer.test } } }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: jwt-b, namespace: gloo-system }
spec:
  configs:
    - oauth2: { accessTokenValidation: { jwt: { localJwks: { inlineString: '${jwks('b')}' }, issuer: https://b.issuer.test } } }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: gloo-system }
spec:
  configs:
    - apiKeyAuth: { apiKeySecretRefs: [{ name: client-key, namespace: gloo-system }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: open, namespace: gloo-system }
spec:
  virtualHost:
    domains: [open.example.com]
    routes:
      - matchers: [{ prefix: /bearer }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 1)}
              ${dest('green', 1, '{ extauth: { configRef: { name: jwt-b, namespace: gloo-system } } }')}
      - matchers: [{ prefix: /apikey }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 1)}
              ${dest('green', 1, '{ extauth: { configRef: { name: apikey, namespace: gloo-system } } }')}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: protected, namespace: gloo-system }
spec:
  virtualHost:
    domains: [protected.example.com]
    options: { extauth: { configRef: { name: jwt-a, namespace: gloo-system } } }
    routes:
      - matchers: [{ prefix: /half-open }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 1, '{ extauth: { disable: true } }')}
              ${dest('green', 1)}
      - matchers: [{ prefix: /mixed }]
        routeAction:
          multi:
            destinations:
              ${dest('blue', 1)}
              ${dest('green', 1, '{ extauth: { configRef: { name: jwt-b, namespace: gloo-system } } }')}
      - ${to('blue')}
`,
  });
  await gw.until('/layers', (r) => r.status === 200, { host: 'shop.example.com' }, 30_000);
  // extauth is up once a request on the protected host reaches its open destination, or blue with a token
  const token = await jwt('a');
  await gw.until(
    '/mixed',
    (r) => r.status === 200,
    { host: 'protected.example.com', headers: { authorization: `Bearer ${token}` } },
    30_000,
  );
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([blue?.close(), green?.close()]);
});

const shop = (headers: Record<string, string> = {}) => ({ host: 'shop.example.com', headers });
const seen = (r: GatewayResponse): Record<string, string> => r.json<{ headers: Record<string, string> }>().headers;

async function stat(name: string): Promise<number> {
  const filter = encodeURIComponent(`^${name.replaceAll('.', '\\.')}$`);
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${filter}`)).text();
  const m = /: (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

/** `n` requests; the answers by upstream (`denied` for those that did not reach one). */
async function spread(path: string, host: string, headers: Record<string, string> = {}, n = 24): Promise<Record<string, number[]>> {
  const by: Record<string, number[]> = {};
  for (let i = 0; i < n; i++) {
    const r = await gw.request(path, { host, headers });
    const who = r.status === 200 ? (r.json()['upstream'] as string) : 'denied';
    (by[who] ??= []).push(r.status);
  }
  return by;
}

describe('headerManipulation', () => {
  it('adds and removes request headers as the upstream sees them', async () => {
    const r = await gw.request('/layers', shop({ 'x-internal': 'do-not-forward', 'x-gateway': 'spoofed' }));
    expect(r.status).toBe(200);
    const h = seen(r);
    expect(h['x-internal']).toBeUndefined();
    // append: false overwrites what the client sent
    expect(h['x-gateway']).toBe('legate');
  });

  it('adds and removes response headers as the client sees them', async () => {
    const r = await gw.request('/layers', shop());
    expect(r.headers.get('x-upstream')).toBeNull();
    // %% is a literal % for Envoy
    expect(r.headers.get('x-served-by')).toBe('100% legate');
    expect(r.headers.get('x-route-only')).toBe('yes');
  });

  it('applies the route first, then the virtual host, as Envoy (and Gloo) do', async () => {
    const r = await gw.request('/layers', shop());
    const h = seen(r);
    // both overwrite: the virtual host's, applied last, wins; both append: both values, the route's first
    expect(h['x-layer']).toBe('virtual-host');
    expect(h['x-both']).toBe('route, virtual-host');
    expect(h['x-route-only']).toBe('yes');
    expect(r.headers.get('x-layer')).toBe('virtual-host');
  });

  it('adds the headers of a header Secret, its value taken literally', async () => {
    const r = await gw.request('/secret', shop({ authorization: 'Bearer from-the-client' }));
    expect(r.status).toBe(200);
    expect(seen(r)['authorization']).toBe(SECRET_VALUE);
  });

  it("the Secret's value appears nowhere Legate shows or logs: served config, the Proxy, logs", async () => {
    const raw = SECRET_VALUE;
    const escaped = SECRET_VALUE.replaceAll('%', '%%');
    const served = await (await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/served`)).text();
    expect(served).toContain('authorization');
    const proxies = await (await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/resources?kind=Proxy`)).text();
    expect(proxies).toContain('gloo-system.upstream-auth');
    for (const text of [served, proxies, gw.log('controller'), gw.log('extauth')]) {
      expect(text).not.toContain(raw);
      expect(text).not.toContain(escaped);
    }
  });

  it('adds response headers to direct responses', async () => {
    const r = await gw.request('/healthz', shop());
    expect(r.text).toBe('ok');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('x-served-by')).toBe('100% legate');
  });

  it("applies a weighted destination's headers when it is the one picked", async () => {
    const picked = new Set<string>();
    for (let i = 0; i < 30 && picked.size < 2; i++) {
      const r = await gw.request('/split', shop());
      const who = r.json()['upstream'] as string;
      picked.add(who);
      expect(seen(r)['x-variant']).toBe(who);
      expect(r.headers.get('x-variant')).toBe(who);
    }
    expect([...picked].sort()).toEqual(['blue', 'green']);
  });

  it('keeps the headers of the one destination left when the others weigh 0', async () => {
    const r = await gw.request('/one-left', shop());
    expect(r.json()['upstream']).toBe('green');
    expect(seen(r)['x-variant']).toBe('green');
  });
});

describe('Host rewrites', () => {
  it('hostRewrite replaces the Host; appendXForwardedHost keeps the original in x-forwarded-host', async () => {
    const h = seen(await gw.request('/host-literal', shop()));
    expect(h['host']).toBe('rewritten.example.com');
    expect(h['x-forwarded-host']).toBe('shop.example.com');
    const plain = seen(await gw.request('/host-literal-plain', shop()));
    expect(plain['host']).toBe('rewritten.example.com');
    expect(plain['x-forwarded-host']).toBeUndefined();
  });

  it('autoHostRewrite sends the DNS name of an upstream addressed by name', async () => {
    const r = await gw.request('/host-auto', shop());
    expect(r.json()['upstream']).toBe('blue');
    expect(seen(r)['host']).toBe('localhost');
  });

  it('hostRewritePathRegex builds the Host from the path', async () => {
    expect(seen(await gw.request('/tenants/acme/orders', shop()))['host']).toBe('acme.tenants.internal');
  });

  it('hostRewriteHeader takes the Host from a request header', async () => {
    expect(seen(await gw.request('/host-header', shop({ 'x-upstream-host': 'orders.internal' })))['host']).toBe('orders.internal');
    // without the header, the Host stays
    expect(seen(await gw.request('/host-header', shop()))['host']).toBe('shop.example.com');
  });
});

describe('extauth on weighted destinations', () => {
  it('checks a destination with its own AuthConfig, the bearer pre-check first; the other stays open', async () => {
    const extauthCalls = await stat('cluster.legate-extauth.upstream_rq_total');
    const preChecked = await stat('wasmcustom.legate_bearer_check_denied_missing');
    const anonymous = await spread('/bearer', 'open.example.com');
    expect(anonymous['blue']?.length).toBeGreaterThan(0);
    expect(anonymous['green']).toBeUndefined();
    expect(new Set(anonymous['denied'])).toEqual(new Set([403]));
    // bearer-check, enabled on that weighted cluster, answered every one without asking ext_authz
    expect(await stat('wasmcustom.legate_bearer_check_denied_missing')).toBe(preChecked + (anonymous['denied']?.length ?? 0));
    expect(await stat('cluster.legate-extauth.upstream_rq_total')).toBe(extauthCalls);
    const withB = await spread('/bearer', 'open.example.com', { authorization: `Bearer ${await jwt('b')}` }, 12);
    expect(withB['denied']).toBeUndefined();
    expect(withB['green']?.length).toBeGreaterThan(0);
  });

  it('sends an API key AuthConfig its header (no bearer pre-check there)', async () => {
    const anonymous = await spread('/apikey', 'open.example.com');
    expect(anonymous['green']).toBeUndefined();
    expect(anonymous['blue']?.length).toBeGreaterThan(0);
    expect(new Set(anonymous['denied'])).toEqual(new Set([401]));
    const keyed = await spread('/apikey', 'open.example.com', { 'api-key': API_KEY }, 12);
    expect(Object.keys(keyed).sort()).toEqual(['blue', 'green']);
  });

  it('a destination may turn off the AuthConfig of its virtual host', async () => {
    const anonymous = await spread('/half-open', 'protected.example.com');
    expect(anonymous['blue']?.length).toBeGreaterThan(0);
    expect(anonymous['green']).toBeUndefined();
    expect(anonymous['denied']?.length).toBeGreaterThan(0);
  });

  it("a token the route's AuthConfig accepted never lets a request through to a destination with another", async () => {
    // the edge cache remembers tokens per route: jwt-a's answers on blue must not vouch on green (jwt-b)
    const auth = { authorization: `Bearer ${await jwt('a')}` };
    const answers = await spread('/mixed', 'protected.example.com', auth, 30);
    expect(answers['blue']?.length).toBeGreaterThan(1);
    expect(answers['green']).toBeUndefined();
    expect(answers['denied']?.length).toBeGreaterThan(0);
    // elsewhere on the host (no destination auth) the same token passes
    expect((await gw.request('/anything', { host: 'protected.example.com', headers: auth })).status).toBe(200);
  });
});
