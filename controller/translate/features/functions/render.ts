// Stage 2 for function destinations: Envoy's aws_lambda filter (on the HCM only where a route invokes a function,
// disabled there and enabled per route with the function's ARN and credentials), the metadata it requires on the
// Lambda cluster, and the path, Host and key of a route to an Azure function.
import { typed, type EnvoyRoute, type TypedConfig } from '../../../../envoy/typed.js';
import { setPerFilterConfig } from '../../envoy-json.js';
import { FilterStage, before, type RenderPlugin } from '../../feature.js';
import type { AwsLambdaIR, ListenerIR } from '../../ir.js';

export const AWS_LAMBDA_FILTER = 'envoy.filters.http.aws_lambda';
const CONFIG = 'type.googleapis.com/envoy.extensions.filters.http.aws_lambda.v3.Config';
const PER_ROUTE = 'type.googleapis.com/envoy.extensions.filters.http.aws_lambda.v3.PerRouteConfig';

/**
 * The chain's filter is disabled, so its own config never signs anything; Envoy still requires an ARN, and static
 * placeholder credentials keep it from looking for credentials (instance metadata) it would never use.
 */
const DISABLED_CONFIG = {
  arn: 'arn:aws:lambda:us-east-1:000000000000:function:legate-disabled',
  credentials: { access_key_id: 'unused', secret_access_key: 'unused' },
};

function usesLambda(listener: ListenerIR): boolean {
  return listener.virtualHosts.some((vh) =>
    vh.routes.some((r) => r.awsLambda || (r.action.type === 'route' && r.action.clusters.some((c) => c.awsLambda))),
  );
}

function perRoute(ir: AwsLambdaIR): TypedConfig {
  const invoke: Record<string, unknown> = {
    arn: ir.arn,
    payload_passthrough: ir.payloadPassthrough,
    invocation_mode: ir.invocationMode,
    host_rewrite: ir.host,
  };
  if (ir.credentials) {
    const { accessKeyId, secretAccessKey, sessionToken } = ir.credentials;
    invoke['credentials'] = {
      access_key_id: accessKeyId,
      secret_access_key: secretAccessKey,
      ...(sessionToken ? { session_token: sessionToken } : {}),
    };
  }
  return typed('type.googleapis.com/envoy.config.route.v3.FilterConfig', { config: typed(PER_ROUTE, { invoke_config: invoke }) });
}

const HOST_REWRITES = ['host_rewrite_literal', 'auto_host_rewrite', 'host_rewrite_header', 'host_rewrite_path_regex'] as const;

export const functionsRender: RenderPlugin = {
  httpFilters(_proxy, listener) {
    if (!usesLambda(listener)) return [];
    // where Gloo's filter runs: after auth and rate limits, just before the router
    return [
      {
        position: before(FilterStage.Route),
        filter: { name: AWS_LAMBDA_FILTER, disabled: true, typed_config: typed(CONFIG, DISABLED_CONFIG) },
      },
    ];
  },
  patchCluster(ir, cluster) {
    // the filter signs only requests to a cluster that says it is a Lambda endpoint
    if (ir.awsLambda)
      (cluster.metadata ??= {}).filter_metadata = { ...cluster.metadata.filter_metadata, 'com.amazonaws.lambda': { egress_gateway: true } };
  },
  patchRoute(ir, route) {
    // a weighted route left with one destination is rendered as a plain cluster: its function is the route's
    const only = ir.action.type === 'route' && !route.route?.weighted_clusters ? ir.action.clusters[0]?.awsLambda : undefined;
    const lambda = ir.awsLambda ?? only;
    if (lambda) setPerFilterConfig(route, AWS_LAMBDA_FILTER, perRoute(lambda));
    // the filter sets the Host it signs; a rewrite by the router afterwards would break the signature
    if ((lambda || ir.azureFunction) && route.route) for (const k of HOST_REWRITES) delete route.route[k];
    if (ir.action.type === 'route' && route.route?.weighted_clusters?.clusters) {
      const weighted = route.route.weighted_clusters.clusters;
      ir.action.clusters.forEach((c, i) => {
        const target = weighted[i];
        if (c.awsLambda && target) setPerFilterConfig(target, AWS_LAMBDA_FILTER, perRoute(c.awsLambda));
      });
    }
    const azure = ir.azureFunction;
    if (azure && route.route) {
      // Gloo sets the whole path to /api/<function>; the request's query string stays (HTTP triggers read it)
      delete route.route.prefix_rewrite;
      route.route.regex_rewrite = { pattern: { regex: '^.*$' }, substitution: azure.path };
      route.route.host_rewrite_literal = azure.host;
      if (azure.secretValue) {
        // taken literally: Envoy would read % as the start of a command operator
        const header: NonNullable<EnvoyRoute['request_headers_to_add']>[number] = {
          header: { key: 'x-functions-key', value: azure.secretValue.replaceAll('%', '%%') },
          append_action: 'OVERWRITE_IF_EXISTS_OR_ADD',
        };
        route.request_headers_to_add = [...(route.request_headers_to_add ?? []), header];
      }
    }
  },
};
