// Stage 1 for an upstream's connection and protocol options and its failover priorities (the schema checked ranges).
import type { UpstreamSpec } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { Problem } from '../../feature.js';
import type { FailoverPriorityIR, UpstreamConnectionIR } from '../../ir.js';
import { HEADERS_WITH_UNDERSCORES_ACTIONS, PROTOCOL_SELECTIONS, type Failover } from './schema.js';

/** A duration in whole seconds, rounded up (TCP keepalive takes seconds, as Gloo documents). */
function ceilSeconds(d: string): number {
  const { seconds, nanos } = parseDuration(d);
  return seconds + (nanos ? 1 : 0);
}

const enumName = <N extends readonly string[]>(names: N, v: N[number] | number): N[number] => (typeof v === 'number' ? names[v]! : v);

/** connectionConfig (besides connectTimeout), the HTTP/2 options and protocolSelection, or undefined when none is set. */
export function connectionOf(spec: UpstreamSpec, warnings: Problem[]): UpstreamConnectionIR | undefined {
  const ir: UpstreamConnectionIR = {};
  const c = spec.connectionConfig;
  if (c?.maxRequestsPerConnection) ir.maxRequestsPerConnection = c.maxRequestsPerConnection;
  const ka = c?.tcpKeepalive;
  if (ka) {
    ir.tcpKeepalive = {
      ...(ka.keepaliveProbes ? { probes: ka.keepaliveProbes } : {}),
      ...(ka.keepaliveTime ? { timeSeconds: ceilSeconds(ka.keepaliveTime) } : {}),
      ...(ka.keepaliveInterval ? { intervalSeconds: ceilSeconds(ka.keepaliveInterval) } : {}),
    };
  }
  if (c?.perConnectionBufferLimitBytes !== undefined) ir.perConnectionBufferLimitBytes = c.perConnectionBufferLimitBytes;
  const common = c?.commonHttpProtocolOptions;
  if (common?.idleTimeout !== undefined) ir.idleTimeout = parseDuration(common.idleTimeout);
  if (common?.maxHeadersCount) ir.maxHeadersCount = common.maxHeadersCount;
  if (common?.maxStreamDuration !== undefined) ir.maxStreamDuration = parseDuration(common.maxStreamDuration);
  if (common?.headersWithUnderscoresAction !== undefined) {
    ir.headersWithUnderscoresAction = enumName(HEADERS_WITH_UNDERSCORES_ACTIONS, common.headersWithUnderscoresAction);
  }
  const h1 = c?.http1ProtocolOptions;
  if (h1) {
    const http1: NonNullable<UpstreamConnectionIR['http1']> = {};
    if (h1.enableTrailers) http1.enableTrailers = true;
    if (h1.properCaseHeaderKeyFormat) http1.headerKeyFormat = 'properCase';
    if (h1.preserveCaseHeaderKeyFormat) http1.headerKeyFormat = 'preserveCase';
    if (h1.overrideStreamErrorOnInvalidHttpMessage !== undefined) {
      http1.overrideStreamErrorOnInvalidHttpMessage = h1.overrideStreamErrorOnInvalidHttpMessage;
    }
    if (Object.keys(http1).length) ir.http1 = http1;
    if (spec.useHttp2 && spec.protocolSelection === undefined) {
      warnings.push({
        code: 'InvalidSpec',
        message: 'connectionConfig.http1ProtocolOptions: useHttp2 makes Envoy speak HTTP/2 to this upstream, so they change nothing',
      });
    }
  }
  const http2: NonNullable<UpstreamConnectionIR['http2']> = {};
  if (spec.initialStreamWindowSize !== undefined) http2.initialStreamWindowSize = spec.initialStreamWindowSize;
  if (spec.initialConnectionWindowSize !== undefined) http2.initialConnectionWindowSize = spec.initialConnectionWindowSize;
  if (spec.maxConcurrentStreams !== undefined) http2.maxConcurrentStreams = spec.maxConcurrentStreams;
  if (spec.overrideStreamErrorOnInvalidHttpMessage !== undefined) {
    http2.overrideStreamErrorOnInvalidHttpMessage = spec.overrideStreamErrorOnInvalidHttpMessage;
  }
  const downstream =
    spec.protocolSelection !== undefined && enumName(PROTOCOL_SELECTIONS, spec.protocolSelection) === 'USE_DOWNSTREAM_PROTOCOL';
  if (downstream) ir.useDownstreamProtocol = true;
  if (Object.keys(http2).length) {
    ir.http2 = http2;
    if (!spec.useHttp2 && !downstream) {
      warnings.push({
        code: 'InvalidSpec',
        message:
          'initialStreamWindowSize, initialConnectionWindowSize, maxConcurrentStreams, overrideStreamErrorOnInvalidHttpMessage: ' +
          'HTTP/2 options, and this upstream speaks HTTP/1.1 (set useHttp2 or protocolSelection USE_DOWNSTREAM_PROTOCOL)',
      });
    }
  }
  return Object.keys(ir).length ? ir : undefined;
}

/** failover -> priorities 1, 2, … */
export function failoverOf(failover: Failover): FailoverPriorityIR[] {
  return failover.prioritizedLocalities.map((p) => ({
    localities: p.localityEndpoints.map((l) => ({
      ...(l.locality && Object.values(l.locality).some(Boolean) ? { locality: l.locality } : {}),
      ...(l.loadBalancingWeight !== undefined ? { weight: l.loadBalancingWeight } : {}),
      endpoints: l.lbEndpoints.map((e) => {
        const hc = e.healthCheckConfig;
        return {
          address: e.address,
          port: e.port,
          ...(e.loadBalancingWeight !== undefined ? { weight: e.loadBalancingWeight } : {}),
          ...(hc && (hc.portValue || hc.hostname)
            ? { healthCheck: { ...(hc.portValue ? { port: hc.portValue } : {}), ...(hc.hostname ? { hostname: hc.hostname } : {}) } }
            : {}),
        };
      }),
    })),
  }));
}
