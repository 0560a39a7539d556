// Stage 1 for the route and virtual-host options routing owns besides the action: rewrites, timeouts,
// retries and shadowing, with Gloo's defaults and checks (projects/gloo/pkg/plugins/basicroute, shadowing).
import type { Route } from '../../../api/routes.js';
import type { RegexRewrite, Retries } from './schema.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, Problem, ResolveContext, RouteSite } from '../../feature.js';
import type { DurationIR, RegexRewriteIR, RetryPolicyIR, RouteIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { re2CaptureGroups, re2Error } from '../../regex.js';

/** What Envoy's router understands in retry_on (it ignores anything else without a word). */
const RETRY_ON = new Set([
  '5xx',
  'gateway-error',
  'reset',
  'reset-before-request',
  'connect-failure',
  'envoy-ratelimited',
  'retriable-4xx',
  'refused-stream',
  'retriable-status-codes',
  'retriable-headers',
  'http3-post-connect-failure',
  'cancelled',
  'deadline-exceeded',
  'internal',
  'resource-exhausted',
  'unavailable',
]);

/** previousPriorities without updateFrequency: Envoy needs one above 0. */
export const DEFAULT_PRIORITY_UPDATE_FREQUENCY = 2;

/** Options that only shape forwarding to upstreams, so mean nothing on other actions. */
const FORWARDING_OPTIONS = [
  'prefixRewrite',
  'regexRewrite',
  'timeout',
  'idleTimeout',
  'maxStreamDuration',
  'retries',
  'shadowing',
] as const;

export function bindRouteOptions(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink, ctx: ResolveContext): void {
  const opts = route.options;
  if (!opts) return;
  const where = `${site.where}.options`;
  if (ir.action.type !== 'route') {
    const ignored = FORWARDING_OPTIONS.filter((k) => opts[k] !== undefined);
    if (ignored.length) {
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${where}: ${ignored.join(', ')} only apply to routeAction routes; ignored on this one`,
      });
    }
  }
  if (opts.prefixRewrite !== undefined && opts.regexRewrite !== undefined) {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}: set at most one of prefixRewrite, regexRewrite` });
  }
  if (opts.prefixRewrite !== undefined) ir.prefixRewrite = opts.prefixRewrite;
  if (opts.regexRewrite) {
    const rewrite = regexRewrite(opts.regexRewrite, `${where}.regexRewrite`, sink.problems);
    if (rewrite) ir.regexRewrite = rewrite;
  }
  if (opts.idleTimeout !== undefined) ir.idleTimeout = parseDuration(opts.idleTimeout);
  if (opts.maxStreamDuration) {
    const m = opts.maxStreamDuration;
    const msd: NonNullable<RouteIR['maxStreamDuration']> = {};
    if (m.maxStreamDuration !== undefined) msd.maxStreamDuration = parseDuration(m.maxStreamDuration);
    if (m.grpcTimeoutHeaderMax !== undefined) msd.grpcTimeoutHeaderMax = parseDuration(m.grpcTimeoutHeaderMax);
    if (m.grpcTimeoutHeaderOffset !== undefined) msd.grpcTimeoutHeaderOffset = parseDuration(m.grpcTimeoutHeaderOffset);
    ir.maxStreamDuration = msd;
  }
  if (opts.retries) {
    const retries = retryPolicy(opts.retries, `${where}.retries`, sink);
    if (retries) ir.retries = retries;
  }
  if (opts.shadowing) {
    const s = opts.shadowing;
    const cluster = upstreamCluster(s.upstream, `${where}.shadowing.upstream`, site.namespace, ctx, sink.problems);
    const percentage = s.percentage ?? 0;
    if (percentage === 0) {
      sink.warnings.push({ code: 'InvalidSpec', message: `${where}.shadowing.percentage is 0 (the default): no request is mirrored` });
    }
    if (cluster) ir.mirror = { cluster, percentage };
  }
}

/** Gloo's RetryPolicy with its defaults (numRetries 0 or unset: 1) and checks; undefined when it has problems. */
export function retryPolicy(r: Retries, where: string, sink: BindSink): RetryPolicyIR | undefined {
  const problems = sink.problems.length;
  const retryOn = (r.retryOn ?? '')
    .split(',')
    .map((c) => c.trim())
    .filter((c) => c !== '');
  const unknown = retryOn.filter((c) => !RETRY_ON.has(c));
  if (unknown.length) {
    const names = unknown.map((c) => JSON.stringify(c)).join(', ');
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}.retryOn: unknown retry condition ${names} (Envoy knows ${[...RETRY_ON].join(', ')})`,
    });
  }
  if (retryOn.length === 0) {
    sink.warnings.push({
      code: 'InvalidSpec',
      message: `${where}.retryOn is empty: as in Gloo, only requests that carry an x-envoy-retry-on header are retried`,
    });
  }
  if (r.numRetries === 0) {
    sink.warnings.push({ code: 'InvalidSpec', message: `${where}.numRetries 0 means the default, 1 retry (as in Gloo)` });
  }
  const policy: RetryPolicyIR = { retryOn: retryOn.join(','), numRetries: r.numRetries || 1 };
  if (r.perTryTimeout !== undefined) policy.perTryTimeout = parseDuration(r.perTryTimeout);
  if (r.retryBackOff) {
    const { baseInterval, maxInterval } = r.retryBackOff;
    const base = baseInterval === undefined ? undefined : parseDuration(baseInterval);
    const max = maxInterval === undefined ? undefined : parseDuration(maxInterval);
    if (!base) {
      sink.problems.push({ code: 'InvalidSpec', message: `${where}.retryBackOff.baseInterval: required` });
    } else if (millis(base) < 1) {
      sink.problems.push({ code: 'InvalidSpec', message: `${where}.retryBackOff.baseInterval: must be at least 1ms` });
    }
    if (max && millis(max) < 1) {
      sink.problems.push({ code: 'InvalidSpec', message: `${where}.retryBackOff.maxInterval: must be at least 1ms` });
    } else if (base && max && millis(base) > millis(max)) {
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.retryBackOff: baseInterval ${baseInterval} is longer than maxInterval ${maxInterval}`,
      });
    }
    if (base) policy.backOff = max ? { baseInterval: base, maxInterval: max } : { baseInterval: base };
  }
  if (r.previousPriorities) {
    policy.previousPriorities = { updateFrequency: r.previousPriorities.updateFrequency ?? DEFAULT_PRIORITY_UPDATE_FREQUENCY };
  }
  return sink.problems.length > problems ? undefined : policy;
}

/** A regexRewrite whose pattern RE2 accepts and whose substitution only names groups the pattern has. */
export function regexRewrite(r: RegexRewrite, where: string, problems: Problem[]): RegexRewriteIR | undefined {
  const pattern = r.pattern.regex;
  const err = re2Error(pattern);
  if (err) {
    problems.push({ code: 'InvalidRegex', message: `${where}.pattern.regex: invalid regex ${JSON.stringify(pattern)}: ${err}` });
    return undefined;
  }
  const substitution = r.substitution ?? '';
  const bad = substitutionError(substitution, re2CaptureGroups(pattern));
  if (bad) {
    problems.push({ code: 'InvalidSpec', message: `${where}.substitution: ${bad}` });
    return undefined;
  }
  return { pattern, substitution };
}

/** RE2's rewrite rules: a backslash is followed by a group number the pattern has, or by another backslash. */
function substitutionError(substitution: string, groups: number): string | undefined {
  for (let i = 0; i < substitution.length; i++) {
    if (substitution[i] !== '\\') continue;
    const next = substitution[i + 1];
    i++;
    if (next === '\\') continue;
    if (next === undefined || !/[0-9]/.test(next)) {
      return `a backslash must be followed by a group number or another backslash (${JSON.stringify(substitution)})`;
    }
    if (Number(next) > groups) {
      return `\\${next} names a group the pattern does not have (it has ${groups})`;
    }
  }
  return undefined;
}

/** The cluster of an upstream reference, reported as destinations are when missing or rejected. */
function upstreamCluster(
  ref: { name: string; namespace?: string | undefined },
  where: string,
  ns: string,
  ctx: ResolveContext,
  problems: Problem[],
): string | undefined {
  const upNs = ref.namespace ?? ns;
  const key = nsName(upNs, ref.name);
  const upstreams = ctx.upstreams();
  if (upstreams.rejected.has(key)) {
    problems.push({ code: 'UpstreamRejected', message: `${where}: Upstream ${upNs}.${ref.name} is rejected` });
    return undefined;
  }
  const up = upstreams.resolved.get(key);
  if (!up) {
    problems.push({ code: 'UpstreamNotFound', message: `${where}: Upstream ${upNs}.${ref.name} not found` });
    return undefined;
  }
  return up.cluster;
}

function millis(d: DurationIR): number {
  return d.seconds * 1000 + (d.nanos ?? 0) / 1e6;
}
