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
  // Gloo 1.17's storage form wins over the deprecated top-level fields (its proto says they are overwritten)
  const storage = spec.k8sSecretApikeyStorage;
  if (storage && (spec.labelSelector !== undefined || spec.apiKeySecretRefs !== undefined))
    ctx.warnings.push({
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
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(h) || h === 'host')
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
      ctx.warnings.push({
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
  const out: ApiKeyStepConfig = {
    type: 'api-key',
    headerName: (spec.headerName ?? DEFAULT_API_KEY_HEADER).toLowerCase(),
    keySha256: [...digests].sort(),
    ...(hasMeta ? { headersFromMetadata } : {}),
    ...(hasMeta && Object.keys(keyMetadata).length ? { keyMetadata } : {}),
    ...ctx.named,
  };
  return checkStep(out, where, problems) ? out : undefined;
}
