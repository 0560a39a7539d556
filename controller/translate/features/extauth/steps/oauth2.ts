// `oauth2` steps: accessTokenValidation by introspection (RFC 7662) or as a JWT (a JWK set, remote or local).
import { DEFAULT_JWKS_REFRESH_MS, type AuthStepConfig, type JwtStepConfig } from '../../../../../common/auth-config.js';
import type { IntrospectionStepConfig } from '../../../../../common/contract.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { checkStep, checkUrl, clientSecret, durationMs, type StepResolveContext } from './common.js';
import { resolveCodeFlow } from './oauth2-code.js';

export const DEFAULT_AUTH_CACHE_TIMEOUT = '10m';

type OAuth2Spec = NonNullable<AuthStep['oauth2']>;
type AccessTokenValidation = NonNullable<OAuth2Spec['accessTokenValidation']>;

export function resolveOAuth2(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const oauth2 = raw as OAuth2Spec;
  const where = `${ctx.where}.oauth2`;
  const set = (['accessTokenValidation', 'oidcAuthorizationCode', 'oauth2'] as const).filter((k) => oauth2[k] !== undefined);
  if (set.length !== 1) {
    ctx.problems.push({
      code: 'InvalidSpec',
      message: `${where}: set exactly one of accessTokenValidation, oidcAuthorizationCode, oauth2`,
    });
    return undefined;
  }
  if (oauth2.oidcAuthorizationCode)
    return resolveCodeFlow(oauth2.oidcAuthorizationCode, 'oidc', `${where}.oidcAuthorizationCode`, ctx, ctx.failOnRedirect);
  if (oauth2.oauth2) return resolveCodeFlow(oauth2.oauth2, 'oauth2', `${where}.oauth2`, ctx, ctx.failOnRedirect);
  const atv = oauth2.accessTokenValidation!;
  return atv.jwt ? jwtStep(atv, ctx) : introspectionStep(atv, ctx);
}

/** Gloo's deprecated `oauth` step: served as the oidcAuthorizationCode login it became, with a Warning. */
export function resolveDeprecatedOAuth(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const where = `${ctx.where}.oauth`;
  ctx.warnings.push({ code: 'Deprecated', message: `${where}: deprecated in Gloo; served as oauth2.oidcAuthorizationCode` });
  return resolveCodeFlow(raw as NonNullable<AuthStep['oauth']>, 'oidc', where, ctx, ctx.failOnRedirect);
}

/** userinfoUrl, when set (checkStep reports one that is not http or https). */
function userinfo(atv: AccessTokenValidation): { userinfoUrl?: string } {
  return atv.userinfoUrl === undefined || atv.userinfoUrl === '' ? {} : { userinfoUrl: atv.userinfoUrl };
}

/** dynamicMetadataFromClaims, when it names any claim. */
function metadataFromClaims(atv: AccessTokenValidation): { dynamicMetadataFromClaims?: Record<string, string> } {
  const m = atv.dynamicMetadataFromClaims;
  return m && Object.keys(m).length ? { dynamicMetadataFromClaims: m } : {};
}

function jwtStep(atv: AccessTokenValidation, ctx: StepResolveContext): AuthStepConfig | undefined {
  const jwt = atv.jwt!;
  const out: JwtStepConfig = {
    type: 'oauth2-jwt',
    ...ctx.named,
    ...(jwt.remoteJwks
      ? {
          remoteJwks: {
            url: jwt.remoteJwks.url,
            refreshIntervalMs: jwt.remoteJwks.refreshInterval ? durationMs(jwt.remoteJwks.refreshInterval) : DEFAULT_JWKS_REFRESH_MS,
          },
        }
      : {}),
    ...(jwt.localJwks ? { localJwks: { inlineString: jwt.localJwks.inlineString } } : {}),
    ...(jwt.issuer !== undefined ? { issuer: jwt.issuer } : {}),
    audiences: jwt.audiences ?? [],
    requiredScopes: atv.requiredScopes?.scope ?? [],
    // as for introspection: how long a verified token's allow is reused (extauth's verification
    // cache, Envoy's edge cache), never past its `exp`; 0s = verify every request
    cacheTimeoutMs: durationMs(atv.cacheTimeout ?? DEFAULT_AUTH_CACHE_TIMEOUT),
    ...metadataFromClaims(atv),
    ...userinfo(atv),
  };
  return checkStep(out, `${ctx.where}.oauth2.accessTokenValidation`, ctx.problems) ? out : undefined;
}

function introspectionStep(atv: AccessTokenValidation, ctx: StepResolveContext): AuthStepConfig | undefined {
  const problems = ctx.problems;
  const where = `${ctx.where}.oauth2.accessTokenValidation`;
  const out: IntrospectionStepConfig = {
    type: 'oauth2-introspection',
    ...ctx.named,
    introspectionUrl: '',
    cacheTimeoutMs: durationMs(atv.cacheTimeout ?? DEFAULT_AUTH_CACHE_TIMEOUT),
    requiredScopes: atv.requiredScopes?.scope ?? [],
    ...metadataFromClaims(atv),
    ...userinfo(atv),
  };
  if (atv.introspection?.userIdAttributeName) out.userIdAttributeName = atv.introspection.userIdAttributeName;
  if (atv.introspectionUrl !== undefined) {
    checkUrl(atv.introspectionUrl, `${where}.introspectionUrl`, problems);
    out.introspectionUrl = atv.introspectionUrl;
  } else if (atv.introspection) {
    const intro = atv.introspection;
    const w = `${where}.introspection`;
    checkUrl(intro.introspectionUrl, `${w}.introspectionUrl`, problems);
    out.introspectionUrl = intro.introspectionUrl;
    if (!intro.disableClientSecret && (!intro.clientId || !intro.clientSecretRef)) {
      problems.push({
        code: 'InvalidSpec',
        message: `${w}: clientId and clientSecretRef are required unless disableClientSecret is true`,
      });
    }
    if (intro.clientId) out.clientId = intro.clientId;
    if (intro.clientSecretRef && !intro.disableClientSecret) {
      const value = clientSecret(intro.clientSecretRef, `${w}.clientSecretRef`, ctx);
      if (value !== undefined) out.clientSecret = value;
    }
  }
  if (problems.length === 0) checkStep(out, where, problems);
  return out;
}
