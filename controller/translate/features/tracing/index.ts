// Tracing, as Gloo's tracing plugin. Routes: `options.tracing` -> the route's decorator (its span's name,
// sent back to the client as x-envoy-decorator-operation unless propagate is false) and sampling
// percentages. Listeners: a Gateway's `httpConnectionManagerSettings.tracing` -> Envoy's HCM tracing
// (sampling, custom tags) and its provider: OpenTelemetry (OTLP over gRPC), Zipkin or Datadog, exporting
// to the cluster of an Upstream. A listener with traced routes and no tracing settings gets Envoy's
// tracing turned on without a provider, which makes the routes' decisions and decorators take effect.
import type { Gateway } from '../../../api/resources.js';
import { enumName, type BindSink, type Feature, type UpstreamLookup } from '../../feature.js';
import type { ListenerTracingIR, RouteTracingIR, TracingProviderIR, UpstreamIR } from '../../ir.js';
import { tracingRender } from './render.js';
import { TRACING_METADATA_KINDS, ZIPKIN_VERSIONS, type ListenerTracing } from './schema.js';

/** Gloo's default for each sampling percentage left out. */
const ALL = 100;

interface CollectorRef {
  collectorUpstreamRef?: { name: string; namespace?: string | undefined } | undefined;
  clusterName?: string | undefined;
}

/** The cluster of a provider's collector: an Upstream's (by reference, or by the cluster name it renders). */
function collectorCluster(
  c: CollectorRef,
  where: string,
  gw: Gateway,
  upstreams: UpstreamLookup,
  sink: BindSink,
  grpc: boolean,
): string | undefined {
  let upstream: UpstreamIR | undefined;
  if (c.collectorUpstreamRef) {
    const ref = c.collectorUpstreamRef;
    const key = `${ref.namespace ?? gw.metadata.namespace}/${ref.name}`;
    upstream = upstreams.resolved.get(key);
    if (!upstream) {
      const why = upstreams.rejected.has(key) ? 'is rejected' : 'is missing or rejected';
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${where}.collectorUpstreamRef: Upstream ${key} ${why}; spans are not exported (tracing without a provider)`,
      });
      return undefined;
    }
  } else {
    upstream = [...upstreams.resolved.values()].find((u) => u.cluster === c.clusterName);
    if (!upstream) {
      sink.warnings.push({
        code: 'InvalidSpec',
        message:
          `${where}.clusterName: no Upstream renders cluster "${c.clusterName}" (Legate names an Upstream's cluster ` +
          '"<name>_<namespace>"); spans are not exported (tracing without a provider)',
      });
      return undefined;
    }
  }
  if (grpc && !upstream.http2) {
    const { namespace, name } = upstream.source;
    sink.warnings.push({
      code: 'InvalidSpec',
      message: `${where}: Upstream ${namespace}/${name} speaks gRPC (OTLP) only with useHttp2: true; spans are not exported`,
    });
    return undefined;
  }
  return upstream.cluster;
}

function provider(
  t: ListenerTracing,
  where: string,
  gw: Gateway,
  upstreams: UpstreamLookup,
  sink: BindSink,
): TracingProviderIR | undefined {
  if (t.openTelemetryConfig) {
    const o = t.openTelemetryConfig;
    const cluster = collectorCluster(o, `${where}.openTelemetryConfig`, gw, upstreams, sink, true);
    if (!cluster) return undefined;
    // Gloo's default: named after the Gateway (its listener) and its namespace
    const serviceName = o.serviceName || `${gw.metadata.name}.${gw.metadata.namespace}`;
    const authority = o.grpcService?.authority;
    return { type: 'opentelemetry', cluster, serviceName, ...(authority ? { authority } : {}) };
  }
  if (t.zipkinConfig) {
    const z = t.zipkinConfig;
    const cluster = collectorCluster(z, `${where}.zipkinConfig`, gw, upstreams, sink, false);
    if (!cluster) return undefined;
    const v = z.collectorEndpointVersion;
    const version = (typeof v === 'number' ? ZIPKIN_VERSIONS[v] : v) === 'HTTP_PROTO' ? 'HTTP_PROTO' : 'HTTP_JSON';
    return {
      type: 'zipkin',
      cluster,
      endpoint: z.collectorEndpoint,
      version,
      ...(z.traceId128bit !== undefined ? { traceId128bit: z.traceId128bit } : {}),
      ...(z.sharedSpanContext !== undefined ? { sharedSpanContext: z.sharedSpanContext } : {}),
    };
  }
  if (t.datadogConfig) {
    const d = t.datadogConfig;
    const cluster = collectorCluster(d, `${where}.datadogConfig`, gw, upstreams, sink, false);
    if (!cluster) return undefined;
    return { type: 'datadog', cluster, serviceName: d.serviceName };
  }
  return undefined;
}

function bindListenerTracing(gw: Gateway, upstreams: UpstreamLookup, sink: BindSink): ListenerTracingIR | undefined {
  const tracing = gw.spec.httpGateway?.options?.httpConnectionManagerSettings?.tracing;
  if (!tracing) return undefined;
  const where = 'spec.httpGateway.options.httpConnectionManagerSettings.tracing';
  const t: ListenerTracingIR = {
    requestHeadersForTags: tracing.requestHeadersForTags ?? [],
    environmentTags: (tracing.environmentVariablesForTags ?? []).map((e) => ({ ...e })),
    literalTags: (tracing.literalsForTags ?? []).map((l) => ({ ...l })),
  };
  if (tracing.metadataForTags?.length) {
    t.metadataTags = tracing.metadataForTags.map((m) => {
      const d = m.value.nestedFieldDelimiter;
      const path = d ? m.value.key.split(d) : [m.value.key];
      const kind = enumName(TRACING_METADATA_KINDS, m.kind) === 'ENDPOINT' ? ('host' as const) : ('request' as const);
      return {
        tag: m.tag,
        kind,
        namespace: m.value.namespace,
        path,
        ...(m.defaultValue !== undefined ? { defaultValue: m.defaultValue } : {}),
      };
    });
  }
  if (tracing.verbose !== undefined) t.verbose = tracing.verbose;
  if (tracing.spawnUpstreamSpan !== undefined) t.spawnUpstreamSpan = tracing.spawnUpstreamSpan;
  const p = tracing.tracePercentages;
  if (p?.clientSamplePercentage !== undefined) t.clientSampling = p.clientSamplePercentage;
  if (p?.randomSamplePercentage !== undefined) t.randomSampling = p.randomSamplePercentage;
  if (p?.overallSamplePercentage !== undefined) t.overallSampling = p.overallSamplePercentage;
  // Envoy keeps the sampling decision in the x-request-id; without it, random sampling traces every request
  const uuid = gw.spec.httpGateway?.options?.httpConnectionManagerSettings?.uuidRequestIdConfig;
  if (uuid?.useRequestIdForTraceSampling === false && (p?.randomSamplePercentage ?? 100) < 100) {
    sink.warnings.push({
      code: 'InvalidSpec',
      message:
        `${where}.tracePercentages.randomSamplePercentage: with uuidRequestIdConfig.useRequestIdForTraceSampling false, ` +
        'Envoy traces every request (it samples by the x-request-id it is told not to use)',
    });
  }
  const exporter = provider(tracing, where, gw, upstreams, sink);
  if (exporter) t.provider = exporter;
  return t;
}

export const tracingFeature: Feature = {
  name: 'tracing',
  kinds: [],
  resolve(ctx) {
    return {
      bindGateway(gw, ir, sink) {
        const t = bindListenerTracing(gw, ctx.upstreams(), sink);
        if (t) ir.tracing = t;
      },
      bindRoute(route, ir, site, sink) {
        const t = route.options?.tracing;
        if (!t) return;
        const p = t.tracePercentages;
        const tracing: RouteTracingIR = {
          clientSampling: p?.clientSamplePercentage ?? ALL,
          randomSampling: p?.randomSamplePercentage ?? ALL,
          overallSampling: p?.overallSamplePercentage ?? ALL,
        };
        if (t.routeDescriptor) {
          tracing.operation = t.routeDescriptor;
          if (t.propagate !== undefined) tracing.propagate = t.propagate;
        } else if (t.propagate !== undefined) {
          sink.warnings.push({
            code: 'InvalidSpec',
            message: `${site.where}.options.tracing.propagate: has no effect without routeDescriptor (as in Gloo)`,
          });
        }
        ir.tracing = tracing;
      },
    };
  },
  render: tracingRender,
};
