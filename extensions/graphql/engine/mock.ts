// Mock resolvers (Gloo's mockResolver): a fixed value now (syncResponse) or after a delay (asyncResponse),
// or a fixed GraphQL error (errorResponse). No backend; the value goes through graphql-js as a REST
// body would (objects are read by field name, lists must be arrays).

import { GraphQLError } from 'graphql';
import type { MockResolverConfig } from '../../../common/contract.js';
import type { CompiledResolver, FieldResolver, ResolverFactory } from './resolver.js';

/** A copy per call, so no execution can see what another did to a mutable value. */
function fresh(value: unknown): unknown {
  return value !== null && typeof value === 'object' ? structuredClone(value) : value;
}

export const mockResolver: ResolverFactory<MockResolverConfig> = (name, config): CompiledResolver => {
  let resolve: FieldResolver;
  if (config.errorResponse !== undefined) {
    const message = config.errorResponse;
    resolve = () => {
      throw new GraphQLError(message, { extensions: { code: 'MOCK_ERROR_RESPONSE', resolver: name } });
    };
  } else if (config.asyncResponse !== undefined) {
    const { response, delayMs } = config.asyncResponse;
    resolve = () =>
      new Promise((done) => {
        setTimeout(() => done(fresh(response)), delayMs);
      });
  } else {
    const value = config.syncResponse;
    resolve = () => fresh(value);
  }
  return {
    kind: 'mock',
    name,
    placeholders: [],
    instantiate: () => ({ resolve, release: () => undefined }),
  };
};
