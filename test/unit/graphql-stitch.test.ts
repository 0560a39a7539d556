// Stitched APIs (Gloo's stitchedSchema with typeMerge): the controller translates a GraphQLApi whose
// subschemas are other translated GraphQLApis; the engine stitches them with @graphql-tools/stitch and runs
// the subschemas' resolvers (here REST, against a real HTTP server on loopback) in-process.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLApiConfig } from '../../common/graphql-config.js';
import type { GraphQLApi } from '../../controller/api/resources.js';
import { GraphQLApiSpecSchema } from '../../controller/api/schemas.js';
import type { Resolved, UpstreamLookup } from '../../controller/translate/feature.js';
import { translateGraphQLApi } from '../../controller/translate/features/graphql/resolve.js';
import { checkApiConfig, createEngine, UpstreamPools } from '../../extensions/graphql/engine/index.js';

let server: http.Server;
let port: number;
const hits: string[] = [];
const pools = new UpstreamPools();

beforeAll(async () => {
  server = http.createServer((req, res) => {
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
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  pools.close();
  await new Promise<void>((r) => server.close(() => r()));
});

const gqlApi = (name: string, spec: unknown): GraphQLApi =>
  ({
    apiVersion: 'graphql.legate.dev/v1beta1',
    kind: 'GraphQLApi',
    metadata: { name, namespace: 'ns' },
    spec: GraphQLApiSpecSchema.parse(spec),
  }) as GraphQLApi;

function translated(): { apis: Resolved<GraphQLApiConfig>; upstreams: UpstreamLookup } {
  const upstreams: UpstreamLookup = {
    resolved: new Map([['ns/books', { endpoints: [{ address: '127.0.0.1', port }] } as never]]),
    rejected: new Set(),
  };
  const rest = (path: string) => ({ restResolver: { upstreamRef: { name: 'books' }, request: { headers: { ':path': path } } } });
  const products = translateGraphQLApi(
    gqlApi('products', {
      executableSchema: {
        schemaDefinition: 'type Query { products: [Product] @resolve(name: "Query|products") } type Product { id: ID!, title: String }',
        executor: { local: { resolutions: { 'Query|products': rest('/products') } } },
      },
    }),
    upstreams,
  );
  const reviews = translateGraphQLApi(
    gqlApi('reviews', {
      executableSchema: {
        schemaDefinition:
          'type Query { productReviews(id: ID!): Product @resolve(name: "Query|productReviews") } ' +
          'type Product { id: ID!, reviews: [String] }',
        executor: { local: { resolutions: { 'Query|productReviews': rest('/reviews/{$args.id}') } } },
      },
    }),
    upstreams,
  );
  expect(products.problems).toEqual([]);
  expect(reviews.problems).toEqual([]);
  return {
    apis: {
      results: new Map([
        ['ns/products', products.ir!],
        ['ns/reviews', reviews.ir!],
      ]),
      rejected: new Set(['ns/broken']),
    },
    upstreams,
  };
}

const stitchedSpec = (typeMerge: Record<string, unknown>, extra: unknown[] = []) => ({
  stitchedSchema: { subschemas: [{ name: 'products' }, { name: 'reviews', typeMerge }, ...extra] },
});

describe('stitched GraphQLApis', () => {
  it('merges a type across subschemas: one query, the reviews fetched per product by typeMerge', async () => {
    const { apis, upstreams } = translated();
    const out = translateGraphQLApi(
      gqlApi('shop', stitchedSpec({ Product: { selectionSet: '{ id }', queryName: 'productReviews', args: { id: 'id' } } })),
      upstreams,
      apis,
    );
    expect(out.problems).toEqual([]);
    expect(out.ir?.schemaDefinition).toContain('reviews: [String]');
    expect(out.ir?.stitched?.subschemas.map((s) => s.name)).toEqual(['ns.products', 'ns.reviews']);
    expect(checkApiConfig(out.ir!)).toEqual([]);
    const e = createEngine(out.ir!, { upstreamPools: pools });
    const run = () =>
      e.handle({
        method: 'POST',
        path: '/graphql',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: Buffer.from(JSON.stringify({ query: '{ products { id title reviews } }' })),
      });
    // the first run on graphql-js, the next ones compiled by graphql-jit: the same answer
    const first = await run();
    expect((await run()).body).toBe(first.body);
    expect((await run()).body).toBe(first.body);
    hits.length = 0;
    const r = await run();
    expect(JSON.parse(r.body)).toEqual({
      data: {
        products: [
          { id: '1', title: 'Sonnets', reviews: ['fine 1'] },
          { id: '2', title: 'Hamlet', reviews: ['fine 2'] },
        ],
      },
    });
    expect(hits.sort()).toEqual(['/products', '/reviews/1', '/reviews/2']);
    e.close();
  });

  it('reports missing, rejected and self subschemas, and typeMerge naming what the subschema lacks', () => {
    const { apis, upstreams } = translated();
    const out = translateGraphQLApi(
      gqlApi(
        'shop',
        stitchedSpec({ Book: { queryName: 'productReviews' }, Product: { queryName: 'nope', args: { id: 'id' } } }, [
          { name: 'broken' },
          { name: 'ghost' },
          { name: 'shop' },
        ]),
      ),
      upstreams,
      apis,
    );
    expect(out.problems.map((p) => p.message)).toEqual([
      'stitchedSchema.subschemas[1].typeMerge.Book: ns.reviews has no type Book',
      'stitchedSchema.subschemas[1].typeMerge.Product.queryName: ns.reviews has no field Query.nope',
      'stitchedSchema.subschemas[2]: GraphQLApi ns.broken is rejected',
      'stitchedSchema.subschemas[3]: GraphQLApi ns.ghost not found (or is itself stitched)',
      'stitchedSchema.subschemas[4]: a GraphQLApi cannot stitch itself',
    ]);
    // without the translated APIs (the feature does not pass them): not supported
    expect(translateGraphQLApi(gqlApi('shop', stitchedSpec({})), upstreams).problems[0]?.code).toBe('NotSupported');
  });

  it('the resource takes exactly one of executableSchema and stitchedSchema', () => {
    expect(GraphQLApiSpecSchema.safeParse({}).success).toBe(false);
    expect(
      GraphQLApiSpecSchema.safeParse({
        ...stitchedSpec({}),
        executableSchema: { schemaDefinition: 'type Query { a: Int }', executor: { local: {} } },
      }).success,
    ).toBe(false);
  });
});
