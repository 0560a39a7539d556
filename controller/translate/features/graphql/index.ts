// GraphQL: GraphQLApi (and Gloo's older GraphQLSchema) resources -> configs for the graphql service
// (its own xDS role), and routes with graphqlApiRef -> ext_proc enabled with the API's name.
import { ExtensionRoles, ExtensionTypeUrls, type GraphQLApiConfig } from '../../../../common/contract.js';
import type { GraphQLApi, GraphQLSchema } from '../../../api/resources.js';
import type { ServiceAddress } from '../../envoy-json.js';
import type { Feature } from '../../feature.js';
import { nsName, sourceOf } from '../../names.js';
import { headersReadBy } from './headers.js';
import { graphqlRender } from './render.js';
import { translateGraphQLApi } from './resolve.js';

export function graphqlFeature(service: ServiceAddress): Feature {
  return {
    name: 'graphql',
    kinds: ['GraphQLApi', 'GraphQLSchema'],
    resolve(ctx) {
      // one name space for both kinds: a GraphQLSchema may not shadow a GraphQLApi of the same name
      const unique: (GraphQLApi | GraphQLSchema)[] = [];
      const seen = new Set<string>();
      for (const api of [...ctx.ofKind('GraphQLApi'), ...ctx.ofKind('GraphQLSchema')]) {
        const key = nsName(api.metadata.namespace, api.metadata.name);
        if (seen.has(key)) {
          ctx.reportError(sourceOf(api), 'InvalidSpec', `a GraphQLApi named ${api.metadata.namespace}.${api.metadata.name} already exists`);
          continue;
        }
        seen.add(key);
        unique.push(api);
      }
      const upstreams = ctx.upstreams();
      // stitched APIs are built from the plain ones, so those are resolved first
      const isStitched = (a: GraphQLApi | GraphQLSchema): boolean => a.kind === 'GraphQLApi' && a.spec.stitchedSchema !== undefined;
      const plain = ctx.resolveEach(
        unique.filter((a) => !isStitched(a)),
        (a) => translateGraphQLApi(a, upstreams),
      );
      const stitched = ctx.resolveEach(unique.filter(isStitched), (a) => translateGraphQLApi(a, upstreams, plain));
      const apis = {
        results: new Map([...plain.results, ...stitched.results]),
        rejected: new Set([...plain.rejected, ...stitched.rejected]),
      };
      return {
        routeAction(route, site, sink) {
          const ref = route.graphqlApiRef ?? route.graphqlSchemaRef;
          if (!ref) return undefined;
          const field = route.graphqlApiRef ? 'graphqlApiRef' : 'graphqlSchemaRef';
          const apiNs = ref.namespace ?? site.namespace;
          const key = nsName(apiNs, ref.name);
          const invalid = ctx.invalid('GraphQLApi', apiNs, ref.name) || ctx.invalid('GraphQLSchema', apiNs, ref.name);
          if (apis.rejected.has(key) || invalid) {
            sink.problems.push({
              code: 'GraphQLApiRejected',
              message: `${site.where}.${field}: GraphQLApi ${apiNs}.${ref.name} is rejected`,
            });
            return undefined;
          }
          if (!apis.results.has(key)) {
            sink.problems.push({
              code: 'GraphQLApiNotFound',
              message: `${site.where}.${field}: GraphQLApi ${apiNs}.${ref.name} not found`,
            });
            return undefined;
          }
          const requestHeaders = headersReadBy(apis.results.get(key)!);
          return {
            type: 'graphql',
            api: { kind: 'GraphQLApi', namespace: apiNs, name: ref.name },
            ...(requestHeaders !== undefined ? { requestHeaders } : {}),
          };
        },
        extensionResources() {
          const configs: GraphQLApiConfig[] = [...apis.results.values()].sort((a, b) => a.name.localeCompare(b.name));
          return [
            {
              role: ExtensionRoles.graphql,
              typeUrl: ExtensionTypeUrls.graphqlApi,
              resources: configs.map((api) => ({ name: api.name, resource: { ...api } })),
            },
          ];
        },
      };
    },
    render: graphqlRender(service),
  };
}
