// The resolver factory, keyed by kind: a ResolverConfig (exactly one kind set, as the shared schema in
// common/graphql-config.ts enforces) -> its CompiledResolver.

import { RESOLVER_KINDS, type ResolverConfig, type ResolverKind } from '../../../common/graphql-config.js';
import { grpcResolver } from './grpc.js';
import { mockResolver } from './mock.js';
import type { ApiCompileContext, CompiledResolver, ResolverFactory } from './resolver.js';
import { restResolver } from './rest.js';

export const resolverFactories: { [K in ResolverKind]: ResolverFactory<NonNullable<ResolverConfig[K]>> } = {
  rest: restResolver,
  grpc: grpcResolver,
  mock: mockResolver,
};

/** Throws with a message naming the resolution when the config is unusable. */
const NO_API: ApiCompileContext = {
  descriptors: () => {
    throw new Error('the API has no gRPC descriptors (grpcDescriptorSet)');
  },
};

export function compileResolver(name: string, config: ResolverConfig, api: ApiCompileContext = NO_API): CompiledResolver {
  for (const kind of RESOLVER_KINDS) {
    const c = config[kind];
    if (c !== undefined) return (resolverFactories[kind] as ResolverFactory<typeof c>)(name, c, api);
  }
  throw new Error(`resolution "${name}": set exactly one resolver kind: ${RESOLVER_KINDS.join(', ')}`);
}
