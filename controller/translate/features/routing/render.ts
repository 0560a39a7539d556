// Stage 2 for routing: the action of every Envoy route, the virtual host's retry policy, and the answer of
// routes to missing destinations (Settings gloo.invalidConfigPolicy).
import {
  typed,
  type EnvoyRoute,
  type HttpConnectionManager,
  type RedirectAction,
  type RouteAction,
  type TypedConfig,
} from '../../../../envoy/typed.js';
import { duration, fractionalPercent } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { RegexRewriteIR, RetryPolicyIR, RouteIR } from '../../ir.js';

type RetryPolicy = NonNullable<RouteAction['retry_policy']>;

export const routingRender: RenderPlugin = {
  patchRoute(ir, route) {
    Object.assign(route, actionFor(ir));
  },
  // Envoy uses a virtual host's policy for the routes without one of their own
  patchVirtualHost(ir, vhost) {
    if (ir.retries) vhost.retry_policy = retryPolicy(ir.retries);
  },
  proxyContext: () => null,
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

function retryPolicy(r: RetryPolicyIR): RetryPolicy {
  const policy: RetryPolicy = {};
  if (r.retryOn) policy.retry_on = r.retryOn;
  policy.num_retries = r.numRetries;
  if (r.perTryTimeout) policy.per_try_timeout = duration(r.perTryTimeout);
  if (r.previousPriorities) {
    policy.retry_priority = {
      name: 'envoy.retry_priorities.previous_priorities',
      typed_config: typed('type.googleapis.com/envoy.extensions.retry.priority.previous_priorities.v3.PreviousPrioritiesConfig', {
        update_frequency: r.previousPriorities.updateFrequency,
      }),
    };
  }
  if (r.backOff) {
    policy.retry_back_off = { base_interval: duration(r.backOff.baseInterval) };
    if (r.backOff.maxInterval) policy.retry_back_off.max_interval = duration(r.backOff.maxInterval);
  }
  return policy;
}

function regexRewrite(r: RegexRewriteIR): NonNullable<RouteAction['regex_rewrite']> {
  return { pattern: { regex: r.pattern }, substitution: r.substitution };
}

function actionFor(ir: RouteIR): Pick<EnvoyRoute, 'route' | 'direct_response' | 'redirect'> {
  const a = ir.action;
  switch (a.type) {
    case 'route': {
      const route: RouteAction = {};
      const first = a.clusters[0];
      if (a.clusterHeader !== undefined) route.cluster_header = a.clusterHeader;
      else if (a.clusters.length === 1 && first) {
        route.cluster = first.cluster;
        if (first.subset) route.metadata_match = lbMetadata(first.subset);
      } else {
        route.weighted_clusters = {
          clusters: a.clusters.map((c) => ({
            name: c.cluster,
            weight: c.weight,
            ...(c.subset ? { metadata_match: lbMetadata(c.subset) } : {}),
          })),
        };
      }
      if (ir.prefixRewrite !== undefined) route.prefix_rewrite = ir.prefixRewrite;
      if (ir.regexRewrite) route.regex_rewrite = regexRewrite(ir.regexRewrite);
      route.timeout = duration(ir.timeout);
      if (ir.idleTimeout) route.idle_timeout = duration(ir.idleTimeout);
      if (ir.maxStreamDuration) {
        const m = ir.maxStreamDuration;
        const msd: NonNullable<RouteAction['max_stream_duration']> = {};
        if (m.maxStreamDuration) msd.max_stream_duration = duration(m.maxStreamDuration);
        if (m.grpcTimeoutHeaderMax) msd.grpc_timeout_header_max = duration(m.grpcTimeoutHeaderMax);
        if (m.grpcTimeoutHeaderOffset) msd.grpc_timeout_header_offset = duration(m.grpcTimeoutHeaderOffset);
        route.max_stream_duration = msd;
      }
      if (ir.retries) route.retry_policy = retryPolicy(ir.retries);
      if (ir.mirror) {
        route.request_mirror_policies = [
          { cluster: ir.mirror.cluster, runtime_fraction: { default_value: fractionalPercent(ir.mirror.percentage) } },
        ];
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
      if (a.regexRewrite) redirect.regex_rewrite = regexRewrite(a.regexRewrite);
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

/** Metadata a subset load balancer matches endpoints against (their `envoy.lb` filter metadata). */
function lbMetadata(values: Record<string, string>): NonNullable<RouteAction['metadata_match']> {
  return { filter_metadata: { 'envoy.lb': values } };
}
