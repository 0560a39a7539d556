// Stage 2 for upstream resilience: the cluster's health_checks, outlier_detection, circuit_breakers and
// ignore_health_on_host_removal.
import type {
  Cluster,
  envoy_config_cluster_v3_OutlierDetection as OutlierDetection,
  envoy_config_core_v3_HealthCheck as HealthCheck,
  envoy_config_core_v3_RequestMethod as RequestMethod,
} from '../../../../envoy/typed.js';
import { duration } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { CircuitBreakersIR, HealthCheckIR, OutlierDetectionIR } from '../../ir.js';

export const resilienceRender: RenderPlugin = {
  patchCluster(ir, cluster) {
    if (ir.healthChecks?.length) cluster.health_checks = ir.healthChecks.map(healthCheck);
    if (ir.outlierDetection) cluster.outlier_detection = outlierDetection(ir.outlierDetection);
    if (ir.circuitBreakers) cluster.circuit_breakers = circuitBreakers(ir.circuitBreakers);
    if (ir.ignoreHealthOnHostRemoval !== undefined) cluster.ignore_health_on_host_removal = ir.ignoreHealthOnHostRemoval;
  },
  patchLoadAssignment(ir, assignment) {
    if (!ir.healthCheckByAddress) return;
    for (const locality of assignment.endpoints ?? []) {
      for (const lb of locality.lb_endpoints ?? []) {
        const hostname = lb.endpoint?.address?.socket_address?.address;
        if (lb.endpoint && hostname) lb.endpoint.health_check_config = { ...lb.endpoint.health_check_config, hostname };
      }
    }
  },
};

function healthCheck(h: HealthCheckIR): HealthCheck {
  const out: HealthCheck = {
    timeout: duration(h.timeout),
    interval: duration(h.interval),
    unhealthy_threshold: h.unhealthyThreshold,
    healthy_threshold: h.healthyThreshold,
  };
  if (h.initialJitter) out.initial_jitter = duration(h.initialJitter);
  if (h.intervalJitter) out.interval_jitter = duration(h.intervalJitter);
  if (h.intervalJitterPercent !== undefined) out.interval_jitter_percent = h.intervalJitterPercent;
  if (h.reuseConnection !== undefined) out.reuse_connection = h.reuseConnection;
  if (h.noTrafficInterval) out.no_traffic_interval = duration(h.noTrafficInterval);
  if (h.unhealthyInterval) out.unhealthy_interval = duration(h.unhealthyInterval);
  if (h.unhealthyEdgeInterval) out.unhealthy_edge_interval = duration(h.unhealthyEdgeInterval);
  if (h.healthyEdgeInterval) out.healthy_edge_interval = duration(h.healthyEdgeInterval);
  if (h.eventLogPath) out.event_log_path = h.eventLogPath;
  if (h.alwaysLogHealthCheckFailures) out.always_log_health_check_failures = true;
  if (h.http) {
    const http: NonNullable<HealthCheck['http_health_check']> = { path: h.http.path };
    if (h.http.host) http.host = h.http.host;
    // Gloo's v2 service_name was a prefix of the x-envoy-upstream-healthchecked-cluster header
    if (h.http.serviceName) http.service_name_matcher = { prefix: h.http.serviceName };
    if (h.http.headersToAdd) {
      http.request_headers_to_add = h.http.headersToAdd.map((a) => ({
        header: { key: a.key, value: a.value },
        append_action: a.append ? 'APPEND_IF_EXISTS_OR_ADD' : 'OVERWRITE_IF_EXISTS_OR_ADD',
      }));
    }
    if (h.http.headersToRemove) http.request_headers_to_remove = h.http.headersToRemove;
    if (h.http.http2) http.codec_client_type = 'HTTP2';
    if (h.http.expectedStatuses) http.expected_statuses = h.http.expectedStatuses;
    if (h.http.method) http.method = h.http.method as RequestMethod;
    out.http_health_check = http;
  } else if (h.tcp) {
    const tcp: NonNullable<HealthCheck['tcp_health_check']> = {};
    if (h.tcp.send) tcp.send = { text: h.tcp.send };
    if (h.tcp.receive) tcp.receive = h.tcp.receive.map((text) => ({ text }));
    out.tcp_health_check = tcp;
  } else if (h.grpc) {
    const grpc: NonNullable<HealthCheck['grpc_health_check']> = {};
    if (h.grpc.serviceName) grpc.service_name = h.grpc.serviceName;
    if (h.grpc.authority) grpc.authority = h.grpc.authority;
    out.grpc_health_check = grpc;
  }
  return out;
}

/** Gloo's camelCase names -> Envoy's fields (the wrapped uint32 ones) */
const OUTLIER_FIELDS: Record<string, keyof OutlierDetection> = {
  consecutive5xx: 'consecutive_5xx',
  maxEjectionPercent: 'max_ejection_percent',
  enforcingConsecutive5xx: 'enforcing_consecutive_5xx',
  enforcingSuccessRate: 'enforcing_success_rate',
  successRateMinimumHosts: 'success_rate_minimum_hosts',
  successRateRequestVolume: 'success_rate_request_volume',
  successRateStdevFactor: 'success_rate_stdev_factor',
  consecutiveGatewayFailure: 'consecutive_gateway_failure',
  enforcingConsecutiveGatewayFailure: 'enforcing_consecutive_gateway_failure',
  consecutiveLocalOriginFailure: 'consecutive_local_origin_failure',
  enforcingConsecutiveLocalOriginFailure: 'enforcing_consecutive_local_origin_failure',
  enforcingLocalOriginSuccessRate: 'enforcing_local_origin_success_rate',
  failurePercentageThreshold: 'failure_percentage_threshold',
  enforcingFailurePercentage: 'enforcing_failure_percentage',
  enforcingFailurePercentageLocalOrigin: 'enforcing_failure_percentage_local_origin',
  failurePercentageMinimumHosts: 'failure_percentage_minimum_hosts',
  failurePercentageRequestVolume: 'failure_percentage_request_volume',
};

function outlierDetection(o: OutlierDetectionIR): OutlierDetection {
  const out: Record<string, unknown> = {};
  if (o.durations.interval) out.interval = duration(o.durations.interval);
  if (o.durations.baseEjectionTime) out.base_ejection_time = duration(o.durations.baseEjectionTime);
  for (const [key, value] of Object.entries(o.values)) {
    const field = OUTLIER_FIELDS[key];
    if (field) out[field] = value;
  }
  if (o.splitExternalLocalOriginErrors !== undefined) out.split_external_local_origin_errors = o.splitExternalLocalOriginErrors;
  return out as OutlierDetection;
}

function circuitBreakers(c: CircuitBreakersIR): NonNullable<Cluster['circuit_breakers']> {
  const t: NonNullable<NonNullable<Cluster['circuit_breakers']>['thresholds']>[number] = {};
  if (c.maxConnections !== undefined) t.max_connections = c.maxConnections;
  if (c.maxPendingRequests !== undefined) t.max_pending_requests = c.maxPendingRequests;
  if (c.maxRequests !== undefined) t.max_requests = c.maxRequests;
  if (c.maxRetries !== undefined) t.max_retries = c.maxRetries;
  return { thresholds: [t] };
}
