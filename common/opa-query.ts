// The module extauth compiles around an opaAuth query (`data.legate_opa_query.allow`), shared by extauth's
// compiler (extensions/extauth/opa.ts) and the controller's check (controller/rego-check.ts), so both compile
// the very same Rego.

/** The generated package holding the query: `data.legate_opa_query.allow`. */
export const OPA_QUERY_PACKAGE = 'legate_opa_query';

/**
 * The generated module around the query; v0 syntax unless `v1`. `strict`: the query's value must be `true`
 * (Gloo's rule); otherwise the query must succeed (for queries of several expressions, which cannot be a value).
 */
export function opaQueryModule(query: string, v1: boolean, strict: boolean): string {
  const body = strict ? `__legate_result := (${query})\n__legate_result == true` : query;
  return v1
    ? `package ${OPA_QUERY_PACKAGE}\n\ndefault allow := false\n\nallow if {\n${body}\n}\n`
    : `package ${OPA_QUERY_PACKAGE}\n\ndefault allow = false\n\nallow {\n${body}\n}\n`;
}

/**
 * Compiles opaAuth Rego (the modules by file name, and the query) as extauth does: opa's error (its first lines),
 * or, when it compiles, the request headers the policy reads (lower-case, sorted; '*' when it may read any). The
 * controller hands translation this (impure, cached) check.
 */
export type RegoCheck = (
  modules: Readonly<Record<string, string>>,
  query: string,
) => { error: string } | { headers: readonly string[] | '*' };
