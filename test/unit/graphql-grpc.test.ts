// gRPC resolvers against a real grpc-js server on loopback: descriptors from a FileDescriptorSet, templates in
// the request message and metadata, per-request dedup, gRPC status -> GraphQL errors, config-time checks.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { GraphQLApiConfig, GrpcResolverConfig, ResolverConfig } from '../../common/graphql-config.js';
import { createEngine, checkApiConfig, GrpcChannels, type Engine } from '../../extensions/graphql/engine/index.js';
import { BOOKS_DESCRIPTOR_BIN, startGrpcBooks, type GrpcBooks } from '../support/grpc-books.js';

let books: GrpcBooks;
const channels = new GrpcChannels();

beforeAll(async () => {
  books = await startGrpcBooks();
});
afterAll(async () => {
  channels.close();
  await books?.stop();
});

const SDL = `
type Query {
  book(id: ID!): Book @resolve(name: "Query|book")
  books: BookList @resolve(name: "Query|books")
  slow: Book @resolve(name: "Query|slow")
}
enum Kind { KIND_UNSPECIFIED PLAY POEMS }
type Book { id: Int, title: String, kind: Kind, tags: [String], author: Author, pageCount: Int, again: Book @resolve(name: "Book|again") }
type Author { fullName: String }
# the response message is the field's value: a repeated field is read through its message
type BookList { books: [Book] }
`;

function grpcResolver(over: Partial<GrpcResolverConfig>): ResolverConfig {
  return {
    grpc: {
      upstream: { name: 'ns.books', endpoints: [{ address: '127.0.0.1', port: books.port }] },
      serviceName: 'shop.v1.Books',
      methodName: 'GetBook',
      requestMetadata: {},
      timeoutMs: 500,
      ...over,
    },
  };
}

function config(over: Partial<GraphQLApiConfig> = {}): GraphQLApiConfig {
  return {
    name: 'ns.grpc',
    version: 'v1',
    schemaDefinition: SDL,
    enableIntrospection: false,
    maxDepth: 0,
    grpcDescriptorSet: BOOKS_DESCRIPTOR_BIN,
    resolutions: {
      'Query|book': grpcResolver({
        outgoingMessageJson: { id: '{$args.id}', caller: '{$headers.x-caller}' },
        requestMetadata: { 'x-user': '{$headers.x-user}' },
      }),
      'Query|books': grpcResolver({ methodName: 'ListBooks', outgoingMessageJson: { limit: 10 } }),
      'Query|slow': grpcResolver({ methodName: 'Slow', timeoutMs: 100 }),
      'Book|again': grpcResolver({ outgoingMessageJson: { id: '{$parent.id}' } }),
    },
    ...over,
  };
}

async function query(e: Engine, q: string, headers: Record<string, string> = {}) {
  const r = await e.handle({
    method: 'POST',
    path: '/graphql',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: Buffer.from(JSON.stringify({ query: q })),
  });
  return JSON.parse(r.body) as { data?: Record<string, unknown>; errors?: { message: string; extensions?: Record<string, unknown> }[] };
}

describe('gRPC resolvers', () => {
  it('calls the method with the templated message and metadata; the answer reads with JSON field names', async () => {
    const e = createEngine(config(), { grpcChannels: channels });
    books.calls.length = 0;
    const r = await query(e, '{ book(id: "1") { id title kind tags pageCount author { fullName } } }', {
      'x-user': 'ann',
      'x-caller': 'web',
    });
    expect(r).toEqual({
      data: {
        book: {
          id: 1,
          title: 'The Comedy of Errors',
          kind: 'PLAY',
          tags: ['comedy'],
          pageCount: 200,
          author: { fullName: 'William Shakespeare' },
        },
      },
    });
    expect(books.calls).toHaveLength(1);
    expect(books.calls[0]!.request).toEqual({ id: '1', caller: 'web' });
    expect(books.calls[0]!.metadata['x-user']).toBe('ann');
    e.close();
  });

  it('fills defaults for unset fields and resolves lists', async () => {
    const e = createEngine(config(), { grpcChannels: channels });
    const r = await query(e, '{ books { books { id title tags kind pageCount } } }');
    expect(r.data).toEqual({
      books: {
        books: [
          { id: 1, title: 'The Comedy of Errors', tags: [], kind: 'PLAY', pageCount: 0 },
          { id: 2, title: 'Sonnets', tags: [], kind: 'POEMS', pageCount: 0 },
        ],
      },
    });
    e.close();
  });

  it('makes identical calls of one request once ({$parent.id} per list item)', async () => {
    const e = createEngine(config(), { grpcChannels: channels });
    books.calls.length = 0;
    const r = await query(e, '{ a: book(id: "1") { again { title } } b: book(id: "1") { title } }');
    expect(r.errors).toBeUndefined();
    expect(r.data).toEqual({ a: { again: { title: 'The Comedy of Errors' } }, b: { title: 'The Comedy of Errors' } });
    // Query.book(1) twice and Book.again(1): one call to GetBook{id:1}
    expect(books.calls.filter((c) => c.method === 'GetBook')).toHaveLength(1);
    expect(e.stats().upstreamCallsDeduplicated).toBe(2);
    e.close();
  });

  it('maps gRPC statuses to GraphQL errors with extensions.code and the resolver', async () => {
    const e = createEngine(config(), { grpcChannels: channels });
    const r = await query(e, '{ book(id: "9") { title } slow { title } }');
    expect(r.data).toEqual({ book: null, slow: null });
    const byPath = Object.fromEntries((r.errors ?? []).map((x) => [String((x as { path?: unknown[] }).path?.[0]), x]));
    expect(byPath['book']?.extensions).toMatchObject({ code: 'NOT_FOUND', resolver: 'Query|book', grpc: { status: 5 } });
    expect(byPath['book']?.message).toContain('no book 9');
    expect(byPath['slow']?.extensions).toMatchObject({ code: 'DEADLINE_EXCEEDED', resolver: 'Query|slow' });
    e.close();
  });

  it('answers UNAVAILABLE when nothing listens', async () => {
    const e = createEngine(
      config({
        resolutions: {
          'Query|book': {
            grpc: {
              upstream: { name: 'ns.gone', endpoints: [{ address: '127.0.0.1', port: 1 }] },
              serviceName: 'shop.v1.Books',
              methodName: 'GetBook',
              requestMetadata: {},
              timeoutMs: 2000,
            },
          },
          'Query|books': grpcResolver({ methodName: 'ListBooks' }),
          'Query|slow': grpcResolver({ methodName: 'Slow' }),
          'Book|again': grpcResolver({}),
        },
      }),
      { grpcChannels: channels },
    );
    const r = await query(e, '{ book(id: "1") { title } }');
    expect(r.errors?.[0]?.extensions).toMatchObject({ code: 'UNAVAILABLE', resolver: 'Query|book' });
    e.close();
  });

  it('refuses unknown services, methods and fields, and a missing descriptor set, at config time', () => {
    const bad = config({
      resolutions: {
        'Query|book': grpcResolver({ serviceName: 'shop.v1.Nope' }),
        'Query|books': grpcResolver({ methodName: 'Burn' }),
        'Query|slow': grpcResolver({ outgoingMessageJson: { id: 1, colour: 'red' } }),
        'Book|again': grpcResolver({}),
      },
    });
    const problems = checkApiConfig(bad);
    expect(problems).toEqual([
      'resolution "Query|book": service "shop.v1.Nope" is not in the descriptors (services: shop.v1.Books)',
      'resolution "Query|books": service "shop.v1.Books" has no method "Burn" (methods: GetBook, ListBooks, Slow)',
      'resolution "Query|slow": outgoingMessageJson.colour: message shop.v1.GetBookRequest has no field "colour" (fields: id, caller)',
    ]);
    expect(() => createEngine(bad)).toThrow(/unusable/);
    const { grpcDescriptorSet: _, ...noDescriptors } = config();
    expect(checkApiConfig(noDescriptors)[0]).toContain('the API has no gRPC descriptors');
    expect(checkApiConfig(config({ grpcDescriptorSet: 'bm90IGEgZGVzY3JpcHRvcg==' }))[0]).toContain('protoDescriptorBin is not a usable');
  });

  it('shares channels per upstream across engines and releases them with the engines', () => {
    const local = new GrpcChannels();
    const a = createEngine(config(), { grpcChannels: local });
    const b = createEngine(config({ version: 'v2' }), { grpcChannels: local });
    expect(local.size).toBe(1);
    a.close();
    b.close();
    local.close();
    expect(local.size).toBe(0);
  });
});
