// Route matchers, both stages: Gloo matchers -> MatcherIR (stage 1, regexes checked with RE2) and
// MatcherIR -> Envoy RouteMatch (stage 2). Core, not a feature: every route has matchers.
import type { Matcher } from '../api/routes.js';
import type { HeaderMatcher, RouteMatch, StringMatcher } from '../../envoy/typed.js';
import type { Problem } from './feature.js';
import type { MatcherIR, StringMatchIR } from './ir.js';
import { re2Error } from './regex.js';

function stringMatch(value: string, regex: boolean | undefined, where: string, problems: Problem[]): StringMatchIR {
  if (regex) {
    const err = re2Error(value);
    if (err) problems.push({ code: 'InvalidRegex', message: `${where}: invalid regex ${JSON.stringify(value)}: ${err}` });
    return { regex: value };
  }
  return { exact: value };
}

export function translateMatcher(m: Matcher, where: string, problems: Problem[]): MatcherIR {
  const caseSensitive = m.caseSensitive ?? true;
  let path: MatcherIR['path'];
  if (m.connectMatcher !== undefined) path = { connect: true };
  else if (m.exact !== undefined) path = { exact: m.exact };
  else if (m.regex !== undefined) {
    const err = re2Error(m.regex);
    if (err) problems.push({ code: 'InvalidRegex', message: `${where}.regex: invalid regex ${JSON.stringify(m.regex)}: ${err}` });
    path = { regex: caseSensitive ? m.regex : `(?i)${m.regex}` };
  } else path = { prefix: m.prefix ?? '/' };
  return {
    path,
    caseSensitive,
    headers: (m.headers ?? []).map((h, j) => {
      const header: MatcherIR['headers'][number] = { name: h.name, invert: h.invertMatch ?? false };
      if (h.value !== undefined && h.value !== '') header.match = stringMatch(h.value, h.regex, `${where}.headers[${j}]`, problems);
      return header;
    }),
    queryParameters: (m.queryParameters ?? []).map((q, j) => {
      const param: MatcherIR['queryParameters'][number] = { name: q.name };
      if (q.value !== undefined && q.value !== '') param.match = stringMatch(q.value, q.regex, `${where}.queryParameters[${j}]`, problems);
      return param;
    }),
    methods: (m.methods ?? []).map((x) => x.toUpperCase()),
  };
}

/** One Envoy route per matcher (as Gloo does); the renderer calls this per matcher. */
export function matchFor(m: MatcherIR | undefined): RouteMatch {
  if (!m) return { prefix: '/' };
  const match: RouteMatch = {};
  if ('prefix' in m.path) match.prefix = m.path.prefix;
  else if ('exact' in m.path) match.path = m.path.exact;
  else if ('regex' in m.path) match.safe_regex = { regex: m.path.regex };
  else match.connect_matcher = {};
  if (!m.caseSensitive && ('prefix' in m.path || 'exact' in m.path)) match.case_sensitive = false;
  const headers: HeaderMatcher[] = m.headers.map((h) => {
    const header: HeaderMatcher = { name: h.name };
    if (h.match) header.string_match = stringMatcher(h.match);
    else header.present_match = true;
    if (h.invert) header.invert_match = true;
    return header;
  });
  if (m.methods.length === 1) headers.push({ name: ':method', string_match: { exact: m.methods[0] } });
  else if (m.methods.length > 1) headers.push({ name: ':method', string_match: { safe_regex: { regex: `^(${m.methods.join('|')})$` } } });
  if (headers.length) match.headers = headers;
  if (m.queryParameters.length) {
    match.query_parameters = m.queryParameters.map((q) =>
      q.match ? { name: q.name, string_match: stringMatcher(q.match) } : { name: q.name, present_match: true },
    );
  }
  return match;
}

function stringMatcher(s: StringMatchIR): StringMatcher {
  return s.regex !== undefined ? { safe_regex: { regex: s.regex } } : { exact: s.exact ?? '' };
}
