// Stage 2 for tracing: each route's decorator and sampling, and Envoy's tracing on the HCM of a listener with
// tracing settings (sampling, custom tags, the provider exporting to its collector's cluster) or with traced
// routes (no provider: decisions and decorators only, no spans exported).
import { typed, type HttpConnectionManager, type TypedConfig } from '../../../../envoy/typed.js';
import { fractionalPercent } from '../../envoy-json.js';
import type { RenderPlugin } from '../../feature.js';
import type { ListenerTracingIR, TracingProviderIR } from '../../ir.js';

type HcmTracing = NonNullable<HttpConnectionManager['tracing']>;

function provider(p: TracingProviderIR): NonNullable<HcmTracing['provider']> {
  switch (p.type) {
    case 'opentelemetry':
      return {
        name: 'envoy.tracers.opentelemetry',
        typed_config: typed('type.googleapis.com/envoy.config.trace.v3.OpenTelemetryConfig', {
          grpc_service: { envoy_grpc: { cluster_name: p.cluster, ...(p.authority ? { authority: p.authority } : {}) } },
          service_name: p.serviceName,
        }),
      };
    case 'zipkin':
      return {
        name: 'envoy.tracers.zipkin',
        typed_config: typed('type.googleapis.com/envoy.config.trace.v3.ZipkinConfig', {
          collector_cluster: p.cluster,
          collector_endpoint: p.endpoint,
          collector_endpoint_version: p.version,
          ...(p.traceId128bit !== undefined ? { trace_id_128bit: p.traceId128bit } : {}),
          ...(p.sharedSpanContext !== undefined ? { shared_span_context: p.sharedSpanContext } : {}),
        }),
      };
    case 'datadog':
      return {
        name: 'envoy.tracers.datadog',
        typed_config: typed('type.googleapis.com/envoy.config.trace.v3.DatadogConfig', {
          collector_cluster: p.cluster,
          service_name: p.serviceName,
        }),
      };
  }
}

function listenerTracing(t: ListenerTracingIR): HcmTracing {
  const out: HcmTracing = {};
  if (t.clientSampling !== undefined) out.client_sampling = { value: t.clientSampling };
  if (t.randomSampling !== undefined) out.random_sampling = { value: t.randomSampling };
  if (t.overallSampling !== undefined) out.overall_sampling = { value: t.overallSampling };
  if (t.verbose) out.verbose = true;
  if (t.spawnUpstreamSpan !== undefined) out.spawn_upstream_span = t.spawnUpstreamSpan;
  const tags = [
    ...t.requestHeadersForTags.map((h) => ({ tag: h, request_header: { name: h } })),
    ...t.literalTags.map((l) => ({ tag: l.tag, literal: { value: l.value } })),
    ...t.environmentTags.map((e) => ({
      tag: e.tag,
      environment: { name: e.name, ...(e.defaultValue !== undefined ? { default_value: e.defaultValue } : {}) },
    })),
    ...(t.metadataTags ?? []).map((m) => ({
      tag: m.tag,
      metadata: {
        kind: m.kind === 'host' ? { host: {} } : { request: {} },
        metadata_key: { key: m.namespace, path: m.path.map((key) => ({ key })) },
        ...(m.defaultValue !== undefined ? { default_value: m.defaultValue } : {}),
      },
    })),
  ];
  if (tags.length) out.custom_tags = tags;
  if (t.provider) out.provider = provider(t.provider);
  return out;
}

export const tracingRender: RenderPlugin = {
  patchListener(ir, _listener, filters) {
    const traced = ir.tracing !== undefined || ir.virtualHosts.some((vh) => vh.routes.some((r) => r.tracing));
    if (!traced) return;
    for (const f of filters) {
      if (f.name !== 'envoy.filters.network.http_connection_manager' || !f.typed_config) continue;
      const hcm = f.typed_config as TypedConfig & HttpConnectionManager;
      hcm.tracing = ir.tracing ? listenerTracing(ir.tracing) : {};
    }
  },
  patchRoute(ir, route) {
    const t = ir.tracing;
    if (!t) return;
    route.tracing = {
      client_sampling: fractionalPercent(t.clientSampling),
      random_sampling: fractionalPercent(t.randomSampling),
      overall_sampling: fractionalPercent(t.overallSampling),
    };
    if (t.operation !== undefined) {
      route.decorator = t.propagate === undefined ? { operation: t.operation } : { operation: t.operation, propagate: t.propagate };
    }
  },
};
