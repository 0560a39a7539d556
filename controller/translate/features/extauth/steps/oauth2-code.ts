// `oauth2.oidcAuthorizationCode` and `oauth2.oauth2` (plain OAuth2): the browser login extauth runs
// (extensions/extauth/steps/oauth2-code.ts). Resolves the client secret and the session's cookie key from
// Secrets, and maps Gloo's session options onto the resolved step.
import { createPrivateKey, hkdfSync } from 'node:crypto';
import type { CodeFlowStepConfig } from '../../../../../common/auth-config.js';
import type { OidcAuthorizationCode, PlainOAuth2 } from '../../../../api/schemas.js';
import { nsName } from '../../../names.js';
import { secretValue } from '../../../secrets.js';
import { checkStep, checkUrl, clientSecret, durationMs, type StepResolveContext } from './common.js';

/** Secret keys that may hold privateKeyJwt's PEM signing key. */
const SIGNING_KEY_KEYS = ['privateKey', 'private-key', 'private_key', 'tls.key'];

/** The Secret data key of a session cipher key (Gloo's EncryptionKeySecret). */
const CIPHER_KEY = 'key';

/** The resolved fields' names as the user wrote them (for problems the shared schema finds). */
const USER_FIELDS: Record<string, string> = {
  cookieKey: 'cipherConfig.keyRef',
  cookieName: 'redis.cookieName',
  preExpiryBufferMs: 'redis.preExpiryBuffer',
  discoveryPollIntervalMs: 'discoveryPollInterval',
  idTokenAlgs: 'discoveryOverride.idTokenAlgs',
  authEndpoint: 'discoveryOverride.authEndpoint',
  tokenEndpoint: 'discoveryOverride.tokenEndpoint',
  endSessionEndpoint: 'discoveryOverride.endSessionEndpoint',
};

export function resolveCodeFlow(
  spec: OidcAuthorizationCode | PlainOAuth2,
  flow: 'oidc' | 'oauth2',
  where: string,
  ctx: StepResolveContext,
  failOnRedirect: boolean,
): CodeFlowStepConfig | undefined {
  const problems = ctx.problems;
  const before = problems.length;
  const oidc = flow === 'oidc' ? (spec as OidcAuthorizationCode) : undefined;
  const plain = flow === 'oauth2' ? (spec as PlainOAuth2) : undefined;
  // the client secret: clientAuthentication.clientSecret, else the (deprecated) top-level fields
  const auth = oidc?.clientAuthentication?.clientSecret;
  const keyJwt = oidc?.clientAuthentication?.privateKeyJwt;
  if (auth && keyJwt)
    problems.push({ code: 'InvalidSpec', message: `${where}.clientAuthentication: set one of clientSecret, privateKeyJwt` });
  const privateKeyJwt = keyJwt ? signingKey(keyJwt, `${where}.clientAuthentication.privateKeyJwt`, ctx) : undefined;
  const secretRef = auth?.clientSecretRef ?? spec.clientSecretRef;
  // private_key_jwt authenticates the client instead of a secret
  const disabled = keyJwt !== undefined || (auth?.disableClientSecret ?? spec.disableClientSecret ?? false);
  let secret: string | undefined;
  if (!disabled) {
    if (!secretRef)
      problems.push({ code: 'InvalidSpec', message: `${where}.clientSecretRef: required unless disableClientSecret is true` });
    else
      secret = clientSecret(secretRef, `${where}${auth?.clientSecretRef ? '.clientAuthentication.clientSecret' : ''}.clientSecretRef`, ctx);
  }
  for (const [field, value] of [
    ['appUrl', spec.appUrl],
    ['afterLogoutUrl', spec.afterLogoutUrl],
    ['issuerUrl', oidc?.issuerUrl],
    ['authEndpoint', plain?.authEndpoint ?? oidc?.discoveryOverride?.authEndpoint],
    ['tokenEndpoint', plain?.tokenEndpoint ?? oidc?.discoveryOverride?.tokenEndpoint],
    ['revocationEndpoint', plain?.revocationEndpoint ?? oidc?.discoveryOverride?.revocationEndpoint],
    ['jwksUri', oidc?.discoveryOverride?.jwksUri],
    ['discoveryOverride.endSessionEndpoint', oidc?.discoveryOverride?.endSessionEndpoint],
  ] as const) {
    if (value !== undefined) checkUrl(value, `${where}.${field}`, problems);
  }
  const s = spec.session ?? {};
  const redis = s.redis;
  const store = redis ? 'redis' : 'cookie';
  if (s.redis && s.cookie) problems.push({ code: 'InvalidSpec', message: `${where}.session: set one of cookie, redis` });
  const keyPrefix = redis ? '' : s.cookie?.keyPrefix ? `${s.cookie.keyPrefix}_` : '';
  const cookieName = redis ? redis.cookieName || '__session' : `${keyPrefix}__session`;
  // the cookie store seals the tokens: with the cipher key when given, else a key derived from the client secret
  let cookieKey: string | undefined;
  if (store === 'cookie') {
    const keyRef = s.cipherConfig?.keyRef;
    if (keyRef) {
      const ns = keyRef.namespace ?? ctx.namespace;
      const keySecret = ctx.secrets.get(nsName(ns, keyRef.name));
      const value = keySecret ? secretValue(keySecret, CIPHER_KEY) : undefined;
      if (!keySecret)
        problems.push({ code: 'SecretNotFound', message: `${where}.session.cipherConfig.keyRef: Secret ${ns}.${keyRef.name} not found` });
      else if (value === undefined || Buffer.byteLength(value) !== 32)
        problems.push({
          code: 'InvalidSpec',
          message: `${where}.session.cipherConfig.keyRef: Secret ${ns}.${keyRef.name} needs a 32-byte value in key ${CIPHER_KEY}`,
        });
      else cookieKey = Buffer.from(value).toString('base64');
    } else if (secret !== undefined) {
      const info = `legate oauth2 session cookie|${ctx.namespace}|${spec.clientId}`;
      cookieKey = Buffer.from(hkdfSync('sha256', secret, 'legate', info, 32)).toString('base64');
    } else if (privateKeyJwt !== undefined) {
      const info = `legate oauth2 session cookie|${ctx.namespace}|${spec.clientId}`;
      cookieKey = Buffer.from(hkdfSync('sha256', privateKeyJwt.signingKey, 'legate', info, 32)).toString('base64');
    } else if (disabled && keyJwt === undefined) {
      problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.session: a cookie session without a client secret needs session.cipherConfig.keyRef ` +
          '(a 32-byte key) or session.redis',
      });
    }
  }
  if (redis?.options?.poolSize !== undefined)
    ctx.warnings.push({
      code: 'InvalidSpec',
      message: `${where}.session.redis.options.poolSize: ignored (Legate multiplexes one connection per Redis)`,
    });
  const mount = redis?.options?.tlsCertMountPath;
  if (mount !== undefined && redis?.options?.socketType !== 'TLS')
    ctx.warnings.push({
      code: 'InvalidSpec',
      message: `${where}.session.redis.options.tlsCertMountPath: ignored without socketType TLS (as in Gloo)`,
    });
  else if (mount !== undefined && !mount.startsWith('/'))
    problems.push({
      code: 'InvalidSpec',
      message: `${where}.session.redis.options.tlsCertMountPath: ${JSON.stringify(mount)} must be an absolute path`,
    });
  const [host, port] = splitHostPort(redis?.options?.host ?? '', `${where}.session.redis.options.host`, problems);
  const sameSite = { DefaultMode: 'default', LaxMode: 'lax', StrictMode: 'strict', NoneMode: 'none' } as const;
  const co = s.cookieOptions ?? {};
  const authMethods = oidc?.discoveryOverride?.authMethods;
  const out: CodeFlowStepConfig = {
    type: 'oauth2-code',
    ...ctx.named,
    flow,
    clientId: spec.clientId,
    ...(secret !== undefined ? { clientSecret: secret } : {}),
    ...(oidc ? { issuerUrl: oidc.issuerUrl } : {}),
    discoveryPollIntervalMs: oidc?.discoveryPollInterval ? durationMs(oidc.discoveryPollInterval) : 30 * 60_000,
    ...optional('authEndpoint', plain?.authEndpoint ?? oidc?.discoveryOverride?.authEndpoint),
    ...optional('tokenEndpoint', plain?.tokenEndpoint ?? oidc?.discoveryOverride?.tokenEndpoint),
    ...optional('jwksUri', oidc?.discoveryOverride?.jwksUri),
    ...optional('revocationEndpoint', plain?.revocationEndpoint ?? oidc?.discoveryOverride?.revocationEndpoint),
    ...optional('endSessionEndpoint', oidc?.discoveryOverride?.endSessionEndpoint || undefined),
    endSessionMethod: oidc?.endSessionProperties?.methodType === 'PostMethod' ? 'post' : 'get',
    idTokenAlgs: (oidc?.discoveryOverride?.idTokenAlgs ?? []) as CodeFlowStepConfig['idTokenAlgs'],
    clientSecretPost:
      authMethods !== undefined && !authMethods.includes('client_secret_basic') && authMethods.includes('client_secret_post'),
    ...optional('privateKeyJwt', privateKeyJwt),
    jwksOnDemandRefresh: jwksPolicy(oidc?.jwksCacheRefreshPolicy),
    appUrl: spec.appUrl,
    callbackPath: spec.callbackPath,
    callbackPathIsRegex: oidc?.parseCallbackPathAsRegex ?? false,
    ...optional('logoutPath', spec.logoutPath || undefined),
    ...optional('afterLogoutUrl', spec.afterLogoutUrl || undefined),
    scopes: spec.scopes ?? [],
    authEndpointQueryParams: spec.authEndpointQueryParams ?? {},
    tokenEndpointQueryParams: spec.tokenEndpointQueryParams ?? {},
    // Gloo's default namespace when none is given
    ...optional(
      'queryParamsFromMetadata',
      oidc?.autoMapFromMetadata ? oidc.autoMapFromMetadata.namespace || 'solo_authconfig_oidc' : undefined,
    ),
    failOnRedirect,
    session: {
      store,
      cookieName,
      ...(cookieKey !== undefined ? { cookieKey } : {}),
      ...(redis
        ? {
            redis: {
              host,
              port,
              db: redis.options?.db ?? 0,
              tls: redis.options?.socketType === 'TLS',
              ...optional('tlsCertDir', redis.options?.socketType === 'TLS' ? redis.options.tlsCertMountPath : undefined),
              keyPrefix: redis.keyPrefix ?? '',
              ...optional('sessionIdHeader', (redis.headerName ?? oidc?.sessionIdHeaderName)?.toLowerCase() || undefined),
            },
          }
        : {}),
      // Gloo's defaults: a Redis session refreshes, a cookie session does not
      allowRefreshing: redis ? (redis.allowRefreshing ?? true) : (s.cookie?.allowRefreshing ?? false),
      preExpiryBufferMs: redis?.preExpiryBuffer ? durationMs(redis.preExpiryBuffer) : 2000,
      failOnFetchFailure: s.failOnFetchFailure ?? false,
      ...optional('targetDomain', (redis?.targetDomain ?? s.cookie?.targetDomain) || undefined),
      cookie: {
        maxAgeSeconds: co.maxAge ?? 2_592_000,
        secure: !(co.notSecure ?? false),
        httpOnly: co.httpOnly ?? true,
        path: co.path ?? '/',
        sameSite: sameSite[co.sameSite ?? 'LaxMode'],
        ...optional('domain', co.domain || undefined),
      },
    },
    headers: {
      ...optional('idTokenHeader', oidc?.headers?.idTokenHeader?.toLowerCase() || undefined),
      ...optional('accessTokenHeader', oidc?.headers?.accessTokenHeader?.toLowerCase() || undefined),
      useBearerSchemaForAuthorization: oidc?.headers?.useBearerSchemaForAuthorization ?? false,
    },
    claimsToHeaders: [...(oidc?.identityToken?.claimsToHeaders ?? [])].map((c) => ({
      claim: c.claim,
      header: c.header.toLowerCase(),
      append: c.append ?? false,
    })),
    accessTokenClaimsToHeaders: [...(oidc?.accessToken?.claimsToHeaders ?? [])].map((c) => ({
      claim: c.claim,
      header: c.header.toLowerCase(),
      append: c.append ?? false,
    })),
    dynamicMetadataFromClaims: oidc?.dynamicMetadataFromClaims ?? {},
  };
  if (problems.length > before) return undefined;
  return checkStep(out, where, problems, USER_FIELDS) ? out : undefined;
}

/** Gloo's JwksOnDemandCacheRefreshPolicy (default never). */
function jwksPolicy(p: OidcAuthorizationCode['jwksCacheRefreshPolicy']): CodeFlowStepConfig['jwksOnDemandRefresh'] {
  if (p?.never) return 'never';
  if (p?.always) return 'always';
  if (p?.maxIdpReqPerPollingInterval !== undefined) return { maxPerPollInterval: p.maxIdpReqPerPollingInterval };
  return 'never';
}

/** privateKeyJwt's signing key (a PEM private key that can sign a JWT) and lifetime. */
function signingKey(
  spec: NonNullable<NonNullable<OidcAuthorizationCode['clientAuthentication']>['privateKeyJwt']>,
  where: string,
  ctx: StepResolveContext,
): CodeFlowStepConfig['privateKeyJwt'] {
  const ref = spec.signingKeyRef;
  const ns = ref.namespace ?? ctx.namespace;
  const secret = ctx.secrets.get(nsName(ns, ref.name));
  if (!secret) {
    ctx.problems.push({ code: 'SecretNotFound', message: `${where}.signingKeyRef: Secret ${ns}.${ref.name} not found` });
    return undefined;
  }
  const pem = SIGNING_KEY_KEYS.map((k) => secretValue(secret, k)).find((v) => v !== undefined);
  const bad = (why: string): undefined => {
    ctx.problems.push({ code: 'InvalidSpec', message: `${where}.signingKeyRef: Secret ${ns}.${ref.name} ${why}` });
    return undefined;
  };
  if (pem === undefined) return bad(`has none of the keys ${SIGNING_KEY_KEYS.join(', ')}`);
  try {
    const key = createPrivateKey(pem);
    const type = key.asymmetricKeyType;
    const curve = key.asymmetricKeyDetails?.namedCurve;
    const signs =
      type === 'rsa' ||
      type === 'rsa-pss' ||
      type === 'ed25519' ||
      (type === 'ec' && ['prime256v1', 'secp384r1', 'secp521r1'].includes(curve!));
    if (!signs) return bad(`holds a ${type ?? 'symmetric'} key${curve ? ` (${curve})` : ''}, which cannot sign a JWT`);
  } catch {
    return bad('does not hold a PEM private key');
  }
  return { signingKey: pem, validForMs: spec.validFor ? Math.max(1000, durationMs(spec.validFor)) : 5000 };
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}

/** `host:port` (port default 6379), or `unix://…` refused. */
function splitHostPort(text: string, where: string, problems: StepResolveContext['problems']): [string, number] {
  if (text === '') return ['', 6379];
  if (text.startsWith('unix://')) {
    problems.push({ code: 'NotSupported', message: `${where}: Unix sockets are not supported; give host:port` });
    return ['', 6379];
  }
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(text);
  if (!m) {
    problems.push({ code: 'InvalidSpec', message: `${where}: ${JSON.stringify(text)} is not host:port` });
    return ['', 6379];
  }
  return [m[1]!.replace(/^\[|\]$/g, ''), m[2] ? Number(m[2]) : 6379];
}
