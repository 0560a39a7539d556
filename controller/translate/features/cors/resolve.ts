// Stage 1 for cors: `cors` and `csrf` options -> IR, with every regex checked by RE2 and every problem
// reported at its field. Gloo's semantics: a route's CORS fields override the virtual host's field by
// field (Envoy's own merge), except exposeHeaders under corsPolicyMergeSettings UNION, which joins them.
import type { Gateway, VirtualService } from '../../../api/resources.js';
import type { Route } from '../../../api/routes.js';
import type { BindSink, FeatureBinding, Problem, RouteSite } from '../../feature.js';
import type { CorsIR, CsrfIR, ListenerIR, RouteIR, RuntimeFractionIR, VirtualHostIR } from '../../ir.js';
import { re2Error } from '../../regex.js';
import {
  DENOMINATORS,
  MAX_AGE_PATTERN,
  MERGE_STRATEGIES,
  type CorsPolicy,
  type CsrfPolicy,
  type RuntimeFractionalPercent,
} from './schema.js';

const UNIT_SECONDS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86400 };

export function corsBinding(): FeatureBinding {
  return {
    bindRoute(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink): void {
      const opts = route.options;
      if (opts?.cors) {
        const where = `${site.where}.options.cors`;
        if (ir.action.type === 'redirect' && !opts.cors.disableForRoute) {
          // Envoy's CORS filter skips redirects (no route entry); Gloo refuses this too
          sink.problems.push({ code: 'InvalidSpec', message: `${where}: CORS cannot apply to a route with a redirectAction` });
        } else {
          const cors = corsPolicy(opts.cors, where, 'route', sink);
          if (cors) ir.cors = cors;
        }
      }
      if (opts?.csrf) {
        const csrf = csrfPolicy(opts.csrf, `${site.where}.options.csrf`, sink);
        if (csrf) ir.csrf = csrf;
      }
      // validated whether or not the destination is served (a weight of 0 leaves it out)
      (route.routeAction?.multi?.destinations ?? []).forEach((d, j) => {
        if (!d.options?.csrf) return;
        const csrf = csrfPolicy(d.options.csrf, `${site.where}.routeAction.multi.destinations[${j}].options.csrf`, sink);
        const cluster = ir.action.type === 'route' ? ir.action.clusters.find((c) => c.destination === j) : undefined;
        if (csrf && cluster) cluster.csrf = csrf;
      });
    },
    bindGateway(gw: Gateway, ir: ListenerIR, sink: BindSink): void {
      const csrf = gw.spec.httpGateway?.options?.csrf;
      if (!csrf) return;
      const policy = csrfPolicy(csrf, 'httpGateway.options.csrf', sink);
      if (policy) ir.csrf = policy;
    },
    bindVirtualHost(vs: VirtualService, ir: VirtualHostIR, sink: BindSink): void {
      const opts = vs.spec.virtualHost.options;
      if (opts?.cors) {
        const cors = corsPolicy(opts.cors, 'virtualHost.options.cors', 'virtualHost', sink);
        if (cors) ir.cors = cors;
      }
      if (opts?.csrf) {
        const csrf = csrfPolicy(opts.csrf, 'virtualHost.options.csrf', sink);
        if (csrf) ir.csrf = csrf;
      }
      const merge = opts?.corsPolicyMergeSettings?.exposeHeaders;
      const strategy = typeof merge === 'number' ? MERGE_STRATEGIES[merge] : merge;
      if (strategy === 'UNION' && ir.cors?.exposeHeaders) {
        const shared = ir.cors.exposeHeaders;
        for (const route of ir.routes) {
          if (!route.cors || route.cors.disabled) continue;
          route.cors.exposeHeaders = [...new Set([...shared, ...(route.cors.exposeHeaders ?? [])])];
        }
      }
    },
  };
}

function corsPolicy(policy: CorsPolicy, where: string, on: 'route' | 'virtualHost', sink: BindSink): CorsIR | undefined {
  const problems: Problem[] = [];
  const ir: CorsIR = {};
  const disabled = policy.disableForRoute === true && on === 'route';
  if (policy.disableForRoute && on === 'virtualHost') {
    sink.warnings.push({
      code: 'InvalidSpec',
      message: `${where}.disableForRoute: only applies to a route's policy; ignored on the virtual host`,
    });
  }
  const origins = policy.allowOrigin ?? [];
  const regexes = policy.allowOriginRegex ?? [];
  if (!origins.length && !regexes.length && !disabled) {
    problems.push({ code: 'InvalidSpec', message: `${where}: set at least one of allowOrigin, allowOriginRegex` });
  }
  regexes.forEach((regex, i) => {
    const err = re2Error(regex);
    if (err) problems.push({ code: 'InvalidRegex', message: `${where}.allowOriginRegex[${i}]: invalid RE2 regex "${regex}": ${err}` });
  });
  if (origins.length) ir.allowOrigin = [...origins];
  if (regexes.length) ir.allowOriginRegex = [...regexes];
  if (policy.allowMethods?.length) ir.allowMethods = [...policy.allowMethods];
  if (policy.allowHeaders?.length) ir.allowHeaders = [...policy.allowHeaders];
  if (policy.exposeHeaders?.length) ir.exposeHeaders = [...policy.exposeHeaders];
  if (policy.maxAge !== undefined) {
    const seconds = maxAgeSeconds(policy.maxAge);
    if (seconds === undefined) {
      problems.push({ code: 'InvalidSpec', message: `${where}.maxAge: "${policy.maxAge}" is not a whole number of seconds` });
    } else ir.maxAge = seconds;
  }
  if (policy.allowCredentials) ir.allowCredentials = true;
  sink.problems.push(...problems);
  if (problems.length) return undefined;
  if (!disabled) return ir;
  if (Object.keys(ir).length) {
    sink.warnings.push({ code: 'InvalidSpec', message: `${where}: disableForRoute turns CORS off here; the other fields have no effect` });
  }
  return { disabled: true };
}

/** "86400", "1d", "1.5h", "10m" -> seconds; undefined when it is not whole seconds. */
function maxAgeSeconds(text: string): number | undefined {
  const m = MAX_AGE_PATTERN.exec(text);
  if (!m) return undefined;
  const seconds = m[1] !== undefined ? Number(m[1]) : Number(m[2]) * (UNIT_SECONDS[m[3] ?? 's'] ?? 1);
  return Number.isSafeInteger(seconds) ? seconds : undefined;
}

function csrfPolicy(policy: CsrfPolicy, where: string, sink: BindSink): CsrfIR | undefined {
  const problems: Problem[] = [];
  // as Gloo: no filterEnabled means 0% enforced (a shadow-only policy)
  const ir: CsrfIR = { filterEnabled: fraction(policy.filterEnabled), additionalOrigins: [] };
  if (policy.shadowEnabled) ir.shadowEnabled = fraction(policy.shadowEnabled);
  (policy.additionalOrigins ?? []).forEach((m, i) => {
    const at = `${where}.additionalOrigins[${i}]`;
    const ignoreCase = m.ignoreCase ? { ignoreCase: true } : {};
    const literal = m.exact ?? m.prefix;
    if (literal?.includes('://')) {
      // Envoy matches the Origin's host[:port] (`app.example.com`), never its scheme
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${at}: "${literal}" never matches: additional origins are compared with the origin's host[:port], without a scheme`,
      });
    }
    if (m.exact !== undefined) ir.additionalOrigins.push({ exact: m.exact, ...ignoreCase });
    else if (m.prefix !== undefined) ir.additionalOrigins.push({ prefix: m.prefix, ...ignoreCase });
    else if (m.suffix !== undefined) ir.additionalOrigins.push({ suffix: m.suffix, ...ignoreCase });
    else if (m.safeRegex) {
      const err = re2Error(m.safeRegex.regex);
      if (err) problems.push({ code: 'InvalidRegex', message: `${at}.safeRegex.regex: invalid RE2 regex "${m.safeRegex.regex}": ${err}` });
      if (m.safeRegex.googleRe2?.maxProgramSize !== undefined) {
        sink.warnings.push({
          code: 'NotSupported',
          message: `${at}.safeRegex.googleRe2.maxProgramSize: deprecated in Envoy and ignored (as Gloo does); the regex is checked here`,
        });
      }
      if (m.ignoreCase) {
        sink.warnings.push({ code: 'InvalidSpec', message: `${at}.ignoreCase: has no effect on safeRegex (as in Envoy)` });
      }
      ir.additionalOrigins.push({ regex: m.safeRegex.regex });
    }
  });
  sink.problems.push(...problems);
  return problems.length ? undefined : ir;
}

function fraction(p: RuntimeFractionalPercent | undefined): RuntimeFractionIR {
  const d = p?.defaultValue?.denominator;
  const out: RuntimeFractionIR = {
    numerator: p?.defaultValue?.numerator ?? 0,
    denominator: (typeof d === 'number' ? DENOMINATORS[d] : d) ?? 'HUNDRED',
  };
  if (p?.runtimeKey) out.runtimeKey = p.runtimeKey;
  return out;
}
