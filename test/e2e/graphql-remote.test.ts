// The remote executor end to end: a GraphQLApi with executor.remote forwards GraphQL requests, through real
// Envoy and the graphql extension, to a real GraphQL Yoga server; its answers come back as it gave them.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';

let yogaServer: http.Server;
let gw: Gateway;
const seen: { url: string; authorization: string | undefined }[] = [];

const post = (body: unknown, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
  body: JSON.stringify(body),
});

beforeAll(async () => {
  const yoga = createYoga({
    schema: createSchema({
      typeDefs: 'type Query { hello(name: String): String, caller: String }',
      resolvers: {
        Query: {
          hello: (_: unknown, a: { name?: string }) => `hello ${a.name ?? 'world'}`,
          caller: (_: unknown, __: unknown, ctx: { request: Request }) => ctx.request.headers.get('authorization'),
        },
      },
    }),
    logging: false,
    graphiql: false,
    landingPage: false,
  });
  yogaServer = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization });
    void yoga(req, res);
  });
  await new Promise<void>((r) => yogaServer.listen(0, '127.0.0.1', () => r()));
  const port = (yogaServer.address() as AddressInfo).port;
  gw = await startGateway({
    'remote.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: yoga, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: remote, namespace: legate-system }
spec:
  executableSchema:
    schemaDefinition: 'type Query { hello(name: String): String, caller: String }'
    executor:
      remote:
        upstreamRef: { name: yoga }
        headers: { ':path': /graphql, authorization: '{$headers.authorization}' }
        queryParams: { tenant: '{$headers.x-tenant}' }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: default, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: remote, namespace: legate-system }
`,
  });
  await gw.until('/graphql', (r) => r.status === 200, post({ query: '{ hello }' }), 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((r) => yogaServer?.close(() => r()));
});

describe('GraphQL remote executor over Envoy', () => {
  it('forwards the query, variables and templated headers; relays the answer', async () => {
    seen.length = 0;
    const r = await gw.request(
      '/graphql',
      post(
        { query: 'query Q($n: String) { hello(name: $n) caller }', variables: { n: 'ann' } },
        { authorization: 'Bearer abc', 'x-tenant': 'acme' },
      ),
    );
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toContain('application/json');
    expect(r.json()).toEqual({ data: { hello: 'hello ann', caller: 'Bearer abc' } });
    expect(seen).toEqual([{ url: '/graphql?tenant=acme', authorization: 'Bearer abc' }]);
  });

  it("relays the server's validation errors with its status under application/graphql-response+json", async () => {
    const r = await gw.request('/graphql', post({ query: '{ nope }' }, { accept: 'application/graphql-response+json' }));
    expect(r.status).toBe(400);
    expect(r.headers.get('content-type')).toContain('application/graphql-response+json');
    expect(r.json<{ errors: { message: string }[] }>().errors[0]!.message).toContain('nope');
  });

  it('serves GET queries', async () => {
    const r = await gw.request(`/graphql?query=${encodeURIComponent('{ hello }')}`, { headers: { accept: 'application/json' } });
    expect(r.json()).toEqual({ data: { hello: 'hello world' } });
  });
});
