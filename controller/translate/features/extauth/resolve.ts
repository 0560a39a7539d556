// Stage 1 for AuthConfigs: AuthConfig -> the resolved config the extauth service enforces.
// Implemented steps: oauth2.accessTokenValidation by introspection (RFC 7662) or by JWT (a JWK set,
// remote or local); other step kinds are rejected with a reason rather than silently letting requests
// through. Each resolved step is checked with the schema the extauth service applies
// (common/auth-config.ts), so what the service would refuse is a status reason here instead.
import { createHash } from 'node:crypto';
import {
  AuthStepConfigSchema,
  DEFAULT_JWKS_REFRESH_MS,
  describeIssues,
  type AuthConfigConfig,
  type AuthStepConfig,
  type JwtStepConfig,
} from '../../../../common/auth-config.js';
import type { IntrospectionStepConfig } from '../../../../common/contract.js';
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

function durationMs(text: string): number {
  const d = parseDuration(text);
  return Math.round(d.seconds * 1000 + (d.nanos ?? 0) / 1e6);
}

/** The step's fields as the user wrote them, from the shared schema's paths. */
const USER_FIELDS: Record<string, string> = {
  remoteJwks: 'jwt.remoteJwks',
  localJwks: 'jwt.localJwks',
  issuer: 'jwt.issuer',
  audiences: 'jwt.audiences',
  refreshIntervalMs: 'refreshInterval',
  requiredScopes: 'requiredScopes.scope',
};

/**
 * Checks a resolved step with the schema the extauth service applies; reports each issue at the
 * user's field (`configs[0].oauth2.accessTokenValidation.jwt.localJwks.inlineString: …`).
 */
function checkStep(step: AuthStepConfig, where: string, problems: Problem[]): boolean {
  const parsed = AuthStepConfigSchema.safeParse(step);
  if (parsed.success) return true;
  for (const line of describeIssues(parsed.error, where)) {
    const message = line.replace(/\.(\w+)(?=[.:[])/g, (m, field: string) => (USER_FIELDS[field] ? `.${USER_FIELDS[field]}` : m));
    problems.push({ code: 'InvalidSpec', message });
  }
  return false;
}

/**
 * A short content hash of what decides a token's fate. Client secrets are left out: they only
 * authenticate the introspection call, and the version is visible in route metadata.
 */
export function authConfigVersion(name: string, steps: readonly AuthStepConfig[]): string {
  const judged = steps.map((s) => {
    if (s.type !== 'oauth2-introspection') return s;
    const { clientSecret: _secret, ...rest } = s;
    return rest;
  });
  return createHash('sha256')
    .update(JSON.stringify([name, judged]))
    .digest('hex')
    .slice(0, 16);
}

export function translateAuthConfig(ac: AuthConfig, secrets: ReadonlyMap<string, Secret>): Attempt<AuthConfigConfig> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const ns = ac.metadata.namespace;
  const steps: AuthStepConfig[] = [];
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
      const jwt = atv.jwt;
      const out: JwtStepConfig = {
        type: 'oauth2-jwt',
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
      };
      if (atv.cacheTimeout !== undefined) {
        warnings.push({
          code: 'InvalidSpec',
          message: `${where}.oauth2.accessTokenValidation.cacheTimeout: ignored for jwt (each request verifies the signature)`,
        });
      }
      if (checkStep(out, `${where}.oauth2.accessTokenValidation`, problems)) steps.push(out);
      return;
    }
    const out: IntrospectionStepConfig = {
      type: 'oauth2-introspection',
      introspectionUrl: '',
      cacheTimeoutMs: durationMs(atv.cacheTimeout ?? DEFAULT_AUTH_CACHE_TIMEOUT),
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
    if (problems.length === 0) checkStep(out, `${where}.oauth2.accessTokenValidation`, problems);
    steps.push(out);
  });
  if (problems.length) return { problems, warnings };
  const name = `${ns}.${ac.metadata.name}`;
  return { ir: { name, version: authConfigVersion(name, steps), steps }, problems, warnings };
}
