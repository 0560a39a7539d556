// gRPC resolvers (the `grpc` kind behind the resolver interface, resolver.ts): one unary call per field
// resolution, its request message built from `outgoingMessageJson` templates and encoded with the API's
// descriptors (common/grpc-descriptors.ts), the response message handed to graphql-js as JSON. Channels are
// kept per upstream (endpoints + TLS), reference-counted across engines like the REST pools, and calls
// within one GraphQL request are memoised by (upstream, method, message, metadata) as REST calls are.

import * as grpc from '@grpc/grpc-js';
import { GraphQLError } from 'graphql';
import { checkMessageJson, decodeMessage, encodeMessage, findGrpcMethod, type GrpcMethodTypes } from '../../../common/grpc-descriptors.js';
import type { GrpcResolverConfig } from '../../../common/graphql-config.js';
import type { GrpcChannelSet } from './grpc-channels.js';
import { checkUpstreamTls } from './rest.js';
import type { CompiledResolver, FieldResolver, ResolverFactory } from './resolver.js';
import { compileJson, compileString, type CompiledJson, type CompiledString, type Placeholder } from './templates.js';

const REQUEST_SOURCES = ['parent', 'args', 'headers'] as const;
/** gRPC status code -> its name, as clients see it in `errors[].extensions.code`. */
const STATUS_NAMES: Record<number, string> = Object.fromEntries(
  Object.entries(grpc.status)
    .filter(([, v]) => typeof v === 'number')
    .map(([k, v]) => [v as number, k]),
);

export function grpcStatusName(code: number): string {
  return STATUS_NAMES[code] ?? 'UNKNOWN';
}

interface CompiledGrpc {
  readonly resolverName: string;
  readonly method: GrpcMethodTypes;
  readonly message: CompiledJson | undefined;
  readonly metadata: readonly { name: string; value: CompiledString }[];
  readonly timeoutMs: number;
  readonly placeholders: readonly Placeholder[];
}

function compileGrpc(name: string, config: GrpcResolverConfig, method: GrpcMethodTypes): CompiledGrpc {
  const where = `resolution "${name}"`;
  const placeholders: Placeholder[] = [];
  let message: CompiledJson | undefined;
  if (config.outgoingMessageJson !== undefined && config.outgoingMessageJson !== null) {
    message = compileJson(config.outgoingMessageJson, REQUEST_SOURCES, `${where} outgoingMessageJson`);
    placeholders.push(...message.placeholders);
  }
  const metadata: { name: string; value: CompiledString }[] = [];
  for (const [key, value] of Object.entries(config.requestMetadata)) {
    const lname = key.toLowerCase();
    if (!/^[a-z0-9_.-]+$/.test(lname) || lname.startsWith('grpc-')) throw new Error(`${where}: "${key}" is not a usable gRPC metadata key`);
    const c = compileString(value, REQUEST_SOURCES, `${where} requestMetadata ${lname}`);
    placeholders.push(...c.placeholders);
    metadata.push({ name: lname, value: c });
  }
  metadata.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { resolverName: name, method, message, metadata, timeoutMs: config.timeoutMs, placeholders };
}

function errorFor(c: CompiledGrpc, err: unknown): GraphQLError {
  const code = typeof (err as { code?: unknown })?.code === 'number' ? (err as { code: number }).code : grpc.status.UNKNOWN;
  const name = grpcStatusName(code);
  const details = (err as { details?: unknown })?.details;
  const message =
    code === grpc.status.DEADLINE_EXCEEDED
      ? `${c.resolverName}: upstream did not answer within ${c.timeoutMs} ms`
      : `${c.resolverName}: upstream answered gRPC status ${name}${typeof details === 'string' && details !== '' ? `: ${details}` : ''}`;
  return new GraphQLError(message, {
    extensions: { code: name, resolver: c.resolverName, grpc: { status: code } },
    originalError: err instanceof Error ? err : undefined,
  });
}

function makeGrpcResolver(c: CompiledGrpc, channels: GrpcChannelSet): FieldResolver {
  const { requestType, responseType, path } = c.method;
  const serialize = (bytes: Uint8Array): Buffer => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const deserialize = (bytes: Buffer): Buffer => bytes;
  return (parent, args, context) => {
    const ctx = { parent, args, headers: context.headers };
    let body: Uint8Array;
    const metadata = new grpc.Metadata();
    let key = channels.id + '\n' + path;
    try {
      const json = c.message === undefined ? {} : c.message.value(ctx);
      body = encodeMessage(requestType, json);
      key += '\n' + Buffer.from(body).toString('base64');
      for (const m of c.metadata) {
        const v = m.value.constant ? m.value.raw : m.value.render(ctx);
        // a value that renders empty (a header the client did not send) is left out, as REST headers are
        if (v === '') continue;
        metadata.set(m.name, v);
        key += '\n' + m.name + ':' + v;
      }
    } catch (err) {
      throw new GraphQLError(`${c.resolverName}: cannot build the request message (${err instanceof Error ? err.message : String(err)})`, {
        extensions: { code: 'INTERNAL_SERVER_ERROR', resolver: c.resolverName },
      });
    }
    let pending = context.memo.get(key);
    if (pending === undefined) {
      context.calls++;
      if (context.traceHeaders) for (const [k, v] of Object.entries(context.traceHeaders)) metadata.set(k, v);
      pending = new Promise<Buffer>((resolve, reject) => {
        const client = channels.pick();
        if (client === undefined) {
          reject(Object.assign(new Error('the upstream has no endpoints'), { code: grpc.status.UNAVAILABLE }));
          return;
        }
        client.makeUnaryRequest(path, serialize, deserialize, body, metadata, { deadline: Date.now() + c.timeoutMs }, (err, value) => {
          if (err !== null || value === undefined) reject(err ?? new Error('empty response'));
          else resolve(value);
        });
      });
      context.memo.set(key, pending);
    } else {
      context.deduplicated++;
    }
    return pending.then(
      (bytes) => {
        try {
          return decodeMessage(responseType, bytes as Buffer);
        } catch (err) {
          throw new GraphQLError(`${c.resolverName}: upstream answered with an undecodable message`, {
            extensions: { code: 'UPSTREAM_BAD_RESPONSE', resolver: c.resolverName },
            originalError: err instanceof Error ? err : undefined,
          });
        }
      },
      (err: unknown) => {
        throw errorFor(c, err);
      },
    );
  };
}

/** The `grpc` kind: method and templates checked once per config; each engine acquires the upstream's channels. */
export const grpcResolver: ResolverFactory<GrpcResolverConfig> = (name, config, api): CompiledResolver => {
  checkUpstreamTls(name, config.upstream);
  let method: GrpcMethodTypes;
  try {
    method = findGrpcMethod(api.descriptors(), config.serviceName, config.methodName);
    const unknown = checkMessageJson(method.requestType, config.outgoingMessageJson);
    if (unknown.length > 0) throw new Error(`outgoingMessageJson.${unknown.join(`; outgoingMessageJson.`)}`);
  } catch (err) {
    throw new Error(`resolution "${name}": ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const compiled = compileGrpc(name, config, method);
  return {
    kind: 'grpc',
    name,
    placeholders: compiled.placeholders,
    instantiate({ grpcChannels }) {
      const channels = grpcChannels.acquire(config.upstream);
      return { resolve: makeGrpcResolver(compiled, channels), release: () => grpcChannels.release(channels) };
    },
  };
};
