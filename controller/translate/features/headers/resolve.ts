// Stage 1 for headers: headerManipulation (virtual host, route, weighted destination) with its Secret
// references, and the route's Host rewrites, checked the way Gloo and Envoy check them, so what Envoy
// would refuse is a status reason instead of a NACK. Never put a secret's value in a message.
import type { Route } from '../../../api/routes.js';
import type { Secret, VirtualService } from '../../../api/resources.js';
import type { BindSink, FeatureBinding, ResolveContext, RouteSite } from '../../feature.js';
import type { HeaderAddIR, HeaderManipulationIR, HostRewriteIR, RouteIR, UpstreamIR, VirtualHostIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { re2Error } from '../../regex.js';
import { secretValue } from '../../secrets.js';
import type { HeaderManipulation } from './schema.js';

/** Gloo reads header secrets of these types (a Secret without a type is Opaque). */
const HEADER_SECRET_TYPES = ['gloo.solo.io/header', 'Opaque'];

/** An HTTP token (RFC 9110 field-name). */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** What Envoy refuses in a header value. */
const BAD_VALUE = /[\0\r\n]/;
/** Envoy's %…% command operators: NAME, NAME(args), NAME(args):LENGTH; `%%` is a literal %. */
const OPERATOR = /%(%|[A-Z_][A-Z0-9_]*(\([^)]*\))?(:\d+)?%)/g;

type RouteOptionsOf = NonNullable<Route['options']>;
const HOST_REWRITES = ['hostRewrite', 'autoHostRewrite', 'hostRewriteHeader', 'hostRewritePathRegex'] as const;

export function headersBinding(ctx: ResolveContext): FeatureBinding {
  let byCluster: Map<string, UpstreamIR> | undefined;
  const upstreamOf = (cluster: string): UpstreamIR | undefined => {
    byCluster ??= new Map([...ctx.upstreams().resolved.values()].map((u) => [u.cluster, u]));
    return byCluster.get(cluster);
  };
  const secrets = ctx.index.secrets;
  return {
    bindRoute(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink): void {
      const ns = site.namespace;
      const o = route.options;
      if (o?.headerManipulation) {
        const h = headerManipulation(o.headerManipulation, `${site.where}.options.headerManipulation`, ns, secrets, sink);
        if (h) ir.headers = h;
      }
      (route.routeAction?.multi?.destinations ?? []).forEach((d, j) => {
        const hm = d.options?.headerManipulation;
        if (!hm) return;
        const h = headerManipulation(
          hm,
          `${site.where}.routeAction.multi.destinations[${j}].options.headerManipulation`,
          ns,
          secrets,
          sink,
        );
        // a destination of weight 0 gets no traffic and has no cluster here; its options are still checked
        const cluster = ir.action.type === 'route' ? ir.action.clusters.find((c) => c.destination === j) : undefined;
        if (h && cluster) cluster.headers = h;
      });
      if (o) hostRewrite(o, ir, `${site.where}.options`, sink, upstreamOf);
    },
    bindVirtualHost(vs: VirtualService, ir: VirtualHostIR, sink: BindSink): void {
      const hm = vs.spec.virtualHost.options?.headerManipulation;
      if (!hm) return;
      const h = headerManipulation(hm, 'virtualHost.options.headerManipulation', vs.metadata.namespace, secrets, sink);
      if (h) ir.headers = h;
    },
  };
}

/** headerManipulation -> IR; undefined when it adds and removes nothing. Problems go to `sink`. */
export function headerManipulation(
  hm: HeaderManipulation,
  where: string,
  ns: string,
  secrets: ReadonlyMap<string, Secret>,
  sink: BindSink,
): HeaderManipulationIR | undefined {
  const out: HeaderManipulationIR = {};
  const requestAdd: HeaderAddIR[] = [];
  (hm.requestHeadersToAdd ?? []).forEach((o, i) => {
    const at = `${where}.requestHeadersToAdd[${i}]`;
    const append = o.append ?? true;
    if (o.header) {
      const value = o.header.value ?? '';
      const ok = checkName(o.header.key, `${at}.header.key`, 'set', sink) && checkValue(value, `${at}.header.value`, sink);
      if (ok) requestAdd.push({ key: o.header.key, value, append });
      return;
    }
    const ref = o.headerSecretRef;
    if (!ref) return;
    const refNs = ref.namespace ?? ns;
    const name = `${refNs}.${ref.name}`;
    const secret = secrets.get(nsName(refNs, ref.name));
    if (!secret) {
      sink.problems.push({ code: 'SecretNotFound', message: `${at}.headerSecretRef: Secret ${name} not found` });
      return;
    }
    const type = secret.spec.type ?? 'Opaque';
    if (!HEADER_SECRET_TYPES.includes(type)) {
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${at}.headerSecretRef: Secret ${name} has type ${type}; header secrets have type gloo.solo.io/header or Opaque`,
      });
      return;
    }
    const keys = [...new Set([...Object.keys(secret.spec.data ?? {}), ...Object.keys(secret.spec.stringData ?? {})])].sort();
    if (keys.length === 0) {
      sink.problems.push({ code: 'InvalidSpec', message: `${at}.headerSecretRef: Secret ${name} has no data: no header to add` });
      return;
    }
    for (const key of keys) {
      const value = secretValue(secret, key) ?? '';
      if (!checkName(key, `${at}.headerSecretRef: Secret ${name} key`, 'set', sink)) continue;
      if (BAD_VALUE.test(value)) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${at}.headerSecretRef: the value of Secret ${name} key ${key} has a line break or NUL, which a header cannot carry`,
        });
        continue;
      }
      requestAdd.push({ key, secretValue: value, fromSecretRef: name, append });
    }
  });
  if (requestAdd.length) out.requestHeadersToAdd = requestAdd;
  removals(hm, 'requestHeadersToRemove', where, out, sink);

  const responseAdd: HeaderAddIR[] = [];
  (hm.responseHeadersToAdd ?? []).forEach((o, i) => {
    const at = `${where}.responseHeadersToAdd[${i}].header`;
    const value = o.header.value ?? '';
    const ok = checkName(o.header.key, `${at}.key`, 'set', sink) && checkValue(value, `${at}.value`, sink);
    if (ok) responseAdd.push({ key: o.header.key, value, append: o.append ?? true });
  });
  if (responseAdd.length) out.responseHeadersToAdd = responseAdd;

  removals(hm, 'responseHeadersToRemove', where, out, sink);
  return Object.keys(out).length ? out : undefined;
}

function removals(
  hm: HeaderManipulation,
  field: 'requestHeadersToRemove' | 'responseHeadersToRemove',
  where: string,
  out: HeaderManipulationIR,
  sink: BindSink,
): void {
  const names = (hm[field] ?? []).filter((n, i) => checkName(n, `${where}.${field}[${i}]`, 'remove', sink));
  if (names.length) out[field] = names;
}

/** Envoy's rules for the headers a route may change: a token, no pseudo-header, not Host. */
function checkName(name: string, where: string, verb: 'set' | 'remove', sink: BindSink): boolean {
  let message: string | undefined;
  if (name.startsWith(':')) message = `:-prefixed headers cannot be ${verb === 'set' ? 'set' : 'removed'}: '${name}'`;
  else if (name.toLowerCase() === 'host')
    message =
      verb === 'set'
        ? 'the Host header cannot be set by headerManipulation (the Host sent upstream is a route option: hostRewrite)'
        : 'the Host header cannot be removed';
  else if (!TOKEN.test(name)) message = `${JSON.stringify(name)} is not a valid header name`;
  if (message) sink.problems.push({ code: 'InvalidSpec', message: `${where}: ${message}` });
  return message === undefined;
}

/** A value Envoy accepts: no line breaks, and every `%` an operator or `%%` (a lone % is a NACK). */
function checkValue(value: string, where: string, sink: BindSink): boolean {
  let message: string | undefined;
  if (BAD_VALUE.test(value)) message = 'a header value cannot carry a line break or NUL';
  else if (value.replace(OPERATOR, '').includes('%')) message = "a % starts one of Envoy's %OPERATOR% values; write a literal % as %%";
  if (message) sink.problems.push({ code: 'InvalidSpec', message: `${where}: ${message}` });
  return message === undefined;
}

/** Gloo's host_rewrite_type oneof and appendXForwardedHost -> the route's IR. */
function hostRewrite(
  o: RouteOptionsOf,
  ir: RouteIR,
  where: string,
  sink: BindSink,
  upstreamOf: (cluster: string) => UpstreamIR | undefined,
): void {
  const set = HOST_REWRITES.filter((f) => o[f] !== undefined);
  const used = o.appendXForwardedHost !== undefined ? [...set, 'appendXForwardedHost'] : set;
  if (used.length === 0) return;
  if (set.length > 1) {
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}: set at most one of ${HOST_REWRITES.join(', ')} (they are one choice in Gloo); found ${set.join(', ')}`,
    });
    return;
  }
  if (ir.action.type !== 'route') {
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}.${used[0]}: rewrites the Host of requests forwarded upstream; this route forwards nothing (no routeAction)`,
    });
    return;
  }
  let rewrite: HostRewriteIR | undefined;
  if (o.hostRewrite !== undefined) {
    if (o.hostRewrite === '') sink.problems.push({ code: 'InvalidSpec', message: `${where}.hostRewrite: must not be empty` });
    else if (BAD_VALUE.test(o.hostRewrite))
      sink.problems.push({ code: 'InvalidSpec', message: `${where}.hostRewrite: a host cannot carry a line break or NUL` });
    else rewrite = { literal: o.hostRewrite };
  } else if (o.autoHostRewrite) {
    rewrite = { auto: true };
    for (const c of ir.action.clusters) {
      const up = upstreamOf(c.cluster);
      if (up?.discovery === 'STRICT_DNS') continue;
      const what = up ? `Upstream ${up.source.namespace}.${up.source.name}` : `cluster ${c.cluster}`;
      sink.warnings.push({
        code: 'InvalidSpec',
        message:
          `${where}.autoHostRewrite: ${what} is not addressed by a DNS name, so the Host header is left as it is there ` +
          '(autoHostRewrite applies to upstreams whose hosts are DNS names)',
      });
    }
  } else if (o.hostRewriteHeader !== undefined) {
    if (!TOKEN.test(o.hostRewriteHeader))
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.hostRewriteHeader: ${JSON.stringify(o.hostRewriteHeader)} is not a valid header name`,
      });
    else rewrite = { header: o.hostRewriteHeader };
  } else if (o.hostRewritePathRegex) {
    const { pattern, substitution } = o.hostRewritePathRegex;
    const error = re2Error(pattern.regex);
    if (error) sink.problems.push({ code: 'InvalidRegex', message: `${where}.hostRewritePathRegex.pattern.regex: ${error}` });
    else if (BAD_VALUE.test(substitution))
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.hostRewritePathRegex.substitution: a host cannot carry a line break or NUL`,
      });
    else rewrite = { pathRegex: { regex: pattern.regex, substitution } };
  }
  if (rewrite) ir.hostRewrite = rewrite;
  if (o.appendXForwardedHost) {
    if (set.length === 0 || o.autoHostRewrite === false)
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${where}.appendXForwardedHost: does nothing without a Host rewrite (${HOST_REWRITES.join(', ')})`,
      });
    else ir.appendXForwardedHost = true;
  }
}
