// The checks of the basicAuth, ldap, opaAuth, opaServerAuth, passThroughAuth and hmacAuth resolvers (one file
// per kind beside this one registers each): Gloo's step -> the step the extauth service applies
// (common/auth-config.ts). References are read here (LDAP service account and HMAC credentials from
// Secrets, Rego modules from ConfigMaps), so the extauth service never reads the cluster.
import type {
  BasicAuthStepConfig,
  HmacStepConfig,
  LdapStepConfig,
  OpaServerStepConfig,
  OpaStepConfig,
  PassThroughGrpcStepConfig,
  PassThroughHttpStepConfig,
} from '../../../../../common/auth-config.js';
import type { ConfigMap, Secret } from '../../../../api/resources.js';
import type { AuthStep } from '../../../../api/schemas.js';
import type { Problem } from '../../../feature.js';
import { nsName } from '../../../names.js';
import { secretValue } from '../../../secrets.js';
import { durationMs, type StepResolveContext } from './common.js';

export interface StepRefs {
  ns: string;
  secrets: ReadonlyMap<string, Secret>;
  configMaps: ReadonlyMap<string, ConfigMap>;
}

export function refsOf(ctx: StepResolveContext): StepRefs {
  return { ns: ctx.namespace, secrets: ctx.secrets, configMaps: ctx.configMaps };
}

function invalid(problems: Problem[], message: string): undefined {
  problems.push({ code: 'InvalidSpec', message });
  return undefined;
}

/** basicAuth: `apr.users` (legacy), or `encryption` {apr | sha1} with `userList.users` (Gloo 1.16+). */
export function basicAuthStep(
  spec: NonNullable<AuthStep['basicAuth']>,
  where: string,
  problems: Problem[],
): BasicAuthStepConfig | undefined {
  const legacy = spec.apr !== undefined;
  const extended = spec.encryption !== undefined || spec.userList !== undefined;
  if (legacy === extended) return invalid(problems, `${where}: set either apr, or encryption and userList`);
  let encryption: 'apr' | 'sha1' = 'apr';
  let users = spec.apr?.users;
  if (extended) {
    const e = spec.encryption;
    if (!e) return invalid(problems, `${where}.encryption: required with userList (apr: {} or sha1: {})`);
    if ((e.apr !== undefined) === (e.sha1 !== undefined)) return invalid(problems, `${where}.encryption: set exactly one of apr, sha1`);
    if (!spec.userList) return invalid(problems, `${where}.userList: required with encryption`);
    encryption = e.sha1 ? 'sha1' : 'apr';
    users = spec.userList.users;
  }
  const usersWhere = extended ? `${where}.userList.users` : `${where}.apr.users`;
  if (!users || Object.keys(users).length === 0) return invalid(problems, `${usersWhere}: no users`);
  const before = problems.length;
  for (const [user, cred] of Object.entries(users)) {
    if (user === '' || user.includes(':')) invalid(problems, `${usersWhere}.${user}: a user name is not empty and has no ':'`);
    const h = cred.hashedPassword;
    if (encryption === 'sha1' && !/^[0-9a-fA-F]{40}$/.test(h))
      invalid(problems, `${usersWhere}.${user}.hashedPassword: a sha1 digest is 40 hex digits`);
    if (encryption === 'apr' && !/^[./0-9A-Za-z]{22}$/.test(h))
      invalid(problems, `${usersWhere}.${user}.hashedPassword: an apr1 hash is 22 characters [./0-9A-Za-z] (after $apr1$<salt>$)`);
    if (encryption === 'apr' && !/^[^$]{0,8}$/.test(cred.salt))
      invalid(problems, `${usersWhere}.${user}.salt: an apr1 salt is at most 8 characters without '$'`);
  }
  if (problems.length > before) return undefined;
  return { type: 'basic-auth', realm: spec.realm ?? '', encryption, users };
}

/** Gloo's `address` is `host:port` or an ldap:// URL; the extauth service takes the URL. */
export function ldapUrl(address: string): string | undefined {
  const withScheme = /^ldaps?:\/\//i.test(address) ? address : `ldap://${address}`;
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    return undefined;
  }
  if ((u.pathname !== '' && u.pathname !== '/') || u.search !== '' || u.username !== '' || u.hostname === '') return undefined;
  const port = u.port || (u.protocol === 'ldaps:' ? '636' : '389');
  return `${u.protocol}//${u.hostname}:${port}`;
}

export function ldapStep(
  spec: NonNullable<AuthStep['ldap']>,
  where: string,
  refs: StepRefs,
  problems: Problem[],
): LdapStepConfig | undefined {
  const before = problems.length;
  const url = ldapUrl(spec.address);
  if (url === undefined) invalid(problems, `${where}.address: ${JSON.stringify(spec.address)} is not host:port or ldap(s)://host:port`);
  if (spec.userDnTemplate.split('%s').length !== 2)
    invalid(problems, `${where}.userDnTemplate: must contain exactly one %s (the user name), e.g. uid=%s,ou=people,dc=example,dc=org`);
  const groupChecks = !spec.disableGroupChecking;
  if (groupChecks && (spec.allowedGroups ?? []).length === 0)
    invalid(problems, `${where}.allowedGroups: no groups, so no user would be allowed (or set disableGroupChecking: true)`);
  if (spec.pool?.initialSize !== undefined && spec.pool.initialSize > (spec.pool.maxSize ?? 5))
    invalid(problems, `${where}.pool.initialSize: larger than maxSize`);
  let serviceAccount: LdapStepConfig['serviceAccount'];
  const gl = spec.groupLookupSettings;
  if (gl) {
    const ref = gl.credentialsSecretRef;
    if (!ref) invalid(problems, `${where}.groupLookupSettings.credentialsSecretRef: required`);
    else {
      const secretNs = ref.namespace ?? refs.ns;
      const secret = refs.secrets.get(nsName(secretNs, ref.name));
      const w = `${where}.groupLookupSettings.credentialsSecretRef`;
      if (!secret) problems.push({ code: 'SecretNotFound', message: `${w}: Secret ${secretNs}.${ref.name} not found` });
      else {
        const username = secretValue(secret, 'username');
        const password = secretValue(secret, 'password');
        if (!username || password === undefined)
          invalid(problems, `${w}: Secret ${secretNs}.${ref.name} needs the keys username and password`);
        else serviceAccount = { username, password, checkGroupsWithServiceAccount: gl.checkGroupsWithServiceAccount ?? false };
      }
    }
  }
  if (problems.length > before || url === undefined) return undefined;
  return {
    type: 'ldap',
    url,
    userDnTemplate: spec.userDnTemplate,
    membershipAttributeName: spec.membershipAttributeName || 'memberOf',
    allowedGroups: spec.allowedGroups ?? [],
    disableGroupChecking: spec.disableGroupChecking ?? false,
    searchFilter: spec.searchFilter || '(uid=*)',
    pool: { maxSize: spec.pool?.maxSize ?? 5, initialSize: spec.pool?.initialSize ?? 2 },
    ...(serviceAccount ? { serviceAccount } : {}),
  };
}

/** opaAuth: every data entry of each ConfigMap in `modules` is a Rego module. */
export function opaStep(
  spec: NonNullable<AuthStep['opaAuth']>,
  where: string,
  refs: StepRefs,
  problems: Problem[],
): OpaStepConfig | undefined {
  const before = problems.length;
  if (spec.query.trim() === '') invalid(problems, `${where}.query: empty`);
  const modules: Record<string, string> = {};
  (spec.modules ?? []).forEach((ref, i) => {
    const cmNs = ref.namespace ?? refs.ns;
    const cm = refs.configMaps.get(nsName(cmNs, ref.name));
    const w = `${where}.modules[${i}]`;
    if (!cm) {
      problems.push({ code: 'ConfigMapNotFound', message: `${w}: ConfigMap ${cmNs}.${ref.name} not found` });
      return;
    }
    const data = Object.entries(cm.spec.data ?? {});
    if (data.length === 0) invalid(problems, `${w}: ConfigMap ${cmNs}.${ref.name} has no data (a key per Rego module)`);
    for (const [key, rego] of data) {
      if (!/^\s*package\s+\S/m.test(rego))
        invalid(problems, `${w}: ConfigMap ${cmNs}.${ref.name} key ${key} is not a Rego module (no package)`);
      modules[`${cmNs}/${ref.name}/${key}`] = rego;
    }
  });
  if (problems.length > before) return undefined;
  return {
    type: 'opa',
    query: spec.query,
    modules,
    fastInputConversion: spec.options?.fastInputConversion ?? false,
    returnDecisionReason: false,
  };
}

/** opaServerAuth: `<serverAddr>/v1/data/<package as a path>/<ruleName>`. */
export function opaServerStep(
  spec: NonNullable<AuthStep['opaServerAuth']>,
  where: string,
  problems: Problem[],
): OpaServerStepConfig | undefined {
  const before = problems.length;
  if (!spec.serverAddr)
    invalid(problems, `${where}.serverAddr: required (Legate has no OPA sidecar; name your OPA server, e.g. opa.default.svc:8181)`);
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(spec.package))
    invalid(problems, `${where}.package: ${JSON.stringify(spec.package)} is not a Rego package name (a.b.c)`);
  if (spec.ruleName !== undefined && !/^[A-Za-z_][A-Za-z0-9_]*(\/[A-Za-z_][A-Za-z0-9_]*)*$/.test(spec.ruleName))
    invalid(problems, `${where}.ruleName: ${JSON.stringify(spec.ruleName)} is not a rule name (sub-fields with /)`);
  let base: URL | undefined;
  if (spec.serverAddr) {
    try {
      base = new URL(/^https?:\/\//.test(spec.serverAddr) ? spec.serverAddr : `http://${spec.serverAddr}`);
      if (base.pathname !== '/' || base.search !== '') throw new Error('path');
    } catch {
      invalid(problems, `${where}.serverAddr: ${JSON.stringify(spec.serverAddr)} is not ADDRESS:PORT`);
    }
  }
  if (problems.length > before || !base) return undefined;
  const path = [...spec.package.split('.'), ...(spec.ruleName ? spec.ruleName.split('/') : [])].join('/');
  return {
    type: 'opa-server',
    url: `${base.protocol}//${base.host}/v1/data/${path}`,
    fastInputConversion: spec.options?.fastInputConversion ?? false,
    returnDecisionReason: false,
  };
}

const PSEUDO_OR_HOP = /^(:|host$|connection$|content-length$|transfer-encoding$)/;

function headerNames(list: readonly string[] | undefined, where: string, problems: Problem[]): string[] {
  return (list ?? []).flatMap((h, i) => {
    const n = h.toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(n) || PSEUDO_OR_HOP.test(n)) {
      invalid(problems, `${where}[${i}]: ${JSON.stringify(h)} is not a header that can be passed`);
      return [];
    }
    return [n];
  });
}

export function passThroughStep(
  spec: NonNullable<AuthStep['passThroughAuth']>,
  where: string,
  problems: Problem[],
): PassThroughGrpcStepConfig | PassThroughHttpStepConfig | undefined {
  if ((spec.grpc === undefined) === (spec.http === undefined)) return invalid(problems, `${where}: set exactly one of grpc, http`);
  const common = {
    ...(spec.config ? { config: spec.config } : {}),
    failureModeAllow: spec.failureModeAllow ?? false,
  };
  const before = problems.length;
  if (spec.grpc) {
    const g = spec.grpc;
    if (!/^[^\s/:]+:\d{1,5}$/.test(g.address))
      return invalid(problems, `${where}.grpc.address: ${JSON.stringify(g.address)} must be ADDRESS:PORT`);
    let retry: PassThroughGrpcStepConfig['retry'];
    if (g.retryPolicy) {
      // Envoy's core RetryPolicy defaults (Gloo's shape): 1 retry, base 1s, max 10 times the base
      const b = g.retryPolicy.retryBackOff;
      const baseIntervalMs = b ? durationMs(b.baseInterval) : 1000;
      const maxIntervalMs = b?.maxInterval ? durationMs(b.maxInterval) : baseIntervalMs * 10;
      if (baseIntervalMs < 1) return invalid(problems, `${where}.grpc.retryPolicy.retryBackOff.baseInterval: must be at least 1ms`);
      if (maxIntervalMs < baseIntervalMs)
        return invalid(problems, `${where}.grpc.retryPolicy.retryBackOff.maxInterval: must not be below baseInterval`);
      retry = { numRetries: g.retryPolicy.numRetries ?? 1, baseIntervalMs, maxIntervalMs };
    }
    return {
      type: 'passthrough-grpc',
      address: g.address,
      timeoutMs: durationMs(g.connectionTimeout ?? '5s'),
      tls: g.tlsConfig !== undefined,
      ...(retry ? { retry } : {}),
      ...common,
    };
  }
  const h = spec.http!;
  const w = `${where}.http`;
  let url: URL | undefined;
  try {
    url = new URL(h.url);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('scheme');
  } catch {
    invalid(problems, `${w}.url: ${JSON.stringify(h.url)} is not an http or https URL`);
  }
  const headersToAdd: Record<string, string> = {};
  for (const [k, v] of Object.entries(h.request?.headersToAdd ?? {})) {
    const n = k.toLowerCase();
    if (!/^[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/.test(n) || PSEUDO_OR_HOP.test(n))
      invalid(problems, `${w}.request.headersToAdd.${k}: not a header that can be set`);
    else headersToAdd[n] = v;
  }
  const up = headerNames(h.response?.allowedUpstreamHeaders, `${w}.response.allowedUpstreamHeaders`, problems);
  const over = headerNames(h.response?.allowedUpstreamHeadersToOverwrite, `${w}.response.allowedUpstreamHeadersToOverwrite`, problems);
  const both = up.filter((n) => over.includes(n));
  if (both.length)
    invalid(problems, `${w}.response: ${both.join(', ')} in both allowedUpstreamHeaders and allowedUpstreamHeadersToOverwrite`);
  const out: PassThroughHttpStepConfig = {
    type: 'passthrough-http',
    url: h.url,
    timeoutMs: durationMs(h.connectionTimeout ?? '5s'),
    allowedHeaders: headerNames(h.request?.allowedHeaders, `${w}.request.allowedHeaders`, problems),
    headersToAdd,
    passThroughState: h.request?.passThroughState ?? false,
    passThroughFilterMetadata: h.request?.passThroughFilterMetadata ?? false,
    passThroughBody: h.request?.passThroughBody ?? false,
    allowedUpstreamHeaders: up,
    allowedUpstreamHeadersToOverwrite: over,
    allowedClientHeadersOnDenied: headerNames(
      h.response?.allowedClientHeadersOnDenied,
      `${w}.response.allowedClientHeadersOnDenied`,
      problems,
    ),
    readStateFromResponse: h.response?.readStateFromResponse ?? false,
    ...common,
  };
  return problems.length > before ? undefined : out;
}

/** hmacAuth: each Secret of secretRefs holds one credential (`username`, `password`), as Gloo's. */
export function hmacStep(
  spec: NonNullable<AuthStep['hmacAuth']>,
  where: string,
  refs: StepRefs,
  problems: Problem[],
): HmacStepConfig | undefined {
  if (!spec.parametersInHeaders) return invalid(problems, `${where}.parametersInHeaders: required (the only implementation type)`);
  const list = spec.secretRefs?.secretRefs ?? [];
  if (list.length === 0) return invalid(problems, `${where}.secretRefs.secretRefs: no Secrets`);
  const before = problems.length;
  const credentials: Record<string, string> = {};
  list.forEach((ref, i) => {
    const secretNs = ref.namespace ?? refs.ns;
    const w = `${where}.secretRefs.secretRefs[${i}]`;
    const secret = refs.secrets.get(nsName(secretNs, ref.name));
    if (!secret) {
      problems.push({ code: 'SecretNotFound', message: `${w}: Secret ${secretNs}.${ref.name} not found` });
      return;
    }
    const username = secretValue(secret, 'username');
    const password = secretValue(secret, 'password');
    if (!username || !password) invalid(problems, `${w}: Secret ${secretNs}.${ref.name} needs the keys username and password`);
    else if (credentials[username] !== undefined) invalid(problems, `${w}: user ${JSON.stringify(username)} appears in two Secrets`);
    else credentials[username] = password;
  });
  if (problems.length > before) return undefined;
  return { type: 'hmac', credentials };
}
