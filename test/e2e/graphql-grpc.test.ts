// gRPC resolvers end to end: a GraphQLApi whose fields call a real grpc-js server (descriptors from
// protoDescriptorBin), through real Envoy and the graphql extension.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';
import { BOOKS_DESCRIPTOR_BIN, startGrpcBooks, type GrpcBooks } from '../support/grpc-books.js';

let books: GrpcBooks;
let gw: Gateway;

const api = (bin: string) => `
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: books, namespace: legate-system }
spec:
  executableSchema:
    grpcDescriptorRegistry: { protoDescriptorBin: ${bin} }
    executor:
      local:
        resolutions:
          Query|book:
            grpcResolver:
              upstreamRef: { name: books-grpc }
              requestTransform:
                serviceName: shop.v1.Books
                methodName: GetBook
                outgoingMessageJson: { id: '{$args.id}' }
                requestMetadata: { x-user: '{$headers.x-user}' }
              timeout: 2s
          Query|shelf:
            grpcResolver:
              upstreamRef: { name: books-grpc }
              requestTransform: { serviceName: shop.v1.Books, methodName: ListBooks, outgoingMessageJson: { limit: 5 } }
    schemaDefinition: |
      type Query {
        book(id: ID!): Book @resolve(name: "Query|book")
        shelf: Shelf @resolve(name: "Query|shelf")
      }
      enum Kind { KIND_UNSPECIFIED PLAY POEMS }
      type Shelf { books: [Book] }
      type Book { id: Int, title: String, kind: Kind, pageCount: Int, author: Author }
      type Author { fullName: String }
`;

const post = (query: string, headers: Record<string, string> = {}) => ({
  method: 'POST',
  headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
  body: JSON.stringify({ query }),
});

beforeAll(async () => {
  books = await startGrpcBooks();
  gw = await startGateway({
    'upstream.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: books-grpc, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${books.port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: default, namespace: legate-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: books, namespace: legate-system }
`,
    'api.yaml': api(BOOKS_DESCRIPTOR_BIN),
  });
  await gw.until('/graphql', (r) => r.status === 200, post('{ shelf { books { id } } }'), 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await books?.stop();
});

describe('GraphQL with gRPC resolvers over Envoy', () => {
  it('resolves fields with unary gRPC calls, message fields read with their JSON names', async () => {
    books.calls.length = 0;
    const r = await gw.request('/graphql', post('{ book(id: "1") { id title kind pageCount author { fullName } } }', { 'x-user': 'ann' }));
    expect(r.status).toBe(200);
    expect(r.json()).toEqual({
      data: { book: { id: 1, title: 'The Comedy of Errors', kind: 'PLAY', pageCount: 200, author: { fullName: 'William Shakespeare' } } },
    });
    expect(books.calls).toEqual([
      { method: 'GetBook', request: { id: '1', caller: '' }, metadata: expect.objectContaining({ 'x-user': 'ann' }) },
    ]);
  });

  it('lists through the response message', async () => {
    const r = await gw.request('/graphql', post('{ shelf { books { title kind } } }'));
    expect(r.json()).toEqual({
      data: {
        shelf: {
          books: [
            { title: 'The Comedy of Errors', kind: 'PLAY' },
            { title: 'Sonnets', kind: 'POEMS' },
          ],
        },
      },
    });
  });

  it('turns a gRPC status into a GraphQL error with its name as extensions.code', async () => {
    const r = await gw.request('/graphql', post('{ book(id: "42") { title } }'));
    expect(r.status).toBe(200);
    const body = r.json<{ data: unknown; errors: { message: string; path: string[]; extensions: Record<string, unknown> }[] }>();
    expect(body.data).toEqual({ book: null });
    expect(body.errors[0]).toMatchObject({ path: ['book'], extensions: { code: 'NOT_FOUND', resolver: 'Query|book' } });
  });

  it('reports an unknown method in the GraphQLApi status and keeps serving the last good config', async () => {
    gw.write('api.yaml', api(BOOKS_DESCRIPTOR_BIN).replace('methodName: GetBook', 'methodName: GetBok'));
    const reason = await eventually('the rejected status', () => {
      const out = JSON.parse(gw.ctl('get', 'graphqlapis', 'books', '-n', 'legate-system', '-o', 'json').stdout);
      const s = Object.values(out.status?.statuses ?? {})[0] as { state?: string; reason?: string } | undefined;
      return s?.state === 'Rejected' ? s.reason : undefined;
    });
    expect(reason).toContain('service "shop.v1.Books" has no method "GetBok"');
    const r = await gw.request('/graphql', post('{ book(id: "2") { title } }'));
    expect(r.json()).toEqual({ data: { book: { title: 'Sonnets' } } });
  });
});
