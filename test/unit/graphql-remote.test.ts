// The remote executor against a real GraphQL Yoga server on loopback: the request forwarded as JSON, the
// answer relayed as it is, headers and query parameters templated from the client request.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLApiConfig, RemoteExecutorConfig } from '../../common/graphql-config.js';
import { checkApiConfig, createEngine, UpstreamPools, type Engine } from '../../extensions/graphql/engine/index.js';

let server: http.Server;
let port: number;
const seen: { url: string; authorization: string | undefined; body: unknown }[] = [];
const pools = new UpstreamPools();

beforeAll(async () => {
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: 'type Query { hello(name: String): String, whoami: String } type Mutation { bump: Int }',
      resolvers: {
        Query: {
          hello: (_: unknown, a: { name?: string }) => `hello ${a.name ?? 'world'}`,
          whoami: (_: unknown, __: unknown, ctx: { request: Request }) => ctx.request.headers.get('authorization'),
        },
        Mutation: { bump: () => 1 },
      },
    }),
    logging: false,
    graphiql: false,
    landingPage: false,
  });
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString();
      seen.push({ url: req.url ?? '', authorization: req.headers.authorization, body: text ? JSON.parse(text) : undefined });
      // the body is read here (to record it), so yoga gets it through its fetch API
      void Promise.resolve(
        yoga.fetch(`http://127.0.0.1${req.url}`, {
          method: req.method,
          headers: req.headers as Record<string, string>,
          body: text || undefined,
        }),
      ).then(async (r: Response) => {
        res.writeHead(r.status, Object.fromEntries(r.headers));
        res.end(await r.text());
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  pools.close();
  await new Promise<void>((r) => server.close(() => r()));
});

function config(remote: Partial<RemoteExecutorConfig> = {}): GraphQLApiConfig {
  return {
    name: 'ns.remote',
    version: 'v1',
    schemaDefinition: 'type Query { hello(name: String): String }',
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: {},
    remote: {
      upstream: { name: 'ns.yoga', endpoints: [{ address: '127.0.0.1', port }] },
      headers: { authorization: '{$headers.authorization}', ':path': '/graphql' },
      queryParams: { tenant: '{$headers.x-tenant}' },
      timeoutMs: 2000,
      ...remote,
    },
  };
}

async function send(e: Engine, method: string, body: unknown, headers: Record<string, string> = {}, path = '/graphql') {
  return e.handle({
    method,
    path,
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: Buffer.from(body === undefined ? '' : JSON.stringify(body)),
  });
}

describe('remote executor', () => {
  it('forwards the request and relays status, body and content-type', async () => {
    const e = createEngine(config(), { upstreamPools: pools });
    seen.length = 0;
    const r = await send(
      e,
      'POST',
      { query: 'query Q($n: String) { hello(name: $n) }', variables: { n: 'ann' }, operationName: 'Q' },
      {
        authorization: 'Bearer t',
        'x-tenant': 'acme',
      },
    );
    expect(r.status).toBe(200);
    expect(r.headers['content-type']).toContain('application/json');
    expect(JSON.parse(r.body)).toEqual({ data: { hello: 'hello ann' } });
    expect(seen[0]).toEqual({
      url: '/graphql?tenant=acme',
      authorization: 'Bearer t',
      body: { query: 'query Q($n: String) { hello(name: $n) }', operationName: 'Q', variables: { n: 'ann' } },
    });
    e.close();
  });

  it("relays the server's own errors (validated against its schema, not the local SDL)", async () => {
    const e = createEngine(config(), { upstreamPools: pools });
    const ok = await send(e, 'POST', { query: '{ whoami }' }, { authorization: 'Basic x' });
    expect(JSON.parse(ok.body)).toEqual({ data: { whoami: 'Basic x' } });
    const bad = await send(e, 'POST', { query: '{ nope }' }, { accept: 'application/graphql-response+json' });
    expect(bad.status).toBe(400);
    expect(bad.headers['content-type']).toContain('application/graphql-response+json');
    expect(JSON.parse(bad.body).errors[0].message).toContain('nope');
    e.close();
  });

  it('takes GET, refuses mutations over GET, and leaves out headers the client did not send', async () => {
    const e = createEngine(config(), { upstreamPools: pools });
    seen.length = 0;
    const r = await send(e, 'GET', undefined, {}, `/graphql?query=${encodeURIComponent('{ hello }')}`);
    expect(JSON.parse(r.body)).toEqual({ data: { hello: 'hello world' } });
    expect(seen[0]?.url).toBe('/graphql');
    expect(seen[0]?.authorization).toBeUndefined();
    const m = await send(e, 'GET', undefined, {}, `/graphql?query=${encodeURIComponent('mutation { bump }')}`);
    expect(m.status).toBe(405);
    e.close();
  });

  it('answers 502 with a GraphQL error when the server is down', async () => {
    const e = createEngine(config({ upstream: { name: 'ns.gone', endpoints: [{ address: '127.0.0.1', port: 1 }] } }), {
      upstreamPools: pools,
    });
    const r = await send(e, 'POST', { query: '{ hello }' });
    expect(r.status).toBe(502);
    expect(JSON.parse(r.body).errors[0].extensions.code).toBe('UPSTREAM_UNAVAILABLE');
    e.close();
  });

  it('refuses pseudo-headers other than :path and a relative :path at config time', () => {
    expect(checkApiConfig(config({ headers: { ':method': 'GET' } }))).toEqual([
      'remote executor: ":method": only the :path pseudo-header can be set (the method is POST)',
    ]);
    expect(checkApiConfig(config({ headers: { ':path': 'graphql' } }))).toEqual([
      'remote executor: ":path" must start with "/", got "graphql"',
    ]);
  });
});
