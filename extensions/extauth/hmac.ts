// hmacAuth with its parameters in the request headers: the client signs chosen parts of the request
// with the shared secret of its user and sends
//   Authorization: hmac username="alice", algorithm="hmac-sha1", headers="date @request-target", signature="<base64>"
// (the draft-cavage HTTP signature form: each listed header as `name: value`, `@request-target` as
// `<method lower-case> <path with query>` (`(request-target)` with its name), joined by "\n"). sha1 is
// Gloo's algorithm; sha256 and sha512 are accepted too. A signed `date` must be within the allowed skew,
// so a captured request cannot be replayed later. Pure functions; the signature is compared in constant time.
import { createHmac, timingSafeEqual } from 'node:crypto';

export const HMAC_ALGORITHMS = { 'hmac-sha1': 'sha1', 'hmac-sha256': 'sha256', 'hmac-sha512': 'sha512' } as const;
/** How far a signed `date` may be from now. */
export const HMAC_CLOCK_SKEW_MS = 300_000;

export interface HmacParams {
  username: string;
  algorithm: keyof typeof HMAC_ALGORITHMS;
  headers: string[];
  signature: string;
}

/** Parses the `hmac …` (or `Signature …`) credentials; undefined when absent or malformed. */
export function parseHmacAuthorization(header: string | undefined): HmacParams | undefined {
  if (header === undefined || header.length > 8192) return undefined;
  const m = /^(?:hmac|signature) +(.*)$/i.exec(header.trim());
  if (!m) return undefined;
  const params = new Map<string, string>();
  const re = /\s*([A-Za-z]+)\s*=\s*"([^"]*)"\s*(?:,|$)/gy;
  let p: RegExpExecArray | null;
  while (re.lastIndex < m[1]!.length && (p = re.exec(m[1]!)) !== null) {
    const key = p[1]!.toLowerCase();
    if (params.has(key)) return undefined;
    params.set(key, p[2]!);
  }
  if (re.lastIndex !== m[1]!.length && m[1]!.length > 0) return undefined;
  const username = params.get('username') ?? params.get('keyid');
  const algorithm = (params.get('algorithm') ?? 'hmac-sha1').toLowerCase();
  const signature = params.get('signature');
  if (!username || !signature || !Object.hasOwn(HMAC_ALGORITHMS, algorithm)) return undefined;
  const headers = (params.get('headers') ?? 'date').toLowerCase().split(/ +/).filter(Boolean);
  return { username, algorithm: algorithm as HmacParams['algorithm'], headers, signature };
}

export interface SignedRequest {
  method: string;
  /** path with query */
  path: string;
  /** lower-case names */
  headers: Readonly<Record<string, string>>;
}

/** The string the client signed, or a reason it cannot be built (a listed header is missing). */
export function signingString(params: HmacParams, req: SignedRequest): string | { missing: string } {
  const lines: string[] = [];
  for (const h of params.headers) {
    if (h === '@request-target') lines.push(`${req.method.toLowerCase()} ${req.path}`);
    else if (h === '(request-target)') lines.push(`${h}: ${req.method.toLowerCase()} ${req.path}`);
    else if (h === 'request-line') lines.push(`${req.method.toUpperCase()} ${req.path} HTTP/1.1`);
    else {
      const v = req.headers[h];
      if (v === undefined) return { missing: h };
      lines.push(`${h}: ${v}`);
    }
  }
  return lines.join('\n');
}

export type HmacVerdict = 'ok' | 'missing' | 'malformed' | 'unknown_user' | 'bad_signature' | 'stale' | 'unsigned_date';

/** Checks a request's HMAC signature against the users' secrets. */
export function verifyHmac(
  authorization: string | undefined,
  req: SignedRequest,
  credentials: Readonly<Record<string, string>>,
  now = Date.now(),
): { verdict: HmacVerdict; user?: string } {
  if (authorization === undefined) return { verdict: 'missing' };
  const params = parseHmacAuthorization(authorization);
  if (!params) return { verdict: 'malformed' };
  if (!params.headers.includes('date')) return { verdict: 'unsigned_date', user: params.username };
  const date = Date.parse(req.headers['date'] ?? '');
  if (!Number.isFinite(date) || Math.abs(now - date) > HMAC_CLOCK_SKEW_MS) return { verdict: 'stale', user: params.username };
  const secret = Object.hasOwn(credentials, params.username) ? credentials[params.username] : undefined;
  const text = signingString(params, req);
  if (typeof text !== 'string') return { verdict: 'malformed', user: params.username };
  // an unknown user costs the same as a known one
  const mac = createHmac(HMAC_ALGORITHMS[params.algorithm], secret ?? '\0unknown')
    .update(text, 'utf8')
    .digest();
  const given = Buffer.from(params.signature, 'base64');
  const ok = given.length === mac.length && timingSafeEqual(given, mac);
  if (secret === undefined) return { verdict: 'unknown_user', user: params.username };
  return ok ? { verdict: 'ok', user: params.username } : { verdict: 'bad_signature', user: params.username };
}
