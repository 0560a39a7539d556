// GraphQL routes: Envoy's ext_proc filter hands the request to Legate's graphql service, which
// answers with an immediate response. The filter sits on every HCM of a proxy that has a GraphQL route,
// disabled; each GraphQL route enables it and names its API in the stream's gRPC initial metadata.
//
// Two Envoy routes per GraphQL route (docs/architecture.md):
// - single message (in front): POST with a non-zero Content-Length, through a second ext_proc filter
//   that skips the headers message and sends only the buffered body, carrying the method, path and the
//   headers the API reads as request attributes; the service answers that one message. The buffer
//   filter after it holds the request back from the router until then (without it the route's own
//   action would answer as soon as the headers pass).
// - general (behind): everything else (GET, chunked bodies, other methods, APIs whose header names
//   cannot be attributes): headers, then the body if any, as two messages.
import { GRAPHQL_API_METADATA_KEY } from '../../../../common/contract.js';
import { METHOD_ATTRIBUTE, PATH_ATTRIBUTE, headerAttribute } from '../../../../common/extproc-attributes.js';
import { typed } from '../../../../envoy/typed.js';
import { extensionCluster, extensionSecrets, setPerFilterConfig, type ServiceAddress } from '../../envoy-json.js';
import { FilterStage, during, type RenderPlugin, type StagedHttpFilter } from '../../feature.js';
import type { ListenerIR, RouteActionIR } from '../../ir.js';
import { perProxy, someRoute } from '../../proxy-facts.js';

export const EXT_PROC_FILTER = 'envoy.filters.http.ext_proc';
/** The second ext_proc filter, for the single-message route (Envoy ignores request_attributes in a
 * per-route override, so the attributes need a filter of their own). */
export const EXT_PROC_SINGLE_MESSAGE_FILTER = 'legate.graphql.ext_proc_single_message';
export const BUFFER_FILTER = 'envoy.filters.http.buffer';
export const GRAPHQL_CLUSTER = 'legate-graphql';
/** The graphql service's own limit on a POST body (engine DEFAULT_MAX_BODY_BYTES); Envoy answers 413 beyond it. */
const MAX_REQUEST_BYTES = 1024 * 1024;
const SINGLE_MESSAGE_SUFFIX = '-single-message';

const PER_ROUTE = 'type.googleapis.com/envoy.config.route.v3.FilterConfig';
const EXT_PROC = 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExternalProcessor';
const EXT_PROC_PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.ext_proc.v3.ExtProcPerRoute';

type GraphqlAction = Extract<RouteActionIR, { type: 'graphql' }>;

/** What a GraphQL route answers when the graphql service cannot (a GraphQL error a client can read). */
const UNAVAILABLE_BODY = JSON.stringify({
  errors: [{ message: 'the GraphQL service is unavailable; try again', extensions: { code: 'SERVICE_UNAVAILABLE' } }],
});

/** Whether any route of the proxy is a GraphQL route (asked per listener and again for clusters). */
const hasGraphqlRoutes = perProxy((proxy) => someRoute(proxy, (r) => r.action.type === 'graphql'));

function graphqlActions(listener: ListenerIR): GraphqlAction[] {
  const actions: GraphqlAction[] = [];
  for (const vh of listener.virtualHosts) for (const r of vh.routes) if (r.action.type === 'graphql') actions.push(r.action);
  return actions;
}

/** The ext_proc filter config shared by both filters; they differ in what is sent. */
function extProcConfig(requestHeaderMode: 'SEND' | 'SKIP', requestAttributes?: string[], forwardHeaders?: string[]) {
  return typed(EXT_PROC, {
    grpc_service: { envoy_grpc: { cluster_name: GRAPHQL_CLUSTER }, timeout: { seconds: 30 } },
    processing_mode: {
      request_header_mode: requestHeaderMode,
      response_header_mode: 'SKIP',
      request_body_mode: 'BUFFERED',
      response_body_mode: 'NONE',
      request_trailer_mode: 'SKIP',
      response_trailer_mode: 'SKIP',
    },
    ...(requestAttributes !== undefined ? { request_attributes: requestAttributes } : {}),
    ...(forwardHeaders !== undefined
      ? { forward_rules: { allowed_headers: { patterns: forwardHeaders.map((exact) => ({ exact })) } } }
      : {}),
    // resolvers may call several backends in sequence (default timeout 1 s each)
    message_timeout: { seconds: 10 },
    // When the graphql service is down or does not answer in time, the request goes on to the route's
    // own action, a fixed 503 GraphQL error (unavailableAnswer): nothing behind it to fail open to.
    failure_mode_allow: true,
  });
}

export function graphqlRender(service: ServiceAddress): RenderPlugin {
  return {
    httpFilters(proxy, listener) {
      if (!hasGraphqlRoutes(proxy)) return [];
      const actions = graphqlActions(listener);
      // every header a GraphQL API on this listener reads (a filter's config is per listener); undefined
      // when one of them needs headers that cannot be named
      let headers: string[] | undefined;
      if (actions.every((a) => a.requestHeaders !== undefined)) {
        const names = new Set<string>();
        for (const a of actions) for (const h of a.requestHeaders!) names.add(h);
        headers = [...names].sort();
      }
      const filters: StagedHttpFilter[] = [
        {
          position: during(FilterStage.Processing),
          filter: {
            name: EXT_PROC_FILTER,
            disabled: true,
            // headers (only those the APIs read, when known), then the buffered body if any; the service
            // answers with an immediate response
            typed_config: extProcConfig('SEND', undefined, headers !== undefined ? [':method', ':path', ...headers] : undefined),
          },
        },
      ];
      if (actions.some((a) => a.requestHeaders !== undefined)) {
        const names = new Set<string>();
        for (const a of actions) for (const h of a.requestHeaders ?? []) names.add(h);
        const attributes = [METHOD_ATTRIBUTE, PATH_ATTRIBUTE, ...[...names].sort().map(headerAttribute)];
        filters.push(
          {
            position: during(FilterStage.Processing),
            filter: {
              name: EXT_PROC_SINGLE_MESSAGE_FILTER,
              disabled: true,
              // only the buffered body, with the request's method, path and headers as attributes
              typed_config: extProcConfig('SKIP', attributes),
            },
          },
          {
            position: during(FilterStage.Processing),
            filter: {
              name: BUFFER_FILTER,
              disabled: true,
              typed_config: typed('type.googleapis.com/envoy.extensions.filters.http.buffer.v3.Buffer', {
                max_request_bytes: MAX_REQUEST_BYTES,
              }),
            },
          },
        );
      }
      return filters;
    },
    patchRoute(ir, route) {
      if (ir.action.type !== 'graphql') return;
      setPerFilterConfig(route, EXT_PROC_FILTER, enabledFor(ir.action));
      delete route.redirect;
      delete route.route;
      route.direct_response = { status: 503, body: { inline_string: UNAVAILABLE_BODY } };
      (route.response_headers_to_add ??= []).push({
        header: { key: 'content-type', value: 'application/json; charset=utf-8' },
        append_action: 'ADD_IF_ABSENT',
      });
    },
    expandRoute(ir, route) {
      if (ir.action.type !== 'graphql' || ir.action.requestHeaders === undefined) return undefined;
      const single = structuredClone(route);
      if (single.name !== undefined) single.name += SINGLE_MESSAGE_SUFFIX;
      single.match = {
        ...single.match,
        headers: [
          ...(single.match?.headers ?? []),
          { name: ':method', string_match: { exact: 'POST' } },
          { name: 'content-length', string_match: { safe_regex: { regex: '[1-9][0-9]*' } } },
        ],
      };
      delete single.typed_per_filter_config![EXT_PROC_FILTER];
      setPerFilterConfig(single, EXT_PROC_SINGLE_MESSAGE_FILTER, enabledFor(ir.action));
      const buffer = typed('type.googleapis.com/envoy.extensions.filters.http.buffer.v3.BufferPerRoute', {
        buffer: { max_request_bytes: MAX_REQUEST_BYTES },
      });
      setPerFilterConfig(single, BUFFER_FILTER, typed(PER_ROUTE, { disabled: false, config: buffer }));
      return [single, route];
    },
    extraClusters(proxy) {
      return hasGraphqlRoutes(proxy) ? [extensionCluster(GRAPHQL_CLUSTER, service)] : [];
    },
    secrets(proxy) {
      return hasGraphqlRoutes(proxy) ? extensionSecrets(service) : [];
    },
  };
}

/** Enables an ext_proc filter on a route, naming the API in the stream's initial metadata. */
function enabledFor(action: GraphqlAction) {
  const api = `${action.api.namespace}.${action.api.name}`;
  const perRoute = typed(EXT_PROC_PER_ROUTE, { overrides: { grpc_initial_metadata: [{ key: GRAPHQL_API_METADATA_KEY, value: api }] } });
  return typed(PER_ROUTE, { disabled: false, config: perRoute });
}
