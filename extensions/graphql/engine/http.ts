// GraphQL over HTTP (graphql-over-http draft, checked against the graphql-http audits): content
// negotiation, request parameter parsing, and the status code rules.

export const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';
export const APPLICATION_JSON = 'application/json';
export type MediaType = typeof GRAPHQL_RESPONSE_JSON | typeof APPLICATION_JSON;

export const CONTENT_TYPE: Record<MediaType, string> = {
  [GRAPHQL_RESPONSE_JSON]: 'application/graphql-response+json; charset=utf-8',
  [APPLICATION_JSON]: 'application/json; charset=utf-8',
};

export interface GraphQLParams {
  query: string;
  variables: Record<string, unknown> | undefined;
  operationName: string | undefined;
  extensions: Record<string, unknown> | undefined;
}

/** A request that is not a well-formed GraphQL-over-HTTP request: answered with this status whatever the media type. */
export interface RequestRejection {
  status: number;
  message: string;
  headers?: Record<string, string>;
  /** the parameters parsed but carry no query (an APQ request by hash alone looks like this) */
  missingQuery?: true;
}

/** Refuses malformed UTF-8 instead of turning it into U+FFFD (which would then run as part of a query). */
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

function isUtf8Charset(value: string): boolean {
  const v = value.trim().replace(/^"|"$/g, '').toLowerCase();
  return v === 'utf-8' || v === 'utf8';
}

/**
 * Picks the response media type from `Accept`. Missing/empty Accept, `*\/*` and `application/*` mean
 * application/json (the audits' legacy rule); `application/graphql-response+json` wins over application/json
 * at equal quality. Ranges with q=0 or a non-UTF-8 charset are not acceptable. null -> 406.
 */
export function negotiate(accept: string | undefined): MediaType | null {
  if (accept === undefined) return APPLICATION_JSON;
  const trimmed = accept.trim();
  if (trimmed === '') return APPLICATION_JSON;
  let best: MediaType | null = null;
  let bestQ = 0;
  let bestRank = 0;
  for (const range of trimmed.split(',')) {
    const params = range.split(';');
    const type = params[0]!.trim().toLowerCase();
    let q = 1;
    let charsetOk = true;
    for (let i = 1; i < params.length; i++) {
      const p = params[i]!;
      const eq = p.indexOf('=');
      if (eq < 0) continue;
      const k = p.slice(0, eq).trim().toLowerCase();
      const v = p.slice(eq + 1);
      if (k === 'q') {
        q = Number(v.trim());
        if (!Number.isFinite(q)) q = 0;
      } else if (k === 'charset') charsetOk = isUtf8Charset(v);
    }
    if (!(q > 0) || !charsetOk) continue;
    let media: MediaType;
    let rank: number;
    if (type === GRAPHQL_RESPONSE_JSON) {
      media = GRAPHQL_RESPONSE_JSON;
      rank = 3;
    } else if (type === APPLICATION_JSON) {
      media = APPLICATION_JSON;
      rank = 2;
    } else if (type === 'application/*' || type === '*/*') {
      media = APPLICATION_JSON;
      rank = 1;
    } else continue;
    if (q > bestQ || (q === bestQ && rank > bestRank)) {
      best = media;
      bestQ = q;
      bestRank = rank;
    }
  }
  return best;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Checks the parameters' types (shared by GET and POST). */
function checkParams(raw: Record<string, unknown>): GraphQLParams | RequestRejection {
  const { query, variables, operationName, extensions } = raw;
  if (query === undefined || query === null)
    return { status: 400, message: 'Missing query: the request must carry a "query" string.', missingQuery: true };
  if (typeof query !== 'string') return { status: 400, message: 'Invalid query: "query" must be a string.' };
  if (variables !== undefined && variables !== null && !isPlainObject(variables))
    return { status: 400, message: 'Invalid variables: "variables" must be an object (map) or null.' };
  if (operationName !== undefined && operationName !== null && typeof operationName !== 'string')
    return { status: 400, message: 'Invalid operationName: "operationName" must be a string or null.' };
  if (extensions !== undefined && extensions !== null && !isPlainObject(extensions))
    return { status: 400, message: 'Invalid extensions: "extensions" must be an object (map) or null.' };
  return {
    query,
    variables: (variables ?? undefined) as Record<string, unknown> | undefined,
    operationName: (operationName ?? undefined) as string | undefined,
    extensions: (extensions ?? undefined) as Record<string, unknown> | undefined,
  };
}

export function isRejection(v: GraphQLParams | RequestRejection): v is RequestRejection {
  return (v as RequestRejection).status !== undefined;
}

export function paramsFromGet(path: string): GraphQLParams | RequestRejection {
  const q = path.indexOf('?');
  const search = new URLSearchParams(q < 0 ? '' : path.slice(q + 1));
  const raw: Record<string, unknown> = {
    query: search.get('query') ?? undefined,
    operationName: search.get('operationName') ?? undefined,
  };
  for (const name of ['variables', 'extensions'] as const) {
    const text = search.get(name);
    if (text === null || text === '') continue;
    try {
      raw[name] = JSON.parse(text);
    } catch {
      return { status: 400, message: `Invalid ${name}: the "${name}" query parameter is not valid JSON.` };
    }
  }
  return checkParams(raw);
}

export function paramsFromPost(contentType: string | undefined, body: Buffer, maxBodyBytes: number): GraphQLParams | RequestRejection {
  const parts = (contentType ?? '').split(';');
  const media = parts[0]!.trim().toLowerCase();
  let charsetOk = true;
  for (let i = 1; i < parts.length; i++) {
    const p = parts[i]!;
    const eq = p.indexOf('=');
    if (eq >= 0 && p.slice(0, eq).trim().toLowerCase() === 'charset') charsetOk = isUtf8Charset(p.slice(eq + 1));
  }
  if (media !== APPLICATION_JSON || !charsetOk) {
    return {
      status: 415,
      message:
        `Unsupported Media Type: POST bodies must be application/json (UTF-8), got ` +
        `${contentType === undefined || contentType === '' ? 'none' : JSON.stringify(contentType)}.`,
    };
  }
  if (body.length > maxBodyBytes) return { status: 413, message: `Payload Too Large: the request body exceeds ${maxBodyBytes} bytes.` };
  if (body.length === 0) return { status: 400, message: 'Missing body: a POST must carry a JSON object with a "query".' };
  let text: string;
  try {
    // (a leading BOM is dropped by the decoder)
    text = strictUtf8.decode(body);
  } catch {
    return { status: 400, message: 'Malformed body: the request body is not valid UTF-8.' };
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return { status: 400, message: 'Malformed JSON: the request body does not parse as JSON.' };
  }
  if (!isPlainObject(parsed))
    return { status: 400, message: 'Invalid body: the JSON body must be an object (batched requests are not supported).' };
  return checkParams(parsed);
}
