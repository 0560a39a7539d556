// The GraphQL execution engine against small REST servers on loopback (a product API like the reference
// procedure's), through its handle() API: results, dedup, templates, errors, HTTP rules, caching, pools.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLApiConfig, ResolverConfig, ResolverUpstream, RestResolverConfig } from '../../common/contract.js';
import {
  checkApiConfig,
  createEngine,
  UpstreamPools,
  type Engine,
  type EngineOptions,
  type GraphQLHttpResponse,
} from '../../extensions/graphql/engine/index.js';

// ---------------------------------------------------------------- backend

const products = [
  { id: 1, title: 'The Comedy of Errors', extra: 'not in the schema' },
  { id: 2, title: 'Sonnets', extra: 'x' },
  { id: 3, title: 'Hamlet' },
  { id: 1, title: 'The Comedy of Errors (again)' },
];
const details: Record<string, { id: number; author: string; pages: number; year: number | string }> = {
  '1': { id: 1, author: 'William Shakespeare', pages: 200, year: 1595 },
  '2': { id: 2, author: 'William Shakespeare', pages: 154, year: '1609' },
  '3': { id: 3, author: 'William Shakespeare', pages: 342, year: 1603 },
};

interface Hit {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

interface Backend {
  port: number;
  hits: Hit[];
  connections: number;
  close(): Promise<void>;
}

function count(b: Backend, url: string): number {
  return b.hits.filter((h) => h.url === url).length;
}

function productApi(req: http.IncomingMessage, body: string, res: http.ServerResponse): void {
  const send = (status: number, value: unknown, type = 'application/json') => {
    res.writeHead(status, { 'content-type': type });
    res.end(typeof value === 'string' ? value : JSON.stringify(value));
  };
  const url = req.url ?? '';
  let m: RegExpExecArray | null;
  if (url === '/api/v1/products') return send(200, products);
  if ((m = /^\/details\/([^/?]+)$/.exec(url))) {
    const d = details[decodeURIComponent(m[1]!)];
    return d ? send(200, d) : send(404, { error: 'no such product' });
  }
  if (url === '/wrapped') {
    return send(200, {
      data: {
        items: [
          { id: 1, details: { first: 'William', lastname: 'Shakespeare' } },
          { id: 2, details: { first: 'Christopher', lastname: 'Marlowe' } },
        ],
      },
    });
  }
  if (url.startsWith('/echo')) {
    return send(200, { method: req.method, url, headers: req.headers, body: body === '' ? null : JSON.parse(body) });
  }
  if ((m = /^\/status\/(\d+)$/.exec(url))) return send(Number(m[1]), { error: 'failing on purpose' });
  if (url === '/notjson') return send(200, '<html>hello</html>', 'text/html');
  if (url === '/empty') {
    res.writeHead(204).end();
    return;
  }
  if (url === '/slow') {
    const t = setTimeout(() => send(200, { id: 9 }), 2_000);
    res.on('close', () => clearTimeout(t));
    return;
  }
  if (url === '/products' && req.method === 'POST') return send(201, { id: 10, ...JSON.parse(body) });
  send(404, { error: 'not found' });
}

async function startBackend(tls?: { cert: string; key: string }): Promise<Backend> {
  const hits: Hit[] = [];
  const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
      productApi(req, body, res);
    });
  };
  const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
  const backend: Backend = {
    port: 0,
    hits,
    connections: 0,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  server.on(tls ? 'secureConnection' : 'connection', () => backend.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  backend.port = (server.address() as AddressInfo).port;
  return backend;
}

async function closedPort(): Promise<number> {
  const s = http.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

// ---------------------------------------------------------------- API config

const SDL = `
type Query {
  productsForHome: [Product] @resolve(name: "Query|productsForHome")
  product(id: Int!): Product @resolve(name: "Query|product")
  authors: [Person] @resolve(name: "Query|authors")
  firstAuthor: Person @resolve(name: "Query|firstAuthor")
  echo(q: String, ids: [Int], limit: Int, input: EchoInput): Echo @resolve(name: "Query|echo")
  echoPost(q: String, n: Int, input: EchoInput, missing: String): Echo @resolve(name: "Query|echoPost")
  failing(code: Int!): Product @resolve(name: "Query|failing")
  notJson: Product @resolve(name: "Query|notJson")
  nothing: Product @resolve(name: "Query|nothing")
  slow: Product @resolve(name: "Query|slow")
  down: Product @resolve(name: "Query|down")
  mustHave: Product! @resolve(name: "Query|mustHave")
}
type Mutation {
  addProduct(title: String!): Product @resolve(name: "Mutation|addProduct")
}
type Product @cacheControl(maxAge: 60) {
  id: Int
  title: String
  author: String @resolve(name: "Product|author")
  pages: Int @resolve(name: "Product|pages")
  year: Int @resolve(name: "Product|year")
  details: Details @resolve(name: "Product|details")
}
type Details { id: Int, author: String, pages: Int, year: Int }
type Person { id: Int, name: String, lastname: String, first: String }
type Echo { method: String, url: String, auth: String, contentType: String, body: String, n: Int, a: Int, missing: String }
input EchoInput { a: Int, b: String }
`;

function upstreamAt(port: number, name = 'legate-system.books'): ResolverUpstream {
  return { name, endpoints: [{ address: '127.0.0.1', port }] };
}

function rest(
  upstream: ResolverUpstream,
  headers: Record<string, string>,
  opts: { query?: Record<string, string>; body?: unknown; response?: Partial<RestResolverConfig['response']>; timeoutMs?: number } = {},
): ResolverConfig {
  return {
    rest: {
      upstream,
      request: { headers, queryParams: opts.query ?? {}, ...(opts.body !== undefined ? { body: opts.body } : {}) },
      response: { setters: {}, ...opts.response },
      timeoutMs: opts.timeoutMs ?? 1000,
    },
  };
}

function apiConfig(port: number, downPort: number, over: Partial<GraphQLApiConfig> = {}): GraphQLApiConfig {
  const up = upstreamAt(port);
  return {
    name: 'legate-system.bookinfo',
    version: 'v1',
    schemaDefinition: SDL,
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: {
      'Query|productsForHome': rest(up, { ':method': 'GET', ':path': '/api/v1/products' }),
      'Query|product': rest(up, { ':path': '/details/{$args.id}' }),
      'Query|authors': rest(
        up,
        { ':path': '/wrapped' },
        {
          response: {
            resultRoot: '{$body.data.items}',
            setters: { name: '{$body.details.first} {$body.details.lastname}', lastname: '{$body.details.lastname}' },
          },
        },
      ),
      'Query|firstAuthor': rest(
        up,
        { ':path': '/wrapped' },
        { response: { resultRoot: 'data.items[0]', setters: { first: 'details.first' } } },
      ),
      'Query|echo': rest(
        up,
        { ':path': '/echo/{$args.q}', authorization: '{$headers.authorization}', 'x-static': 'yes' },
        {
          query: { ids: '{$args.ids}', limit: '{$args.limit}', input: '{$args.input}', fixed: 'a b' },
          response: { setters: { auth: '{$body.headers.authorization}' } },
        },
      ),
      'Query|echoPost': rest(
        up,
        { ':method': 'POST', ':path': '/echo' },
        {
          body: { q: '{$args.q}', n: '{$args.n}', input: '{$args.input}', label: 'n={$args.n}', missing: '{$args.missing}' },
          response: {
            setters: {
              contentType: '{$body.headers.content-type}',
              n: '{$body.body.n}',
              a: '{$body.body.input.a}',
              body: '{$body.body.label}',
              missing: '{$body.body.missing}',
            },
          },
        },
      ),
      'Query|failing': rest(up, { ':path': '/status/{$args.code}' }),
      'Query|notJson': rest(up, { ':path': '/notjson' }),
      'Query|nothing': rest(up, { ':path': '/empty' }),
      'Query|slow': rest(up, { ':path': '/slow' }, { timeoutMs: 150 }),
      'Query|down': rest(upstreamAt(downPort, 'legate-system.down'), { ':path': '/api/v1/products' }),
      'Query|mustHave': rest(up, { ':path': '/status/500' }),
      'Mutation|addProduct': rest(up, { ':method': 'POST', ':path': '/products' }, { body: { title: '{$args.title}' } }),
      'Product|author': rest(up, { ':path': '/details/{$parent.id}' }, { response: { resultRoot: '{$body.author}' } }),
      'Product|pages': rest(up, { ':path': '/details/{$parent.id}' }, { response: { resultRoot: '{$body.pages}' } }),
      'Product|year': rest(up, { ':path': '/details/{$parent.id}' }, { response: { resultRoot: 'year' } }),
      'Product|details': rest(up, { ':path': '/details/{$parent.id}' }),
    },
    ...over,
  };
}

// ---------------------------------------------------------------- HTTP helpers

const GR = 'application/graphql-response+json';

function post(engine: Engine, body: unknown, headers: Record<string, string> = {}): Promise<GraphQLHttpResponse> {
  return engine.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', ...headers },
    body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)),
  });
}

function get(engine: Engine, params: Record<string, string>, headers: Record<string, string> = {}): Promise<GraphQLHttpResponse> {
  return engine.handle({ method: 'GET', path: '/graphql?' + new URLSearchParams(params).toString(), headers, body: Buffer.alloc(0) });
}

function json(res: GraphQLHttpResponse): {
  data?: unknown;
  errors?: { message: string; path?: (string | number)[]; locations?: unknown; extensions?: Record<string, unknown> }[];
} {
  return JSON.parse(res.body);
}

// ---------------------------------------------------------------- suite

let backend: Backend;
let downPort: number;
let pools: UpstreamPools;
let engine: Engine;
const engines: Engine[] = [];

function lastHit(match: (h: Hit) => boolean): Hit {
  const hit = [...backend.hits].reverse().find(match);
  if (hit === undefined) throw new Error('no such backend hit');
  return hit;
}

/** Engines of this suite compile every operation with graphql-jit on first use (the engine's default waits for
 * the second); 'graphql-jit and graphql-js' below checks graphql-js answers the same. */
function make(over: Partial<GraphQLApiConfig> = {}, options: EngineOptions = {}): Engine {
  const e = createEngine(apiConfig(backend.port, downPort, over), { upstreamPools: pools, compileAfter: 0, ...options });
  engines.push(e);
  return e;
}

beforeAll(async () => {
  backend = await startBackend();
  downPort = await closedPort();
  pools = new UpstreamPools(0);
  engine = make();
});

afterAll(async () => {
  for (const e of engines) e.close();
  pools.close();
  await backend.close();
});

describe('results', () => {
  it('answers the reference query with exactly the requested fields, Int as JSON numbers', async () => {
    const res = await post(engine, { query: '{productsForHome{id title}}' });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toBe(JSON.stringify({ data: { productsForHome: products.map((p) => ({ id: p.id, title: p.title })) } }));
  });

  it('resolves nested per-product fields with {$parent.id}, one backend call per distinct call', async () => {
    const before = backend.hits.length;
    const res = await post(engine, { query: '{productsForHome{id author pages year}}' });
    expect(res.status).toBe(200);
    expect(json(res)).toEqual({
      data: {
        productsForHome: [
          { id: 1, author: 'William Shakespeare', pages: 200, year: 1595 },
          // the backend sends year "1609": graphql-js's Int serializer turns a numeric string into a number
          { id: 2, author: 'William Shakespeare', pages: 154, year: 1609 },
          { id: 3, author: 'William Shakespeare', pages: 342, year: 1603 },
          { id: 1, author: 'William Shakespeare', pages: 200, year: 1595 },
        ],
      },
    });
    const urls = backend.hits
      .slice(before)
      .map((h) => h.url)
      .sort();
    // 4 products x 3 fields = 12 resolutions, but only 3 distinct /details calls (+ the list)
    expect(urls).toEqual(['/api/v1/products', '/details/1', '/details/2', '/details/3']);
  });

  it('dedups across different resolvers making the same call (object-typed details + scalar fields)', async () => {
    const before = backend.hits.length;
    const statsBefore = engine.stats();
    const res = await post(engine, { query: '{productsForHome{id author details{author pages year}}}' });
    expect(json(res).data).toEqual({
      productsForHome: [
        { id: 1, author: 'William Shakespeare', details: { author: 'William Shakespeare', pages: 200, year: 1595 } },
        { id: 2, author: 'William Shakespeare', details: { author: 'William Shakespeare', pages: 154, year: 1609 } },
        { id: 3, author: 'William Shakespeare', details: { author: 'William Shakespeare', pages: 342, year: 1603 } },
        { id: 1, author: 'William Shakespeare', details: { author: 'William Shakespeare', pages: 200, year: 1595 } },
      ],
    });
    expect(backend.hits.length - before).toBe(4);
    const stats = engine.stats();
    expect(stats.upstreamCalls - statsBefore.upstreamCalls).toBe(4);
    expect(stats.upstreamCallsDeduplicated - statsBefore.upstreamCallsDeduplicated).toBe(5);
  });

  it('dedups within a request only: a second request calls again', async () => {
    const before = count(backend, '/details/2');
    await post(engine, { query: '{product(id: 2){author}}' });
    await post(engine, { query: '{product(id: 2){author}}' });
    expect(count(backend, '/details/2') - before).toBe(2);
  });

  it('runs sibling resolvers in parallel', async () => {
    // two slow calls would take 2 x 150 ms (timeout) sequentially; in parallel about 150 ms
    const t0 = Date.now();
    const res = await post(engine, { query: '{a: slow{id} b: product(id: 1){id} c: echo(q: "x"){url}}' });
    const took = Date.now() - t0;
    expect(json(res).data).toMatchObject({ a: null, b: { id: 1 }, c: { url: '/echo/x?fixed=a%20b' } });
    expect(took).toBeLessThan(1_000);
  });

  it('applies resultRoot and setters (per element for a list root)', async () => {
    const res = await post(engine, { query: '{authors{id name lastname} firstAuthor{id first lastname}}' });
    expect(json(res)).toEqual({
      data: {
        authors: [
          { id: 1, name: 'William Shakespeare', lastname: 'Shakespeare' },
          { id: 2, name: 'Christopher Marlowe', lastname: 'Marlowe' },
        ],
        firstAuthor: { id: 1, first: 'William', lastname: null },
      },
    });
  });

  it('executes mutations over POST with a templated JSON body', async () => {
    const res = await post(engine, { query: 'mutation Add($t: String!){addProduct(title: $t){id title}}', variables: { t: 'Othello' } });
    expect(json(res)).toEqual({ data: { addProduct: { id: 10, title: 'Othello' } } });
    const hit = lastHit((h) => h.url === '/products');
    expect(hit.method).toBe('POST');
    expect(JSON.parse(hit.body)).toEqual({ title: 'Othello' });
  });

  it('binds an unreferenced `Type|field` resolution to its field, and inherits @resolve from interface fields', async () => {
    const up = upstreamAt(backend.port);
    const e = make({
      version: 'v-bindings',
      schemaDefinition: `
        interface Named { id: Int, name: String @resolve(name: "Named|name") }
        type Query { book(id: Int!): Book }
        type Book implements Named { id: Int, name: String, pages: Int }`,
      resolutions: {
        'Query|book': rest(up, { ':path': '/details/{$args.id}' }),
        'Named|name': rest(up, { ':path': '/details/{$parent.id}' }, { response: { resultRoot: 'author' } }),
      },
    });
    const before = count(backend, '/details/3');
    expect(json(await post(e, { query: '{book(id: 3){id name pages}}' }))).toEqual({
      data: { book: { id: 3, name: 'William Shakespeare', pages: 342 } },
    });
    expect(count(backend, '/details/3') - before).toBe(1);
  });

  it('gives null (no error) for an empty 204 body', async () => {
    expect(json(await post(engine, { query: '{nothing{id}}' }))).toEqual({ data: { nothing: null } });
  });
});

describe('templates in requests', () => {
  it('fills path, query (encoded, list args joined, absent optional args left out) and headers from args and client headers', async () => {
    const res = await post(
      engine,
      { query: '{echo(q: "a b/c", ids: [1, 2], input: {a: 1, b: "x"}){method url auth}}' },
      { authorization: 'Bearer abc', 'x-other': 'not forwarded' },
    );
    const data = json(res).data as { echo: { method: string; url: string; auth: string } };
    expect(data.echo.method).toBe('GET');
    expect(data.echo.url).toBe('/echo/a%20b%2Fc?ids=1%2C2&input=%7B%22a%22%3A1%2C%22b%22%3A%22x%22%7D&fixed=a%20b');
    expect(data.echo.auth).toBe('Bearer abc');
    const hit = lastHit((h) => h.url.startsWith('/echo/a%20b'));
    expect(hit.headers['x-static']).toBe('yes');
    expect(hit.headers['x-other']).toBeUndefined();
    expect(hit.headers['host']).toBe(`127.0.0.1:${backend.port}`);
  });

  it('leaves out a header whose template has no value', async () => {
    const res = await post(engine, { query: '{echo(q: "noauth", limit: 5){url auth}}' });
    expect(json(res).data).toEqual({ echo: { url: '/echo/noauth?limit=5&fixed=a%20b', auth: null } });
  });

  it('keeps JSON types in bodies for whole placeholders, null for missing values', async () => {
    const res = await post(engine, { query: '{echoPost(q: "x", n: 42, input: {a: 7}){method contentType n a body missing}}' });
    expect(json(res).data).toEqual({
      echoPost: { method: 'POST', contentType: 'application/json', n: 42, a: 7, body: 'n=42', missing: null },
    });
    const hit = lastHit((h) => h.url === '/echo');
    expect(JSON.parse(hit.body)).toEqual({ q: 'x', n: 42, input: { a: 7 }, label: 'n=42', missing: null });
  });
});

describe('resolver errors: partial data', () => {
  it('keeps the other fields and reports path, code and backend status', async () => {
    const res = await post(engine, { query: '{productsForHome{id} failing(code: 503){id}}' }, { accept: GR });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/graphql-response+json; charset=utf-8');
    const body = json(res);
    expect((body.data as { productsForHome: unknown[] }).productsForHome).toHaveLength(4);
    expect((body.data as { failing: unknown }).failing).toBeNull();
    expect(body.errors).toEqual([
      {
        message: 'Query|failing: upstream answered HTTP 503',
        locations: [{ line: 1, column: 22 }],
        path: ['failing'],
        extensions: { code: 'UPSTREAM_HTTP_ERROR', resolver: 'Query|failing', http: { status: 503 } },
      },
    ]);
  });

  it('reports nested failures with the list index in the path', async () => {
    const saved = details['3'];
    delete details['3'];
    try {
      const res = await post(engine, { query: '{productsForHome{id author}}' });
      const body = json(res);
      expect(res.status).toBe(200);
      expect((body.data as { productsForHome: { author: string | null }[] }).productsForHome.map((p) => p.author)).toEqual([
        'William Shakespeare',
        'William Shakespeare',
        null,
        'William Shakespeare',
      ]);
      expect(body.errors).toHaveLength(1);
      expect(body.errors![0]!.path).toEqual(['productsForHome', 2, 'author']);
      expect(body.errors![0]!.extensions).toMatchObject({ code: 'UPSTREAM_HTTP_ERROR', http: { status: 404 } });
    } finally {
      details['3'] = saved!;
    }
  });

  it('maps a body that is not JSON to UPSTREAM_BAD_RESPONSE', async () => {
    const body = json(await post(engine, { query: '{notJson{id}}' }));
    expect(body.data).toEqual({ notJson: null });
    expect(body.errors![0]!.extensions).toEqual({ code: 'UPSTREAM_BAD_RESPONSE', resolver: 'Query|notJson' });
  });

  it('maps a refused connection to UPSTREAM_UNAVAILABLE', async () => {
    const body = json(await post(engine, { query: '{down{id} product(id: 1){id}}' }));
    expect(body.data).toEqual({ down: null, product: { id: 1 } });
    expect(body.errors![0]!.path).toEqual(['down']);
    expect(body.errors![0]!.extensions).toEqual({ code: 'UPSTREAM_UNAVAILABLE', resolver: 'Query|down' });
  });

  it('maps a call slower than timeoutMs to UPSTREAM_TIMEOUT, promptly', async () => {
    const t0 = Date.now();
    const body = json(await post(engine, { query: '{slow{id}}' }));
    expect(Date.now() - t0).toBeLessThan(1_000);
    expect(body.data).toEqual({ slow: null });
    expect(body.errors![0]!).toMatchObject({
      message: 'Query|slow: upstream did not answer within 150 ms',
      path: ['slow'],
      extensions: { code: 'UPSTREAM_TIMEOUT' },
    });
  });

  it('propagates a failing non-null field to its parent (data: null, still 200)', async () => {
    const res = await post(engine, { query: '{mustHave{id}}' }, { accept: GR });
    expect(res.status).toBe(200);
    const body = json(res);
    expect(body.data).toBeNull();
    expect(body.errors![0]!.extensions).toMatchObject({ code: 'UPSTREAM_HTTP_ERROR', http: { status: 500 } });
  });
});

describe('GraphQL over HTTP', () => {
  it('serves GET queries, with variables and operationName', async () => {
    const res = await get(engine, {
      query: 'query P($id: Int!){product(id: $id){id title: author}} query Other{__typename}',
      variables: '{"id":3}',
      operationName: 'P',
    });
    expect(res.status).toBe(200);
    expect(json(res)).toEqual({ data: { product: { id: 3, title: 'William Shakespeare' } } });
  });

  it('answers GET with the negotiated media type', async () => {
    const res = await get(engine, { query: '{product(id: 1){id}}' }, { accept: GR });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe(`${GR}; charset=utf-8`);
    expect(json(res)).toEqual({ data: { product: { id: 1 } } });
  });

  it('refuses subscriptions (schema with a Subscription type)', async () => {
    const sub = make({ version: 'v-sub', schemaDefinition: `${SDL}\ntype Subscription { tick: Int }` });
    const res = await post(sub, { query: 'subscription { tick }' }, { accept: GR });
    expect(res.status).toBe(400);
    expect(json(res)).toEqual({
      errors: [{ message: 'Subscriptions are not supported by this API.', locations: [{ line: 1, column: 1 }] }],
    });
  });

  it('refuses mutations over GET with 405 and Allow: POST', async () => {
    const before = count(backend, '/products');
    const res = await get(engine, { query: 'mutation{addProduct(title: "x"){id}}' }, { accept: GR });
    expect(res.status).toBe(405);
    expect(res.headers['allow']).toBe('POST');
    expect(json(res)).not.toHaveProperty('data');
    expect(count(backend, '/products')).toBe(before);
  });

  it('refuses other methods with 405 and Allow: GET, POST', async () => {
    for (const method of ['PUT', 'DELETE', 'PATCH', 'HEAD']) {
      const res = await engine.handle({ method, path: '/graphql', headers: {}, body: Buffer.alloc(0) });
      expect(res.status).toBe(405);
      expect(res.headers['allow']).toBe('GET, POST');
    }
  });

  it('refuses POST bodies that are not application/json with 415', async () => {
    const q = Buffer.from(JSON.stringify({ query: '{__typename}' }));
    for (const ct of [undefined, 'text/plain', 'application/graphql', 'application/json; charset=latin1']) {
      const headers: Record<string, string> = ct === undefined ? {} : { 'content-type': ct };
      const res = await engine.handle({ method: 'POST', path: '/graphql', headers, body: q });
      expect(res.status, String(ct)).toBe(415);
    }
    expect((await post(engine, { query: '{__typename}' }, { 'content-type': 'application/json; charset=UTF-8' })).status).toBe(200);
  });

  it('refuses bodies over maxBodyBytes with 413', async () => {
    const small = make({}, { maxBodyBytes: 64 });
    const res = await post(small, { query: `{__typename} # ${'x'.repeat(100)}` });
    expect(res.status).toBe(413);
    expect((await post(small, { query: '{__typename}' })).status).toBe(200);
  });

  describe('content negotiation', () => {
    const cases: [string | undefined, number, string | undefined][] = [
      [GR, 200, GR],
      ['application/json', 200, 'application/json'],
      ['*/*', 200, 'application/json'],
      ['application/*', 200, 'application/json'],
      [undefined, 200, 'application/json'],
      ['', 200, 'application/json'],
      [`${GR}, application/json;q=0.9`, 200, GR],
      [`application/json, ${GR}`, 200, GR],
      [`application/json;q=1, ${GR};q=0.5`, 200, 'application/json'],
      [`text/html, ${GR};charset=utf-8`, 200, GR],
      ['text/html', 406, undefined],
      [`${GR};q=0, application/xml`, 406, undefined],
      ['application/json; charset=iso-8859-1', 406, undefined],
    ];
    for (const [accept, status, type] of cases) {
      it(`Accept: ${accept === undefined ? '(none)' : JSON.stringify(accept)} -> ${status} ${type ?? ''}`, async () => {
        const res = await post(engine, { query: '{__typename}' }, accept === undefined ? {} : { accept });
        expect(res.status).toBe(status);
        if (type !== undefined) {
          expect(res.headers['content-type']).toBe(`${type}; charset=utf-8`);
          expect(json(res)).toEqual({ data: { __typename: 'Query' } });
        } else {
          expect(json(res).errors![0]!.message).toMatch(/Not Acceptable/);
        }
      });
    }
  });

  describe('request errors: 400 under both media types, errors and no data', () => {
    const bad: [string, string | object, RegExp][] = [
      ['malformed JSON', '{ "query": ', /Malformed JSON/],
      ['empty body', '', /Missing body/],
      ['a JSON array (batch)', [{ query: '{__typename}' }], /must be an object/],
      ['missing query', { notquery: '{__typename}' }, /Missing query/],
      ['object query', { query: { obj: 'ect' } }, /Invalid query/],
      ['number query', { query: 0 }, /Invalid query/],
      ['string variables', { query: '{__typename}', variables: 'x' }, /Invalid variables/],
      ['array variables', { query: '{__typename}', variables: ['x'] }, /Invalid variables/],
      ['number operationName', { query: '{__typename}', operationName: 0 }, /Invalid operationName/],
      ['array extensions', { query: '{__typename}', extensions: ['x'] }, /Invalid extensions/],
    ];
    for (const [name, body, message] of bad) {
      for (const accept of [GR, 'application/json']) {
        it(`${name} (${accept})`, async () => {
          const res = await post(engine, body, { accept });
          expect(res.status).toBe(400);
          expect(res.headers['content-type']).toBe(`${accept}; charset=utf-8`);
          const parsed = json(res);
          expect(parsed).not.toHaveProperty('data');
          expect(parsed.errors![0]!.message).toMatch(message);
        });
      }
    }

    it('GET without query, or with variables that are not JSON', async () => {
      expect((await get(engine, {})).status).toBe(400);
      const res = await get(engine, { query: '{__typename}', variables: '{nope' });
      expect(res.status).toBe(400);
      expect(json(res).errors![0]!.message).toMatch(/Invalid variables/);
    });

    it('accepts null variables, operationName and extensions, and a map of extensions', async () => {
      for (const extra of [{ variables: null }, { operationName: null }, { extensions: null }, { extensions: { some: 'value' } }]) {
        for (const accept of [GR, 'application/json']) {
          const res = await post(engine, { query: '{__typename}', ...extra }, { accept });
          expect(res.status).toBe(200);
          expect(json(res)).toEqual({ data: { __typename: 'Query' } });
        }
      }
    });
  });

  describe('document errors: 400 (graphql-response+json) / 200 (application/json), never a data key', () => {
    const docs: [string, object, RegExp][] = [
      ['parse error', { query: '{' }, /Syntax Error/],
      ['validation error', { query: '{ 8f31403dfe404bccbb0e835f2629c6a7 }' }, /Syntax Error|Cannot query field/],
      ['unknown field', { query: '{ nope }' }, /Cannot query field "nope" on type "Query"/],
      [
        'variable coercion',
        { query: 'query Q($id: Int!){ product(id: $id){id} }', variables: { id: null } },
        /Variable "\$id" of non-null type "Int!" must not be null/,
      ],
      ['unknown operationName', { query: 'query A{__typename}', operationName: 'B' }, /Unknown operation named "B"/],
      ['several operations, no name', { query: 'query A{__typename} query B{__typename}' }, /Must provide operation name/],
      ['subscription', { query: 'subscription{__typename}' }, /Schema is not configured|Subscriptions are not supported/],
    ];
    for (const [name, body, message] of docs) {
      it(name, async () => {
        const gr = await post(engine, body, { accept: GR });
        expect(gr.status).toBe(400);
        expect(gr.headers['content-type']).toBe(`${GR}; charset=utf-8`);
        expect(json(gr)).not.toHaveProperty('data');
        expect(json(gr).errors![0]!.message).toMatch(message);
        const legacy = await post(engine, body, { accept: 'application/json' });
        expect(legacy.status).toBe(200);
        expect(json(legacy)).not.toHaveProperty('data');
        expect(json(legacy).errors![0]!.message).toMatch(message);
      });
    }
  });
});

describe('introspection', () => {
  it('is refused when disabled, with a message saying so; __typename still works', async () => {
    for (const query of [
      '{__schema{queryType{name}}}',
      '{__type(name: "Product"){name}}',
      '{productsForHome{id} ... on Query { __schema { types { name } } }}',
    ]) {
      const res = await post(engine, { query }, { accept: GR });
      expect(res.status, query).toBe(400);
      expect(json(res).errors![0]!.message).toMatch(/Introspection is disabled/);
    }
    expect(json(await post(engine, { query: '{productsForHome{__typename}}' })).data).toEqual({
      productsForHome: [{ __typename: 'Product' }, { __typename: 'Product' }, { __typename: 'Product' }, { __typename: 'Product' }],
    });
  });

  it('works when enabled, and the @resolve directive is part of the schema', async () => {
    const open = make({ enableIntrospection: true, version: 'v-intro' });
    const res = await post(open, { query: '{__type(name: "Product"){fields{name}} __schema{directives{name}}}' });
    expect(res.status).toBe(200);
    const data = json(res).data as { __type: { fields: { name: string }[] }; __schema: { directives: { name: string }[] } };
    expect(data.__type.fields.map((f) => f.name)).toEqual(['id', 'title', 'author', 'pages', 'year', 'details']);
    expect(data.__schema.directives.map((d) => d.name)).toEqual(expect.arrayContaining(['resolve', 'cacheControl']));
  });
});

describe('maxDepth', () => {
  let limited: Engine;
  beforeAll(() => {
    limited = make({ maxDepth: 2, version: 'v-depth' });
  });

  it('accepts queries up to the limit', async () => {
    expect((await post(limited, { query: '{productsForHome{id author}}' })).status).toBe(200);
    // __typename and introspection fields do not count
    expect((await post(limited, { query: '{productsForHome{id __typename}}' })).status).toBe(200);
  });

  it('rejects deeper queries at validation time, naming the limit, without calling the backend', async () => {
    const before = backend.hits.length;
    const res = await post(limited, { query: '{productsForHome{details{author}}}' }, { accept: GR });
    expect(res.status).toBe(400);
    expect(json(res)).not.toHaveProperty('data');
    expect(json(res).errors![0]!.message).toBe('The operation has depth 3, which exceeds the maximum depth of 2 allowed by this API.');
    expect(backend.hits.length).toBe(before);
    const legacy = await post(limited, { query: 'query Deep{productsForHome{details{author}}}' });
    expect(legacy.status).toBe(200);
    expect(json(legacy).errors![0]!.message).toMatch(/Operation "Deep" has depth 3.*maximum depth of 2/);
  });

  it('counts depth through fragment spreads and inline fragments', async () => {
    const viaFragments =
      'query { ...Q } fragment Q on Query { productsForHome { ...P } } fragment P on Product { ... on Product { details { author } } }';
    const res = await post(limited, { query: viaFragments }, { accept: GR });
    expect(res.status).toBe(400);
    expect(json(res).errors![0]!.message).toMatch(/depth 3/);
    const shallow = 'query { ...Q } fragment Q on Query { productsForHome { ...P } } fragment P on Product { id }';
    expect((await post(limited, { query: shallow })).status).toBe(200);
  });

  it('does not loop on fragment cycles (graphql-js reports the cycle)', async () => {
    const cyclic = '{ productsForHome { ...A } } fragment A on Product { id ...B } fragment B on Product { title ...A }';
    const res = await post(limited, { query: cyclic }, { accept: GR });
    expect(res.status).toBe(400);
    expect(
      json(res)
        .errors!.map((e) => e.message)
        .join('\n'),
    ).toMatch(/Cannot spread fragment "A" within itself/);
  });
});

describe('graphql-jit and graphql-js', () => {
  // every request shape the suite uses that executes something: answers must be the same, byte for byte
  const corpus: { name: string; request: () => Parameters<Engine['handle']>[0] }[] = [
    ['flat', { query: '{productsForHome{id title}}' }],
    ['nested with dedup', { query: '{productsForHome{id author pages year details{author}}}' }],
    [
      'aliases, fragments, __typename',
      { query: 'query Q { a: product(id: 1) { ...F } b: product(id: 2) { ...F __typename } } fragment F on Product { id title: author }' },
    ],
    [
      'variables and operationName',
      { query: 'query P($id: Int!){product(id: $id){id pages}} query Other{__typename}', variables: { id: 3 }, operationName: 'P' },
    ],
    [
      'skip and include',
      { query: 'query($s: Boolean!){product(id: 1){id author @skip(if: $s) pages @include(if: $s)}}', variables: { s: true } },
    ],
    ['templates: path, query, headers, input object', { query: '{echo(q: "a b", ids: [1, 2], input: {a: 1, b: "x"}){url auth}}' }],
    ['templated JSON body', { query: '{echoPost(q: "x", n: 2, input: {a: 5}){contentType n a body missing}}' }],
    ['resultRoot and setters', { query: '{authors{id name lastname} firstAuthor{id first}}' }],
    ['mutation', { query: 'mutation{addProduct(title: "New"){id title}}' }],
    ['partial data, resolver error', { query: '{productsForHome{id} failing(code: 503){id}}' }],
    ['nested error with list index', { query: '{productsForHome{id author} product(id: 404){id author}}' }],
    ['bad body, refused connection, empty body', { query: '{notJson{id} down{id} nothing{id}}' }],
    ['non-null propagation to the root', { query: '{mustHave{id}}' }],
    ['Int coercion of a string backend value', { query: '{product(id: 2){year}}' }],
    ['variable coercion error', { query: 'query Q($id: Int!){ product(id: $id){id} }', variables: { id: 'x' } }],
    ['missing variable', { query: 'query Q($id: Int!){ product(id: $id){id} }' }],
    ['unknown operationName', { query: 'query A{__typename}', operationName: 'B' }],
    ['several operations, no name', { query: 'query A{__typename} query B{__typename}' }],
  ].map(([name, body]) => ({
    name: name as string,
    request: () => ({
      method: 'POST',
      path: '/graphql',
      headers: { 'content-type': 'application/json', accept: GR, authorization: 'Bearer t' },
      body: Buffer.from(JSON.stringify(body)),
    }),
  }));
  let jit: Engine;
  let js: Engine;
  beforeAll(() => {
    jit = make({ version: 'v-jit' }, { compileAfter: 0 });
    js = make({ version: 'v-js' }, { compileAfter: -1 });
  });

  for (const c of corpus) {
    it(`answer the same: ${c.name}`, async () => {
      const calls = (e: Engine) => e.stats().upstreamCalls + e.stats().upstreamCallsDeduplicated;
      const [jsCalls0, jitCalls0] = [calls(js), calls(jit)];
      const viaJs = await js.handle(c.request());
      const viaJit = await jit.handle(c.request());
      expect({ ...viaJit, body: JSON.parse(viaJit.body) as unknown }).toEqual({ ...viaJs, body: JSON.parse(viaJs.body) as unknown });
      expect(viaJit.body).toBe(viaJs.body);
      expect(calls(jit) - jitCalls0).toBe(calls(js) - jsCalls0);
    });
  }

  it('each engine ran on its executor', () => {
    expect(js.stats()).toMatchObject({ compilations: 0, compileFailures: 0, jitExecutions: 0 });
    expect(jit.stats().compileFailures).toBe(0);
    expect(jit.stats().compilations).toBeGreaterThan(0);
    // one compilation for the two variable error cases (one document), none for a missing or ambiguous operation
    expect(jit.stats().compilations).toBe(corpus.length - 3);
  });

  it('by default, compiles an operation on its second use, once', async () => {
    const e = make({ version: 'v-default' }, { compileAfter: undefined });
    const q = { query: '{product(id: 1){id author}}' };
    expect(json(await post(e, q))).toEqual({ data: { product: { id: 1, author: 'William Shakespeare' } } });
    expect(e.stats()).toMatchObject({ compilations: 0, jitExecutions: 0 });
    for (let i = 0; i < 3; i++) expect(json(await post(e, q))).toEqual({ data: { product: { id: 1, author: 'William Shakespeare' } } });
    expect(e.stats()).toMatchObject({ compilations: 1, jitExecutions: 3 });
  });

  it('compiles each operation of a document on its own; an unknown operationName compiles nothing', async () => {
    const e = make({ version: 'v-ops' }, { compileAfter: 0 });
    const query = 'query A{product(id: 1){id}} query B{product(id: 2){id}}';
    expect(json(await post(e, { query, operationName: 'A' })).data).toEqual({ product: { id: 1 } });
    expect(json(await post(e, { query, operationName: 'B' })).data).toEqual({ product: { id: 2 } });
    expect(json(await post(e, { query, operationName: 'A' })).data).toEqual({ product: { id: 1 } });
    for (let i = 0; i < 3; i++)
      expect(json(await post(e, { query, operationName: `C${i}` })).errors![0]!.message).toMatch(/Unknown operation named "C/);
    expect(e.stats()).toMatchObject({ compilations: 2, jitExecutions: 3 });
  });
});

describe('document cache', () => {
  it('validates a document once; later requests are cache hits', async () => {
    const e = make({ version: 'v-cache' });
    const q = { query: '{productsForHome{id}}' };
    await post(e, q);
    const first = e.stats();
    expect(first.validations).toBe(1);
    for (let i = 0; i < 5; i++) expect((await post(e, q)).status).toBe(200);
    // the same text over GET is the same document
    expect((await get(e, q)).status).toBe(200);
    const after = e.stats();
    expect(after.validations).toBe(1);
    expect(after.documentCacheHits - first.documentCacheHits).toBe(6);
    expect(after.documentCacheSize).toBe(1);
  });

  it('caches invalid documents too, so repeating a bad query is cheap', async () => {
    const e = make({ version: 'v-cache-bad' });
    for (let i = 0; i < 3; i++) {
      const res = await post(e, { query: '{ nope }' }, { accept: GR });
      expect(res.status).toBe(400);
    }
    for (let i = 0; i < 2; i++) expect((await post(e, { query: '{' }, { accept: GR })).status).toBe(400);
    const s = e.stats();
    expect(s.validations).toBe(2);
    expect(s.errorCacheHits).toBe(3);
    expect(s.documentCacheSize).toBe(0);
  });

  it('is bounded (LRU) and can be turned off', async () => {
    const e = make({ version: 'v-lru' }, { documentCacheSize: 2 });
    for (const q of ['{a: __typename}', '{b: __typename}', '{c: __typename}', '{a: __typename}']) await post(e, { query: q });
    expect(e.stats().documentCacheSize).toBe(2);
    expect(e.stats().validations).toBe(4); // "a" was evicted by "c"
    const off = make({ version: 'v-nocache' }, { documentCacheSize: 0 });
    await post(off, { query: '{__typename}' });
    await post(off, { query: '{__typename}' });
    expect(off.stats().validations).toBe(2);
  });
});

describe('upstream pools', () => {
  it('share one keep-alive pool across engines (config versions) with the same endpoints', async () => {
    const local = new UpstreamPools(0);
    const b = await startBackend();
    try {
      const cfg = (version: string) => ({ ...apiConfig(b.port, downPort), version });
      const v1 = createEngine(cfg('1'), { upstreamPools: local });
      const poolsForV1 = local.size;
      await post(v1, { query: '{productsForHome{id}}' });
      await post(v1, { query: '{productsForHome{id}}' });
      expect(b.connections).toBe(1);
      const v2 = createEngine(cfg('2'), { upstreamPools: local });
      expect(local.size).toBe(poolsForV1);
      v1.close();
      await post(v2, { query: '{productsForHome{id}}' });
      expect(b.connections).toBe(1);
      v2.close();
      expect(local.size).toBe(0);
    } finally {
      local.close();
      await b.close();
    }
  });

  it('round-robins over the upstream endpoints', async () => {
    const b1 = await startBackend();
    const b2 = await startBackend();
    const local = new UpstreamPools(0);
    try {
      const up: ResolverUpstream = {
        name: 'ns.two',
        endpoints: [
          { address: '127.0.0.1', port: b1.port },
          { address: '127.0.0.1', port: b2.port },
        ],
      };
      const e = createEngine(
        {
          name: 'ns.rr',
          version: '1',
          enableIntrospection: false,
          maxDepth: 0,
          schemaDefinition: 'type Query { p(id: Int): Details @resolve(name: "Query|p") } type Details { id: Int }',
          resolutions: { 'Query|p': rest(up, { ':path': '/details/{$args.id}' }) },
        },
        { upstreamPools: local },
      );
      for (let i = 0; i < 6; i++) await post(e, { query: `{p(id: ${(i % 3) + 1}){id}}` });
      expect(b1.hits).toHaveLength(3);
      expect(b2.hits).toHaveLength(3);
      e.close();
    } finally {
      local.close();
      await b1.close();
      await b2.close();
    }
  });

  it('calls https upstreams, verifying against rootCa with the configured SNI', async () => {
    const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../e2e/fixtures');
    const cert = fs.readFileSync(path.join(dir, 'secure.example.com.crt'), 'utf8');
    const key = fs.readFileSync(path.join(dir, 'secure.example.com.key'), 'utf8');
    const b = await startBackend({ cert, key });
    const local = new UpstreamPools(0);
    const sdl = 'type Query { p(id: Int): Details @resolve(name: "Query|p") } type Details { id: Int, author: String }';
    const cfg = (tls: ResolverUpstream['tls']): GraphQLApiConfig => ({
      name: 'ns.tls',
      version: JSON.stringify(tls),
      enableIntrospection: false,
      maxDepth: 0,
      schemaDefinition: sdl,
      resolutions: {
        'Query|p': rest(
          { name: 'ns.secure', endpoints: [{ address: '127.0.0.1', port: b.port }], tls },
          { ':path': '/details/{$args.id}' },
        ),
      },
    });
    try {
      const good = createEngine(cfg({ sni: 'secure.example.com', rootCa: cert }), { upstreamPools: local });
      expect(json(await post(good, { query: '{p(id: 1){id author}}' }))).toEqual({ data: { p: { id: 1, author: 'William Shakespeare' } } });
      const wrongName = createEngine(cfg({ sni: 'wrong.example.com', rootCa: cert }), { upstreamPools: local });
      expect(json(await post(wrongName, { query: '{p(id: 1){id}}' })).errors![0]!.extensions).toMatchObject({
        code: 'UPSTREAM_UNAVAILABLE',
      });
      // no rootCa: like Envoy without a validation context, the certificate is not verified
      const unverified = createEngine(cfg({}), { upstreamPools: local });
      expect(json(await post(unverified, { query: '{p(id: 2){id}}' }))).toEqual({ data: { p: { id: 2 } } });
      for (const e of [good, wrongName, unverified]) e.close();
    } finally {
      local.close();
      await b.close();
    }
  });
});

describe('config checks', () => {
  const base = () => apiConfig(1, 2);

  it('accepts the reference config', () => {
    expect(checkApiConfig(base())).toEqual([]);
  });

  it('prepends @resolve/@cacheControl only when the SDL does not declare them', () => {
    const sdl = `directive @resolve(name: String!) on FIELD_DEFINITION\n${SDL}`;
    expect(checkApiConfig({ ...base(), schemaDefinition: sdl })).toEqual([]);
  });

  it('reports every problem, and createEngine refuses the config with them', () => {
    const cfg = base();
    const up = upstreamAt(1);
    cfg.schemaDefinition = SDL.replace('@resolve(name: "Query|notJson")', '@resolve(name: "Query|missing")');
    cfg.resolutions['Query|ghost'] = rest(up, { ':path': '/x' });
    cfg.resolutions['Query|echo'] = rest(up, { ':path': '/echo/{$args.nope}' });
    cfg.resolutions['Query|slow'] = rest(up, { ':path': '/x/{$parent.id' });
    cfg.resolutions['Query|down'] = {
      rest: { ...rest(up, { ':path': '/x' }).rest!, upstream: { name: 'ns.bad', endpoints: [{ address: '', port: 70000 }] } },
    };
    cfg.resolutions['Query|nothing'] = {};
    const problems = checkApiConfig(cfg);
    expect(problems).toEqual(
      expect.arrayContaining([
        'Query.notJson: @resolve names resolution "Query|missing", which is not defined',
        'resolution "Query|ghost": type Query has no field ghost',
        'resolution "Query|echo" uses {$args.nope} but field Query.echo has no argument "nope"',
        'resolution "Query|slow" :path: unterminated or malformed template in "/x/{$parent.id"',
        'resolution "Query|down" rest.upstream.endpoints[0].address: must be a non-empty string',
        'resolution "Query|down" rest.upstream.endpoints[0].port: must be an integer in 1..65535',
        'resolution "Query|nothing": set exactly one resolver kind: rest, grpc, mock',
      ]),
    );
    expect(() => createEngine(cfg, { upstreamPools: pools })).toThrow(
      /GraphQL API "legate-system.bookinfo" \(version v1\) is unusable: .*Query\|missing/,
    );
  });

  it('reports SDL that does not parse or is not a valid schema', () => {
    expect(checkApiConfig({ ...base(), schemaDefinition: 'type Query {', resolutions: {} })).toEqual([
      'schemaDefinition does not parse: Syntax Error: Expected Name, found <EOF>. (line 1, column 13)',
    ]);
    expect(checkApiConfig({ ...base(), schemaDefinition: 'type Query { a: Nope }', resolutions: {} })[0]).toMatch(
      /schemaDefinition is not a valid schema: Unknown type "Nope"/,
    );
    expect(checkApiConfig({ ...base(), schemaDefinition: 'type Foo { a: String }', resolutions: {} })).toEqual([
      'schemaDefinition is not a valid schema: Query root type must be provided.',
    ]);
    expect(checkApiConfig({ ...base(), schemaDefinition: 'type Query { a: String @other }', resolutions: {} })[0]).toMatch(
      /Unknown directive "@other"/,
    );
  });

  it('reports unusable TLS material', () => {
    const cfg = base();
    cfg.resolutions['Query|product'] = {
      rest: {
        ...rest(upstreamAt(1), { ':path': '/x' }).rest!,
        upstream: { name: 'ns.tls', endpoints: [{ address: '127.0.0.1', port: 1 }], tls: { rootCa: 'not a PEM' } },
      },
    };
    expect(checkApiConfig(cfg).join('\n')).toMatch(/resolution "Query\|product" upstream ns.tls: unusable TLS material/);
  });
});
