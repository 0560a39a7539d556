// Pluggable resolvers (the shared config schema, the factory by kind, mock resolvers) and the size
// limits (aliases, fields) the engine checks before validation.
import { afterEach, describe, expect, it } from 'vitest';
import type { GraphQLApiConfig, ResolverConfig } from '../../common/contract.js';
import { MAX_MOCK_DELAY_MS, checkGraphQLApiConfigShape } from '../../common/graphql-config.js';
import type { GraphQLApi } from '../../controller/api/resources.js';
import { GraphQLApiSpecSchema } from '../../controller/api/schemas.js';
import type { UpstreamLookup } from '../../controller/translate/feature.js';
import { translateGraphQLApi } from '../../controller/translate/features/graphql/resolve.js';
import {
  DEFAULT_MAX_ALIASES,
  DEFAULT_MAX_FIELDS,
  checkApiConfig,
  createEngine,
  type Engine,
  type EngineOptions,
  type GraphQLHttpResponse,
} from '../../extensions/graphql/engine/index.js';
import { compileResolver, resolverFactories } from '../../extensions/graphql/engine/resolvers.js';

const SDL = `
type Query {
  product(id: Int!): Product @resolve(name: "Query|product")
  products: [Product!]! @resolve(name: "Query|products")
  slow: String @resolve(name: "Query|slow")
  broken: String @resolve(name: "Query|broken")
}
type Product { id: Int! title: String reviews: [String] }
`;

const mocks = (): Record<string, ResolverConfig> => ({
  'Query|product': { mock: { syncResponse: { id: 1, title: 'The Comedy of Errors', reviews: ['fine'] } } },
  'Query|products': { mock: { syncResponse: [{ id: 1, title: 'a' }, { id: 2 }] } },
  'Query|slow': { mock: { asyncResponse: { response: 'late', delayMs: 50 } } },
  'Query|broken': { mock: { errorResponse: 'the catalogue is closed' } },
});

function config(resolutions = mocks(), over: Partial<GraphQLApiConfig> = {}): GraphQLApiConfig {
  return { name: 'ns.mocked', version: 'v1', schemaDefinition: SDL, enableIntrospection: false, maxDepth: 0, resolutions, ...over };
}

const engines: Engine[] = [];
afterEach(() => {
  for (const e of engines.splice(0)) e.close();
});

function engine(cfg = config(), options: EngineOptions = {}): Engine {
  const e = createEngine(cfg, options);
  engines.push(e);
  return e;
}

async function post(
  e: Engine,
  query: string,
): Promise<{ status: number; body: { data?: unknown; errors?: { message: string; extensions?: Record<string, unknown> }[] } }> {
  const res: GraphQLHttpResponse = await e.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: Buffer.from(JSON.stringify({ query })),
  });
  return { status: res.status, body: JSON.parse(res.body) as never };
}

describe('shared config schema', () => {
  it('accepts rest, grpc and mock resolvers and refuses anything else, with the place of each problem', () => {
    expect(checkGraphQLApiConfigShape(config())).toEqual([]);
    const problems = checkGraphQLApiConfigShape({
      ...config(),
      maxDepth: -1,
      resolutions: {
        'Query|a': {},
        'Query|b': { mock: { syncResponse: 1, errorResponse: 'x' } },
        'Query|c': { mock: { asyncResponse: { response: 1, delayMs: MAX_MOCK_DELAY_MS + 1 } } },
        'Query|d': { mock: { errorResponse: '' } },
        'Query|e': { soap: {} },
      },
    });
    expect(problems).toEqual([
      'maxDepth: must be a non-negative integer',
      'resolution "Query|a": set exactly one resolver kind: rest, grpc, mock',
      'resolution "Query|b" mock: set exactly one of syncResponse, asyncResponse, errorResponse',
      `resolution "Query|c" mock.asyncResponse.delayMs: must be at most ${MAX_MOCK_DELAY_MS} ms (the proxy waits 10 s for the whole query)`,
      'resolution "Query|d" mock.errorResponse: must be a non-empty string',
      'resolution "Query|e" soap: unknown field',
      'resolution "Query|e": set exactly one resolver kind: rest, grpc, mock',
    ]);
  });

  it('the engine refuses what the schema refuses', () => {
    expect(checkApiConfig(config({ ...mocks(), 'Query|slow': { mock: {} } }))).toEqual([
      'resolution "Query|slow" mock: set exactly one of syncResponse, asyncResponse, errorResponse',
    ]);
    expect(() => engine(config({ ...mocks(), 'Query|slow': { mock: {} } }))).toThrow(/is unusable: resolution "Query\|slow" mock/);
  });
});

describe('resolver factory', () => {
  it('has one factory per kind and compiles by the kind that is set', () => {
    expect(Object.keys(resolverFactories).sort()).toEqual(['grpc', 'mock', 'rest']);
    expect(compileResolver('Q|m', { mock: { syncResponse: 1 } }).kind).toBe('mock');
    const rest = compileResolver('Q|r', {
      rest: {
        upstream: { name: 'ns.up', endpoints: [{ address: '127.0.0.1', port: 1 }] },
        request: { headers: { ':path': '/x/{$args.id}' }, queryParams: {} },
        response: { setters: {} },
        timeoutMs: 100,
      },
    });
    expect(rest.kind).toBe('rest');
    expect(rest.placeholders.map((p) => p.text)).toEqual(['{$args.id}']);
  });
});

describe('mock resolvers', () => {
  it('syncResponse: the value, read by graphql-js like a backend body', async () => {
    const res = await post(engine(), '{ product(id: 1) { id title reviews } products { id title } }');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      data: {
        product: { id: 1, title: 'The Comedy of Errors', reviews: ['fine'] },
        products: [
          { id: 1, title: 'a' },
          { id: 2, title: null },
        ],
      },
    });
  });

  it('asyncResponse: the value after the delay', async () => {
    const e = engine();
    const started = performance.now();
    const res = await post(e, '{ slow }');
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(res.body).toEqual({ data: { slow: 'late' } });
  });

  it('errorResponse: a GraphQL error on the field, the rest of the query answered', async () => {
    const res = await post(engine(), '{ broken product(id: 1) { id } }');
    expect(res.body.data).toEqual({ broken: null, product: { id: 1 } });
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        message: 'the catalogue is closed',
        path: ['broken'],
        extensions: { code: 'MOCK_ERROR_RESPONSE', resolver: 'Query|broken' },
      }),
    ]);
  });

  it('each execution gets its own copy of the value', async () => {
    const e = engine();
    const a = await post(e, '{ product(id: 1) { reviews } }');
    const b = await post(e, '{ product(id: 1) { reviews } }');
    expect(a.body).toEqual(b.body);
  });
});

describe('size limits', () => {
  const aliases = (n: number) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: slow`).join(' ')} }`;

  it('refuses more aliases than allowed, before executing anything', async () => {
    expect(DEFAULT_MAX_ALIASES).toBe(50);
    const e = engine();
    expect((await post(e, aliases(DEFAULT_MAX_ALIASES))).body.errors).toBeUndefined();
    const res = await post(e, aliases(DEFAULT_MAX_ALIASES + 1));
    expect(res.body).toEqual({
      errors: [expect.objectContaining({ message: 'The operation uses 51 aliases, which exceeds the maximum of 50 allowed by this API.' })],
    });
    const small = engine(config(), { maxAliases: 2 });
    expect((await post(small, 'query Q { a: slow b: slow c: broken }')).body.errors?.[0]?.message).toBe(
      'Operation "Q" uses 3 aliases, which exceeds the maximum of 2 allowed by this API.',
    );
    expect((await post(engine(config(), { maxAliases: 0 }), aliases(60))).body.errors).toBeUndefined();
  });

  it('refuses more fields than allowed, fragments counted where they are spread', async () => {
    expect(DEFAULT_MAX_FIELDS).toBe(1000);
    // 2^12 spreads of F from a document of a few hundred bytes
    let doc = 'query Bomb { products { ...F11 } }\nfragment F0 on Product { id title }\n';
    for (let i = 1; i < 12; i++) doc += `fragment F${i} on Product { ...F${i - 1} ...F${i - 1} }\n`;
    const res = await post(engine(), doc);
    expect(res.status).toBe(200);
    expect(res.body.errors?.[0]?.message).toBe(
      'Operation "Bomb" selects 4097 fields (fragments counted where spread), which exceeds the maximum of 1000 allowed by this API.',
    );
    const small = engine(config(), { maxFields: 3 });
    expect((await post(small, '{ product(id: 1) { id title } }')).body.errors).toBeUndefined();
    expect((await post(small, '{ product(id: 1) { id title reviews } }')).body.errors?.[0]?.message).toMatch(/selects 4 fields/);
  });

  it('a fragment cycle or unknown fragment does not loop or throw: validation reports it', async () => {
    const res = await post(engine(), '{ products { ...A } } fragment A on Product { id ...B } fragment B on Product { ...A ...Nope }');
    expect(res.body.errors?.map((e) => e.message).join('\n')).toMatch(/Cannot spread fragment "A" within itself|Unknown fragment "Nope"/);
  });
});

describe('controller: mockResolver', () => {
  const upstreams: UpstreamLookup = { resolved: new Map(), rejected: new Set() };
  const api = (resolutions: Record<string, unknown>): GraphQLApi =>
    ({
      apiVersion: 'graphql.legate.dev/v1beta1',
      kind: 'GraphQLApi',
      metadata: { name: 'mocked', namespace: 'ns' },
      spec: GraphQLApiSpecSchema.parse({ executableSchema: { schemaDefinition: SDL, executor: { local: { resolutions } } } }),
    }) as GraphQLApi;

  it("translates Gloo's fields (asyncResponse.delay as a duration) into the shared config", () => {
    const out = translateGraphQLApi(
      api({
        'Query|product': { mockResolver: { syncResponse: { id: 1 } } },
        'Query|products': { mockResolver: { syncResponse: [] } },
        'Query|slow': { mockResolver: { asyncResponse: { response: 'late', delay: '1.5s' } } },
        'Query|broken': { mockResolver: { errorResponse: 'closed' } },
      }),
      upstreams,
    );
    expect(out.problems).toEqual([]);
    expect(out.ir?.resolutions).toEqual({
      'Query|broken': { mock: { errorResponse: 'closed' } },
      'Query|product': { mock: { syncResponse: { id: 1 } } },
      'Query|products': { mock: { syncResponse: [] } },
      'Query|slow': { mock: { asyncResponse: { response: 'late', delayMs: 1500 } } },
    });
    expect(checkApiConfig(out.ir!)).toEqual([]);
  });

  it('reports mocks that set nothing or too much, delays too long, and values that do not fit the field', () => {
    const out = translateGraphQLApi(
      api({
        'Query|product': { mockResolver: { syncResponse: [1] } },
        'Query|products': { mockResolver: { syncResponse: [{ id: 1 }, null] } },
        'Query|slow': { mockResolver: { asyncResponse: { response: 'late', delay: '1m' } } },
        'Query|broken': { mockResolver: {} },
      }),
      upstreams,
    );
    expect(out.ir).toBeUndefined();
    expect(out.problems.map((p) => p.message)).toEqual([
      'resolutions["Query|broken"].mockResolver: set exactly one of syncResponse, asyncResponse, errorResponse',
      'resolutions["Query|product"].mockResolver.syncResponse is not an object but Product is an object type (field Query.product)',
      'resolutions["Query|products"].mockResolver.syncResponse[1] is null but the type Product! is non-null (field Query.products)',
      'resolutions["Query|slow"].mockResolver.asyncResponse.delay: 1m exceeds 5s (the proxy waits 10s for the whole query)',
    ]);
  });
});
