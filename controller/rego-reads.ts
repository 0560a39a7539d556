// Which request headers an opaAuth policy reads, from the ASTs `opa parse --format json` prints of its modules and
// of the query module. Envoy then sends extauth only those (ext_authz allowed_headers) instead of every header.
// Conservative: a header read by a constant name (`input.http_request.headers["x-team"]`, `….headers.x_team`, the
// same under `input.check_request.attributes.request.http`) is listed; anything else that can reach the headers (the
// headers object or an ancestor as a value, a variable key, `input` itself, an import or `with` of such a path)
// makes it '*', every header, as before. Pure: the controller runs opa (controller/rego-check.ts).

/** The header names read (lower-case, sorted), or '*' when the policy may read any. */
export type RegoHeaderReads = readonly string[] | '*';

interface Term {
  type: string;
  value: unknown;
}

const isTerm = (x: unknown): x is Term =>
  typeof x === 'object' && x !== null && typeof (x as Term).type === 'string' && 'value' in (x as object);

const isInput = (t: unknown): boolean => isTerm(t) && t.type === 'var' && t.value === 'input';

/** The constant string of a ref element, undefined for a variable or any other term. */
const constant = (t: unknown): string | undefined =>
  isTerm(t) && t.type === 'string' && typeof t.value === 'string' ? t.value : undefined;

/** The paths of the input document that lead to the request's headers object. */
const HEADER_PATHS = [
  ['http_request', 'headers'],
  ['check_request', 'attributes', 'request', 'http', 'headers'],
] as const;

/**
 * What a ref `input.<path…>` reads of the headers: nothing (another part of the input), one header, or '*' (the ref
 * stops at the headers or an ancestor of them, or a key on the way is not a constant).
 */
function refReads(path: readonly unknown[]): string | '*' | undefined {
  let reads: string | '*' | undefined;
  for (const headers of HEADER_PATHS) {
    let i = 0;
    for (; i < headers.length && i < path.length; i++) {
      const key = constant(path[i]);
      if (key === undefined) return '*';
      if (key !== headers[i]) break;
    }
    // diverged from this path before its end: not the headers
    if (i < headers.length && i < path.length) continue;
    // stopped at the headers or above them: the object itself is used
    if (i >= path.length) return '*';
    const name = constant(path[i]);
    if (name === undefined) return '*';
    reads = name.toLowerCase();
  }
  return reads;
}

/** Every ref to `input` in the ASTs; '*' as soon as one may read any header. */
export function regoHeaderReads(asts: readonly unknown[]): RegoHeaderReads {
  const names = new Set<string>();
  let any = false;
  const walk = (node: unknown): void => {
    if (any || typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) {
      for (const n of node) walk(n);
      return;
    }
    if (isTerm(node)) {
      if (node.type === 'var' && node.value === 'input') {
        // `input` as a value (not the head of a ref): the whole document
        any = true;
        return;
      }
      if (node.type === 'ref' && Array.isArray(node.value) && isInput(node.value[0])) {
        const reads = refReads(node.value.slice(1));
        if (reads === '*') any = true;
        else if (reads !== undefined) names.add(reads);
        // keys computed by other refs (`input.http_request.headers[input.x]`) are walked too
        for (const t of node.value.slice(1)) walk(t);
        return;
      }
    }
    for (const v of Object.values(node)) walk(v);
  };
  walk(asts);
  return any ? '*' : [...names].sort();
}
