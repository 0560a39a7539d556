// `make run` serves the README's curl examples: run examples/ as shipped (the app's port moved to a
// free one so the suite can run anywhere).
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, startGateway, type Gateway } from '../support/gateway.js';
import { eventually, freePort } from '../support/util.js';

let gw: Gateway;
let providerPort: number;

beforeAll(async () => {
  const appPort = await freePort();
  providerPort = await freePort();
  const files: Record<string, string> = {};
  const examples = path.join(ROOT, 'examples');
  for (const f of fs.readdirSync(examples)) {
    if (f.endsWith('.yaml'))
      files[f] = fs
        .readFileSync(path.join(examples, f), 'utf8')
        .replaceAll('9001', String(appPort))
        .replaceAll('9010', String(providerPort))
        // run the apps from the checkout, where their packages (oidc-provider) resolve
        .replaceAll('apps/', `${examples}/apps/`);
  }
  // the x-ratelimit-* headers (off by default, as in Gloo) show when the ratelimit service has the examples' config
  files['zz-test-settings.yaml'] =
    'apiVersion: legate.dev/v1\nkind: Settings\nmetadata: { name: default, namespace: legate-system }\n' +
    'spec: { ratelimitServer: { enableXRatelimitHeaders: true } }\n';
  gw = await startGateway(files);
  await gw.until('/api/v1/products', (r) => r.status === 200);
});

afterAll(async () => {
  await gw?.stop();
});

describe('examples (make run)', () => {
  it('serves the product list through the discovered upstream', async () => {
    const r = await gw.request('/api/v1/products');
    expect(r.json<{ id: number; title: string }[]>().map((p) => p.id)).toEqual([1, 2, 3]);
  });

  it('serves details through a kube Service reference', async () => {
    expect((await gw.request('/details/2')).json()['pages']).toBe(154);
  });

  it('rewrites /store/ to /api/v1/', async () => {
    expect((await gw.request('/store/products')).status).toBe(200);
  });

  it('answers /hello directly and 404 elsewhere', async () => {
    expect((await gw.request('/hello')).text).toBe('hello from legate\n');
    expect((await gw.request('/nothing')).status).toBe(404);
  });

  it('serves GraphQL at /graphql (the reference query)', async () => {
    const query = {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{productsForHome{id title}}' }),
    };
    // the graphql extension gets its APIs a moment after the proxy is up
    const r = await gw.until('/graphql', (x) => x.status === 200, query);
    expect(r.json()).toEqual({
      data: {
        productsForHome: [
          { id: 1, title: 'The Comedy of Errors' },
          { id: 2, title: 'Sonnets' },
          { id: 3, title: 'Hamlet' },
        ],
      },
    });
    const nested = await gw.request('/graphql', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{productsForHome{id author pages year}}' }),
    });
    expect(nested.json<{ data: { productsForHome: { pages: number }[] } }>().data.productsForHome.map((p) => p.pages)).toEqual([
      200, 154, 342,
    ]);
  });

  it('protects /secure/ with a token from the example provider', async () => {
    expect((await gw.request('/secure/products')).status).toBe(403);
    const tokenRes = await eventually('the provider', () =>
      fetch(`http://127.0.0.1:${providerPort}/token`, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: 'grant_type=client_credentials&scope=products:read',
      }),
    );
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const r = await gw.until('/secure/products', (x) => x.status === 200, { headers: { authorization: `Bearer ${token}` } });
    expect(r.json<unknown[]>()).toHaveLength(3);
  });

  it('limits /limited/ to 5 a minute per client (429 with retry-after) and /burst/ to a bucket of 3', async () => {
    // the ratelimit service has the config once a response carries the limit (it counts as one)
    const first = await gw.until('/limited/products', (r) => r.headers.get('x-ratelimit-limit') !== null);
    const statuses = [first.status];
    let denied;
    for (let i = 0; i < 6 && !denied; i++) {
      const r = await gw.request('/limited/products');
      statuses.push(r.status);
      if (r.status === 429) denied = r;
    }
    // five in a window (a minute boundary in between may allow a few more), then 429
    expect(statuses.slice(0, 5)).toEqual([200, 200, 200, 200, 200]);
    expect(denied?.headers.get('retry-after')).toMatch(/^\d+$/);
    const burst = [];
    for (let i = 0; i < 4; i++) burst.push((await gw.request('/burst/products')).status);
    expect(burst).toEqual([200, 200, 200, 429]);
    expect(gw.ctl('get', 'ratelimitconfigs').stdout).toMatch(/legate-system\s+per-client\s+Accepted/);
  });

  it('lists the example resources as accepted', () => {
    const vs = gw.ctl('get', 'virtualservices');
    expect(vs.stdout).toMatch(/legate-system\s+default\s+Accepted/);
    expect(gw.ctl('get', 'upstreams').stdout).toMatch(/default-products-80\s+Accepted/);
  });

  it('logs a JSON access log line per request, which legatectl proxy logs shows', async () => {
    expect((await gw.request('/hello?access-log=1', { headers: { 'user-agent': 'examples-test' } })).status).toBe(200);
    // Envoy flushes access logs to its stdout (.legate/logs/envoy.log) every few seconds
    const entry = await eventually(
      'the access log line',
      () =>
        gw
          .ctl('proxy', 'logs')
          .stdout.split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as Record<string, unknown>)
          .find((e) => e['path'] === '/hello?access-log=1'),
      20_000,
    );
    expect(entry).toMatchObject({ method: 'GET', response_code: 200, response_flags: '-', user_agent: 'examples-test', bytes_sent: 18 });
    expect(entry?.['start_time']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(entry?.['request_id']).toMatch(/^[0-9a-f-]{36}$/);
  });
});
