// `apiKeyAuth` steps: keys from Secrets (data key `api-key`), sent to extauth as sha256 digests only.
import { createHash } from 'node:crypto';
import { DEFAULT_API_KEY_HEADER, type ApiKeyStepConfig, type AuthStepConfig } from '../../../../../common/auth-config.js';
import type { Secret } from '../../../../api/resources.js';
import type { AuthStep } from '../../../../api/schemas.js';
import { nsName } from '../../../names.js';
import { secretValue } from '../../../secrets.js';
import { checkStep, type StepResolveContext } from './common.js';

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
export function resolveApiKeyAuth(raw: unknown, ctx: StepResolveContext): AuthStepConfig | undefined {
  const spec = raw as NonNullable<AuthStep['apiKeyAuth']>;
  const where = `${ctx.where}.apiKeyAuth`;
  const { problems, secrets } = ctx;
  const ns = ctx.namespace;
  const bySelector = spec.labelSelector !== undefined && Object.keys(spec.labelSelector).length > 0;
  const byRefs = (spec.apiKeySecretRefs?.length ?? 0) > 0;
  if (bySelector === byRefs) {
    problems.push({ code: 'InvalidSpec', message: `${where}: set exactly one of labelSelector, apiKeySecretRefs` });
    return undefined;
  }
  const before = problems.length;
  const chosen: { secret: Secret; label: string; where: string }[] = [];
  if (byRefs) {
    spec.apiKeySecretRefs!.forEach((ref, i) => {
      const secretNs = ref.namespace ?? ns;
      const secret = secrets.get(nsName(secretNs, ref.name));
      if (!secret)
        problems.push({ code: 'SecretNotFound', message: `${where}.apiKeySecretRefs[${i}]: Secret ${secretNs}.${ref.name} not found` });
      else chosen.push({ secret, label: `${secretNs}.${ref.name}`, where: `${where}.apiKeySecretRefs[${i}]` });
    });
  } else {
    for (const secret of secrets.values()) {
      if (labelsMatch(secret.metadata.labels, spec.labelSelector!))
        chosen.push({ secret, label: `${secret.metadata.namespace}.${secret.metadata.name}`, where: `${where}.labelSelector` });
    }
    chosen.sort((a, b) => a.label.localeCompare(b.label));
    if (chosen.length === 0) problems.push({ code: 'SecretNotFound', message: `${where}.labelSelector: no Secret matches` });
  }
  const digests = new Set<string>();
  for (const c of chosen) {
    const key = secretValue(c.secret, API_KEY_SECRET_KEY);
    if (key === undefined || key === '') {
      problems.push({ code: 'InvalidSpec', message: `${c.where}: Secret ${c.label} has no ${API_KEY_SECRET_KEY} key` });
      continue;
    }
    digests.add(createHash('sha256').update(key, 'utf8').digest('hex'));
  }
  if (problems.length > before) return undefined;
  const out: ApiKeyStepConfig = {
    type: 'api-key',
    headerName: (spec.headerName ?? DEFAULT_API_KEY_HEADER).toLowerCase(),
    keySha256: [...digests].sort(),
    ...ctx.named,
  };
  return checkStep(out, where, problems) ? out : undefined;
}
