// What the console never shows: Secret values, and any field of a spec that holds a secret inline (a client
// secret, a password, a private key, a JWKS's private members). The controller API already hides Secrets'
// data; the console redacts again, for every kind, so a field added later is covered by its name.

/** Names of fields whose string values are secret; references to a secret (`…Ref`, `…Refs`) stay readable. */
const SECRET_FIELD = /secret|password|passwd|private_?key|credential|bearer_?token|api_?key$|^token$|^k$/i;
const REFERENCE = /(Ref|Refs|Name|Namespace|Header|HeaderName|Path|File)$/;

export const REDACTED = '<redacted>';

/** A deep copy of `value` with secret values replaced by `<redacted>`. */
export function redactValue(value: unknown, key = ''): unknown {
  const secret = key !== '' && SECRET_FIELD.test(key) && !REFERENCE.test(key);
  if (Array.isArray(value)) return value.map((v) => (secret && typeof v !== 'object' ? REDACTED : redactValue(v)));
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, redactValue(v, k)]));
  }
  if (secret && value !== null && value !== undefined && value !== '' && typeof value !== 'boolean') return REDACTED;
  if (typeof value === 'string') {
    // a JWKS inline (jwt providers' local keys): its public keys stay readable, its private members do not
    if (value.trimStart().startsWith('{') && value.includes('"keys"')) return redactJwks(value);
    if (/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(value)) return REDACTED;
  }
  return value;
}

/** A resource as the console shows it: a Secret's data and stringData by key and size only; other secret fields redacted. */
export function redactResource<T extends Record<string, unknown>>(resource: T): T {
  const out = redactValue(resource) as Record<string, unknown>;
  if (resource['kind'] === 'Secret') {
    for (const field of ['data', 'stringData']) {
      const values = resource[field];
      if (values && typeof values === 'object') {
        out[field] = Object.fromEntries(
          Object.entries(values as Record<string, unknown>).map(([k, v]) => [
            k,
            // the controller API already says "<redacted, N bytes>"; a raw value never passes
            typeof v === 'string' && /^<redacted, \d+ bytes>$/.test(v) ? v : REDACTED,
          ]),
        );
      }
    }
  }
  return out as T;
}

const SECRET_JWK_MEMBERS = new Set(['k', 'd', 'p', 'q', 'dp', 'dq', 'qi', 'oth']);

function redactJwks(text: string): string {
  try {
    const jwks = JSON.parse(text) as { keys?: Record<string, unknown>[] };
    if (!Array.isArray(jwks.keys)) return REDACTED;
    const keys = jwks.keys.map((key) =>
      Object.fromEntries(Object.entries(key).map(([m, v]) => [m, SECRET_JWK_MEMBERS.has(m) ? REDACTED : v])),
    );
    return JSON.stringify({ ...jwks, keys });
  } catch {
    return REDACTED;
  }
}
