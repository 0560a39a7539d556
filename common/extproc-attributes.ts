// The request attributes (CEL expressions Envoy evaluates) the graphql route's ext_proc filter sends in
// place of a headers message on the single-message path: the controller lists them, the graphql service
// reads them back as the method, path and headers of the request.

export const METHOD_ATTRIBUTE = 'request.method';
/** path with query string, as `:path` */
export const PATH_ATTRIBUTE = 'request.path';

const HEADER_PREFIX = "request.headers['";
const HEADER_SUFFIX = "']";

/** `accept` -> `request.headers['accept']` (a lowercased header name; names never hold quotes). */
export function headerAttribute(name: string): string {
  return `${HEADER_PREFIX}${name}${HEADER_SUFFIX}`;
}

/** `request.headers['accept']` -> `accept`; undefined for other attributes. */
export function headerOfAttribute(expression: string): string | undefined {
  if (!expression.startsWith(HEADER_PREFIX) || !expression.endsWith(HEADER_SUFFIX)) return undefined;
  return expression.slice(HEADER_PREFIX.length, -HEADER_SUFFIX.length);
}
