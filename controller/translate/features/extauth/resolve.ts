// Stage 1 for AuthConfigs: AuthConfig -> the resolved config the extauth service enforces.
// Implemented step: oauth2.accessTokenValidation by introspection (RFC 7662); other step kinds are
// rejected with a reason rather than silently letting requests through.
import { createHash } from 'node:crypto';
import type { AuthConfigConfig, IntrospectionStepConfig } from '../../../../common/contract.js';
import type { AuthConfig, Secret } from '../../../api/resources.js';
import { AUTH_STEP_KINDS } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem } from '../../feature.js';
import { nsName } from '../../names.js';
import { secretValue } from '../../secrets.js';

export const DEFAULT_AUTH_CACHE_TIMEOUT = '10m';
/** Keys of a Secret that may hold an OAuth2 client secret. */
const CLIENT_SECRET_KEYS = ['clientSecret', 'client-secret', 'client_secret'];

function checkUrl(value: string, where: string, problems: Problem[]): void {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    problems.push({ code: 'InvalidSpec', message: `${where}: ${JSON.stringify(value)} is not a valid URL` });
    return;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    problems.push({ code: 'InvalidSpec', message: `${where}: ${JSON.stringify(value)} must be an http or https URL` });
  }
}

/**
 * A short content hash of what decides a token's fate. Client secrets are left out: they only
 * authenticate the introspection call, and the version is visible in route metadata.
 */
export function authConfigVersion(name: string, steps: readonly IntrospectionStepConfig[]): string {
  const judged = steps.map(({ clientSecret: _secret, ...rest }) => rest);
  return createHash('sha256')
    .update(JSON.stringify([name, judged]))
    .digest('hex')
    .slice(0, 16);
}

export function translateAuthConfig(ac: AuthConfig, secrets: ReadonlyMap<string, Secret>): Attempt<AuthConfigConfig> {
  const problems: Problem[] = [];
  const ns = ac.metadata.namespace;
  const steps: IntrospectionStepConfig[] = [];
  if (ac.spec.booleanExpr !== undefined)
    problems.push({ code: 'NotSupported', message: 'booleanExpr is not supported yet: every step must pass' });
  ac.spec.configs.forEach((step, i) => {
    const where = `configs[${i}]`;
    const record = step as Record<string, unknown>;
    const others = AUTH_STEP_KINDS.filter((k) => k !== 'oauth2' && record[k] !== undefined);
    for (const kind of others) {
      problems.push({
        code: 'NotSupported',
        message: `${where}.${kind}: ${kind} steps are not supported yet (supported: oauth2.accessTokenValidation)`,
      });
    }
    const oauth2 = step.oauth2;
    if (!oauth2) {
      if (!others.length)
        problems.push({ code: 'InvalidSpec', message: `${where}: set one step kind (supported: oauth2.accessTokenValidation)` });
      return;
    }
    if (oauth2.oidcAuthorizationCode || oauth2.oauth2) {
      problems.push({ code: 'NotSupported', message: `${where}.oauth2: only accessTokenValidation is supported yet` });
      return;
    }
    const atv = oauth2.accessTokenValidation;
    if (!atv) {
      problems.push({ code: 'InvalidSpec', message: `${where}.oauth2: set accessTokenValidation` });
      return;
    }
    if (atv.jwt) {
      problems.push({
        code: 'NotSupported',
        message: `${where}.oauth2.accessTokenValidation.jwt: JWT validation is not supported yet; use introspection`,
      });
      return;
    }
    const cache = parseDuration(atv.cacheTimeout ?? DEFAULT_AUTH_CACHE_TIMEOUT);
    const out: IntrospectionStepConfig = {
      type: 'oauth2-introspection',
      introspectionUrl: '',
      cacheTimeoutMs: Math.round(cache.seconds * 1000 + (cache.nanos ?? 0) / 1e6),
      requiredScopes: atv.requiredScopes?.scope ?? [],
    };
    if (atv.introspectionUrl !== undefined) {
      checkUrl(atv.introspectionUrl, `${where}.oauth2.accessTokenValidation.introspectionUrl`, problems);
      out.introspectionUrl = atv.introspectionUrl;
    } else if (atv.introspection) {
      const intro = atv.introspection;
      const w = `${where}.oauth2.accessTokenValidation.introspection`;
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
        const secretNs = intro.clientSecretRef.namespace ?? ns;
        const secret = secrets.get(nsName(secretNs, intro.clientSecretRef.name));
        if (!secret) {
          problems.push({
            code: 'SecretNotFound',
            message: `${w}.clientSecretRef: Secret ${secretNs}.${intro.clientSecretRef.name} not found`,
          });
        } else {
          const value = CLIENT_SECRET_KEYS.map((k) => secretValue(secret, k)).find((v) => v !== undefined);
          if (value === undefined) {
            problems.push({
              code: 'InvalidSpec',
              message:
                `${w}.clientSecretRef: Secret ${secretNs}.${intro.clientSecretRef.name} has none of the keys ` +
                `${CLIENT_SECRET_KEYS.join(', ')}`,
            });
          } else {
            out.clientSecret = value;
          }
        }
      }
    }
    steps.push(out);
  });
  if (problems.length) return { problems };
  const name = `${ns}.${ac.metadata.name}`;
  return { ir: { name, version: authConfigVersion(name, steps), steps }, problems };
}
