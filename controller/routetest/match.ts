// The route tester: which listener, virtual host and route of the IR a request would take, and why the
// others did not. Pure: it reads the Proxy IR the controller renders, and matches as the rendered Envoy
// config does (virtual hosts by host name without the port, routes in order, the first that matches).
import type { ListenerIR, MatcherIR, ProxyIR, RouteIR, SourceRef, StringMatchIR, VirtualHostIR } from '../translate/ir.js';

export interface TestRequest {
  method: string;
  /** the Host (:authority), with or without a port */
  host: string;
  /** the path, with its query string */
  path: string;
  headers?: Record<string, string>;
  /** the listener's port the request arrives on; unset: every HTTP listener is tried */
  port?: number;
}

export interface RouteVerdict {
  name: string;
  /** the index of the matcher that matched */
  matcher?: number;
  matched: boolean;
  /** why it did not match (one reason per matcher), or that an earlier route took the request */
  why: string[];
}

export interface VirtualHostVerdict {
  name: string;
  domains: string[];
  source: SourceRef;
  matched: boolean;
  why?: string;
  routes: RouteVerdict[];
}

export interface ListenerVerdict {
  proxy: string;
  name: string;
  port: number;
  source: SourceRef;
  matched: boolean;
  why?: string;
  virtualHosts: VirtualHostVerdict[];
}

export interface RouteMatchResult {
  /** the first listener, virtual host and route that take the request */
  match?: {
    proxy: string;
    listener: string;
    virtualHost: string;
    source: SourceRef;
    route: string;
    action: string;
    /** the clusters the route sends to (Gloo's `<upstream>_<namespace>`), with their weights */
    clusters: { cluster: string; weight: number; invalid?: string }[];
  };
  listeners: ListenerVerdict[];
}

export function matchRequest(proxies: readonly ProxyIR[], req: TestRequest): RouteMatchResult {
  const headers = lowerKeys(req.headers ?? {});
  const method = req.method.toUpperCase();
  const hostname = stripPort(req.host).toLowerCase();
  const queryAt = req.path.indexOf('?');
  const path = queryAt < 0 ? req.path : req.path.slice(0, queryAt);
  const query = new URLSearchParams(queryAt < 0 ? '' : req.path.slice(queryAt + 1));
  const all: Record<string, string> = { ...headers, ':method': method, ':authority': req.host, ':path': req.path };
  const result: RouteMatchResult = { listeners: [] };
  for (const proxy of proxies) {
    for (const listener of proxy.listeners) {
      const verdict: ListenerVerdict = {
        proxy: proxy.name,
        name: listener.chain ? `${listener.name}/${listener.chain.name}` : listener.name,
        port: listener.bindPort,
        source: listener.source,
        matched: false,
        virtualHosts: [],
      };
      result.listeners.push(verdict);
      const refused = listenerRefuses(listener, req.port);
      if (refused) {
        verdict.why = refused;
        continue;
      }
      const chosen = pickVirtualHost(listener.virtualHosts, hostname);
      for (const vh of listener.virtualHosts) {
        const vv: VirtualHostVerdict = { name: vh.name, domains: vh.domains, source: vh.source, matched: vh === chosen, routes: [] };
        verdict.virtualHosts.push(vv);
        if (vh !== chosen) {
          vv.why = chosen
            ? domainsMatch(vh.domains, hostname)
              ? `a more specific domain of ${chosen.name} (${bestDomain(chosen.domains, hostname)}) takes ${hostname}`
              : `no domain matches ${hostname}`
            : `no domain matches ${hostname}`;
          continue;
        }
        let taken: RouteIR | undefined;
        for (const route of vh.routes) {
          if (taken) {
            vv.routes.push({ name: route.name, matched: false, why: [`an earlier route (${taken.name}) took the request`] });
            continue;
          }
          const why: string[] = [];
          const matchers: (MatcherIR | undefined)[] = route.matchers.length ? route.matchers : [undefined];
          let index: number | undefined;
          matchers.forEach((m, i) => {
            if (index !== undefined) return;
            const miss = m ? matcherMisses(m, method, path, query, all) : undefined;
            if (miss === undefined) index = i;
            else why.push(matchers.length > 1 ? `matcher ${i}: ${miss}` : miss);
          });
          if (index === undefined) {
            vv.routes.push({ name: route.name, matched: false, why });
            continue;
          }
          taken = route;
          vv.routes.push({ name: route.name, matched: true, matcher: index, why: [] });
          verdict.matched = true;
          result.match ??= {
            proxy: proxy.name,
            listener: verdict.name,
            virtualHost: vh.name,
            source: vh.source,
            route: route.name,
            action: describeAction(route),
            clusters:
              route.action.type === 'route'
                ? route.action.clusters.map((c) => ({ cluster: c.cluster, weight: c.weight, ...(c.invalid ? { invalid: c.invalid } : {}) }))
                : [],
          };
        }
        if (!taken) vv.why = 'no route matches';
      }
      if (!chosen) verdict.why = `no virtual host has a domain matching ${hostname}`;
      else if (!verdict.matched) verdict.why = `virtual host ${chosen.name} has no route for this request (Envoy answers 404)`;
    }
  }
  return result;
}

function listenerRefuses(listener: ListenerIR, port: number | undefined): string | undefined {
  if (port !== undefined && listener.bindPort !== port) return `listens on port ${listener.bindPort}, not ${port}`;
  if (listener.tcp) return 'a TCP listener (no HTTP routes)';
  return undefined;
}

/** Envoy's order: exact domains, then suffix wildcards (longest first), then prefix wildcards (longest first), then `*`. */
function pickVirtualHost(vhosts: readonly VirtualHostIR[], host: string): VirtualHostIR | undefined {
  let best: { vh: VirtualHostIR; rank: number; length: number } | undefined;
  for (const vh of vhosts) {
    for (const d of vh.domains) {
      const rank = domainRank(d.toLowerCase(), host);
      if (rank === undefined) continue;
      if (!best || rank > best.rank || (rank === best.rank && d.length > best.length)) best = { vh, rank, length: d.length };
    }
  }
  return best?.vh;
}

function domainsMatch(domains: readonly string[], host: string): boolean {
  return domains.some((d) => domainRank(d.toLowerCase(), host) !== undefined);
}

function bestDomain(domains: readonly string[], host: string): string {
  return domains.filter((d) => domainRank(d.toLowerCase(), host) !== undefined).sort((a, b) => b.length - a.length)[0] ?? '';
}

/** 3 exact, 2 suffix wildcard, 1 prefix wildcard, 0 `*`; undefined: no match. A domain's own port is ignored too. */
function domainRank(domain: string, host: string): number | undefined {
  const d = stripPort(domain);
  if (d === '*') return 0;
  if (d === host) return 3;
  if (d.startsWith('*') && host.endsWith(d.slice(1)) && host.length > d.length - 1) return 2;
  if (d.endsWith('*') && host.startsWith(d.slice(0, -1)) && host.length > d.length - 1) return 1;
  return undefined;
}

function stripPort(host: string): string {
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    return end < 0 ? host : host.slice(0, end + 1);
  }
  const colon = host.lastIndexOf(':');
  return colon >= 0 && /^\d*$/.test(host.slice(colon + 1)) && host.indexOf(':') === colon ? host.slice(0, colon) : host;
}

/** Why the matcher does not take the request, or undefined when it does. */
function matcherMisses(
  m: MatcherIR,
  method: string,
  path: string,
  query: URLSearchParams,
  headers: Record<string, string>,
): string | undefined {
  const p = m.path;
  if ('connect' in p) {
    if (method !== 'CONNECT') return `matches CONNECT requests only, not ${method}`;
  } else if ('prefix' in p) {
    const ok = m.caseSensitive ? path.startsWith(p.prefix) : path.toLowerCase().startsWith(p.prefix.toLowerCase());
    if (!ok) return `path ${path} does not start with ${p.prefix}${m.caseSensitive ? '' : ' (ignoring case)'}`;
  } else if ('exact' in p) {
    const ok = m.caseSensitive ? path === p.exact : path.toLowerCase() === p.exact.toLowerCase();
    if (!ok) return `path ${path} is not ${p.exact}${m.caseSensitive ? '' : ' (ignoring case)'}`;
  } else {
    const ok = fullMatch(p.regex, path);
    if (ok === undefined) return `path regex ${p.regex} cannot be evaluated here`;
    if (!ok) return `path ${path} does not match the regex ${p.regex}`;
  }
  if (m.methods.length && !m.methods.includes(method)) return `method ${method} is not one of ${m.methods.join(', ')}`;
  for (const h of m.headers) {
    const value = headers[h.name.toLowerCase()];
    let ok = value !== undefined && (!h.match || stringMatches(h.match, value) === true);
    if (h.invert) ok = !ok;
    if (!ok) {
      if (h.invert) return `header ${h.name} must not ${h.match ? `be ${describe(h.match)}` : 'be present'}`;
      return value === undefined
        ? `header ${h.name} is missing`
        : `header ${h.name}: ${JSON.stringify(value)} is not ${describe(h.match!)}`;
    }
  }
  for (const q of m.queryParameters) {
    const value = query.get(q.name);
    if (value === null) return `query parameter ${q.name} is missing`;
    if (q.match && stringMatches(q.match, value) !== true)
      return `query parameter ${q.name}: ${JSON.stringify(value)} is not ${describe(q.match)}`;
  }
  return undefined;
}

function stringMatches(s: StringMatchIR, value: string): boolean | undefined {
  if (s.regex !== undefined) return fullMatch(s.regex, value);
  return s.ignoreCase ? value.toLowerCase() === (s.exact ?? '').toLowerCase() : value === (s.exact ?? '');
}

function describe(s: StringMatchIR): string {
  return s.regex !== undefined ? `matched by the regex ${s.regex}` : JSON.stringify(s.exact ?? '');
}

/** RE2 patterns are matched whole by Envoy; JavaScript's engine reads the RE2 syntax Gloo users write (a leading (?i) too). */
function fullMatch(pattern: string, value: string): boolean | undefined {
  let source = pattern;
  let flags = 'u';
  if (source.startsWith('(?i)')) {
    source = source.slice(4);
    flags += 'i';
  }
  try {
    return new RegExp(`^(?:${source})$`, flags).test(value);
  } catch {
    return undefined;
  }
}

function describeAction(route: RouteIR): string {
  const a = route.action;
  switch (a.type) {
    case 'route':
      return a.clusterHeader
        ? `route to the cluster named by header ${a.clusterHeader}`
        : `route to ${a.clusters.map((c) => c.cluster).join(', ')}`;
    case 'directResponse':
      return `direct response ${a.status}`;
    case 'redirect':
      return `redirect${a.hostRedirect ? ` to ${a.hostRedirect}` : ''}${a.pathRedirect ? ` ${a.pathRedirect}` : ''}`;
    case 'graphql':
      return `GraphQL API ${a.api.namespace}.${a.api.name}`;
  }
}

function lowerKeys(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
}
