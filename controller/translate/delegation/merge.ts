// A delegated route against its parent, as Gloo merges them (projects/gateway/pkg/translator/converter.go):
// the parent's single prefix matcher, matchers inherited when the parent says so, the rule that a
// child's matchers start with the parent's prefix and keep its headers, query parameters and methods,
// and the parent's options under the child's (a top-level field the child sets wins).
import type { HeaderMatcher, Matcher, QueryParameterMatcher, Route, RouteOptions } from '../../api/routes.js';
import type { Problem } from '../feature.js';

/** What a delegating route passes down to the routes of the tables it delegates to. */
export interface ParentRoute {
  /** its one prefix matcher (with headers, query parameters and methods, if any) */
  matcher: Matcher;
  options: RouteOptions | undefined;
  /** the IR route name so far */
  name: string;
  inheritableMatchers: boolean;
  inheritablePathMatchers: boolean;
}

const DEFAULT_MATCHER: Matcher = { prefix: '/' };

/** The matcher of a route with a delegateAction: none or one, with a prefix (Gloo's errors otherwise). */
export function delegateMatcher(route: Route, where: string): Matcher | Problem {
  const matchers = route.matchers ?? [];
  if (matchers.length > 1) {
    return {
      code: 'InvalidSpec',
      message: `${where}.matchers: invalid route: routes with delegate actions must omit or specify a single matcher`,
    };
  }
  const m = matchers[0];
  if (!m || (m.prefix === undefined && m.exact === undefined && m.regex === undefined)) return DEFAULT_MATCHER;
  if (m.prefix === undefined || m.prefix === '')
    return { code: 'InvalidSpec', message: `${where}.matchers[0]: invalid route: routes with delegate actions must use a prefix matcher` };
  return m;
}

/**
 * The child route as it serves under `parent`: inherited matchers and options merged in. Returns a
 * problem when its matchers do not fit the parent's (Gloo's messages).
 */
export function mergeWithParent(child: Route, parent: ParentRoute, where: string): Route | Problem {
  const inheritPath = child.inheritablePathMatchers ?? parent.inheritablePathMatchers;
  const inherit = child.inheritableMatchers ?? parent.inheritableMatchers;
  let matchers: Matcher[] = (child.matchers ?? []).map((m) => ({ ...m }));
  if (inheritPath) {
    const path = pathOf(parent.matcher);
    matchers = matchers.length ? matchers.map((m) => withPath(m, path)) : [withPath({}, path)];
  }
  if (!matchers.length) matchers = [{ ...DEFAULT_MATCHER }];
  if (inherit) {
    matchers = matchers.map((m) => {
      const merged: Matcher = { ...m };
      const headers = [...(parent.matcher.headers ?? []), ...(m.headers ?? [])];
      const queryParameters = [...(parent.matcher.queryParameters ?? []), ...(m.queryParameters ?? [])];
      const methods = [...(parent.matcher.methods ?? []), ...(m.methods ?? [])];
      if (headers.length) merged.headers = headers;
      if (queryParameters.length) merged.queryParameters = queryParameters;
      if (methods.length) merged.methods = methods;
      return merged;
    });
  }
  for (const [j, m] of matchers.entries()) {
    const bad = incompatibility(parent.matcher, m);
    if (bad) return { code: 'InvalidSpec', message: `${where}.matchers[${j}]: ${bad}` };
  }
  // the flags as they apply here, for the routes this one may delegate to in turn
  const route: Route = { ...child, matchers, inheritableMatchers: inherit, inheritablePathMatchers: inheritPath };
  const options = mergeOptions(child.options, parent.options);
  if (options) route.options = options;
  return route;
}

type Path = Pick<Matcher, 'prefix' | 'exact' | 'regex' | 'caseSensitive'>;

function pathOf(m: Matcher): Path {
  const p: Path = {};
  if (m.prefix !== undefined) p.prefix = m.prefix;
  if (m.exact !== undefined) p.exact = m.exact;
  if (m.regex !== undefined) p.regex = m.regex;
  if (m.caseSensitive !== undefined) p.caseSensitive = m.caseSensitive;
  return p;
}

function withPath(m: Matcher, path: Path): Matcher {
  const { prefix: _p, exact: _e, regex: _r, caseSensitive: _c, ...rest } = m;
  return { ...rest, ...path };
}

/** Gloo's PathAsString: what the prefix rule compares (a matcher without a path matches `/`). */
function pathString(m: Matcher): string {
  return m.prefix ?? m.exact ?? m.regex ?? '/';
}

const sameHeader = (a: HeaderMatcher, b: HeaderMatcher): boolean =>
  a.name === b.name && (a.value ?? '') === (b.value ?? '') && !!a.regex === !!b.regex && !!a.invertMatch === !!b.invertMatch;
const sameParam = (a: QueryParameterMatcher, b: QueryParameterMatcher): boolean =>
  a.name === b.name && (a.value ?? '') === (b.value ?? '') && !!a.regex === !!b.regex;
const show = (v: unknown): string => JSON.stringify(v ?? []);

function incompatibility(parent: Matcher, child: Matcher): string | undefined {
  const prefix = parent.prefix ?? '/';
  if (!pathString(child).startsWith(prefix)) {
    return (
      `required prefix: ${prefix}, prefix: ${pathString(child)}: invalid route: ` +
      "route table matchers must begin with the prefix of their parent route's matcher"
    );
  }
  if ((parent.caseSensitive ?? null) !== (child.caseSensitive ?? null)) {
    return (
      `required caseSensitive: ${String(parent.caseSensitive ?? 'unset')}, caseSensitive: ${String(child.caseSensitive ?? 'unset')}: ` +
      "invalid route: route table matchers must have the same case sensitivity of their parent route's matcher"
    );
  }
  const headers = child.headers ?? [];
  if ((parent.headers ?? []).some((p) => !headers.some((c) => c.name === p.name && sameHeader(p, c)))) {
    return (
      `required headers: ${show(parent.headers)}, headers: ${show(child.headers)}: invalid route: ` +
      "route table matchers must have all headers that were specified on their parent route's matcher"
    );
  }
  const params = child.queryParameters ?? [];
  if ((parent.queryParameters ?? []).some((p) => !params.some((c) => c.name === p.name && sameParam(p, c)))) {
    return (
      `required query params: ${show(parent.queryParameters)}, query params: ${show(child.queryParameters)}: invalid route: ` +
      "route table matchers must have all query params that were specified on their parent route's matcher"
    );
  }
  const methods = new Set(child.methods ?? []);
  if ((parent.methods ?? []).some((m) => !methods.has(m))) {
    return (
      `required methods: ${show(parent.methods)}, methods: ${show(child.methods)}: invalid route: ` +
      "route table matchers must have all methods that were specified on their parent route's matcher"
    );
  }
  return undefined;
}

/** Gloo's ShallowMergeRouteOptions(child, parent): each top-level field the child leaves empty comes from the parent. */
export function mergeOptions(child: RouteOptions | undefined, parent: RouteOptions | undefined): RouteOptions | undefined {
  if (!parent) return child;
  if (!child) return parent;
  const merged: Record<string, unknown> = { ...parent };
  for (const [k, v] of Object.entries(child)) if (!isEmpty(v)) merged[k] = v;
  return merged as RouteOptions;
}

// Gloo's merge skips a child's zero values; RouteOptions' top-level fields are messages and wrappers
// (set when present, even to "" or 0), lists and maps: an empty list counts as unset
function isEmpty(v: unknown): boolean {
  return v === undefined || v === null || (Array.isArray(v) && v.length === 0);
}

/**
 * Gloo's SortRoutesByPath, for routes of several tables of one weight: by each route's most specific
 * matcher, more methods first, then exact before regex before prefix, then the greater path string
 * first (so `/foo/bar` comes before `/foo`). Stable.
 */
export function sortByPath<T extends { route: Route }>(entries: T[]): T[] {
  const smallest = (r: Route): Matcher => {
    const ms = r.matchers?.length ? r.matchers : [DEFAULT_MATCHER];
    return ms.reduce((s, m) => (lessMatcher(m, s) ? m : s));
  };
  const keyed = entries.map((e, i) => ({ e, i, m: smallest(e.route) }));
  keyed.sort((a, b) => (lessMatcher(a.m, b.m) ? -1 : lessMatcher(b.m, a.m) ? 1 : a.i - b.i));
  return keyed.map((k) => k.e);
}

function lessMatcher(a: Matcher, b: Matcher): boolean {
  const am = a.methods?.length ?? 0;
  const bm = b.methods?.length ?? 0;
  if (am !== bm) return am > bm;
  if (pathPriority(a) !== pathPriority(b)) return pathPriority(a) < pathPriority(b);
  return pathString(a) > pathString(b);
}

function pathPriority(m: Matcher): number {
  if (m.exact !== undefined) return 1;
  if (m.regex !== undefined) return 2;
  if (m.prefix !== undefined) return 3;
  return 0;
}
