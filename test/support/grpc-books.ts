// A real grpc-js server for the gRPC resolver tests, and its FileDescriptorSet (base64) built from the
// .proto text with protobufjs (no protoc on the machine).
import * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';

export const BOOKS_PROTO = `
syntax = "proto3";
package shop.v1;
enum Kind { KIND_UNSPECIFIED = 0; PLAY = 1; POEMS = 2; }
message Author { string full_name = 1; }
message Book { int64 id = 1; string title = 2; Kind kind = 3; repeated string tags = 4; Author author = 5; int32 page_count = 6; }
message GetBookRequest { int64 id = 1; string caller = 2; }
message ListBooksRequest { int32 limit = 1; }
message ListBooksResponse { repeated Book books = 1; }
service Books {
  rpc GetBook(GetBookRequest) returns (Book);
  rpc ListBooks(ListBooksRequest) returns (ListBooksResponse);
  rpc Slow(GetBookRequest) returns (Book);
}
`;

const root = protobuf.parse(BOOKS_PROTO, { keepCase: true }).root;
root.resolveAll();

/** base64 FileDescriptorSet of BOOKS_PROTO, as Gloo's `protoDescriptorBin` holds it */
export const BOOKS_DESCRIPTOR_BIN = Buffer.from(
  descriptor.FileDescriptorSet.encode(
    (root as unknown as { toDescriptor(syntax: string): protobuf.Message }).toDescriptor('proto3'),
  ).finish(),
).toString('base64');

const BOOKS: Record<
  string,
  { id: number; title: string; kind: string; tags: string[]; author: { full_name: string }; page_count: number }
> = {
  '1': {
    id: 1,
    title: 'The Comedy of Errors',
    kind: 'PLAY',
    tags: ['comedy'],
    author: { full_name: 'William Shakespeare' },
    page_count: 200,
  },
  '2': { id: 2, title: 'Sonnets', kind: 'POEMS', tags: [], author: { full_name: 'William Shakespeare' }, page_count: 154 },
};

export interface GrpcBooks {
  port: number;
  /** every call: `Method id` and the metadata the server saw */
  calls: { method: string; request: Record<string, unknown>; metadata: Record<string, string> }[];
  stop(): Promise<void>;
}

export async function startGrpcBooks(): Promise<GrpcBooks> {
  const calls: GrpcBooks['calls'] = [];
  const server = new grpc.Server();
  const type = (n: string) => root.lookupType(`shop.v1.${n}`);
  const method = (name: string, req: string, res: string): grpc.MethodDefinition<Record<string, unknown>, Record<string, unknown>> => ({
    path: `/shop.v1.Books/${name}`,
    requestStream: false,
    responseStream: false,
    requestSerialize: (v) => Buffer.from(type(req).encode(type(req).fromObject(v)).finish()),
    requestDeserialize: (b) => type(req).toObject(type(req).decode(b), { longs: String, defaults: true }),
    responseSerialize: (v) => Buffer.from(type(res).encode(type(res).fromObject(v)).finish()),
    responseDeserialize: (b) => type(res).toObject(type(res).decode(b)),
  });
  const record = (name: string, call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>) => {
    const metadata: Record<string, string> = {};
    for (const [k, v] of Object.entries(call.metadata.getMap())) metadata[k] = String(v);
    calls.push({ method: name, request: call.request, metadata });
  };
  server.addService(
    {
      GetBook: method('GetBook', 'GetBookRequest', 'Book'),
      ListBooks: method('ListBooks', 'ListBooksRequest', 'ListBooksResponse'),
      Slow: method('Slow', 'GetBookRequest', 'Book'),
    },
    {
      GetBook: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        record('GetBook', call);
        const book = BOOKS[String(call.request['id'])];
        if (book === undefined) cb({ code: grpc.status.NOT_FOUND, details: `no book ${String(call.request['id'])}` });
        else cb(null, book);
      },
      ListBooks: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        record('ListBooks', call);
        cb(null, { books: Object.values(BOOKS).map((b) => ({ id: b.id, title: b.title, kind: b.kind })) });
      },
      Slow: (call: grpc.ServerUnaryCall<Record<string, unknown>, unknown>, cb: grpc.sendUnaryData<unknown>) => {
        record('Slow', call);
        setTimeout(() => cb(null, BOOKS['1']), 1_000);
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    calls,
    stop: () => new Promise<void>((r) => server.tryShutdown(() => r())),
  };
}
