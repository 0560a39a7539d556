// Stage 1 for an Upstream's healthChecks, outlierDetection, circuitBreakers and ignoreHealthOnHostRemoval:
// the schema checked shapes and ranges; here durations are parsed and what Envoy would refuse is a problem.
import type { ResourceRef } from '../../../api/primitives.js';
import type { Secret, Upstream } from '../../../api/resources.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem } from '../../feature.js';
import { nsName } from '../../names.js';
import { secretValue } from '../../secrets.js';
import type { CircuitBreakersIR, DurationIR, HealthCheckIR, OutlierDetectionIR, UpstreamIR } from '../../ir.js';
import { HEALTH_CHECK_METHODS, type CircuitBreakerConfig, type HealthCheck, type OutlierDetection } from './schema.js';

// RFC 9110 token characters: what Envoy accepts as a header name
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const BAD_VALUE = /[\r\n\0]/;
// Envoy formats health check headers as route headers: %OPERATOR% values, %% a literal %
const OPERATOR = /%(%|[A-Z_][A-Z0-9_]*(\([^)]*\))?(:\d+)?%)/g;

export function resolveResilience(
  upstream: Upstream,
  defaults: CircuitBreakerConfig | undefined,
  secrets: ReadonlyMap<string, Secret> = new Map(),
): Attempt<Partial<UpstreamIR>> {
  const spec = upstream.spec;
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const ir: Partial<UpstreamIR> = {};
  if (spec.healthChecks?.length) {
    const refs = { namespace: upstream.metadata.namespace, secrets };
    ir.healthChecks = spec.healthChecks.map((h, i) => healthCheck(h, `healthChecks[${i}]`, refs, problems));
    // Gloo's static plugin: each host is health-checked by its own name unless a check says otherwise
    const named = spec.healthChecks.some((h) => h.httpHealthCheck?.host || h.grpcHealthCheck?.authority);
    if (spec.static && !named) ir.healthCheckByAddress = true;
  }
  if (spec.outlierDetection) ir.outlierDetection = outlierDetection(spec.outlierDetection, problems);
  const breakers = spec.circuitBreakers ? circuitBreakers(spec.circuitBreakers) : defaults && circuitBreakers(defaults, true);
  if (breakers) ir.circuitBreakers = breakers;
  if (spec.ignoreHealthOnHostRemoval !== undefined) ir.ignoreHealthOnHostRemoval = spec.ignoreHealthOnHostRemoval;
  if (spec.ignoreHealthOnHostRemoval && !spec.healthChecks?.length && !spec.outlierDetection) {
    warnings.push({ code: 'InvalidSpec', message: 'ignoreHealthOnHostRemoval: changes nothing without healthChecks or outlierDetection' });
  }
  return problems.length ? { problems, warnings } : { ir, problems, warnings };
}

function positive(text: string, where: string, problems: Problem[]): DurationIR {
  const d = parseDuration(text);
  if (d.seconds === 0 && !d.nanos) problems.push({ code: 'InvalidSpec', message: `${where}: must be above 0` });
  return d;
}

/** Gloo reads header secrets of these types (a Secret without a type is Opaque). */
const HEADER_SECRET_TYPES = ['gloo.solo.io/header', 'Opaque'];

interface SecretRefs {
  namespace: string;
  secrets: ReadonlyMap<string, Secret>;
}

/** A header per key of the Secret, its value taken literally (a % is written %% for Envoy's formatter). */
function secretHeaders(
  ref: ResourceRef,
  where: string,
  refs: SecretRefs,
  append: boolean,
  problems: Problem[],
): { key: string; value: string; append: boolean }[] {
  const ns = ref.namespace || refs.namespace;
  const name = `${ns}.${ref.name}`;
  const secret = refs.secrets.get(nsName(ns, ref.name));
  if (!secret) {
    problems.push({ code: 'SecretNotFound', message: `${where}: Secret ${name} not found` });
    return [];
  }
  const type = secret.spec.type ?? 'Opaque';
  if (!HEADER_SECRET_TYPES.includes(type)) {
    problems.push({
      code: 'InvalidSpec',
      message: `${where}: Secret ${name} has type ${type}; header secrets have type gloo.solo.io/header or Opaque`,
    });
    return [];
  }
  const keys = [...new Set([...Object.keys(secret.spec.data ?? {}), ...Object.keys(secret.spec.stringData ?? {})])].sort();
  if (!keys.length) problems.push({ code: 'InvalidSpec', message: `${where}: Secret ${name} has no data: no header to add` });
  const out: { key: string; value: string; append: boolean }[] = [];
  for (const key of keys) {
    const value = secretValue(secret, key) ?? '';
    if (!HEADER_NAME.test(key)) problems.push({ code: 'InvalidSpec', message: `${where}: Secret ${name} key ${key} is not a header name` });
    else if (BAD_VALUE.test(value)) {
      problems.push({ code: 'InvalidSpec', message: `${where}: the value of Secret ${name} key ${key} has a line break or NUL` });
    } else out.push({ key, value: value.replaceAll('%', '%%'), append });
  }
  return out;
}

function healthCheck(h: HealthCheck, where: string, refs: SecretRefs, problems: Problem[]): HealthCheckIR {
  const ir: HealthCheckIR = {
    timeout: positive(h.timeout, `${where}.timeout`, problems),
    interval: positive(h.interval, `${where}.interval`, problems),
    unhealthyThreshold: h.unhealthyThreshold,
    healthyThreshold: h.healthyThreshold,
  };
  if (h.initialJitter !== undefined) ir.initialJitter = parseDuration(h.initialJitter);
  if (h.intervalJitter !== undefined) ir.intervalJitter = parseDuration(h.intervalJitter);
  if (h.intervalJitterPercent !== undefined) ir.intervalJitterPercent = h.intervalJitterPercent;
  if (h.reuseConnection !== undefined) ir.reuseConnection = h.reuseConnection;
  for (const field of ['noTrafficInterval', 'unhealthyInterval', 'unhealthyEdgeInterval', 'healthyEdgeInterval'] as const) {
    const text = h[field];
    if (text !== undefined) ir[field] = positive(text, `${where}.${field}`, problems);
  }
  if (h.eventLogPath) ir.eventLogPath = h.eventLogPath;
  if (h.alwaysLogHealthCheckFailures) ir.alwaysLogHealthCheckFailures = true;
  if (h.httpHealthCheck) {
    const http = h.httpHealthCheck;
    const at = `${where}.httpHealthCheck`;
    const out: NonNullable<HealthCheckIR['http']> = { path: http.path };
    if (BAD_VALUE.test(http.path)) problems.push({ code: 'InvalidSpec', message: `${at}.path: has a line break or NUL` });
    if (http.host) out.host = http.host;
    if (http.serviceName) out.serviceName = http.serviceName;
    const add: NonNullable<NonNullable<HealthCheckIR['http']>['headersToAdd']> = [];
    (http.requestHeadersToAdd ?? []).forEach((o, i) => {
      const hat = `${at}.requestHeadersToAdd[${i}]`;
      if (o.header && o.headerSecretRef) {
        problems.push({ code: 'InvalidSpec', message: `${hat}: set exactly one of header, headerSecretRef` });
        return;
      }
      if (o.headerSecretRef) {
        add.push(...secretHeaders(o.headerSecretRef, `${hat}.headerSecretRef`, refs, o.append ?? true, problems));
        return;
      }
      if (!o.header) {
        problems.push({ code: 'InvalidSpec', message: `${hat}: set header or headerSecretRef` });
        return;
      }
      const value = o.header.value ?? '';
      if (!HEADER_NAME.test(o.header.key)) problems.push({ code: 'InvalidSpec', message: `${hat}.header.key: not a header name` });
      if (BAD_VALUE.test(value)) problems.push({ code: 'InvalidSpec', message: `${hat}.header.value: has a line break or NUL` });
      else if (value.replace(OPERATOR, '').includes('%')) {
        problems.push({
          code: 'InvalidSpec',
          message: `${hat}.header.value: a % starts one of Envoy's %OPERATOR% values; write a literal % as %%`,
        });
      }
      add.push({ key: o.header.key, value, append: o.append ?? true });
    });
    if (add.length) out.headersToAdd = add;
    (http.requestHeadersToRemove ?? []).forEach((name, i) => {
      if (!HEADER_NAME.test(name) || name.toLowerCase() === 'host') {
        problems.push({ code: 'InvalidSpec', message: `${at}.requestHeadersToRemove[${i}]: ${name} cannot be removed` });
      }
    });
    if (http.requestHeadersToRemove?.length) out.headersToRemove = http.requestHeadersToRemove;
    if (http.useHttp2) out.http2 = true;
    if (http.expectedStatuses?.length) out.expectedStatuses = http.expectedStatuses.map((r) => ({ start: r.start, end: r.end }));
    if (http.method !== undefined) {
      const method = typeof http.method === 'number' ? HEALTH_CHECK_METHODS[http.method] : http.method;
      if (method && method !== 'METHOD_UNSPECIFIED') out.method = method;
    }
    ir.http = out;
  } else if (h.tcpHealthCheck) {
    const tcp = h.tcpHealthCheck;
    ir.tcp = {};
    if (tcp.send) ir.tcp.send = tcp.send.text;
    if (tcp.receive?.length) ir.tcp.receive = tcp.receive.map((p) => p.text);
  } else if (h.grpcHealthCheck) {
    const grpc = h.grpcHealthCheck;
    ir.grpc = {};
    if (grpc.serviceName) ir.grpc.serviceName = grpc.serviceName;
    if (grpc.authority) ir.grpc.authority = grpc.authority;
  }
  return ir;
}

function outlierDetection(o: OutlierDetection, problems: Problem[]): OutlierDetectionIR {
  const ir: OutlierDetectionIR = { durations: {}, values: {} };
  if (o.interval !== undefined) ir.durations.interval = positive(o.interval, 'outlierDetection.interval', problems);
  if (o.baseEjectionTime !== undefined)
    ir.durations.baseEjectionTime = positive(o.baseEjectionTime, 'outlierDetection.baseEjectionTime', problems);
  for (const [key, value] of Object.entries(o)) if (typeof value === 'number') ir.values[key] = value;
  if (o.splitExternalLocalOriginErrors !== undefined) ir.splitExternalLocalOriginErrors = o.splitExternalLocalOriginErrors;
  return ir;
}

function circuitBreakers(c: CircuitBreakerConfig, fromSettings = false): CircuitBreakersIR | undefined {
  const ir: CircuitBreakersIR = {};
  if (c.maxConnections !== undefined) ir.maxConnections = c.maxConnections;
  if (c.maxPendingRequests !== undefined) ir.maxPendingRequests = c.maxPendingRequests;
  if (c.maxRequests !== undefined) ir.maxRequests = c.maxRequests;
  if (c.maxRetries !== undefined) ir.maxRetries = c.maxRetries;
  if (fromSettings) {
    if (Object.keys(ir).length === 0) return undefined;
    ir.fromSettings = true;
  }
  return ir;
}
