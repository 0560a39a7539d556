// dynamicMetadataFromClaims: the claims of an access token (a JWT's payload, or an introspection answer) as
// Envoy dynamic metadata (namespace envoy.filters.http.ext_authz), each under the key the user chose, with
// the claim's structure kept. A claim the token lacks is left out.

export function claimsMetadata(
  claims: Readonly<Record<string, unknown>>,
  pairs: readonly (readonly [key: string, claim: string])[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, claim] of pairs) if (Object.hasOwn(claims, claim) && claims[claim] !== undefined) out[key] = claims[claim];
  return out;
}
