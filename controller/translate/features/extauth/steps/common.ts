// What every AuthConfig step resolver uses: the context it resolves in, and the checks they share.
import { AuthStepConfigSchema, describeIssues, type AuthStepConfig } from '../../../../../common/auth-config.js';
import type { RegoCheck } from '../../../../../common/opa-query.js';
import type { ConfigMap, Secret } from '../../../../api/resources.js';
import { parseDuration } from '../../../duration.js';
import type { Problem } from '../../../feature.js';
import { nsName } from '../../../names.js';
import { secretValue } from '../../../secrets.js';

/** One step of an AuthConfig being resolved. */
export interface StepResolveContext {
  /** `configs[<i>]`: the step's path in the AuthConfig */
  readonly where: string;
  /** the AuthConfig's namespace (the default of Secret references) */
  readonly namespace: string;
  readonly secrets: ReadonlyMap<string, Secret>;
  /** ConfigMaps by nsName (opaAuth's Rego modules) */
  readonly configMaps: ReadonlyMap<string, ConfigMap>;
  /** `{ name }` when the step is named (booleanExpr), else `{}`: spread into the resolved step */
  readonly named: { name?: string };
  readonly problems: Problem[];
  readonly warnings: Problem[];
  /** the AuthConfig's failOnRedirect: a browser login step answers 401 instead of redirecting */
  readonly failOnRedirect: boolean;
  /** compiles an opaAuth policy as extauth will (undefined: no `opa` binary here, not checked) */
  readonly regoCheck?: RegoCheck | undefined;
}

export type { RegoCheck } from '../../../../../common/opa-query.js';

/**
 * Resolves one Gloo step kind (`spec` is the value of its key, e.g. `configs[i].oauth2`) into the config the
 * extauth service applies; pushes problems (with paths) and returns undefined when it cannot.
 */
export type StepResolver = (spec: unknown, ctx: StepResolveContext) => AuthStepConfig | undefined;

export function checkUrl(value: string, where: string, problems: Problem[]): void {
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

export function durationMs(text: string): number {
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
};

/**
 * Checks a resolved step with the schema the extauth service applies; reports each issue at the
 * user's field (`configs[0].oauth2.accessTokenValidation.jwt.localJwks.inlineString: …`).
 */
export function checkStep(step: AuthStepConfig, where: string, problems: Problem[], fields: Record<string, string> = USER_FIELDS): boolean {
  const parsed = AuthStepConfigSchema.safeParse(step);
  if (parsed.success) return true;
  for (const line of describeIssues(parsed.error, where)) {
    const message = line.replace(/\.(\w+)(?=[.:[])/g, (m, field: string) => (fields[field] ? `.${fields[field]}` : m));
    problems.push({ code: 'InvalidSpec', message });
  }
  return false;
}

/** Keys of a Secret that may hold an OAuth2 client secret. */
export const CLIENT_SECRET_KEYS = ['clientSecret', 'client-secret', 'client_secret'];

/** The client secret of `ref` (a Secret with one of CLIENT_SECRET_KEYS); undefined (and a problem) when there is none. */
export function clientSecret(
  ref: { name: string; namespace?: string | undefined },
  where: string,
  ctx: StepResolveContext,
): string | undefined {
  const secretNs = ref.namespace ?? ctx.namespace;
  const secret = ctx.secrets.get(nsName(secretNs, ref.name));
  if (!secret) {
    ctx.problems.push({ code: 'SecretNotFound', message: `${where}: Secret ${secretNs}.${ref.name} not found` });
    return undefined;
  }
  const raw = CLIENT_SECRET_KEYS.map((k) => secretValue(secret, k)).find((v) => v !== undefined);
  // older glooctl wrote the value as YAML (`clientSecret: <secret>`), as Gloo's docs still show
  const legacy = raw === undefined ? undefined : /^\s*client_?[sS]ecret:\s*(\S.*?)\s*$/.exec(raw);
  const value = legacy ? legacy[1]!.replace(/^(["'])(.*)\1$/, '$2') : raw;
  if (value === undefined) {
    ctx.problems.push({
      code: 'InvalidSpec',
      message: `${where}: Secret ${secretNs}.${ref.name} has none of the keys ${CLIENT_SECRET_KEYS.join(', ')}`,
    });
  }
  return value;
}
