// Stage 1 for AuthConfigs: AuthConfig -> the resolved config the extauth service enforces.
// Implemented steps: oauth2.accessTokenValidation by introspection (RFC 7662) or by JWT (a JWK set,
// remote or local), and apiKeyAuth (keys from Secrets, sent to extauth as sha256 digests only); and
// booleanExpr over the steps' names. Other step kinds are rejected with a reason rather than silently letting requests
// through. Each resolved step is checked with the schema the extauth service applies
// (common/auth-config.ts), so what the service would refuse is a status reason here instead.
import { createHash } from 'node:crypto';
import {
  AuthStepConfigSchema,
  DEFAULT_API_KEY_HEADER,
  DEFAULT_JWKS_REFRESH_MS,
  describeIssues,
  parseBooleanExpr,
  type ApiKeyStepConfig,
  type AuthConfigConfig,
  type AuthStepConfig,
  type JwtStepConfig,
} from '../../../../common/auth-config.js';
import type { IntrospectionStepConfig } from '../../../../common/contract.js';
import type { AuthConfig, ConfigMap, Secret } from '../../../api/resources.js';
import { AUTH_STEP_KINDS, type AuthStep } from '../../../api/schemas.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem } from '../../feature.js';
import { nsName } from '../../names.js';
import { secretValue } from '../../secrets.js';
import { basicAuthStep, hmacStep, ldapStep, opaServerStep, opaStep, passThroughStep, type StepRefs } from './steps.js';

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
  cacheTimeoutMs: 'cacheTimeout',
  userIdAttributeName: 'introspection.userIdAttributeName',
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
 * A short content hash of what decides a token's fate. Secrets are left out (introspection client
 * secrets, HMAC secrets, the LDAP service account's password): the version is visible in route metadata.
 */
export function authConfigVersion(name: string, steps: readonly AuthStepConfig[], booleanExpr?: string): string {
  const judged = steps.map((s) => {
    if (s.type === 'hmac') return { ...s, credentials: Object.keys(s.credentials).sort() };
    if (s.type === 'ldap' && s.serviceAccount) return { ...s, serviceAccount: { ...s.serviceAccount, password: '' } };
    if (s.type !== 'oauth2-introspection') return s;
    const { clientSecret: _secret, ...rest } = s;
    return rest;
  });
  return createHash('sha256')
    .update(JSON.stringify(booleanExpr === undefined ? [name, judged] : [name, judged, booleanExpr]))
    .digest('hex')
    .slice(0, 16);
}

/** Step kinds resolved by steps.ts, each by its own function. */
const OTHER_STEPS = {
  basicAuth: (s, w, _r, p) => basicAuthStep(s.basicAuth!, w, p),
  ldap: (s, w, r, p) => ldapStep(s.ldap!, w, r, p),
  opaAuth: (s, w, r, p) => opaStep(s.opaAuth!, w, r, p),
  opaServerAuth: (s, w, _r, p) => opaServerStep(s.opaServerAuth!, w, p),
  passThroughAuth: (s, w, _r, p) => passThroughStep(s.passThroughAuth!, w, p),
  hmacAuth: (s, w, r, p) => hmacStep(s.hmacAuth!, w, r, p),
} satisfies Record<string, (step: AuthStep, where: string, refs: StepRefs, problems: Problem[]) => AuthStepConfig | undefined>;

/** The step kinds Legate enforces, for the reason given on the others. */
const SUPPORTED_KINDS = `oauth2.accessTokenValidation, apiKeyAuth, ${Object.keys(OTHER_STEPS).join(', ')}`;

export function translateAuthConfig(
  ac: AuthConfig,
  secrets: ReadonlyMap<string, Secret>,
  configMaps: ReadonlyMap<string, ConfigMap> = new Map(),
): Attempt<AuthConfigConfig> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const ns = ac.metadata.namespace;
  const steps: AuthStepConfig[] = [];
  const refs: StepRefs = { ns, secrets, configMaps };
  ac.spec.configs.forEach((step, i) => {
    const where = `configs[${i}]`;
    const record = step as Record<string, unknown>;
    const named = step.name !== undefined ? { name: step.name } : {};
    const kinds = AUTH_STEP_KINDS.filter((k) => record[k] !== undefined);
    if (kinds.length > 1) {
      problems.push({ code: 'InvalidSpec', message: `${where}: set one step kind, not ${kinds.join(' and ')}` });
      return;
    }
    const other = kinds.find((k): k is keyof typeof OTHER_STEPS => Object.hasOwn(OTHER_STEPS, k));
    if (other) {
      const out = OTHER_STEPS[other](step, `${where}.${other}`, refs, problems);
      if (out && checkStep({ ...out, ...named }, `${where}.${other}`, problems)) steps.push({ ...out, ...named });
      return;
    }
    const others = kinds.filter((k) => k !== 'oauth2' && k !== 'apiKeyAuth');
    for (const kind of others) {
      problems.push({
        code: 'NotSupported',
        message:
          kind === 'jwt'
            ? // Gloo's `jwt: {}` carries no keys: it passes requests whose JWT Envoy's jwt_authn filter (Gloo's
              // VirtualHost options.jwt) already verified. Legate renders no such filter, so the step would
              // allow everything; the same check with keys is oauth2.accessTokenValidation.jwt.
              `${where}.jwt: Gloo's jwt step only trusts Envoy's JWT filter (options.jwt), which Legate does not ` +
              'configure, so it would allow every request; verify the token with oauth2.accessTokenValidation.jwt ' +
              '{remoteJwks | localJwks, issuer, audiences} instead'
            : kind === 'pluginAuth'
              ? `${where}.pluginAuth: Gloo's Go plugins (.so files) cannot load into Legate's extauth; run the logic as your own ` +
                'auth server and call it with passThroughAuth (grpc or http)'
              : kind === 'ldapInternal'
                ? `${where}.ldapInternal: Gloo's internal form of ldap (not user-facing); write ldap with groupLookupSettings`
                : `${where}.${kind}: ${kind} steps are not supported (supported: ${SUPPORTED_KINDS})`,
      });
    }
    if (step.apiKeyAuth) {
      const out = apiKeyStep(step.apiKeyAuth, `${where}.apiKeyAuth`, ns, secrets, problems, warnings);
      if (out && checkStep({ ...out, ...named }, `${where}.apiKeyAuth`, problems)) steps.push({ ...out, ...named });
      return;
    }
    const oauth2 = step.oauth2;
    if (!oauth2) {
      if (!others.length)
        problems.push({
          code: 'InvalidSpec',
          message: `${where}: set one step kind (supported: ${SUPPORTED_KINDS})`,
        });
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
    const w0 = `${where}.oauth2.accessTokenValidation`;
    if (atv.userinfoUrl !== undefined) checkUrl(atv.userinfoUrl, `${w0}.userinfoUrl`, problems);
    const claims = {
      ...(atv.userinfoUrl !== undefined ? { userinfoUrl: atv.userinfoUrl } : {}),
      ...(atv.dynamicMetadataFromClaims && Object.keys(atv.dynamicMetadataFromClaims).length
        ? { dynamicMetadataFromClaims: atv.dynamicMetadataFromClaims }
        : {}),
    };
    if (atv.jwt) {
      const jwt = atv.jwt;
      const out: JwtStepConfig = {
        type: 'oauth2-jwt',
        ...named,
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
        ...claims,
      };
      if (checkStep(out, `${where}.oauth2.accessTokenValidation`, problems)) steps.push(out);
      return;
    }
    const out: IntrospectionStepConfig = {
      type: 'oauth2-introspection',
      ...named,
      introspectionUrl: '',
      cacheTimeoutMs: durationMs(atv.cacheTimeout ?? DEFAULT_AUTH_CACHE_TIMEOUT),
      requiredScopes: atv.requiredScopes?.scope ?? [],
      ...claims,
    };
    if (atv.introspection?.userIdAttributeName) out.userIdAttributeName = atv.introspection.userIdAttributeName;
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

/** The Secret data key Gloo reads an API key from. */
export const API_KEY_SECRET_KEY = 'api-key';

function labelsMatch(labels: Readonly<Record<string, string>> | undefined, selector: Readonly<Record<string, string>>): boolean {
  return Object.entries(selector).every(([k, v]) => labels?.[k] === v);
}

/**
 * apiKeyAuth -> the step extauth applies: the keys of the Secrets named by apiKeySecretRefs, or of every
 * Secret whose labels match labelSelector (in any namespace), each in data key `api-key`, sent as
 * sha256 digests. A named Secret that is missing or has no `api-key` is a problem (never a silent
 * skip); so is a selector that matches nothing.
 */
function apiKeyStep(
  spec: NonNullable<AuthStep['apiKeyAuth']>,
  where: string,
  ns: string,
  secrets: ReadonlyMap<string, Secret>,
  problems: Problem[],
  warnings: Problem[],
): ApiKeyStepConfig | undefined {
  // Gloo 1.17's storage form wins over the deprecated top-level fields (its proto says they are overwritten)
  const storage = spec.k8sSecretApikeyStorage;
  if (storage && (spec.labelSelector !== undefined || spec.apiKeySecretRefs !== undefined))
    warnings.push({
      code: 'InvalidSpec',
      message: `${where}: labelSelector/apiKeySecretRefs are ignored because k8sSecretApikeyStorage is set (Gloo's precedence)`,
    });
  const form = storage ?? spec;
  const at = storage ? `${where}.k8sSecretApikeyStorage` : where;
  const bySelector = form.labelSelector !== undefined && Object.keys(form.labelSelector).length > 0;
  const byRefs = (form.apiKeySecretRefs?.length ?? 0) > 0;
  if (bySelector === byRefs) {
    problems.push({ code: 'InvalidSpec', message: `${at}: set exactly one of labelSelector, apiKeySecretRefs` });
    return undefined;
  }
  if (spec.headersFromMetadata && spec.headersFromMetadataEntry)
    problems.push({ code: 'InvalidSpec', message: `${where}: set one of headersFromMetadataEntry, headersFromMetadata (deprecated)` });
  const fromMeta = spec.headersFromMetadataEntry ?? spec.headersFromMetadata ?? {};
  const metaWhere = spec.headersFromMetadataEntry ? `${where}.headersFromMetadataEntry` : `${where}.headersFromMetadata`;
  const headersFromMetadata: Record<string, string> = {};
  for (const [header, entry] of Object.entries(fromMeta)) {
    const h = header.toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(h) || h.startsWith(':') || h === 'host')
      problems.push({ code: 'InvalidSpec', message: `${metaWhere}.${header}: not a header that can be set` });
    else headersFromMetadata[h] = entry.name;
  }
  const before = problems.length;
  const chosen: { secret: Secret; label: string; where: string }[] = [];
  if (byRefs) {
    form.apiKeySecretRefs!.forEach((ref, i) => {
      const secretNs = ref.namespace ?? ns;
      const secret = secrets.get(nsName(secretNs, ref.name));
      if (!secret)
        problems.push({ code: 'SecretNotFound', message: `${at}.apiKeySecretRefs[${i}]: Secret ${secretNs}.${ref.name} not found` });
      else chosen.push({ secret, label: `${secretNs}.${ref.name}`, where: `${at}.apiKeySecretRefs[${i}]` });
    });
  } else {
    for (const secret of secrets.values()) {
      if (labelsMatch(secret.metadata.labels, form.labelSelector!))
        chosen.push({ secret, label: `${secret.metadata.namespace}.${secret.metadata.name}`, where: `${at}.labelSelector` });
    }
    chosen.sort((a, b) => a.label.localeCompare(b.label));
    if (chosen.length === 0) problems.push({ code: 'SecretNotFound', message: `${at}.labelSelector: no Secret matches` });
  }
  const digests = new Set<string>();
  const keyMetadata: Record<string, Record<string, string>> = {};
  for (const c of chosen) {
    const key = secretValue(c.secret, API_KEY_SECRET_KEY);
    if (key === undefined || key === '') {
      problems.push({ code: 'InvalidSpec', message: `${c.where}: Secret ${c.label} has no ${API_KEY_SECRET_KEY} key` });
      continue;
    }
    // only the entries a header names leave the controller; a key missing a required one is refused (as Gloo)
    const meta: Record<string, string> = {};
    const missing: string[] = [];
    for (const [header, entry] of Object.entries(fromMeta)) {
      const value = secretValue(c.secret, entry.name);
      if (value !== undefined) meta[entry.name] = value;
      else if (entry.required) missing.push(`${entry.name} (for ${header})`);
    }
    if (missing.length) {
      warnings.push({
        code: 'InvalidSpec',
        message: `${c.where}: Secret ${c.label} lacks the required metadata ${missing.join(', ')}; its key is not accepted`,
      });
      continue;
    }
    const digest = createHash('sha256').update(key, 'utf8').digest('hex');
    digests.add(digest);
    if (Object.keys(meta).length) keyMetadata[digest] = meta;
  }
  if (problems.length > before) return undefined;
  if (digests.size === 0) {
    problems.push({ code: 'InvalidSpec', message: `${at}: no usable API key (see the warnings)` });
    return undefined;
  }
  const hasMeta = Object.keys(headersFromMetadata).length > 0;
  return {
    type: 'api-key',
    headerName: (spec.headerName ?? DEFAULT_API_KEY_HEADER).toLowerCase(),
    keySha256: [...digests].sort(),
    ...(hasMeta ? { headersFromMetadata } : {}),
    ...(hasMeta && Object.keys(keyMetadata).length ? { keyMetadata } : {}),
  };
}
