// Hot-path checks as proxy-wasm filters in the real Envoy (V8): obviously bad requests are answered
// by the filter and never cost a gRPC call to ext_authz or ext_proc.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startProvider, type RunningProvider } from '../../examples/apps/oauth-provider.mjs';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';

let backend: http.Server;
let provider: RunningProvider;
const gateways: Gateway[] = [];
/** set if the edge cache's verified header ever reaches an upstream */
let leakedVerifiedHeader = false;

function config(backendPort: number, providerPort: number): Record<string, string> {
  return {
    'app.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: extauth-client, namespace: legate-system }
stringData: { clientSecret: legate-extauth-secret }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: oauth, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: http://127.0.0.1:${providerPort}/token/introspection
            clientId: legate-extauth
            clientSecretRef: { name: extauth-client, namespace: legate-system }
---
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: books, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${backendPort} }] }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: books, namespace: legate-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|products:
            restResolver: { upstreamRef: { name: books }, request: { headers: { ':path': /api/v1/products } } }
    schemaDefinition: |
      type Query { products: [Product] @resolve(name: "Query|products") }
      type Mutation { noop: String }
      type Product { id: Int, title: String }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: app, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: books }
      - matchers: [{ prefix: /open }]
        routeAction: { single: { upstream: { name: books } } }
      - matchers: [{ prefix: /secure }]
        routeAction: { single: { upstream: { name: books } } }
        options: { extauth: { configRef: { name: oauth } } }
`,
  };
}

async function stat(gw: Gateway, name: string): Promise<number> {
  const text = await (
    await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${encodeURIComponent(`^${name.replaceAll('.', '\\.')}$`)}`)
  ).text();
  const m = /: (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

async function token(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${provider.port}/token`, {
    method: 'POST',
    headers: {
      authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: 'grant_type=client_credentials&scope=products:read',
  });
  return ((await res.json()) as { access_token: string }).access_token;
}

const post = (body: string, type = 'application/json') => ({ method: 'POST', headers: { 'content-type': type }, body });

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    if (req.headers['x-legate-token-verified'] !== undefined) leakedVerifiedHeader = true;
    res.end(JSON.stringify(req.url?.startsWith('/api/v1/products') ? [{ id: 1, title: 'Sonnets' }] : { path: req.url }));
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  provider = await startProvider({ port: 0, quiet: true });
  const port = (backend.address() as AddressInfo).port;
  gateways.push(await startGateway(config(port, provider.port)));
  gateways.push(await startGateway(config(port, provider.port), { args: ['--wasm-source', 'remote'] }));
  for (const gw of gateways) {
    await gw.until('/graphql', (r) => r.status === 200, post('{"query":"{products{id}}"}'), 30_000);
    const t = await token();
    await gw.until('/secure', (r) => r.status === 200, { headers: { authorization: `Bearer ${t}` } });
  }
});

afterAll(async () => {
  for (const gw of gateways) await gw.stop();
  await provider?.stop();
  await new Promise<void>((r) => backend?.close(() => r()));
});

describe.each([
  ['modules read from disk', 0],
  ['modules fetched from the controller with their sha256', 1],
])('wasm filters (%s)', (_label, index) => {
  const gw = () => gateways[index]!;

  it('answers a missing or malformed bearer token with 403 without calling ext_authz', async () => {
    const before = await stat(gw(), 'cluster.legate-extauth.upstream_rq_total');
    const missing = await gw().request('/secure');
    expect(missing.status).toBe(403);
    expect(missing.json()).toEqual({ error: 'missing_token' });
    const malformed = await gw().request('/secure', { headers: { authorization: 'Bearer not a token' } });
    expect(malformed.status).toBe(403);
    expect(malformed.headers.get('www-authenticate')).toContain('invalid_request');
    expect(await stat(gw(), 'cluster.legate-extauth.upstream_rq_total')).toBe(before);
    expect(await stat(gw(), 'wasmcustom.legate_bearer_check_denied_missing')).toBeGreaterThanOrEqual(1);
    expect(await stat(gw(), 'wasmcustom.legate_bearer_check_denied_malformed')).toBeGreaterThanOrEqual(1);
  });

  it('lets well-formed tokens through to ext_authz, which decides', async () => {
    const before = await stat(gw(), 'cluster.legate-extauth.upstream_rq_total');
    expect((await gw().request('/secure', { headers: { authorization: 'Bearer well-formed-but-unknown' } })).status).toBe(403);
    expect(await stat(gw(), 'cluster.legate-extauth.upstream_rq_total')).toBe(before + 1);
    expect((await gw().request('/secure', { headers: { authorization: `Bearer ${await token()}` } })).status).toBe(200);
  });

  it('serves a token ext_authz accepted from the edge cache: no ext_authz call, nothing forged gets through', async () => {
    const auth = { authorization: `Bearer ${await token()}` };
    // one connection, so one Envoy worker (the shared table across workers: wasm-shared-cache.test.ts)
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (path: string): Promise<number> =>
      new Promise((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: gw().ports.http, path, headers: auth, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
      });
    try {
      expect(await get('/secure/a')).toBe(200); // first time: ext_authz decides
      expect(await stat(gw(), 'wasmcustom.legate_bearer_check_cache_stores')).toBeGreaterThanOrEqual(1);
      const checks = await stat(gw(), 'cluster.legate-extauth.upstream_rq_total');
      const hits = await stat(gw(), 'wasmcustom.legate_bearer_check_cache_hits');
      for (let i = 0; i < 5; i++) expect(await get('/secure/b')).toBe(200);
      expect(await stat(gw(), 'cluster.legate-extauth.upstream_rq_total')).toBe(checks);
      expect(await stat(gw(), 'wasmcustom.legate_bearer_check_cache_hits')).toBe(hits + 5);
    } finally {
      agent.destroy();
    }
    const checks = await stat(gw(), 'cluster.legate-extauth.upstream_rq_total');
    // a client cannot vouch for itself: the filter drops the header, and only the secret value skips
    const forged = { headers: { authorization: 'Bearer not-known-anywhere', 'x-legate-token-verified': 'anything-at-all-0123456789' } };
    expect((await gw().request('/secure', forged)).status).toBe(403);
    expect(await stat(gw(), 'cluster.legate-extauth.upstream_rq_total')).toBe(checks + 1);
    expect(leakedVerifiedHeader).toBe(false);
  });

  it('answers bad GraphQL requests itself: 405, 415, 413, GET mutation', async () => {
    const before = await stat(gw(), 'cluster.legate-graphql.upstream_rq_total');
    const put = await gw().request('/graphql', { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } });
    expect(put.status).toBe(405);
    expect(put.headers.get('allow')).toBe('GET, POST');
    expect(put.json<{ errors: unknown[] }>().errors.length).toBe(1);
    expect((await gw().request('/graphql', post('{"query":"{products{id}}"}', 'text/plain'))).status).toBe(415);
    expect((await gw().request('/graphql', post(JSON.stringify({ query: '{products{id}}', pad: 'x'.repeat(1_100_000) })))).status).toBe(
      413,
    );
    const mutation = await gw().request(`/graphql?query=${encodeURIComponent('mutation { noop }')}`);
    expect(mutation.status).toBe(405);
    expect(mutation.headers.get('allow')).toBe('POST');
    expect(await stat(gw(), 'cluster.legate-graphql.upstream_rq_total')).toBe(before);
    expect(await stat(gw(), 'wasmcustom.legate_graphql_check_get_mutation')).toBeGreaterThanOrEqual(1);
  });

  it('leaves normal requests alone', async () => {
    expect((await gw().request('/graphql', post('{"query":"{products{id title}}"}'))).json()).toEqual({
      data: { products: [{ id: 1, title: 'Sonnets' }] },
    });
    expect((await gw().request(`/graphql?query=${encodeURIComponent('{products{id}}')}`)).status).toBe(200);
    expect((await gw().request('/open/x')).json()).toEqual({ path: '/open/x' });
    expect(gw().ctl('proxy', 'stats').stdout).toContain('wasmcustom.legate_graphql_check_allowed');
  });
});

describe('wasm filter configuration', () => {
  it('loads modules remotely when asked to', async () => {
    const dump = gateways[1]!.ctl('proxy', 'dump').stdout;
    expect(dump).toContain('"remote"');
    expect(dump).toMatch(/"sha256": "[0-9a-f]{64}"/);
  });

  it('rejects a malformed filter configuration with a clear status and keeps the listener serving', async () => {
    const gw = gateways[0]!;
    gw.write(
      'settings.yaml',
      `
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    graphqlCheck: { maxBodyBytes: -5 }
`,
    );
    const status = await eventually('the Settings to be rejected', () => {
      const out = JSON.parse(gw.ctl('get', 'settings', 'default', '-n', 'legate-system', '-o', 'json').stdout);
      const s = out.status.statuses['legate-system'];
      return s.state === 'Rejected' ? s : undefined;
    });
    expect(status.reason).toContain('spec.wasmChecks.graphqlCheck.maxBodyBytes');
    expect((await gw.request('/graphql', post('{"query":"{products{id}}"}'))).status).toBe(200);
    expect((await gw.request('/secure')).status).toBe(403);
    gw.write(
      'settings.yaml',
      `
apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    graphqlCheck: { maxBodyBytes: 100 }
`,
    );
    await gw.until('/graphql', (r) => r.status === 413, post(JSON.stringify({ query: '{products{id}}', pad: 'x'.repeat(200) })));
  });
});
