// GraphQL executed by Legate (graphql extension behind Envoy's ext_proc), end to end with real Envoy.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';

const products = [
  { id: 1, title: 'The Comedy of Errors', extra: 'not in the schema' },
  { id: 2, title: 'Sonnets', extra: 'x' },
];
const details: Record<string, { id: number; author: string; pages: number; year: number }> = {
  '1': { id: 1, author: 'William Shakespeare', pages: 200, year: 1595 },
  '2': { id: 2, author: 'William Shakespeare', pages: 154, year: 1609 },
};
const hits: string[] = [];
let backend: http.Server;
let gw: Gateway;

const api = (extraQueryFields = '') => `
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: bookinfo, namespace: legate-system }
spec:
  executableSchema:
    executor:
      local:
        options: { maxDepth: 4 }
        resolutions:
          Query|productsForHome:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':method': GET, ':path': /api/v1/products } }
          Query|product:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': '/details/{$args.id}' } }
          Query|whoami:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': /whoami, x-user: '{$headers.x-user}' } }
              response: { resultRoot: '{$body.user}' }
          Query|broken:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': /fail } }
          Product|author:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': '/details/{$parent.id}' } }
              response: { resultRoot: '{$body.author}' }
          Product|pages:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': '/details/{$parent.id}' } }
              response: { resultRoot: '{$body.pages}' }
          Product|year:
            restResolver:
              upstreamRef: { name: books, namespace: legate-system }
              request: { headers: { ':path': '/details/{$parent.id}' } }
              response: { resultRoot: '{$body.year}' }
    schemaDefinition: |
      type Query {
        productsForHome: [Product] @resolve(name: "Query|productsForHome")
        product(id: Int!): Details @resolve(name: "Query|product")
        broken: String @resolve(name: "Query|broken")
        whoami: String @resolve(name: "Query|whoami")
        ${extraQueryFields}
      }
      type Mutation { ping: String }
      type Product {
        id: Int
        title: String
        author: String @resolve(name: "Product|author")
        pages: Int @resolve(name: "Product|pages")
        year: Int @resolve(name: "Product|year")
        related: [Product]
      }
      type Details { id: Int, author: String, pages: Int, year: Int }
`;

const mocked = (delay = '100ms') => `
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: mocked, namespace: legate-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|product:
            mockResolver: { syncResponse: { id: 7, title: Mocked, tags: [a, b] } }
          Query|later:
            mockResolver: { asyncResponse: { response: done, delay: ${delay} } }
          Query|closed:
            mockResolver: { errorResponse: the catalogue is closed }
    schemaDefinition: |
      type Query {
        product: Product @resolve(name: "Query|product")
        later: String @resolve(name: "Query|later")
        closed: String @resolve(name: "Query|closed")
      }
      type Product { id: Int!, title: String, tags: [String] }
`;

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.url === '/api/v1/products') return send(200, products);
    if (req.url === '/whoami') return send(200, { user: req.headers['x-user'] ?? null });
    const m = /^\/details\/(\d+)$/.exec(req.url ?? '');
    if (m && details[m[1]!]) return send(200, details[m[1]!]);
    return send(503, { error: 'backend says no' });
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  const port = (backend.address() as AddressInfo).port;
  gw = await startGateway(
    {
      'books.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: books, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: default, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: bookinfo, namespace: legate-system }
      - matchers: [{ prefix: /mocked }]
        graphqlApiRef: { name: mocked, namespace: legate-system }
      - matchers: [{ prefix: /rest/ }]
        routeAction: { single: { upstream: { name: books, namespace: legate-system } } }
        options: { prefixRewrite: / }
`,
      'api.yaml': api(),
      'mocked.yaml': mocked(),
    },
    { env: { START_STATS_SERVER: 'true' } },
  );
  await gw.until('/graphql', (r) => r.status === 200, post({ query: '{productsForHome{id}}' }), 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((r) => backend?.close(() => r()));
});

const GQL = 'application/graphql-response+json';

function post(body: unknown, accept = 'application/json', contentType = 'application/json') {
  return { method: 'POST', headers: { 'content-type': contentType, accept }, body: typeof body === 'string' ? body : JSON.stringify(body) };
}

describe('GraphQL over Envoy ext_proc', () => {
  it('returns exactly the requested fields, Int as JSON numbers (the reference query)', async () => {
    const r = await gw.request('/graphql', post({ query: '{productsForHome{id title}}' }));
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('application/json');
    expect(r.json()).toEqual({
      data: {
        productsForHome: [
          { id: 1, title: 'The Comedy of Errors' },
          { id: 2, title: 'Sonnets' },
        ],
      },
    });
  });

  it('resolves nested fields with {$parent.id}, calling each identical backend URL once per request', async () => {
    hits.length = 0;
    const r = await gw.request('/graphql', post({ query: '{productsForHome{id author pages year}}' }));
    expect(r.json()).toEqual({
      data: {
        productsForHome: [
          { id: 1, author: 'William Shakespeare', pages: 200, year: 1595 },
          { id: 2, author: 'William Shakespeare', pages: 154, year: 1609 },
        ],
      },
    });
    expect(hits.sort()).toEqual(['/api/v1/products', '/details/1', '/details/2']);
  });

  it('passes arguments and variables into templates', async () => {
    const r = await gw.request(
      '/graphql',
      post({ query: 'query Q($id: Int!) { product(id: $id) { author year } }', variables: { id: 2 }, operationName: 'Q' }),
    );
    expect(r.json()).toEqual({ data: { product: { author: 'William Shakespeare', year: 1609 } } });
  });

  it('serves queries over GET and refuses mutations over GET with 405 and Allow', async () => {
    const q = encodeURIComponent('{productsForHome{title}}');
    const r = await gw.request(`/graphql?query=${q}`, { headers: { accept: 'application/json' } });
    expect(r.status).toBe(200);
    expect(r.json<{ data: { productsForHome: unknown[] } }>().data.productsForHome).toHaveLength(2);
    const m = await gw.request(`/graphql?query=${encodeURIComponent('mutation { ping }')}`);
    expect(m.status).toBe(405);
    expect(m.headers.get('allow')).toContain('POST');
  });

  it('answers request errors with 400 and no data under application/graphql-response+json', async () => {
    for (const body of [
      '{not json',
      JSON.stringify({ variables: {} }),
      JSON.stringify({ query: '{ productsForHome { id ' }),
      JSON.stringify({ query: '{ nope }' }),
    ]) {
      const r = await gw.request('/graphql', post(body, GQL));
      expect(r.status, body).toBe(400);
      expect(r.headers.get('content-type')).toContain(GQL);
      const json = r.json();
      expect(json, body).not.toHaveProperty('data');
      expect((json['errors'] as unknown[]).length, body).toBeGreaterThan(0);
    }
  });

  it('answers the same errors with 200 + errors for application/json clients', async () => {
    const r = await gw.request('/graphql', post({ query: '{ nope }' }));
    expect(r.status).toBe(200);
    expect(r.json()).not.toHaveProperty('data');
    expect(r.json<{ errors: { message: string }[] }>().errors[0]!.message).toContain('nope');
  });

  it('returns partial data with errors (path, code, backend status) when a resolver fails', async () => {
    const r = await gw.request('/graphql', post({ query: '{ broken productsForHome { id } }' }, GQL));
    expect(r.status).toBe(200);
    const json = r.json<{
      data: Record<string, unknown>;
      errors: { path: string[]; extensions: { code: string; http?: { status: number } } }[];
    }>();
    expect(json.data).toEqual({ broken: null, productsForHome: [{ id: 1 }, { id: 2 }] });
    expect(json.errors[0]!.path).toEqual(['broken']);
    expect(json.errors[0]!.extensions.code).toBeTruthy();
    expect(JSON.stringify(json.errors[0])).toContain('503');
  });

  it('rejects queries deeper than maxDepth and keeps introspection off by default', async () => {
    const deep = await gw.request(
      '/graphql',
      post({ query: '{ productsForHome { related { related { related { related { id } } } } } }' }, GQL),
    );
    expect(deep.status).toBe(400);
    expect(deep.text).toMatch(/depth/i);
    const intro = await gw.request('/graphql', post({ query: '{ __schema { types { name } } }' }, GQL));
    expect(intro.status).toBe(400);
    expect(intro.text).toMatch(/introspection/i);
    const typename = await gw.request('/graphql', post({ query: '{ __typename }' }));
    expect(typename.json()).toEqual({ data: { __typename: 'Query' } });
  });

  it('refuses other methods and content types', async () => {
    expect((await gw.request('/graphql', { method: 'PUT', body: '{}', headers: { 'content-type': 'application/json' } })).status).toBe(405);
    expect((await gw.request('/graphql', post('query=x', 'application/json', 'text/plain'))).status).toBe(415);
  });

  it('keeps other routes serving', async () => {
    expect((await gw.request('/rest/api/v1/products')).json<unknown[]>()).toHaveLength(2);
  });

  it('applies an edited API without restarts, and a rejected edit keeps the last good one', async () => {
    gw.write('api.yaml', api('hello: String'));
    await gw.until('/graphql', (r) => r.status === 200 && r.text === '{"data":{"hello":null}}', post({ query: '{ hello }' }));
    gw.write('api.yaml', api('oops: Missing'));
    await eventually('the rejected status', () => {
      const out = JSON.parse(gw.ctl('get', 'graphqlapis', 'bookinfo', '-n', 'legate-system', '-o', 'json').stdout);
      const s = out.status.statuses['legate-system'];
      return s.state === 'Rejected' && String(s.reason).includes('Unknown type "Missing"') ? s : undefined;
    });
    const r = await gw.request('/graphql', post({ query: '{ hello productsForHome { id } }' }));
    expect(r.json()).toEqual({ data: { hello: null, productsForHome: [{ id: 1 }, { id: 2 }] } });
    expect(gw.log('graphql')).toContain('got new config');
  });

  it('serves mockResolver values (sync, after a delay, errors) and rejects a mock whose delay is too long', async () => {
    await gw.until('/mocked', (r) => r.status === 200, post({ query: '{ product { id } }' }));
    const started = Date.now();
    const r = await gw.request('/mocked', post({ query: '{ product { id title tags } later closed }' }));
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    const json = r.json<{ data: unknown; errors: { message: string; path: string[]; extensions: { code: string } }[] }>();
    expect(json.data).toEqual({ product: { id: 7, title: 'Mocked', tags: ['a', 'b'] }, later: 'done', closed: null });
    expect(json.errors).toEqual([
      expect.objectContaining({
        message: 'the catalogue is closed',
        path: ['closed'],
        extensions: expect.objectContaining({ code: 'MOCK_ERROR_RESPONSE' }),
      }),
    ]);
    gw.write('mocked.yaml', mocked('30s'));
    await eventually('the rejected status', () => {
      const out = JSON.parse(gw.ctl('get', 'graphqlapis', 'mocked', '-n', 'legate-system', '-o', 'json').stdout);
      const s = out.status.statuses['legate-system'];
      return s.state === 'Rejected' && String(s.reason).includes('asyncResponse.delay: 30s exceeds 5s') ? s : undefined;
    });
    expect((await gw.request('/mocked', post({ query: '{ later }' }))).json()).toEqual({ data: { later: 'done' } });
  });

  it('answers a POST with a body from one ext_proc message with the headers it reads; GET, chunked take the headers path', async () => {
    const singleMessages = async (): Promise<number> => {
      const text = await (await fetch(`http://127.0.0.1:${gw.ports.graphqlStats}/metrics`)).text();
      const m = /^legate_graphql_single_message_requests_total\{api="legate-system\.bookinfo"\} (\d+)$/m.exec(text);
      return m ? Number(m[1]) : 0;
    };
    const before = await singleMessages();
    const request = post({ query: '{ whoami }' }, GQL);
    const one = await gw.request('/graphql', { ...request, headers: { ...request.headers, 'x-user': 'ada' } });
    expect(one.status).toBe(200);
    expect(one.headers.get('content-type')).toContain(GQL);
    expect(one.json()).toEqual({ data: { whoami: 'ada' } });
    expect(await singleMessages()).toBe(before + 1);

    // the general path: GET, and a POST whose body has no Content-Length (chunked)
    const get = await gw.request(`/graphql?query=${encodeURIComponent('{ whoami }')}`, { headers: { 'x-user': 'grace' } });
    expect(get.json()).toEqual({ data: { whoami: 'grace' } });
    const chunked = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = http.request(
        {
          host: '127.0.0.1',
          port: gw.ports.http,
          path: '/graphql',
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-user': 'linus' },
        },
        (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        },
      );
      req.on('error', reject);
      req.write('{"query":');
      req.end('"{ whoami }"}');
    });
    expect(chunked).toEqual({ status: 200, body: JSON.stringify({ data: { whoami: 'linus' } }) });
    expect(await singleMessages()).toBe(before + 1);

    // an empty POST body is not the single-message path either, and gets the engine's own answer
    const empty = await gw.request('/graphql', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '' });
    expect(empty.status).toBe(400);
    expect(await singleMessages()).toBe(before + 1);
  });

  it('refuses queries with too many aliases or fields before executing them', async () => {
    const before = hits.length;
    const aliases = Array.from({ length: 51 }, (_, i) => `p${i}: productsForHome { id }`).join(' ');
    const many = await gw.request('/graphql', post({ query: `{ ${aliases} }` }, GQL));
    expect(many.status).toBe(400);
    expect(many.text).toContain('uses 51 aliases, which exceeds the maximum of 50');
    let doc = 'query Bomb { productsForHome { ...F10 } }\nfragment F0 on Product { id title }\n';
    for (let i = 1; i <= 10; i++) doc += `fragment F${i} on Product { ...F${i - 1} ...F${i - 1} }\n`;
    const bomb = await gw.request('/graphql', post({ query: doc }, GQL));
    expect(bomb.status).toBe(400);
    expect(bomb.text).toContain('selects 2049 fields');
    expect(hits.length).toBe(before);
  });

  // last: it kills the graphql service (legate run restarts it)
  it('answers a clean 503 GraphQL error while the graphql service is down, other routes unaffected, then serves again', async () => {
    const state = JSON.parse(fs.readFileSync(path.join(gw.stateDir, 'run.json'), 'utf8')) as {
      components: Record<string, { pid: number }>;
    };
    process.kill(state.components['graphql']!.pid, 'SIGKILL');
    const answers: { status: number; text: string; type: string | null }[] = [];
    const rest: number[] = [];
    const deadline = Date.now() + 20_000;
    for (;;) {
      const r = await gw.request('/graphql', post({ query: '{productsForHome{id}}' }));
      answers.push({ status: r.status, text: r.text, type: r.headers.get('content-type') });
      rest.push((await gw.request('/rest/api/v1/products')).status);
      if (r.status === 200 && answers.some((a) => a.status === 503)) break;
      if (Date.now() > deadline) throw new Error(`no recovery: ${JSON.stringify(answers.slice(-3))}`);
      await new Promise((done) => setTimeout(done, 10));
    }
    const down = answers.filter((a) => a.status !== 200);
    expect(down.length).toBeGreaterThan(0);
    for (const a of down) {
      expect(a.status).toBe(503);
      expect(a.type).toContain('application/json');
      // Envoy's answer while nothing listens, or the restarted service's before its configs arrive
      expect([
        JSON.stringify({
          errors: [{ message: 'the GraphQL service is unavailable; try again', extensions: { code: 'SERVICE_UNAVAILABLE' } }],
        }),
        JSON.stringify({
          errors: [{ message: 'GraphQL API "legate-system.bookinfo" is not loaded', extensions: { code: 'SERVICE_UNAVAILABLE' } }],
        }),
      ]).toContain(a.text);
    }
    expect(down.some((a) => a.text.includes('the GraphQL service is unavailable'))).toBe(true);
    expect(new Set(rest)).toEqual(new Set([200]));
    expect(answers.at(-1)!.text).toBe(JSON.stringify({ data: { productsForHome: [{ id: 1 }, { id: 2 }] } }));
  });
});
