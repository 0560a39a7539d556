// Stage 1 for jwt: a virtual host's `jwt` (Gloo's legacy form, the afterExtAuth stage) or `jwtStaged`
// providers -> IR, with local keys checked and made into a JWKS and remote JWKS resolved to an
// Upstream's cluster; a route's `jwt.disable` / `jwtStaged.<stage>.disable`; `rbac` on virtual hosts
// and routes (a route's replaces its virtual host's), its principals bound to the providers they name.
// Key material is never quoted in a message.
import { createPublicKey, type JsonWebKey } from 'node:crypto';
import type { VirtualService } from '../../../api/resources.js';
import type { Route } from '../../../api/routes.js';
import { parseDuration } from '../../duration.js';
import type { BindSink, FeatureBinding, ResolveContext, RouteSite } from '../../feature.js';
import type { ClaimMatchIR, JwtProviderIR, JwtStage, JwtStageIR, RbacIR, RbacPrincipalIR, RouteIR, VirtualHostIR } from '../../ir.js';
import { nsName } from '../../names.js';
import { CLAIM_MATCHERS, VALIDATION_POLICIES, type JwtProvider, type JwtVhostExtension, type RbacSettings } from './schema.js';

/** Gloo's documented default for a remote JWKS (Envoy's own is 10 minutes). */
const DEFAULT_CACHE_DURATION = '300s';
/** An HTTP header name (RFC 9110 token). */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

const STAGES: readonly JwtStage[] = ['beforeExtAuth', 'afterExtAuth'];

/** The providers a virtual host declares, by stage (the legacy `jwt` is the afterExtAuth stage, as in Gloo). */
function declaredStages(vs: VirtualService): Partial<Record<JwtStage, { ext: JwtVhostExtension; where: string }>> {
  const opts = vs.spec.virtualHost.options;
  const out: Partial<Record<JwtStage, { ext: JwtVhostExtension; where: string }>> = {};
  if (opts?.jwtStaged) {
    for (const stage of STAGES) {
      const ext = opts.jwtStaged[stage];
      if (ext) out[stage] = { ext, where: `virtualHost.options.jwtStaged.${stage}` };
    }
  } else if (opts?.jwt) out.afterExtAuth = { ext: opts.jwt, where: 'virtualHost.options.jwt' };
  return out;
}

function declaredProviders(vs: VirtualService): { stage: JwtStage; name: string }[] {
  return Object.entries(declaredStages(vs)).flatMap(([stage, d]) =>
    Object.keys(d.ext.providers ?? {}).map((name) => ({ stage: stage as JwtStage, name })),
  );
}

/** `requireRbac` (Settings rbac.requireRbac): a virtual host that no rbac option covers is reported (it refuses every request). */
export function jwtBinding(ctx: ResolveContext, requireRbac: boolean): FeatureBinding {
  return {
    bindRoute(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink): void {
      const opts = route.options;
      if (!opts) return;
      const where = `${site.where}.options`;
      if (opts.jwt && opts.jwtStaged) {
        sink.problems.push({ code: 'InvalidSpec', message: `${where}: set only one of jwt, jwtStaged (one choice in Gloo)` });
        return;
      }
      const declared = declaredStages(site.vs);
      const disabled: JwtStage[] = [];
      const disable = (stage: JwtStage, at: string): void => {
        if (!declared[stage]) {
          sink.warnings.push({
            code: 'InvalidSpec',
            message: `${at}: the virtual host has no ${stage} JWT providers; nothing to turn off`,
          });
        }
        disabled.push(stage);
      };
      if (opts.jwt?.disable) {
        disable('afterExtAuth', `${where}.jwt.disable`);
        if (declared.beforeExtAuth) {
          sink.warnings.push({
            code: 'InvalidSpec',
            message:
              `${where}.jwt.disable: turns off the afterExtAuth stage only (as in Gloo); ` +
              'the beforeExtAuth providers still apply (jwtStaged.beforeExtAuth.disable turns them off)',
          });
        }
      }
      for (const stage of STAGES) if (opts.jwtStaged?.[stage]?.disable) disable(stage, `${where}.jwtStaged.${stage}.disable`);
      if (disabled.length) ir.jwtDisabled = disabled;
      if (opts.rbac) {
        const rbac = rbacIR(opts.rbac, `${where}.rbac`, site.alone ? undefined : declaredProviders(site.vs), sink);
        if (rbac) ir.rbac = rbac;
      }
    },
    bindVirtualHost(vs: VirtualService, ir: VirtualHostIR, sink: BindSink): void {
      const opts = vs.spec.virtualHost.options;
      if (requireRbac && !opts?.rbac && !(vs.spec.virtualHost.routes ?? []).some((r) => r.options?.rbac)) {
        sink.warnings.push({
          code: 'InvalidSpec',
          message:
            'virtualHost.options.rbac: unset while Settings rbac.requireRbac is true: ' +
            'requests are refused (403) except on routes that set their own rbac',
        });
      }
      if (!opts) return;
      if (opts.jwt && opts.jwtStaged) {
        sink.problems.push({ code: 'InvalidSpec', message: 'virtualHost.options: set only one of jwt, jwtStaged (one choice in Gloo)' });
        return;
      }
      if (opts.jwtStaged && !opts.jwtStaged.beforeExtAuth && !opts.jwtStaged.afterExtAuth) {
        sink.warnings.push({
          code: 'InvalidSpec',
          message: 'virtualHost.options.jwtStaged: set beforeExtAuth or afterExtAuth; no JWT is checked',
        });
      }
      const jwt: Partial<Record<JwtStage, JwtStageIR>> = {};
      for (const [stage, d] of Object.entries(declaredStages(vs))) {
        const s = stageIR(d.ext, d.where, vs.metadata.namespace, ctx, sink);
        if (s) jwt[stage as JwtStage] = s;
      }
      if (Object.keys(jwt).length) ir.jwt = jwt;
      if (opts.rbac) {
        const rbac = rbacIR(opts.rbac, 'virtualHost.options.rbac', declaredProviders(vs), sink);
        if (rbac) ir.rbac = rbac;
      }
    },
  };
}

function stageIR(ext: JwtVhostExtension, where: string, ns: string, ctx: ResolveContext, sink: BindSink): JwtStageIR | undefined {
  const entries = Object.entries(ext.providers ?? {});
  if (!entries.length) {
    sink.warnings.push({ code: 'InvalidSpec', message: `${where}.providers: no providers; no JWT is checked` });
    return undefined;
  }
  const named = typeof ext.validationPolicy === 'number' ? VALIDATION_POLICIES[ext.validationPolicy] : ext.validationPolicy;
  let validationPolicy: JwtStageIR['validationPolicy'] = named ?? 'REQUIRE_VALID';
  if (ext.allowMissingOrFailedJwt) {
    if (named && named !== 'ALLOW_MISSING_OR_FAILED') {
      sink.warnings.push({
        code: 'InvalidSpec',
        message: `${where}.validationPolicy: ${named} is ignored: allowMissingOrFailedJwt takes precedence (as in Gloo)`,
      });
    }
    validationPolicy = 'ALLOW_MISSING_OR_FAILED';
  }
  const providers: Record<string, JwtProviderIR> = {};
  let ok = true;
  for (const [name, p] of entries) {
    const provider = providerIR(p, `${where}.providers.${name}`, ns, ctx, sink);
    if (provider) providers[name] = provider;
    else ok = false;
  }
  return ok ? { providers, validationPolicy } : undefined;
}

function providerIR(p: JwtProvider, where: string, ns: string, ctx: ResolveContext, sink: BindSink): JwtProviderIR | undefined {
  const before = sink.problems.length;
  const ir: JwtProviderIR = { keepToken: p.keepToken ?? false, claimsToHeaders: [] };
  if (p.issuer) ir.issuer = p.issuer;
  if (p.audiences?.length) ir.audiences = [...p.audiences];
  if (p.jwks.local) {
    const jwks = localJwks(p.jwks.local.key, `${where}.jwks.local.key`, sink);
    if (jwks) ir.localJwks = jwks;
  } else if (p.jwks.remote) {
    const remote = remoteJwks(p.jwks.remote, `${where}.jwks.remote`, ns, ctx, sink);
    if (remote) ir.remoteJwks = remote;
  }
  const ts = p.tokenSource;
  if (ts && (ts.headers?.length || ts.queryParams?.length)) {
    ir.tokenSource = {
      headers: (ts.headers ?? []).map((h) => (h.prefix ? { name: h.header, prefix: h.prefix } : { name: h.header })),
      queryParams: [...(ts.queryParams ?? [])],
    };
    (ts.headers ?? []).forEach((h, i) => checkHeaderName(h.header, `${where}.tokenSource.headers[${i}].header`, sink));
  }
  (p.claimsToHeaders ?? []).forEach((c, i) => {
    checkHeaderName(c.header, `${where}.claimsToHeaders[${i}].header`, sink);
    if (c.append) {
      sink.warnings.push({
        code: 'NotSupported',
        message: `${where}.claimsToHeaders[${i}].append: Envoy's jwt_authn replaces the header; a value the client sent is not kept`,
      });
    }
    ir.claimsToHeaders.push({ claim: c.claim, header: c.header.toLowerCase() });
  });
  if (p.clockSkewSeconds !== undefined) ir.clockSkewSeconds = p.clockSkewSeconds;
  if (p.attachFailedStatusToMetadata) ir.failedStatusInMetadata = p.attachFailedStatusToMetadata;
  return sink.problems.length === before ? ir : undefined;
}

function checkHeaderName(name: string, where: string, sink: BindSink): void {
  if (!HEADER_NAME.test(name)) sink.problems.push({ code: 'InvalidSpec', message: `${where}: "${name}" is not an HTTP header name` });
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A JWKS, a single JWK or a PEM public key -> a JWKS document Envoy reads (as Gloo converts them). */
function localJwks(key: string, where: string, sink: BindSink): string | undefined {
  const text = key.trim();
  const fail = (why: string): undefined => {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}: ${why}` });
    return undefined;
  };
  if (text.startsWith('-----BEGIN')) {
    if (/PRIVATE KEY-----/.test(text)) return fail('is a private key; give the public key (PEM "PUBLIC KEY" or a JWKS)');
    try {
      const jwk = createPublicKey(text).export({ format: 'jwk' });
      return JSON.stringify({ keys: [jwk] });
    } catch {
      return fail('is not a PEM public key that can be read');
    }
  }
  if (!text.startsWith('{')) return fail('expected a JWKS or a JWK (JSON) or a PEM public key');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    return fail('is not valid JSON (expected a JWKS, a JWK or a PEM public key)');
  }
  const keys: unknown[] = isObject(doc) && Array.isArray(doc['keys']) ? doc['keys'] : [doc];
  if (!keys.length) return fail('the JWKS has no keys');
  const problems = keys.flatMap((k, i) => {
    const at = isObject(doc) && Array.isArray(doc['keys']) ? `keys[${i}]: ` : '';
    if (!isObject(k) || typeof k['kty'] !== 'string') return [`${at}not a JWK (no "kty")`];
    if (k['kty'] === 'oct') return typeof k['k'] === 'string' ? [] : [`${at}an "oct" key needs "k"`];
    if (k['d'] !== undefined) return [`${at}holds a private key ("d"); give the public key`];
    try {
      createPublicKey({ key: k as JsonWebKey, format: 'jwk' });
      return [];
    } catch {
      return [`${at}not a usable ${String(k['kty'])} public key`];
    }
  });
  if (problems.length) return fail(problems.join('; '));
  return JSON.stringify({ keys });
}

function remoteJwks(
  remote: NonNullable<JwtProvider['jwks']['remote']>,
  where: string,
  ns: string,
  ctx: ResolveContext,
  sink: BindSink,
): JwtProviderIR['remoteJwks'] {
  let url: URL | undefined;
  try {
    url = new URL(remote.url);
  } catch {
    url = undefined;
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    sink.problems.push({ code: 'InvalidSpec', message: `${where}.url: "${remote.url}" is not an http(s) URL` });
    return undefined;
  }
  if (!remote.upstreamRef) {
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}.upstreamRef: required: Envoy fetches the JWKS through the cluster of an Upstream`,
    });
    return undefined;
  }
  const upNs = remote.upstreamRef.namespace ?? ns;
  const key = nsName(upNs, remote.upstreamRef.name);
  const upstreams = ctx.upstreams();
  if (upstreams.rejected.has(key)) {
    sink.problems.push({
      code: 'UpstreamRejected',
      message: `${where}.upstreamRef: Upstream ${upNs}.${remote.upstreamRef.name} is rejected`,
    });
    return undefined;
  }
  const up = upstreams.resolved.get(key);
  if (!up) {
    sink.problems.push({
      code: 'UpstreamNotFound',
      message: `${where}.upstreamRef: Upstream ${upNs}.${remote.upstreamRef.name} not found`,
    });
    return undefined;
  }
  if (url.protocol === 'https:' && !up.tls) {
    sink.warnings.push({
      code: 'InvalidSpec',
      message: `${where}.url: https, but Upstream ${upNs}.${remote.upstreamRef.name} has no sslConfig: the keys are fetched in plain text`,
    });
  }
  // the URL gives the Host and path; the connection goes to the Upstream's hosts whatever the URL's host
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (up.discovery === 'STRICT_DNS' && !up.endpoints.some((e) => e.address === host) && up.tls?.sni !== host) {
    sink.warnings.push({
      code: 'InvalidSpec',
      message:
        `${where}.url: host ${host} is not a host of Upstream ${upNs}.${remote.upstreamRef.name} ` +
        `(${up.endpoints.map((e) => e.address).join(', ')}); the keys are fetched from the Upstream's hosts`,
    });
  }
  const out: NonNullable<JwtProviderIR['remoteJwks']> = {
    url: remote.url,
    cluster: up.cluster,
    cacheDuration: parseDuration(remote.cacheDuration ?? DEFAULT_CACHE_DURATION),
  };
  if (remote.asyncFetch)
    out.asyncFetch = remote.asyncFetch.fastListener !== undefined ? { fastListener: remote.asyncFetch.fastListener } : {};
  return out;
}

/** `providers` undefined: not known yet (a RouteTable checked on its own). */
function rbacIR(
  r: RbacSettings,
  where: string,
  providers: { stage: JwtStage; name: string }[] | undefined,
  sink: BindSink,
): RbacIR | undefined {
  const entries = Object.entries(r.policies ?? {});
  if (r.disable) {
    if (entries.length)
      sink.warnings.push({ code: 'InvalidSpec', message: `${where}: disable turns RBAC off here; the policies have no effect` });
    return { disabled: true };
  }
  if (!entries.length) {
    sink.warnings.push({ code: 'InvalidSpec', message: `${where}.policies: no policies: every request is refused (403)` });
  }
  const before = sink.problems.length;
  const policies: Extract<RbacIR, { policies: unknown }>['policies'] = {};
  for (const [name, p] of entries) {
    const at = `${where}.policies.${name}`;
    if (!p.principals?.length) {
      sink.problems.push({ code: 'InvalidSpec', message: `${at}.principals: set at least one principal (jwtPrincipal)` });
      continue;
    }
    const principals: RbacPrincipalIR[] = [];
    p.principals.forEach((pr, i) => {
      const pat = `${at}.principals[${i}].jwtPrincipal`;
      const principal = pr.jwtPrincipal && principalIR(pr.jwtPrincipal, pat, p.nestedClaimDelimiter ?? '', providers, sink);
      if (!pr.jwtPrincipal) sink.problems.push({ code: 'InvalidSpec', message: `${pat}: required (the only principal Gloo has)` });
      if (principal) principals.push(principal);
    });
    const policy: (typeof policies)[string] = { principals };
    if (p.permissions?.pathPrefix) {
      if (!p.permissions.pathPrefix.startsWith('/')) {
        sink.problems.push({
          code: 'InvalidSpec',
          message: `${at}.permissions.pathPrefix: "${p.permissions.pathPrefix}" must start with /`,
        });
      }
      policy.pathPrefix = p.permissions.pathPrefix;
    }
    if (p.permissions?.methods?.length) policy.methods = p.permissions.methods.map((m) => m.toUpperCase());
    policies[name] = policy;
  }
  return sink.problems.length === before ? { policies } : undefined;
}

function principalIR(
  jp: NonNullable<NonNullable<NonNullable<RbacSettings['policies']>[string]['principals']>[number]['jwtPrincipal']>,
  where: string,
  delimiter: string,
  providers: { stage: JwtStage; name: string }[] | undefined,
  sink: BindSink,
): RbacPrincipalIR | undefined {
  const known = [...new Set((providers ?? []).map((p) => p.name))];
  let matching = providers ?? [];
  if (!providers) {
    // checked where a VirtualService delegates to it
  } else if (jp.provider) {
    matching = providers.filter((p) => p.name === jp.provider);
    if (!matching.length) {
      const have = known.length ? ` (providers: ${known.join(', ')})` : '';
      sink.problems.push({
        code: 'InvalidSpec',
        message: `${where}.provider: the virtual host has no JWT provider "${jp.provider}"${have}`,
      });
      return undefined;
    }
  } else if (!matching.length) {
    sink.problems.push({
      code: 'InvalidSpec',
      message: `${where}: the virtual host has no JWT providers (jwt or jwtStaged), so no token's claims can match`,
    });
    return undefined;
  }
  const matcher = typeof jp.matcher === 'number' ? CLAIM_MATCHERS[jp.matcher] : (jp.matcher ?? 'EXACT_STRING');
  const claims: RbacPrincipalIR['claims'] = [];
  for (const [claim, value] of Object.entries(jp.claims ?? {})) {
    const path = delimiter ? claim.split(delimiter) : [claim];
    if (path.some((s) => !s)) {
      sink.problems.push({ code: 'InvalidSpec', message: `${where}.claims.${claim}: an empty key in the nested claim path` });
      continue;
    }
    let match: ClaimMatchIR;
    if (matcher === 'BOOLEAN') {
      if (String(value) !== 'true' && String(value) !== 'false') {
        sink.problems.push({ code: 'InvalidSpec', message: `${where}.claims.${claim}: the BOOLEAN matcher needs true or false` });
        continue;
      }
      match = { bool: String(value) === 'true' };
    } else if (matcher === 'LIST_CONTAINS') match = { listContains: String(value) };
    else match = { exact: String(value) };
    claims.push({ path, match });
  }
  return { providers: matching.map((p) => ({ ...p })), claims };
}
