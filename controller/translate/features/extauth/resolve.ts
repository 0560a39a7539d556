// Stage 1 for AuthConfigs: AuthConfig -> the resolved config the extauth service enforces. Each step kind
// has its resolver (steps/index.ts: oauth2.accessTokenValidation by introspection or JWT, apiKeyAuth with keys
// from Secrets sent as sha256 digests only); and booleanExpr over the steps' names. Other step kinds are
// rejected with a reason rather than silently letting requests through. Each resolved step is checked with
// the schema the extauth service applies (common/auth-config.ts), so what the service would refuse is a
// status reason here instead.
import { createHash } from 'node:crypto';
import { parseBooleanExpr, type AuthConfigConfig, type AuthStepConfig } from '../../../../common/auth-config.js';
import type { AuthConfig, ConfigMap, Secret } from '../../../api/resources.js';
import { AUTH_STEP_KINDS } from '../../../api/schemas.js';
import type { Attempt, Problem } from '../../feature.js';
import { STEP_RESOLVERS } from './steps/index.js';
import type { RegoCheck } from './steps/common.js';

/**
 * A short content hash of what decides a token's fate. Secrets are left out (introspection client
 * secrets, HMAC secrets, the LDAP service account's password): the version is visible in route metadata.
 */
/** A digest of secret material: a changed secret gives a new version without showing the secret. */
function sha256(text: string): string {
  return createHash('sha256').update(`legate auth config|${text}`).digest('hex');
}

export function authConfigVersion(name: string, steps: readonly AuthStepConfig[], booleanExpr?: string): string {
  const judged = steps.map((s) => {
    if (s.type === 'hmac') return { ...s, credentials: Object.keys(s.credentials).sort() };
    if (s.type === 'ldap' && s.serviceAccount) return { ...s, serviceAccount: { ...s.serviceAccount, password: '' } };
    if (s.type === 'oauth2-code') {
      // the cookie key is derived from the client secret: neither goes into the (visible) version
      const { clientSecret: _secret, session, privateKeyJwt, ...rest } = s;
      const { cookieKey: _key, ...sessionRest } = session;
      const keyJwt = privateKeyJwt ? { privateKeyJwt: { validForMs: privateKeyJwt.validForMs } } : {};
      const secrets = `${s.clientSecret ?? ''}|${session.cookieKey ?? ''}|${privateKeyJwt?.signingKey ?? ''}`;
      return { ...rest, ...keyJwt, session: sessionRest, secrets: sha256(secrets) };
    }
    if (s.type !== 'oauth2-introspection') return s;
    const { clientSecret: _secret, ...rest } = s;
    return rest;
  });
  return createHash('sha256')
    .update(JSON.stringify(booleanExpr === undefined ? [name, judged] : [name, judged, booleanExpr]))
    .digest('hex')
    .slice(0, 16);
}

export function translateAuthConfig(
  ac: AuthConfig,
  secrets: ReadonlyMap<string, Secret>,
  configMaps: ReadonlyMap<string, ConfigMap> = new Map(),
  regoCheck?: RegoCheck,
): Attempt<AuthConfigConfig> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const ns = ac.metadata.namespace;
  const steps: AuthStepConfig[] = [];
  const supported = Object.values(STEP_RESOLVERS)
    .map((r) => r.label)
    .join(', ');
  ac.spec.configs.forEach((step, i) => {
    const where = `configs[${i}]`;
    const record = step as Record<string, unknown>;
    const named = step.name !== undefined ? { name: step.name } : {};
    const kinds = AUTH_STEP_KINDS.filter((k) => record[k] !== undefined);
    const known = kinds.filter((k) => Object.hasOwn(STEP_RESOLVERS, k));
    for (const kind of kinds) {
      if (Object.hasOwn(STEP_RESOLVERS, kind)) continue;
      problems.push({
        code: 'NotSupported',
        message:
          kind === 'pluginAuth'
            ? `${where}.pluginAuth: Gloo's Go plugins (.so files) cannot load into Legate's extauth; run the logic as your own ` +
              'auth server and call it with passThroughAuth (grpc or http)'
            : kind === 'ldapInternal'
              ? `${where}.ldapInternal: Gloo's internal form of ldap (not user-facing); write ldap with groupLookupSettings`
              : `${where}.${kind}: ${kind} steps are not supported (supported: ${supported})`,
      });
    }
    if (known.length > 1) {
      problems.push({ code: 'InvalidSpec', message: `${where}: set one step kind, not both ${known.join(' and ')}` });
      return;
    }
    const kind = known[0];
    if (kind === undefined) {
      if (!kinds.length) problems.push({ code: 'InvalidSpec', message: `${where}: set one step kind (supported: ${supported})` });
      return;
    }
    const out = STEP_RESOLVERS[kind]!.resolve(record[kind], {
      where,
      namespace: ns,
      secrets,
      configMaps,
      named,
      problems,
      warnings,
      failOnRedirect: ac.spec.failOnRedirect ?? false,
      regoCheck,
    });
    if (out) steps.push(out);
  });
  const booleanExpr = ac.spec.booleanExpr;
  if (booleanExpr !== undefined && problems.length === 0) {
    try {
      parseBooleanExpr(
        booleanExpr,
        ac.spec.configs.map((c) => c.name),
      );
    } catch (err) {
      problems.push({ code: 'InvalidSpec', message: `booleanExpr: ${err instanceof Error ? err.message : 'invalid'}` });
    }
  }
  if (problems.length) return { problems, warnings };
  const name = `${ns}.${ac.metadata.name}`;
  const expr = booleanExpr !== undefined ? { booleanExpr } : {};
  const version = authConfigVersion(name, steps, booleanExpr);
  return { ir: { name, version, steps, ...expr }, problems, warnings };
}
