// The outcomes of a check: allow, or one reason to deny (each has its own response, service.ts).

export type DenyReason =
  /** config_id names no loaded AuthConfig (or is missing) */
  | 'unknown_config'
  /** the CheckRequest itself could not be parsed */
  | 'malformed_request'
  /** no Authorization header */
  | 'missing_token'
  /** Authorization is not `Bearer <b64token>`, is too long, or appears twice */
  | 'invalid_request'
  /** the provider says inactive (unknown, expired, revoked), `exp` has passed, or a JWT does not verify */
  | 'invalid_token'
  /** active, but a required scope is missing */
  | 'insufficient_scope'
  /** an apiKeyAuth step: no API key header (401, as Gloo) */
  | 'missing_api_key'
  /** an apiKeyAuth step: the header holds none of the keys (401, as Gloo) */
  | 'invalid_api_key'
  /** basicAuth, ldap or hmacAuth: no, or wrong, credentials (401) */
  | 'invalid_credentials'
  /** booleanExpr is false without a failing step to name (a `!step` whose step allowed) */
  | 'access_denied'
  /** the provider (introspection or JWKS endpoint) is unreachable, too slow, or answered garbage */
  | 'unavailable'
  /** a browser login step answered with a redirect: to the login page, back to the app after the callback, after logout */
  | 'redirect';

export type Outcome = 'allow' | DenyReason;

export const DENY_REASONS: readonly DenyReason[] = [
  'unknown_config',
  'malformed_request',
  'missing_token',
  'invalid_request',
  'invalid_token',
  'insufficient_scope',
  'missing_api_key',
  'invalid_api_key',
  'invalid_credentials',
  'access_denied',
  'unavailable',
  'redirect',
];
