// GraphQL routes: Envoy's ext_proc filter hands the request to Legate's graphql service, which
// answers with an immediate response. The filter sits on every HCM of a proxy that has a GraphQL route,
// disabled; each GraphQL route enables it and names its API in the stream's gRPC initial metadata.
import { GRAPHQL_API_METADATA_KEY } from '../../../../common/contract.js';
import { typed } from '../../../../envoy/typed.js';
import { extensionCluster, setPerFilterConfig, type ServiceAddress } from '../../envoy-json.js';
import { FilterStage, during, type RenderPlugin } from '../../feature.js';
import type { ProxyIR } from '../../ir.js';

export const EXT_PROC_FILTER = 'envoy.filters.http.ext_proc';
export const GRAPHQL_CLUSTER = 'legate-graphql';

const graphqlUse = new WeakMap<ProxyIR, boolean>();

/** Whether any route of the proxy is a GraphQL route; memoised, as it is asked per listener and again for clusters. */
function hasGraphqlRoutes(proxy: ProxyIR): boolean {
  let uses = graphqlUse.get(proxy);
  if (uses === undefined) {
    uses = proxy.listeners.some((l) => l.virtualHosts.some((vh) => vh.routes.some((r) => r.action.type === 'graphql')));
    graphqlUse.set(proxy, uses);
  }
  return uses;
}

export function graphqlRender(service: ServiceAddress): RenderPlugin {
  return {
    httpFilters(proxy) {
      if (!hasGraphqlRoutes(proxy)) return [];
      return [
        {
          position: during(FilterStage.Processing),
          filter: {
            name: EXT_PROC_FILTER,
            disabled: true,
            typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor', {
              grpc_service: { envoy_grpc: { cluster_name: GRAPHQL_CLUSTER }, timeout: { seconds: 30 } },
              // the body arrives whole; the service answers with an immediate response
              processing_mode: {
                request_header_mode: 'SEND',
                response_header_mode: 'SKIP',
                request_body_mode: 'BUFFERED',
                response_body_mode: 'NONE',
                request_trailer_mode: 'SKIP',
                response_trailer_mode: 'SKIP',
              },
              // resolvers may call several backends in sequence (default timeout 1 s each)
              message_timeout: { seconds: 10 },
              failure_mode_allow: false,
            }),
          },
        },
      ];
    },
    patchRoute(ir, route) {
      if (ir.action.type !== 'graphql') return;
      const api = `${ir.action.api.namespace}.${ir.action.api.name}`;
      const perRoute = typed('type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute', {
        overrides: { grpc_initial_metadata: [{ key: GRAPHQL_API_METADATA_KEY, value: api }] },
      });
      setPerFilterConfig(
        route,
        EXT_PROC_FILTER,
        typed('type.googleapis.com/envoy.config.route.v3.FilterConfig', { disabled: false, config: perRoute }),
      );
    },
    extraClusters(proxy) {
      return hasGraphqlRoutes(proxy) ? [extensionCluster(GRAPHQL_CLUSTER, service)] : [];
    },
  };
}
