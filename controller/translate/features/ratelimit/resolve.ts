// Stage 1 for rate limiting: RateLimitConfig -> the descriptor tree and set descriptors the ratelimit service
// enforces and the Envoy actions routes send (setActions behind Gloo's set-style marker); options.ratelimitBasic /
// localRatelimit -> their IR. Every check that needs no I/O happens here, reported at the user's field: units,
// zero limits, set descriptors, and action descriptor keys that no descriptor at that depth declares (Envoy would
// send them and the service would match nothing: a limit that silently never applies). The Settings'
// ratelimit.descriptors are checked the same way; the raw actions of options.ratelimit(Early|Regular) too, but
// as warnings (Gloo does not check them).
import {
  RATE_LIMIT_UNITS,
  RAW_RATE_LIMIT_DOMAIN,
  RateLimitKeys,
  RateLimitServiceConfigSchema,
  SET_DESCRIPTOR_VALUE,
  basicDescriptorValue,
  describeRateLimitIssues,
  type DescriptorConfig,
  type Limit,
  type RateLimitServiceConfig,
  type SetDescriptorConfig,
} from '../../../../common/ratelimit-config.js';
import type { RateLimitConfig, Settings } from '../../../api/resources.js';
import {
  RATE_LIMIT_ACTION_KINDS,
  type RateLimitAction,
  type RateLimitActions,
  type RateLimitDescriptor,
  type RateLimitHeaderMatcher,
  type RateLimitMetadataKey,
  type RateLimitQueryParameterMatcher,
  type RateLimitSetDescriptor,
  type RateLimitValue,
} from '../../../api/schemas.js';
import type { LocalRatelimit, RatelimitBasic } from './schema.js';
import { parseDuration } from '../../duration.js';
import type { Attempt, Problem } from '../../feature.js';
import type { MetadataKeyIR, RateLimitActionIR, RateLimitEntryIR, RateLimitIR } from '../../ir.js';

/** A resolved RateLimitConfig: what the service gets, and the actions routes that refer to it send. */
export interface ResolvedRateLimitConfig {
  config: RateLimitServiceConfig;
  rateLimits: { actions: RateLimitActionIR[]; limitOverride?: MetadataKeyIR }[];
}

const RENDERED_ACTIONS = new Set([
  'genericKey',
  'requestHeaders',
  'remoteAddress',
  'sourceCluster',
  'destinationCluster',
  'headerValueMatch',
  'metadata',
  'dynamicMetadata',
  'maskedRemoteAddress',
  'queryParameterValueMatch',
]);

/** `{requestsPerUnit, unit}` -> a limit, or problems (zero, unknown unit, missing field). */
export function checkLimit(v: RateLimitValue, where: string, problems: Problem[]): Limit | 'unlimited' | undefined {
  if (v.unlimited) {
    if (v.requestsPerUnit !== undefined || v.unit !== undefined)
      problems.push({ code: 'InvalidSpec', message: `${where}: set either unlimited or requestsPerUnit and unit, not both` });
    return 'unlimited';
  }
  const before = problems.length;
  if (v.requestsPerUnit === undefined) problems.push({ code: 'InvalidSpec', message: `${where}.requestsPerUnit: required` });
  else if (v.requestsPerUnit < 1)
    problems.push({
      code: 'InvalidSpec',
      message: `${where}.requestsPerUnit: must be at least 1 (0 would deny every request; use unlimited: true for no limit)`,
    });
  if (v.unit === undefined)
    problems.push({ code: 'InvalidSpec', message: `${where}.unit: required (one of ${RATE_LIMIT_UNITS.join(', ')})` });
  else if (!(RATE_LIMIT_UNITS as readonly string[]).includes(v.unit))
    problems.push({
      code: 'InvalidSpec',
      message: `${where}.unit: ${JSON.stringify(v.unit)} is not one of ${RATE_LIMIT_UNITS.join(', ')}`,
    });
  if (problems.length > before) return undefined;
  return { requestsPerUnit: v.requestsPerUnit!, unit: v.unit as Limit['unit'] };
}

function descriptor(d: RateLimitDescriptor, where: string, problems: Problem[], warnings: Problem[]): DescriptorConfig {
  if (d.key.startsWith('legate_'))
    problems.push({ code: 'InvalidSpec', message: `${where}.key: keys starting with legate_ are Legate's own` });
  const out: DescriptorConfig = { key: d.key };
  if (d.value !== undefined) out.value = d.value;
  if (d.rateLimit) {
    const limit = checkLimit(d.rateLimit, `${where}.rateLimit`, problems);
    if (limit === 'unlimited') out.unlimited = true;
    else if (limit) out.limit = limit;
  }
  if (d.shadowMode) out.shadowMode = true;
  if (d.weight) out.weight = d.weight;
  if (d.alwaysApply) out.alwaysApply = true;
  if (d.descriptors?.length) out.descriptors = d.descriptors.map((c, i) => descriptor(c, `${where}.descriptors[${i}]`, problems, warnings));
  return out;
}

function headerMatcher(h: RateLimitHeaderMatcher, where: string, problems: Problem[]) {
  const set = [h.exactMatch, h.prefixMatch, h.suffixMatch, h.regexMatch, h.safeRegexMatch, h.presentMatch].filter((x) => x !== undefined);
  if (set.length > 1)
    problems.push({
      code: 'InvalidSpec',
      message: `${where}: set at most one of exactMatch, prefixMatch, suffixMatch, regexMatch, safeRegexMatch, presentMatch`,
    });
  const regex = h.safeRegexMatch?.regex ?? h.regexMatch;
  if (regex !== undefined) {
    try {
      new RegExp(regex, 'u');
    } catch {
      problems.push({ code: 'InvalidRegex', message: `${where}: ${JSON.stringify(regex)} is not a valid regular expression` });
    }
  }
  const match =
    h.exactMatch !== undefined
      ? { exact: h.exactMatch }
      : h.prefixMatch !== undefined
        ? { prefix: h.prefixMatch }
        : h.suffixMatch !== undefined
          ? { suffix: h.suffixMatch }
          : regex !== undefined
            ? { regex }
            : { present: h.presentMatch ?? true };
  return { name: h.name.toLowerCase(), match, invert: h.invertMatch ?? false };
}

function metadataKey(k: RateLimitMetadataKey): MetadataKeyIR {
  return { key: k.key, path: k.path.map((p) => p.key) };
}

function queryMatcher(p: RateLimitQueryParameterMatcher, where: string, problems: Problem[]) {
  const m = p.stringMatch;
  const set = m ? [m.exact, m.prefix, m.suffix, m.contains, m.safeRegex].filter((x) => x !== undefined) : [];
  if (m && set.length !== 1)
    problems.push({ code: 'InvalidSpec', message: `${where}.stringMatch: set exactly one of exact, prefix, suffix, contains, safeRegex` });
  if (m && p.presentMatch !== undefined)
    problems.push({ code: 'InvalidSpec', message: `${where}: set either stringMatch or presentMatch, not both` });
  if (m?.safeRegex) {
    try {
      new RegExp(m.safeRegex.regex, 'u');
    } catch {
      problems.push({
        code: 'InvalidRegex',
        message: `${where}.stringMatch.safeRegex: ${JSON.stringify(m.safeRegex.regex)} is not a valid regular expression`,
      });
    }
  }
  if (!m) return { name: p.name, match: { present: p.presentMatch ?? true } };
  const match = {
    ...(m.exact !== undefined ? { exact: m.exact } : {}),
    ...(m.prefix !== undefined ? { prefix: m.prefix } : {}),
    ...(m.suffix !== undefined ? { suffix: m.suffix } : {}),
    ...(m.contains !== undefined ? { contains: m.contains } : {}),
    ...(m.safeRegex ? { regex: m.safeRegex.regex } : {}),
    ...(m.ignoreCase ? { ignoreCase: true } : {}),
  };
  return { name: p.name, match };
}

/** One Gloo action -> IR, with the descriptor key it produces and, when fixed, its value. */
function action(
  a: RateLimitAction,
  where: string,
  problems: Problem[],
): { ir: RateLimitActionIR; key: string; value?: string } | undefined {
  const kinds = RATE_LIMIT_ACTION_KINDS.filter((k) => a[k] !== undefined);
  if (kinds.length !== 1) {
    problems.push({ code: 'InvalidSpec', message: `${where}: set exactly one action kind (${[...RENDERED_ACTIONS].join(', ')})` });
    return undefined;
  }
  const kind = kinds[0]!;
  if (!RENDERED_ACTIONS.has(kind)) {
    problems.push({ code: 'NotSupported', message: `${where}.${kind}: not supported (supported: ${[...RENDERED_ACTIONS].join(', ')})` });
    return undefined;
  }
  if (a.genericKey) {
    if (a.genericKey.descriptorValue === SET_DESCRIPTOR_VALUE) {
      problems.push({
        code: 'InvalidSpec',
        message: `${where}.genericKey.descriptorValue: ${SET_DESCRIPTOR_VALUE} is reserved (use setActions)`,
      });
      return undefined;
    }
    const key = a.genericKey.descriptorKey || 'generic_key';
    const ir = {
      genericKey: { descriptorValue: a.genericKey.descriptorValue, ...(a.genericKey.descriptorKey ? { descriptorKey: key } : {}) },
    };
    return { ir, key, value: a.genericKey.descriptorValue };
  }
  if (a.requestHeaders) {
    const r = a.requestHeaders;
    const ir = {
      requestHeaders: {
        headerName: r.headerName.toLowerCase(),
        descriptorKey: r.descriptorKey,
        ...(r.skipIfAbsent ? { skipIfAbsent: true } : {}),
      },
    };
    return { ir, key: r.descriptorKey };
  }
  if (a.remoteAddress) return { ir: { remoteAddress: {} }, key: 'remote_address' };
  if (a.sourceCluster) return { ir: { sourceCluster: {} }, key: 'source_cluster' };
  if (a.destinationCluster) return { ir: { destinationCluster: {} }, key: 'destination_cluster' };
  if (a.metadata) {
    const m = a.metadata;
    const source = m.source === 1 || m.source === 'ROUTE_ENTRY' ? 'ROUTE_ENTRY' : 'DYNAMIC';
    const ir: RateLimitActionIR = {
      metadata: {
        descriptorKey: m.descriptorKey,
        metadataKey: metadataKey(m.metadataKey),
        ...(m.defaultValue ? { defaultValue: m.defaultValue } : {}),
        source,
        ...(m.skipIfAbsent ? { skipIfAbsent: true } : {}),
      },
    };
    return { ir, key: m.descriptorKey };
  }
  if (a.dynamicMetadata) {
    const m = a.dynamicMetadata;
    const ir: RateLimitActionIR = {
      dynamicMetadata: {
        descriptorKey: m.descriptorKey,
        metadataKey: metadataKey(m.metadataKey),
        ...(m.defaultValue ? { defaultValue: m.defaultValue } : {}),
      },
    };
    return { ir, key: m.descriptorKey };
  }
  if (a.maskedRemoteAddress) {
    const m = a.maskedRemoteAddress;
    const ir: RateLimitActionIR = {
      maskedRemoteAddress: {
        ...(m.v4PrefixMaskLen !== undefined ? { v4PrefixMaskLen: m.v4PrefixMaskLen } : {}),
        ...(m.v6PrefixMaskLen !== undefined ? { v6PrefixMaskLen: m.v6PrefixMaskLen } : {}),
      },
    };
    return { ir, key: 'masked_remote_address' };
  }
  if (a.queryParameterValueMatch) {
    const q = a.queryParameterValueMatch;
    const key = q.descriptorKey || 'query_match';
    const ir: RateLimitActionIR = {
      queryParameterValueMatch: {
        ...(q.descriptorKey ? { descriptorKey: key } : {}),
        descriptorValue: q.descriptorValue,
        expectMatch: q.expectMatch ?? true,
        queryParameters: q.queryParameters.map((p, i) =>
          queryMatcher(p, `${where}.queryParameterValueMatch.queryParameters[${i}]`, problems),
        ),
      },
    };
    return { ir, key, value: q.descriptorValue };
  }
  const m = a.headerValueMatch!;
  const key = m.descriptorKey || 'header_match';
  const ir: RateLimitActionIR = {
    headerValueMatch: {
      ...(m.descriptorKey ? { descriptorKey: key } : {}),
      descriptorValue: m.descriptorValue,
      expectMatch: m.expectMatch ?? true,
      headers: m.headers.map((h, i) => headerMatcher(h, `${where}.headerValueMatch.headers[${i}]`, problems)),
    },
  };
  return { ir, key, value: m.descriptorValue };
}

/**
 * Checks that each entry an action list produces is declared at its depth of the descriptor tree: the
 * key, and for fixed values (generic keys, header matches) a descriptor with that value or without one.
 */
function checkKeys(
  produced: { key: string; value?: string }[],
  descriptors: DescriptorConfig[],
  where: string,
  problems: Problem[],
  scope: string,
): void {
  let level: DescriptorConfig[] = descriptors;
  for (const [i, entry] of produced.entries()) {
    const sameKey = level.filter((d) => d.key === entry.key);
    if (!sameKey.length) {
      const declared = [...new Set(level.map((d) => d.key))];
      problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.actions[${i}]: descriptor key ${JSON.stringify(entry.key)} is not declared by any ${scope} at that depth ` +
          `(${declared.length ? `declared: ${declared.join(', ')}` : 'none declared'})`,
      });
      return;
    }
    const matching = entry.value === undefined ? sameKey : sameKey.filter((d) => d.value === undefined || d.value === entry.value);
    if (!matching.length) {
      problems.push({
        code: 'InvalidSpec',
        message:
          `${where}.actions[${i}]: no descriptor ${entry.key}=${JSON.stringify(entry.value)} ` +
          `(values declared: ${sameKey.map((d) => JSON.stringify(d.value)).join(', ')})`,
      });
      return;
    }
    level = matching.flatMap((d) => d.descriptors ?? []);
  }
}

/** The descriptors an entry is checked against: the tree and the set descriptors (unset: not checked). */
interface Declared {
  descriptors: DescriptorConfig[];
  setDescriptors: SetDescriptorConfig[];
}

/** An Envoy rate_limits entry rendered from one Gloo RateLimitActions. */
interface Rendered {
  actions: RateLimitActionIR[];
  limitOverride?: MetadataKeyIR;
}

/**
 * One Gloo RateLimitActions -> its Envoy entries: `actions` (an ordered tuple, checked against the descriptor
 * tree) and `setActions` (a set, behind Gloo's set-style generic_key marker; request headers skipped when
 * absent, as Gloo), each its own entry carrying `limit`. Checked against `declared` (unset: not checked, as
 * when an external service holds them); undefined with problems when it cannot be rendered.
 */
function entryActions(
  rl: RateLimitActions,
  where: string,
  declared: Declared | undefined,
  scope: string,
  problems: Problem[],
  /** where an undeclared key goes instead of `problems` (the entry is kept) */
  undeclared?: Problem[],
): Rendered[] | undefined {
  if (!rl.actions?.length && !rl.setActions?.length) {
    problems.push({ code: 'InvalidSpec', message: `${where}.actions: needs at least one action (or setActions)` });
    return undefined;
  }
  const before = problems.length;
  const produced = (rl.actions ?? []).map((a, j) => action(a, `${where}.actions[${j}]`, problems));
  const setProduced = (rl.setActions ?? []).map((a, j) => action(a, `${where}.setActions[${j}]`, problems));
  if (problems.length > before) return undefined;
  const entries = produced as { ir: RateLimitActionIR; key: string; value?: string }[];
  if (declared && entries.length) checkKeys(entries, declared.descriptors, where, undeclared ?? problems, scope);
  if (declared && setProduced.length && !declared.setDescriptors.length)
    (undeclared ?? problems).push({
      code: 'InvalidSpec',
      message: `${where}.setActions: no setDescriptors are declared, so this set-style entry limits nothing`,
    });
  if (problems.length > before) return undefined;
  const limitOverride = rl.limit ? metadataKey(rl.limit.dynamicMetadata.metadataKey) : undefined;
  const out: Rendered[] = [];
  const push = (actions: RateLimitActionIR[]) => out.push({ actions, ...(limitOverride ? { limitOverride } : {}) });
  if (entries.length) push(entries.map((e) => e.ir));
  if (setProduced.length) {
    const setActions = (setProduced as { ir: RateLimitActionIR }[]).map(({ ir }) =>
      'requestHeaders' in ir ? { requestHeaders: { ...ir.requestHeaders, skipIfAbsent: true } } : ir,
    );
    push([{ genericKey: { descriptorValue: SET_DESCRIPTOR_VALUE } }, ...setActions]);
  }
  return out;
}

/** Gloo's setDescriptors -> the service's set rules. */
function setDescriptors(list: readonly RateLimitSetDescriptor[], where: string, problems: Problem[]): SetDescriptorConfig[] {
  return list.map((d, i) => {
    const at = `${where}[${i}]`;
    const simple = (d.simpleDescriptors ?? []).map((sd) => ({ key: sd.key, ...(sd.value !== undefined ? { value: sd.value } : {}) }));
    const keys = simple.map((sd) => sd.key);
    const dup = keys.find((k, j) => keys.indexOf(k) !== j);
    if (dup !== undefined)
      problems.push({ code: 'InvalidSpec', message: `${at}.simpleDescriptors: key ${JSON.stringify(dup)} appears twice` });
    const out: SetDescriptorConfig = { simpleDescriptors: simple };
    if (!d.rateLimit) problems.push({ code: 'InvalidSpec', message: `${at}.rateLimit: required` });
    else {
      const limit = checkLimit(d.rateLimit, `${at}.rateLimit`, problems);
      if (limit === 'unlimited') out.unlimited = true;
      else if (limit) out.limit = limit;
    }
    if (d.alwaysApply) out.alwaysApply = true;
    return out;
  });
}

/** The Settings' `ratelimit.descriptors` (Gloo's ServiceSettings), checked as a RateLimitConfig's are. */
export interface ResolvedServiceSettings {
  config: RateLimitServiceConfig;
}

export function translateServiceSettings(settings: Settings): Attempt<ResolvedServiceSettings> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const rl = settings.spec.ratelimit ?? {};
  const descriptors = (rl.descriptors ?? []).map((d, i) => descriptor(d, `ratelimit.descriptors[${i}]`, problems, warnings));
  const sets = setDescriptors(rl.setDescriptors ?? [], 'ratelimit.setDescriptors', problems);
  const config: RateLimitServiceConfig = {
    name: `settings:${settings.metadata.namespace}.${settings.metadata.name}`,
    domain: RAW_RATE_LIMIT_DOMAIN,
    descriptors,
    ...(sets.length ? { setDescriptors: sets } : {}),
  };
  if (!problems.length) {
    const parsed = RateLimitServiceConfigSchema.safeParse(config);
    if (!parsed.success)
      for (const m of describeRateLimitIssues(parsed.error, 'ratelimit')) problems.push({ code: 'InvalidSpec', message: m });
  }
  if (problems.length) return { problems, warnings };
  return { ir: { config }, problems, warnings };
}

/**
 * Raw actions (options.ratelimit / ratelimitEarly / ratelimitRegular `rateLimits`) -> entries in the raw
 * domain, each checked against the Settings' descriptors (unset: not checked). Gloo does not check them: a key
 * the Settings do not declare is a warning and the entry is sent as written (it counts against nothing until
 * the Settings declare it), so the route does not depend on the order Settings and routes are applied in.
 */
export function rawRateLimits(
  list: readonly RateLimitActions[],
  where: string,
  stage: RateLimitEntryIR['stage'],
  declared: Declared | undefined,
  problems: Problem[],
  warnings: Problem[],
): RateLimitEntryIR[] {
  const out: RateLimitEntryIR[] = [];
  list.forEach((rl, i) => {
    const undeclared: Problem[] = [];
    const entries = entryActions(rl, `${where}[${i}]`, declared, 'settings.ratelimit descriptor', problems, undeclared);
    for (const w of undeclared)
      warnings.push({ ...w, message: `${w.message}; sent as written, it limits nothing until Settings ratelimit.descriptors declare it` });
    for (const e of entries ?? []) out.push({ ...e, domain: 'custom', ...(stage ? { stage } : {}) });
  });
  return out;
}

export function translateRateLimitConfig(rlc: RateLimitConfig): Attempt<ResolvedRateLimitConfig> {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const raw = rlc.spec.raw;
  const name = `${rlc.metadata.namespace}.${rlc.metadata.name}`;
  const descriptors = (raw.descriptors ?? []).map((d, i) => descriptor(d, `raw.descriptors[${i}]`, problems, warnings));
  const sets = setDescriptors(raw.setDescriptors ?? [], 'raw.setDescriptors', problems);
  const rateLimits: ResolvedRateLimitConfig['rateLimits'] = [];
  (raw.rateLimits ?? []).forEach((rl, i) => {
    const entries = entryActions(rl, `raw.rateLimits[${i}]`, { descriptors, setDescriptors: sets }, 'descriptor', problems);
    for (const e of entries ?? [])
      rateLimits.push({ ...e, actions: [{ genericKey: { descriptorKey: RateLimitKeys.config, descriptorValue: name } }, ...e.actions] });
  });
  if (!raw.rateLimits?.length)
    warnings.push({ code: 'InvalidSpec', message: 'raw.rateLimits: no actions, so no request is ever counted against these descriptors' });
  const config: RateLimitServiceConfig = { name, descriptors, ...(sets.length ? { setDescriptors: sets } : {}) };
  if (!problems.length) {
    const parsed = RateLimitServiceConfigSchema.safeParse(config);
    if (!parsed.success) for (const m of describeRateLimitIssues(parsed.error, 'raw')) problems.push({ code: 'InvalidSpec', message: m });
  }
  if (problems.length) return { problems, warnings };
  return { ir: { config, rateLimits }, problems, warnings };
}

/** options.ratelimitBasic -> Envoy actions whose descriptors carry their own limit (no service config). */
export function basicRateLimits(basic: RatelimitBasic, scope: string, where: string, problems: Problem[]): RateLimitIR['rateLimits'] {
  const out: RateLimitIR['rateLimits'] = [];
  if (!basic.anonymousLimits && !basic.authorizedLimits)
    problems.push({ code: 'InvalidSpec', message: `${where}: set anonymousLimits, authorizedLimits or both` });
  if (basic.anonymousLimits) {
    const limit = checkLimit(basic.anonymousLimits, `${where}.anonymousLimits`, problems);
    if (limit && limit !== 'unlimited')
      out.push({
        actions: [
          { genericKey: { descriptorKey: RateLimitKeys.basic, descriptorValue: basicDescriptorValue(scope, limit) } },
          {
            headerValueMatch: {
              descriptorKey: RateLimitKeys.auth,
              descriptorValue: 'anonymous',
              expectMatch: false,
              headers: [{ name: 'authorization', match: { present: true }, invert: false }],
            },
          },
          { remoteAddress: {} },
        ],
      });
  }
  if (basic.authorizedLimits) {
    const limit = checkLimit(basic.authorizedLimits, `${where}.authorizedLimits`, problems);
    if (limit && limit !== 'unlimited')
      out.push({
        actions: [
          { genericKey: { descriptorKey: RateLimitKeys.basic, descriptorValue: basicDescriptorValue(scope, limit) } },
          // absent header: Envoy sends no descriptor for this entry, so anonymous requests are not counted here
          { requestHeaders: { headerName: 'authorization', descriptorKey: RateLimitKeys.credential } },
        ],
      });
  }
  return out;
}

/** options.localRatelimit -> the token bucket (Envoy's defaults: one token per fill; Legate's: a 1s fill interval). */
export function localBucket(local: LocalRatelimit, where: string, problems: Problem[]): RateLimitIR['local'] {
  const before = problems.length;
  if (local.maxTokens < 1)
    problems.push({ code: 'InvalidSpec', message: `${where}.maxTokens: must be at least 1 (0 would deny every request)` });
  const tokensPerFill = local.tokensPerFill ?? 1;
  if (tokensPerFill < 1) problems.push({ code: 'InvalidSpec', message: `${where}.tokensPerFill: must be at least 1` });
  const fillInterval = parseDuration(local.fillInterval ?? '1s');
  if (fillInterval.seconds * 1000 + (fillInterval.nanos ?? 0) / 1e6 < 50)
    problems.push({ code: 'InvalidSpec', message: `${where}.fillInterval: must be at least 50ms (Envoy's minimum)` });
  if (problems.length > before) return undefined;
  return { maxTokens: local.maxTokens, tokensPerFill, fillInterval };
}
