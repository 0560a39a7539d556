// Automatic persisted queries, allowedQueryHashes and per-API limits end to end, through real Envoy and the
// graphql extension (mock resolvers: no backend needed).
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';

let gw: Gateway;
const sha = (q: string) => createHash('sha256').update(q).digest('hex');
const HELLO = '{ hello }';

const post = (body: unknown, accept = 'application/json') => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept },
  body: JSON.stringify(body),
});
const apq = (q: string) => ({ persistedQuery: { version: 1, sha256Hash: sha(q) } });

beforeAll(async () => {
  gw = await startGateway({
    'apis.yaml': `
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: open, namespace: legate-system }
spec:
  persistedQueryCacheConfig: { cacheSize: 10 }
  executableSchema:
    executor:
      local:
        options: { maxAliases: 2 }
        resolutions:
          Query|hello: { mockResolver: { syncResponse: world } }
    schemaDefinition: 'type Query { hello: String @resolve(name: "Query|hello"), n: Int }'
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: listed, namespace: legate-system }
spec:
  allowedQueryHashes: [${sha(HELLO)}]
  executableSchema:
    executor:
      local:
        resolutions:
          Query|hello: { mockResolver: { syncResponse: world } }
    schemaDefinition: 'type Query { hello: String @resolve(name: "Query|hello"), n: Int }'
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: default, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /open }]
        graphqlApiRef: { name: open, namespace: legate-system }
      - matchers: [{ prefix: /listed }]
        graphqlApiRef: { name: listed, namespace: legate-system }
`,
  });
  await gw.until('/open', (r) => r.status === 200, post({ query: HELLO }), 30_000);
  await gw.until('/listed', (r) => r.status === 200, post({ query: HELLO }), 30_000);
});

afterAll(async () => {
  await gw?.stop();
});

describe('persisted queries and allow-lists over Envoy', () => {
  it('APQ: unknown hash -> PersistedQueryNotFound, then query + hash registers it, then the hash alone runs (POST and GET)', async () => {
    const q = '{ hello n }';
    const miss = await gw.request('/open', post({ extensions: apq(q) }));
    expect(miss.status).toBe(200);
    expect(miss.json()).toEqual({ errors: [{ message: 'PersistedQueryNotFound', extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } }] });
    const reg = await gw.request('/open', post({ query: q, extensions: apq(q) }));
    expect(reg.json()).toEqual({ data: { hello: 'world', n: null } });
    const hit = await gw.request('/open', post({ extensions: apq(q) }));
    expect(hit.json()).toEqual({ data: { hello: 'world', n: null } });
    const viaGet = await gw.request(`/open?extensions=${encodeURIComponent(JSON.stringify(apq(q)))}`, {
      headers: { accept: 'application/json' },
    });
    expect(viaGet.status).toBe(200);
    expect(viaGet.json()).toEqual({ data: { hello: 'world', n: null } });
  });

  it('APQ: a hash that does not match the query is a 400', async () => {
    const r = await gw.request('/open', post({ query: '{ n }', extensions: apq(HELLO) }));
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({ errors: [{ message: 'provided sha does not match query', extensions: { code: 'BAD_REQUEST' } }] });
  });

  it('per-API maxAliases refuses before execution', async () => {
    const r = await gw.request('/open', post({ query: '{ a: hello b: hello c: hello }' }));
    expect(r.json<{ errors: { message: string }[] }>().errors[0]!.message).toContain('uses 3 aliases, which exceeds the maximum of 2');
  });

  it('allowedQueryHashes: listed operations run, others are refused with a GraphQL error', async () => {
    expect((await gw.request('/listed', post({ query: HELLO }))).json()).toEqual({ data: { hello: 'world' } });
    const r = await gw.request('/listed', post({ query: '{ n }' }, 'application/graphql-response+json'));
    expect(r.status).toBe(400);
    expect(r.json()).toEqual({
      errors: [
        {
          message: "Operation not allowed: the sha256 of its query text is not in this API's allowedQueryHashes.",
          extensions: { code: 'OPERATION_NOT_ALLOWED' },
        },
      ],
    });
  });
});
