// Stage 2 for routing: the action of every Envoy route.
import type { EnvoyRoute, HttpConnectionManager, RedirectAction, RouteAction, TypedConfig } from '../../../../envoy/typed.js';
import { duration } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { RouteIR } from '../../ir.js';

export const routingRender: RenderPlugin = {
  patchRoute(ir, route) {
    Object.assign(route, actionFor(ir));
  },
  patchListener(ir, _listener, filters) {
    // Settings gloo.invalidConfigPolicy.replaceInvalidRoutes: a route (or a weighted share of one) to a
    // missing destination names a cluster Envoy does not have; Envoy's "no cluster" local reply (flag NC,
    // which nothing else here produces) becomes the configured answer.
    const answer = ir.invalidRouteResponse;
    if (!answer) return;
    for (const f of filters) {
      if (f.name !== 'envoy.filters.network.http_connection_manager' || !f.typed_config) continue;
      const hcm = f.typed_config as TypedConfig & HttpConnectionManager;
      (hcm.local_reply_config ??= {}).mappers = [
        {
          filter: { response_flag_filter: { flags: ['NC'] } },
          status_code: answer.status,
          body: { inline_string: answer.body },
        },
      ];
    }
  },
};

function actionFor(ir: RouteIR): Pick<EnvoyRoute, 'route' | 'direct_response' | 'redirect'> {
  const a = ir.action;
  switch (a.type) {
    case 'route': {
      const route: RouteAction = {};
      const first = a.clusters[0];
      if (a.clusters.length === 1 && first) route.cluster = first.cluster;
      else route.weighted_clusters = { clusters: a.clusters.map((c) => ({ name: c.cluster, weight: c.weight })) };
      if (ir.prefixRewrite !== undefined) route.prefix_rewrite = ir.prefixRewrite;
      route.timeout = duration(ir.timeout);
      if (ir.retries) {
        const retry: NonNullable<RouteAction['retry_policy']> = { retry_on: ir.retries.retryOn, num_retries: ir.retries.numRetries };
        if (ir.retries.perTryTimeout) retry.per_try_timeout = duration(ir.retries.perTryTimeout);
        route.retry_policy = retry;
      }
      return { route };
    }
    case 'directResponse': {
      const direct: NonNullable<EnvoyRoute['direct_response']> = { status: a.status };
      if (a.body !== undefined) direct.body = { inline_string: a.body };
      return { direct_response: direct };
    }
    case 'redirect': {
      const redirect: RedirectAction = {};
      if (a.hostRedirect !== undefined) redirect.host_redirect = a.hostRedirect;
      if (a.portRedirect !== undefined) redirect.port_redirect = a.portRedirect;
      if (a.pathRedirect !== undefined) redirect.path_redirect = a.pathRedirect;
      if (a.prefixRewrite !== undefined) redirect.prefix_rewrite = a.prefixRewrite;
      if (a.httpsRedirect) redirect.https_redirect = true;
      if (a.stripQuery) redirect.strip_query = true;
      if (a.responseCode !== undefined) redirect.response_code = a.responseCode;
      return { redirect };
    }
    case 'graphql':
      // The graphql plugin turns this into ext_proc; without it the route answers 500 rather than open.
      return { direct_response: { status: 500, body: { inline_string: 'GraphQL execution is not configured' } } };
  }
}
