// Stitched GraphQLApis end to end: two GraphQLApis (products, reviews) over one REST backend, stitched by a
// third with typeMerge, served through real Envoy and the graphql extension.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';

let backend: http.Server;
let gw: Gateway;
const hits: string[] = [];

const post = (query: string) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json' },
  body: JSON.stringify({ query }),
});

beforeAll(async () => {
  backend = http.createServer((req, res) => {
    hits.push(req.url ?? '');
    const m = /^\/reviews\/(\d+)$/.exec(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(
      JSON.stringify(
        m
          ? { id: m[1], reviews: [`fine ${m[1]}`] }
          : [
              { id: 1, title: 'Sonnets' },
              { id: 2, title: 'Hamlet' },
            ],
      ),
    );
  });
  await new Promise<void>((r) => backend.listen(0, '127.0.0.1', () => r()));
  const port = (backend.address() as AddressInfo).port;
  gw = await startGateway({
    'apis.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: books, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: products, namespace: legate-system }
spec:
  executableSchema:
    schemaDefinition: 'type Query { products: [Product] @resolve(name: "Query|products") } type Product { id: ID!, title: String }'
    executor:
      local:
        resolutions:
          Query|products: { restResolver: { upstreamRef: { name: books }, request: { headers: { ':path': /products } } } }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: reviews, namespace: legate-system }
spec:
  executableSchema:
    schemaDefinition: |
      type Query { productReviews(id: ID!): Product @resolve(name: "Query|productReviews") }
      type Product { id: ID!, reviews: [String] }
    executor:
      local:
        resolutions:
          Query|productReviews:
            restResolver: { upstreamRef: { name: books }, request: { headers: { ':path': '/reviews/{$args.id}' } } }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: shop, namespace: legate-system }
spec:
  stitchedSchema:
    subschemas:
      - name: products
      - name: reviews
        typeMerge:
          Product: { selectionSet: '{ id }', queryName: productReviews, args: { id: id } }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: default, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: shop, namespace: legate-system }
`,
  });
  await gw.until('/graphql', (r) => r.status === 200, post('{ products { id } }'), 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((r) => backend?.close(() => r()));
});

describe('stitched GraphQLApi over Envoy', () => {
  it('answers fields of both subschemas in one query, merging Product by typeMerge', async () => {
    hits.length = 0;
    const r = await gw.request('/graphql', post('{ products { id title reviews } }'));
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({
      data: {
        products: [
          { id: '1', title: 'Sonnets', reviews: ['fine 1'] },
          { id: '2', title: 'Hamlet', reviews: ['fine 2'] },
        ],
      },
    });
    expect(hits.sort()).toEqual(['/products', '/reviews/1', '/reviews/2']);
  });
});
