// typed(): a google.protobuf.Any in Envoy's JSON form whose body is checked against the message its
// type URL names, so a misspelt field in a typed_config is a compile error, not a golden diff.
import type {
  TypeUrlMap,
  TypedConfig,
  envoy_config_core_v3_DataSource,
  envoy_config_core_v3_TransportSocket,
  envoy_config_endpoint_v3_LbEndpoint,
  envoy_config_listener_v3_Filter,
  envoy_config_listener_v3_FilterChain,
  envoy_config_core_v3_SocketAddress,
  envoy_config_route_v3_HeaderMatcher,
  envoy_config_route_v3_QueryParameterMatcher,
  envoy_config_route_v3_RedirectAction,
  envoy_config_route_v3_Route,
  envoy_config_route_v3_RouteAction,
  envoy_config_route_v3_RouteMatch,
  envoy_config_route_v3_VirtualHost,
  envoy_extensions_transport_sockets_tls_v3_Secret,
  envoy_extensions_filters_network_http_connection_manager_v3_HttpFilter,
  envoy_extensions_transport_sockets_tls_v3_CommonTlsContext,
  envoy_type_matcher_v3_StringMatcher,
} from './types.generated.js';

export type * from './types.generated.js';

export type TypeUrl = keyof TypeUrlMap;

export function typed<U extends TypeUrl>(typeUrl: U, body: TypeUrlMap[U]): TypedConfig {
  return { '@type': typeUrl, ...body };
}

// Short names for the nested messages the renderers build.

export type DataSource = envoy_config_core_v3_DataSource;
export type TransportSocket = envoy_config_core_v3_TransportSocket;
export type LbEndpoint = envoy_config_endpoint_v3_LbEndpoint;
export type FilterChain = envoy_config_listener_v3_FilterChain;
/** a listener (network) filter, such as the HTTP connection manager */
export type NetworkFilter = envoy_config_listener_v3_Filter;
export type SocketAddress = envoy_config_core_v3_SocketAddress;
export type HeaderMatcher = envoy_config_route_v3_HeaderMatcher;
export type QueryParameterMatcher = envoy_config_route_v3_QueryParameterMatcher;
export type RedirectAction = envoy_config_route_v3_RedirectAction;
/** envoy.config.route.v3.Route (named so it does not clash with the Gloo Route of controller/api) */
export type EnvoyRoute = envoy_config_route_v3_Route;
export type RouteAction = envoy_config_route_v3_RouteAction;
export type RouteMatch = envoy_config_route_v3_RouteMatch;
export type VirtualHost = envoy_config_route_v3_VirtualHost;
export type HttpFilter = envoy_extensions_filters_network_http_connection_manager_v3_HttpFilter;
export type CommonTlsContext = envoy_extensions_transport_sockets_tls_v3_CommonTlsContext;
export type TlsSecret = envoy_extensions_transport_sockets_tls_v3_Secret;
export type StringMatcher = envoy_type_matcher_v3_StringMatcher;
