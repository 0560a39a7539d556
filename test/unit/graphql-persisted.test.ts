// Automatic persisted queries (Apollo's APQ protocol) and allowedQueryHashes, on an engine with mock resolvers.
import { describe, expect, it } from 'vitest';
import type { GraphQLApiConfig } from '../../common/graphql-config.js';
import { createEngine, sha256Hex, type Engine } from '../../extensions/graphql/engine/index.js';

function config(over: Partial<GraphQLApiConfig> = {}): GraphQLApiConfig {
  return {
    name: 'ns.apq',
    version: 'v1',
    schemaDefinition: 'type Query { hello: String @resolve(name: "Query|hello"), other: Int @resolve(name: "Query|other") }',
    enableIntrospection: false,
    maxDepth: 0,
    resolutions: { 'Query|hello': { mock: { syncResponse: 'world' } }, 'Query|other': { mock: { syncResponse: 7 } } },
    ...over,
  };
}

const Q = '{ hello }';
const H = sha256Hex(Q);
const apq = (hash: string, version = 1) => ({ persistedQuery: { version, sha256Hash: hash } });

async function post(e: Engine, body: unknown, accept = 'application/json') {
  const r = await e.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', accept },
    body: Buffer.from(JSON.stringify(body)),
  });
  return { status: r.status, body: JSON.parse(r.body) as unknown };
}

async function get(e: Engine, params: Record<string, unknown>) {
  const qs = Object.entries(params)
    .map(([k, v]) => `${k}=${encodeURIComponent(typeof v === 'string' ? v : JSON.stringify(v))}`)
    .join('&');
  const r = await e.handle({ method: 'GET', path: `/graphql?${qs}`, headers: { accept: 'application/json' }, body: Buffer.alloc(0) });
  return { status: r.status, body: JSON.parse(r.body) as unknown };
}

describe('automatic persisted queries', () => {
  it('answers an unknown hash with PersistedQueryNotFound, registers query+hash, then runs the hash alone', async () => {
    const e = createEngine(config());
    expect(await post(e, { extensions: apq(H) })).toEqual({
      status: 200,
      body: { errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] },
    });
    expect(await post(e, { query: Q, extensions: apq(H) })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect(await post(e, { extensions: apq(H.toUpperCase()) })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect(await get(e, { extensions: apq(H) })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    e.close();
  });

  it('refuses a hash that does not match the query with 400', async () => {
    const e = createEngine(config());
    expect(await post(e, { query: '{ other }', extensions: apq(H) })).toEqual({
      status: 400,
      body: { errors: [{ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } }] },
    });
    expect((await post(e, { query: Q, extensions: apq(H, 2) })).status).toBe(400);
    expect((await post(e, { extensions: apq('abc') })).status).toBe(400);
    e.close();
  });

  it('registers over GET too, and a request without query or APQ extension is still a 400', async () => {
    const e = createEngine(config());
    expect(await get(e, { query: Q, extensions: apq(H) })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect(await get(e, { extensions: apq(H) })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    expect((await post(e, { variables: {} })).status).toBe(400);
    expect((await post(e, { extensions: { other: 1 } })).status).toBe(400);
    e.close();
  });

  it('keeps at most cacheSize queries (LRU); cacheSize 0 answers PERSISTED_QUERY_NOT_SUPPORTED', async () => {
    const small = createEngine(config({ persistedQueryCacheSize: 1 }));
    const other = '{ other }';
    await post(small, { query: Q, extensions: apq(H) });
    await post(small, { query: other, extensions: apq(sha256Hex(other)) });
    expect(await post(small, { extensions: apq(sha256Hex(other)) })).toEqual({ status: 200, body: { data: { other: 7 } } });
    expect((await post(small, { extensions: apq(H) })).body).toMatchObject({
      errors: [{ extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }],
    });
    small.close();
    const off = createEngine(config({ persistedQueryCacheSize: 0 }));
    expect(await post(off, { query: Q, extensions: apq(H) })).toEqual({
      status: 200,
      body: { errors: [{ message: 'PersistedQueryNotSupported', extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' } }] },
    });
    // without the extension, queries run as usual
    expect((await post(off, { query: Q })).body).toEqual({ data: { hello: 'world' } });
    off.close();
  });
});

describe('allowedQueryHashes', () => {
  it('runs only listed query texts and refuses the others before execution', async () => {
    const e = createEngine(config({ allowedQueryHashes: [H] }));
    expect(await post(e, { query: Q })).toEqual({ status: 200, body: { data: { hello: 'world' } } });
    const refused = {
      errors: [
        {
          message: "Operation not allowed: the sha256 of its query text is not in this API's allowedQueryHashes.",
          extensions: { code: 'OPERATION_NOT_ALLOWED' },
        },
      ],
    };
    expect(await post(e, { query: '{ other }' })).toEqual({ status: 200, body: refused });
    expect(await post(e, { query: '{ other }' }, 'application/graphql-response+json')).toEqual({ status: 400, body: refused });
    // APQ by hash still works for a listed query, once registered
    expect((await post(e, { query: Q, extensions: apq(H) })).body).toEqual({ data: { hello: 'world' } });
    expect((await post(e, { extensions: apq(H) })).body).toEqual({ data: { hello: 'world' } });
    expect(e.stats().validations).toBe(1);
    e.close();
  });
});

describe('per-API limits', () => {
  it("applies the config's maxAliases and maxFields over the engine's defaults; 0 lifts a limit", async () => {
    const aliased = `{ ${Array.from({ length: 3 }, (_, i) => `a${i}: hello`).join(' ')} }`;
    const tight = createEngine(config({ maxAliases: 2, maxFields: 0 }));
    const r = await post(tight, { query: aliased });
    expect(JSON.stringify(r.body)).toContain('uses 3 aliases, which exceeds the maximum of 2 allowed by this API');
    tight.close();
    const loose = createEngine(config({ maxAliases: 0 }), { maxAliases: 1 });
    expect((await post(loose, { query: aliased })).body).toEqual({ data: { a0: 'world', a1: 'world', a2: 'world' } });
    loose.close();
    const fields = createEngine(config({ maxFields: 1 }));
    expect(JSON.stringify((await post(fields, { query: '{ hello other }' })).body)).toContain(
      'selects 2 fields (fragments counted where spread), which exceeds the maximum of 1',
    );
    fields.close();
  });
});
