// Route matching and actions: the core of every Envoy route.
import type { MatcherIR, RouteIR, StringMatchIR } from '../ir.js';
import { duration, type EnvoyJson, type RenderPlugin } from './types.js';

export const routingPlugin: RenderPlugin = {
  name: 'routing',
  patchRoute(ir, route) {
    Object.assign(route, actionFor(ir));
  },
};

/** One Envoy route per matcher (as Gloo does); the renderer calls this per matcher. */
export function matchFor(m: MatcherIR | undefined): EnvoyJson {
  if (!m) return { prefix: '/' };
  const match: EnvoyJson = {};
  if ('prefix' in m.path) match['prefix'] = m.path.prefix;
  else if ('exact' in m.path) match['path'] = m.path.exact;
  else match['safe_regex'] = { regex: m.path.regex };
  if (!m.caseSensitive && !('regex' in m.path)) match['case_sensitive'] = false;
  const headers: EnvoyJson[] = m.headers.map((h) => {
    const header: EnvoyJson = { name: h.name };
    if (h.match) header['string_match'] = stringMatcher(h.match);
    else header['present_match'] = true;
    if (h.invert) header['invert_match'] = true;
    return header;
  });
  if (m.methods.length === 1) headers.push({ name: ':method', string_match: { exact: m.methods[0] } });
  else if (m.methods.length > 1) headers.push({ name: ':method', string_match: { safe_regex: { regex: `^(${m.methods.join('|')})$` } } });
  if (headers.length) match['headers'] = headers;
  if (m.queryParameters.length) {
    match['query_parameters'] = m.queryParameters.map((q) =>
      q.match ? { name: q.name, string_match: stringMatcher(q.match) } : { name: q.name, present_match: true },
    );
  }
  return match;
}

function stringMatcher(s: StringMatchIR): EnvoyJson {
  return s.regex !== undefined ? { safe_regex: { regex: s.regex } } : { exact: s.exact ?? '' };
}

function actionFor(ir: RouteIR): EnvoyJson {
  const a = ir.action;
  switch (a.type) {
    case 'route': {
      const route: EnvoyJson = {};
      const first = a.clusters[0];
      if (a.clusters.length === 1 && first) route['cluster'] = first.cluster;
      else route['weighted_clusters'] = { clusters: a.clusters.map((c) => ({ name: c.cluster, weight: c.weight })) };
      if (ir.prefixRewrite !== undefined) route['prefix_rewrite'] = ir.prefixRewrite;
      route['timeout'] = duration(ir.timeout);
      if (ir.retries) {
        const retry: EnvoyJson = { retry_on: ir.retries.retryOn, num_retries: ir.retries.numRetries };
        if (ir.retries.perTryTimeout) retry['per_try_timeout'] = duration(ir.retries.perTryTimeout);
        route['retry_policy'] = retry;
      }
      return { route };
    }
    case 'directResponse': {
      const direct: EnvoyJson = { status: a.status };
      if (a.body !== undefined) direct['body'] = { inline_string: a.body };
      return { direct_response: direct };
    }
    case 'redirect': {
      const redirect: EnvoyJson = {};
      if (a.hostRedirect !== undefined) redirect['host_redirect'] = a.hostRedirect;
      if (a.portRedirect !== undefined) redirect['port_redirect'] = a.portRedirect;
      if (a.pathRedirect !== undefined) redirect['path_redirect'] = a.pathRedirect;
      if (a.prefixRewrite !== undefined) redirect['prefix_rewrite'] = a.prefixRewrite;
      if (a.httpsRedirect) redirect['https_redirect'] = true;
      if (a.stripQuery) redirect['strip_query'] = true;
      if (a.responseCode !== undefined) redirect['response_code'] = a.responseCode;
      return { redirect };
    }
    case 'graphql':
      // The graphql plugin turns this into ext_proc; without it the route answers 500 rather than open.
      return { direct_response: { status: 500, body: { inline_string: 'GraphQL execution is not configured' } } };
  }
}
