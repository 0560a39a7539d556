// The engine when graphql-jit cannot compile an operation (here: a graphql-jit that refuses or throws):
// the operation runs on graphql-js, with the same answers, and compiling is not tried again.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { GraphQLApiConfig } from '../../common/contract.js';
import { createEngine, UpstreamPools, type Engine } from '../../extensions/graphql/engine/index.js';

const jitBehaviour = vi.hoisted(() => ({ mode: 'refuse' as 'refuse' | 'throw' }));
vi.mock('graphql-jit', async (importOriginal) => {
  const real = await importOriginal<typeof import('graphql-jit')>();
  return {
    ...real,
    compileQuery: vi.fn(() => {
      if (jitBehaviour.mode === 'throw') throw new Error('unsupported type: Mystery');
      return { errors: [new Error('cannot compile this')] };
    }),
  };
});

let server: http.Server;
let pools: UpstreamPools;
const engines: Engine[] = [];

function config(port: number, version: string): GraphQLApiConfig {
  return {
    name: 'test.fallback',
    version,
    schemaDefinition: 'type Query { product(id: Int!): Product @resolve(name: "Query|product") } type Product { id: Int, title: String }',
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: {
      'Query|product': {
        rest: {
          upstream: { name: 'test.products', endpoints: [{ address: '127.0.0.1', port }] },
          request: { headers: { ':path': '/products/{$args.id}' }, queryParams: {} },
          response: { setters: {} },
          timeoutMs: 1000,
        },
      },
    },
  };
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const id = Number(req.url?.split('/').pop());
    if (id === 2) res.writeHead(503, { 'content-type': 'application/json' }).end('{}');
    else res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ id, title: `Book ${id}` }));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  pools = new UpstreamPools(0);
});

afterAll(async () => {
  for (const e of engines) e.close();
  pools.close();
  await new Promise<void>((r) => server.close(() => r()));
});

const post = (engine: Engine, body: object) =>
  engine.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json' },
    body: Buffer.from(JSON.stringify(body)),
  });

describe('graphql-jit fallback', () => {
  for (const mode of ['refuse', 'throw'] as const) {
    it(`runs on graphql-js when graphql-jit ${mode === 'refuse' ? 'returns errors' : 'throws'}, and tries once per operation`, async () => {
      jitBehaviour.mode = mode;
      const engine = createEngine(config((server.address() as AddressInfo).port, `v-${mode}`), { upstreamPools: pools, compileAfter: 0 });
      engines.push(engine);
      const query = 'query($id: Int!){ product(id: $id){ id title } other: product(id: 2){ id } }';
      for (let i = 0; i < 3; i++) {
        const res = await post(engine, { query, variables: { id: 1 } });
        expect(res.status).toBe(200);
        expect(JSON.parse(res.body)).toEqual({
          errors: [
            {
              message: 'Query|product: upstream answered HTTP 503',
              locations: [{ line: 1, column: 48 }],
              path: ['other'],
              extensions: { code: 'UPSTREAM_HTTP_ERROR', resolver: 'Query|product', http: { status: 503 } },
            },
          ],
          data: { product: { id: 1, title: 'Book 1' }, other: null },
        });
      }
      const coercion = await post(engine, { query, variables: { id: 'x' } });
      expect(JSON.parse(coercion.body).errors[0].message).toBe(
        'Variable "$id" got invalid value "x"; Int cannot represent non-integer value: "x"',
      );
      expect(engine.stats()).toMatchObject({ compilations: 0, compileFailures: 1, jitExecutions: 0, upstreamCalls: 6 });
    });
  }
});
