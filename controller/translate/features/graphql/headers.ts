// Which request headers a GraphQL API reads: the engine's own (content negotiation and the body's media
// type) and every `{$headers.<name>}` its resolvers and executor template. The single-message ext_proc
// path sends exactly these as request attributes instead of all headers.
import type { GraphQLApiConfig } from '../../../../common/contract.js';

/** Headers the graphql engine itself reads. */
const ENGINE_HEADERS = ['accept', 'content-type'];
const HEADER_PLACEHOLDER = /\{\$headers\.([^{}]*)\}/g;
/** Names safe inside a CEL string literal `request.headers['…']`. */
const PLAIN_HEADER_NAME = /^[a-z0-9_.-]+$/;

function collect(value: unknown, into: Set<string>): boolean {
  if (typeof value === 'string') {
    for (const m of value.matchAll(HEADER_PLACEHOLDER)) {
      const name = m[1]!.trim().toLowerCase();
      if (!PLAIN_HEADER_NAME.test(name)) return false;
      into.add(name);
    }
    return true;
  }
  if (Array.isArray(value)) return value.every((v) => collect(v, into));
  if (value !== null && typeof value === 'object') return Object.entries(value).every(([k, v]) => collect(k, into) && collect(v, into));
  return true;
}

/**
 * The sorted lowercased names of the request headers the API reads, or undefined when one of them cannot
 * be asked for as an attribute (its requests then take the path that sends all headers).
 */
export function headersReadBy(api: GraphQLApiConfig): string[] | undefined {
  const names = new Set<string>(ENGINE_HEADERS);
  const { name: _name, version: _version, schemaDefinition: _sdl, ...rest } = api;
  if (!collect(rest, names)) return undefined;
  return [...names].sort();
}
