// Automatic persisted queries (Apollo's APQ protocol: `extensions.persistedQuery{version: 1, sha256Hash}`)
// and the allow-list of query hashes (`allowedQueryHashes`). Both run after the request's parameters are
// parsed and before the document cache, so a refused operation costs no parsing or validation.

import { createHash } from 'node:crypto';
import type { GraphQLParams } from './http.js';
import { Lru } from './lru.js';

export const DEFAULT_PERSISTED_QUERY_CACHE_SIZE = 1000;
/** Total query text the APQ cache holds. */
const PERSISTED_QUERY_MAX_CHARS = 8 * 1024 * 1024;

/** What the engine answers instead of executing: status and the GraphQL error (message, extensions.code). */
export interface PersistedQueryRefusal {
  /** null: a request error (200 under application/json, 400 under application/graphql-response+json) */
  status: 200 | 400 | null;
  message: string;
  code: string;
}

export function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** The APQ extension of a request, when it has one. */
function persistedQueryOf(extensions: Record<string, unknown> | undefined): unknown {
  return extensions === undefined ? undefined : extensions['persistedQuery'];
}

/**
 * The parameters of a request that carries no `query` (http.ts refuses those), read again only when it is
 * an APQ request by hash: GET `?extensions=…&variables=…&operationName=…` or a POST JSON body. undefined:
 * not such a request (the original rejection stands).
 */
export function hashOnlyParams(method: string, path: string, body: Buffer): GraphQLParams | undefined {
  let raw: Record<string, unknown>;
  try {
    if (method === 'GET') {
      const q = path.indexOf('?');
      const search = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
      raw = { operationName: search.get('operationName') ?? undefined };
      for (const name of ['variables', 'extensions']) {
        const text = search.get(name);
        if (text !== null && text !== '') raw[name] = JSON.parse(text);
      }
    } else {
      const parsed: unknown = JSON.parse(body.toString('utf8'));
      if (!isRecord(parsed)) return undefined;
      raw = parsed;
    }
  } catch {
    return undefined;
  }
  const { variables, operationName, extensions } = raw;
  if (raw['query'] !== undefined && raw['query'] !== null) return undefined;
  if (!isRecord(extensions) || persistedQueryOf(extensions) === undefined) return undefined;
  if (variables !== undefined && variables !== null && !isRecord(variables)) return undefined;
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string') return undefined;
  return {
    query: '',
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    operationName: (operationName ?? undefined) as string | undefined,
    extensions,
  };
}

export class PersistedQueries {
  private readonly cache: Lru<string> | undefined;
  private readonly allowed: ReadonlySet<string> | undefined;

  /** cacheSize 0 turns APQ off; allowedHashes (lowercase hex) set: only those query texts run. */
  constructor(cacheSize: number, allowedHashes: readonly string[] | undefined) {
    this.cache = cacheSize > 0 ? new Lru<string>(Math.floor(cacheSize), PERSISTED_QUERY_MAX_CHARS) : undefined;
    this.allowed = allowedHashes === undefined ? undefined : new Set(allowedHashes.map((h) => h.toLowerCase()));
  }

  get size(): number {
    return this.cache?.size ?? 0;
  }

  /** Sets `params.query` from the cache for a hash-only request, registers a query sent with its hash, and
   * applies the allow-list. Returns a refusal, or undefined when the request may execute. */
  apply(params: GraphQLParams, hashOnly: boolean): PersistedQueryRefusal | undefined {
    const pq = persistedQueryOf(params.extensions);
    let hash: string | undefined;
    if (pq !== undefined && pq !== null) {
      if (this.cache === undefined) return { status: 200, message: 'PersistedQueryNotSupported', code: 'PERSISTED_QUERY_NOT_SUPPORTED' };
      if (!isRecord(pq) || pq['version'] !== 1)
        return { status: 400, message: 'Unsupported persisted query version: only version 1 is supported.', code: 'BAD_REQUEST' };
      const sha = pq['sha256Hash'];
      if (typeof sha !== 'string' || !/^[0-9a-fA-F]{64}$/.test(sha))
        return { status: 400, message: 'Invalid persisted query: sha256Hash must be a hex sha256.', code: 'BAD_REQUEST' };
      hash = sha.toLowerCase();
      if (hashOnly) {
        const query = this.cache.get(hash);
        if (query === undefined) return { status: 200, message: 'PersistedQueryNotFound', code: 'PERSISTED_QUERY_NOT_FOUND' };
        params.query = query;
      } else {
        if (sha256Hex(params.query) !== hash) return { status: 400, message: 'provided sha does not match query', code: 'BAD_REQUEST' };
        this.cache.set(hash, params.query, params.query.length);
      }
    } else if (hashOnly) {
      return { status: 400, message: 'Missing query: the request must carry a "query" string.', code: 'BAD_REQUEST' };
    }
    if (this.allowed !== undefined) {
      if (!this.allowed.has(hash ?? sha256Hex(params.query))) {
        return {
          status: null,
          message: "Operation not allowed: the sha256 of its query text is not in this API's allowedQueryHashes.",
          code: 'OPERATION_NOT_ALLOWED',
        };
      }
    }
    return undefined;
  }
}
