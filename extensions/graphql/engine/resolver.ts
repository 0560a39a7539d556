// The resolver interface: a resolution of a GraphQLApiConfig, compiled once per config by the factory of
// its kind (resolvers.ts: `rest`, `grpc`, `mock`), then instantiated once per engine into the graphql-js resolver
// of every field bound to it. Adding a kind: CONTRIBUTING.md ("Adding a resolver").

import type { GraphQLFieldResolver } from 'graphql';
import type protobuf from 'protobufjs';
import type { ResolverKind } from '../../../common/contract.js';
import type { Logger } from '../../../common/log.js';
import type { GrpcChannels } from './grpc-channels.js';
import type { Placeholder } from './templates.js';
import type { UpstreamPools } from './upstream.js';

/** Per GraphQL request state handed to resolvers as graphql-js `contextValue`. */
export interface RequestContext {
  /** client request headers, lowercased names */
  headers: Readonly<Record<string, string>>;
  /** in-flight and finished backend calls of this request, by call key */
  memo: Map<string, Promise<unknown>>;
  /** backend calls actually made (after dedup) */
  calls: number;
  /** resolutions answered by an identical call already made in this request */
  deduplicated: number;
  /** trace context headers for every backend call (set when the request is traced) */
  traceHeaders?: Readonly<Record<string, string>>;
}

/** What an engine lends its resolvers. */
export interface ResolverEnv {
  upstreamPools: UpstreamPools;
  grpcChannels: GrpcChannels;
  log: Logger;
}

export type FieldResolver = GraphQLFieldResolver<unknown, RequestContext>;

/** A resolver instantiated for one engine; release() gives back what instantiate() acquired. */
export interface ResolverInstance {
  resolve: FieldResolver;
  release(): void;
}

export interface CompiledResolver {
  readonly kind: ResolverKind;
  /** the resolution name (`Type|field`) */
  readonly name: string;
  /** request-side template placeholders, checked against the arguments of every field bound to it */
  readonly placeholders: readonly Placeholder[];
  /** Called once per engine; may throw (the engine is then refused, and what was acquired released). */
  instantiate(env: ResolverEnv): ResolverInstance;
}

/** What a resolver may read of its API while compiling. */
export interface ApiCompileContext {
  /** the API's gRPC descriptors (`grpcDescriptorSet`), decoded once; throws when absent or unusable */
  descriptors(): protobuf.Root;
}

/** Compiles the config of one kind; throws an Error whose message names the resolution and the problem.
 * The config has passed the shared schema (common/graphql-config.ts) already. */
export type ResolverFactory<C> = (name: string, config: C, api: ApiCompileContext) => CompiledResolver;
