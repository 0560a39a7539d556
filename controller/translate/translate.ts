// Stage 1: resources -> Proxy IR + upstream IR + reports. Pure: no I/O, clock or environment.
//
// "Fail closed, keep last good": a resource that fails is reported; if an earlier version of it was
// accepted, that version is translated instead, so a bad edit never takes down what was serving.
import type { Gateway, LegateResource, Upstream, VirtualService } from '../api/resources.js';
import { isKind, keyOf } from '../api/resources.js';
import type { Destination, Matcher, Route } from '../api/schemas.js';
import { parseDuration } from './duration.js';
import type { AuthBindingIR, DownstreamTlsIR, ListenerIR, MatcherIR, ProxyIR, RouteIR, SourceRef, StringMatchIR, UpstreamIR, VirtualHostIR, WeightedClusterIR } from './ir.js';
import type { AuthConfigConfig, GraphQLApiConfig } from '../../common/contract.js';
import { translateAuthConfig } from './extauth.js';
import { translateGraphQLApi } from './graphql.js';
import { re2Error } from './regex.js';
import { checkTlsMaterial, tlsMaterialFromSecret } from './secrets.js';
import { Reporter, type Report } from './reporter.js';
import { clusterName, nsName, resolveUpstream, sourceOf, type Problem, type UpstreamIndex } from './upstreams.js';

export const DEFAULT_PROXY_NAME = 'gateway-proxy';
export const DEFAULT_ROUTE_TIMEOUT = '15s';

export interface TranslateOptions {
  /** Where generated resources (Proxy, discovered Upstreams) live; also the status key. */
  writeNamespace: string;
  /** The Gateway assumed when none exists. */
  defaultGateway: { bindAddress: string; bindPort: number };
  /** Port of the ssl gateway assumed when no Gateway exists and a virtual service has sslConfig. */
  defaultSslPort?: number;
}

export interface TranslateInput {
  resources: readonly LegateResource[];
  /** Last accepted version of each resource, by keyOf(). */
  lastAccepted: ReadonlyMap<string, LegateResource>;
  options: TranslateOptions;
}

export interface TranslateOutput {
  proxies: ProxyIR[];
  upstreams: UpstreamIR[];
  reports: Report[];
  /** The version of each resource that is now served (current or last accepted), by keyOf(). */
  accepted: Map<string, LegateResource>;
  /** Accepted GraphQL APIs, for the graphql extension. */
  graphqlApis: GraphQLApiConfig[];
  /** Accepted AuthConfigs (secrets resolved), for the extauth extension. */
  authConfigs: AuthConfigConfig[];
}

export function translate(input: TranslateInput): TranslateOutput {
  const reporter = new Reporter();
  const accepted = new Map<string, LegateResource>();
  const { resources, lastAccepted, options } = input;

  const index: UpstreamIndex = {
    services: byNsName(resources.filter(isKind('Service'))),
    endpoints: byNsName(resources.filter(isKind('Endpoints'))),
    secrets: byNsName(resources.filter(isKind('Secret'))),
  };
  for (const r of resources) {
    if (r.kind === 'Service' || r.kind === 'Endpoints' || r.kind === 'Secret' || r.kind === 'Settings') accepted.set(keyOf(r), r);
  }

  // Upstreams first: virtual services are checked against the ones that survived.
  const upstreams = new Map<string, UpstreamIR>();
  const rejectedUpstreams = new Set<string>();
  for (const upstream of resources.filter(isKind('Upstream'))) {
    const used = withFallback(upstream, lastAccepted, reporter, (u) => resolveUpstream(u, index));
    if (used) {
      upstreams.set(nsName(upstream.metadata.namespace, upstream.metadata.name), used.result);
      accepted.set(keyOf(upstream), used.resource);
    } else {
      rejectedUpstreams.add(nsName(upstream.metadata.namespace, upstream.metadata.name));
    }
  }

  // GraphQL APIs next: routes are checked against the ones that survived.
  const graphqlApis = new Map<string, GraphQLApiConfig>();
  const rejectedApis = new Set<string>();
  const apiResources = [...resources.filter(isKind('GraphQLApi')), ...resources.filter(isKind('GraphQLSchema'))];
  for (const api of apiResources) {
    const key = nsName(api.metadata.namespace, api.metadata.name);
    if (graphqlApis.has(key)) {
      reporter.error(sourceOf(api), 'InvalidSpec', `a GraphQLApi named ${api.metadata.namespace}.${api.metadata.name} already exists`);
      continue;
    }
    const used = withFallback(api, lastAccepted, reporter, (a) => translateGraphQLApi(a, { upstreams, rejectedUpstreams }));
    if (used) {
      graphqlApis.set(key, used.result);
      accepted.set(keyOf(api), used.resource);
    } else {
      rejectedApis.add(key);
    }
  }

  const authConfigs = new Map<string, AuthConfigConfig>();
  const rejectedAuth = new Set<string>();
  for (const ac of resources.filter(isKind('AuthConfig'))) {
    const used = withFallback(ac, lastAccepted, reporter, (a) => translateAuthConfig(a, index.secrets));
    const key = nsName(ac.metadata.namespace, ac.metadata.name);
    if (used) {
      authConfigs.set(key, used.result);
      accepted.set(keyOf(ac), used.resource);
    } else {
      rejectedAuth.add(key);
    }
  }

  const ctx: VsContext = { upstreams, rejectedUpstreams, graphqlApis, rejectedApis, authConfigs, rejectedAuth, index, writeNamespace: options.writeNamespace };
  const virtualHosts = new Map<string, { vs: VirtualService; vh: VirtualHostIR }>();
  for (const vs of resources.filter(isKind('VirtualService'))) {
    const used = withFallback(vs, lastAccepted, reporter, (v) => translateVirtualService(v, ctx));
    if (used) virtualHosts.set(keyOf(vs), { vs: used.resource, vh: used.result });
  }

  let gateways = resources.filter(isKind('Gateway'));
  if (gateways.length === 0) {
    gateways = [defaultGateway(options, false)];
    if ([...virtualHosts.values()].some(({ vs }) => vs.spec.sslConfig)) gateways.push(defaultGateway(options, true));
  }
  for (const gw of gateways) accepted.set(keyOf(gw), gw);

  const proxies = new Map<string, ProxyIR>();
  const conflicted = new Set<string>();
  for (const gw of gateways) {
    const selected = [...virtualHosts.values()].filter(({ vs }) => gatewaySelects(gw, vs));
    let kept = resolveDomainConflicts(selected, lastAccepted, reporter, conflicted);
    if (gw.spec.ssl) kept = resolveSniConflicts(kept, reporter, conflicted);
    const listener: ListenerIR = {
      name: `listener-${gw.spec.bindAddress ?? '::'}-${gw.spec.bindPort}`,
      bindAddress: gw.spec.bindAddress ?? '::',
      bindPort: gw.spec.bindPort,
      ssl: gw.spec.ssl ?? false,
      source: sourceOf(gw),
      virtualHosts: [],
    };
    for (const proxyName of gw.spec.proxyNames ?? [DEFAULT_PROXY_NAME]) {
      let proxy = proxies.get(proxyName);
      if (!proxy) {
        proxy = { name: proxyName, namespace: options.writeNamespace, listeners: [] };
        proxies.set(proxyName, proxy);
      }
      const vhosts = kept.map(({ vh }) => withRouteNames(vh, gw.metadata.name, proxyName));
      proxy.listeners.push({ ...listener, virtualHosts: vhosts.sort((a, b) => a.name.localeCompare(b.name)) });
    }
  }

  for (const [key, { vs }] of virtualHosts) if (!conflicted.has(key)) accepted.set(key, vs);

  for (const r of resources) {
    if (!['VirtualService', 'Upstream', 'Gateway', 'Service', 'Endpoints', 'Secret', 'Settings', 'GraphQLApi', 'GraphQLSchema', 'AuthConfig'].includes(r.kind)) {
      reporter.warn(sourceOf(r), 'NotSupported', `Legate stores ${r.kind} resources but does not act on them yet`);
    }
  }

  return {
    proxies: [...proxies.values()].sort((a, b) => a.name.localeCompare(b.name)),
    upstreams: [...upstreams.values()].sort((a, b) => a.cluster.localeCompare(b.cluster)),
    reports: reporter.reports,
    accepted,
    graphqlApis: [...graphqlApis.values()].sort((a, b) => a.name.localeCompare(b.name)),
    authConfigs: [...authConfigs.values()].sort((a, b) => a.name.localeCompare(b.name)),
  };
}

function byNsName<T extends { metadata: { namespace: string; name: string } }>(items: T[]): Map<string, T> {
  return new Map(items.map((i) => [nsName(i.metadata.namespace, i.metadata.name), i]));
}

/**
 * Runs `attempt` on the current version; on problems, reports them and retries with the last accepted
 * version (if it differs). Returns what to serve, or undefined when nothing can be.
 */
function withFallback<R extends LegateResource, T>(
  current: R,
  lastAccepted: ReadonlyMap<string, LegateResource>,
  reporter: Reporter,
  attempt: (r: R) => { ir?: T; problems: Problem[]; warnings?: Problem[] },
): { resource: R; result: T } | undefined {
  const src = sourceOf(current);
  const first = attempt(current);
  for (const w of first.warnings ?? []) reporter.warn(src, w.code, w.message);
  if (first.ir !== undefined && first.problems.length === 0) return { resource: current, result: first.ir };
  for (const p of first.problems) reporter.error(src, p.code, p.message);
  const previous = lastAccepted.get(keyOf(current)) as R | undefined;
  if (!previous || sameSpec(previous, current)) return undefined;
  const second = attempt(previous);
  if (second.ir === undefined || second.problems.length > 0) return undefined;
  reporter.warn(src, 'ServingLastAccepted', 'serving the last accepted version until this one is fixed');
  return { resource: previous, result: second.ir };
}

function sameSpec(a: LegateResource | undefined, b: LegateResource): boolean {
  return a !== undefined && (a === b || JSON.stringify(a.spec) === JSON.stringify(b.spec));
}

function defaultGateway(options: TranslateOptions, ssl: boolean): Gateway {
  const metadata = { name: ssl ? `${DEFAULT_PROXY_NAME}-ssl` : DEFAULT_PROXY_NAME, namespace: options.writeNamespace };
  const spec = ssl
    ? { bindAddress: options.defaultGateway.bindAddress, bindPort: options.defaultSslPort ?? 8443, ssl: true, httpGateway: {} }
    : { bindAddress: options.defaultGateway.bindAddress, bindPort: options.defaultGateway.bindPort, httpGateway: {} };
  const raw = { apiVersion: 'gateway.legate.dev/v1', kind: 'Gateway', metadata, spec, body: {}, origin: '(default)' };
  return { kind: 'Gateway', apiVersion: raw.apiVersion, metadata, spec, raw };
}

function gatewaySelects(gw: Gateway, vs: VirtualService): boolean {
  const wantsSsl = gw.spec.ssl ?? false;
  if (wantsSsl !== (vs.spec.sslConfig !== undefined)) return false;
  const http = gw.spec.httpGateway;
  if (http?.virtualServices?.length) {
    return http.virtualServices.some((ref) => ref.name === vs.metadata.name && (ref.namespace ?? gw.metadata.namespace) === vs.metadata.namespace);
  }
  if (http?.virtualServiceSelector) {
    const labels = vs.metadata.labels ?? {};
    if (!Object.entries(http.virtualServiceSelector).every(([k, v]) => labels[k] === v)) return false;
  }
  if (http?.virtualServiceNamespaces?.length && !http.virtualServiceNamespaces.includes('*')) {
    return http.virtualServiceNamespaces.includes(vs.metadata.namespace);
  }
  return true;
}

/**
 * Two virtual services on one gateway may not claim the same domain. Previously accepted ones keep
 * their domains; the newcomers are rejected (all of them when none was accepted before, as in Gloo).
 */
function resolveDomainConflicts(
  selected: { vs: VirtualService; vh: VirtualHostIR }[],
  lastAccepted: ReadonlyMap<string, LegateResource>,
  reporter: Reporter,
  conflicted: Set<string>,
): { vs: VirtualService; vh: VirtualHostIR }[] {
  const owners = new Map<string, { vs: VirtualService; vh: VirtualHostIR }[]>();
  for (const entry of selected) {
    for (const domain of entry.vh.domains) owners.set(domain, [...(owners.get(domain) ?? []), entry]);
  }
  const losers = new Set<string>();
  for (const [domain, entries] of owners) {
    if (entries.length < 2) continue;
    const incumbents = entries.filter(({ vs }) => sameSpec(lastAccepted.get(keyOf(vs)), vs));
    const rejected = incumbents.length === 1 ? entries.filter((e) => e !== incumbents[0]) : entries;
    for (const { vs } of rejected) {
      const others = entries.filter((e) => e.vs !== vs).map((e) => `${e.vs.metadata.namespace}.${e.vs.metadata.name}`);
      reporter.error(
        sourceOf(vs),
        'DomainConflict',
        `domain conflict: the [${domain}] domain is present in other virtual services that belong to the same Gateway as this one: [${others.join(', ')}]`,
      );
      losers.add(keyOf(vs));
      conflicted.add(keyOf(vs));
    }
  }
  return selected.filter(({ vs }) => !losers.has(keyOf(vs)));
}

/** On an ssl gateway, one SNI set can only have one certificate (Envoy needs unique filter chains). */
function resolveSniConflicts(
  selected: { vs: VirtualService; vh: VirtualHostIR }[],
  reporter: Reporter,
  conflicted: Set<string>,
): { vs: VirtualService; vh: VirtualHostIR }[] {
  const owners = new Map<string, { vs: VirtualService; cert: string }>();
  const kept: { vs: VirtualService; vh: VirtualHostIR }[] = [];
  const ordered = [...selected].sort((a, b) => keyOf(a.vs).localeCompare(keyOf(b.vs)));
  for (const entry of ordered) {
    const tls = entry.vh.tls;
    if (!tls) continue;
    const sni = JSON.stringify([...new Set(tls.sniDomains)].sort());
    const cert = JSON.stringify([tls.certChain, tls.privateKey]);
    const owner = owners.get(sni);
    if (owner && owner.cert !== cert) {
      const names = tls.sniDomains.length ? tls.sniDomains.join(', ') : '(no sniDomains: the default certificate)';
      reporter.error(
        sourceOf(entry.vs),
        'DomainConflict',
        `sslConfig conflict: SNI [${names}] already has a different certificate from virtual service ${owner.vs.metadata.namespace}.${owner.vs.metadata.name}`,
      );
      conflicted.add(keyOf(entry.vs));
      continue;
    }
    owners.set(sni, { vs: entry.vs, cert });
    kept.push(entry);
  }
  return kept;
}

function withRouteNames(vh: VirtualHostIR, gateway: string, proxy: string): VirtualHostIR {
  return {
    ...vh,
    routes: vh.routes.map((r) => {
      const name = `vs:${gateway}_${proxy}_${vh.source.namespace}_${vh.source.name}_route:${r.name}`;
      const auth = r.auth && 'configId' in r.auth ? { ...r.auth, sourceName: name } : r.auth;
      return { ...r, name, ...(auth ? { auth } : {}) };
    }),
  };
}

interface VsContext {
  upstreams: ReadonlyMap<string, UpstreamIR>;
  rejectedUpstreams: ReadonlySet<string>;
  graphqlApis: ReadonlyMap<string, GraphQLApiConfig>;
  rejectedApis: ReadonlySet<string>;
  authConfigs: ReadonlyMap<string, AuthConfigConfig>;
  rejectedAuth: ReadonlySet<string>;
  index: UpstreamIndex;
  writeNamespace: string;
}

function translateVirtualService(vs: VirtualService, ctx: VsContext): { ir?: VirtualHostIR; problems: Problem[]; warnings: Problem[] } {
  const problems: Problem[] = [];
  const warnings: Problem[] = [];
  const vhName = `${vs.metadata.namespace}_${vs.metadata.name}`.replace(/\./g, '_');
  const domains = vs.spec.virtualHost.domains?.length ? [...new Set(vs.spec.virtualHost.domains)] : ['*'];
  const routes: RouteIR[] = [];
  (vs.spec.virtualHost.routes ?? []).forEach((route, i) => {
    const where = `virtualHost.routes[${i}]`;
    const ir = translateRoute(route, i, where, vs.metadata.namespace, ctx, problems);
    if (ir && route.options?.extauth) {
      const auth = authBinding(route.options.extauth, `${where}.options.extauth`, 'route', ir.name, vs.metadata.namespace, ctx, problems, warnings);
      if (auth) ir.auth = auth;
    }
    if (ir) routes.push(ir);
  });
  const tls = vs.spec.sslConfig ? downstreamTls(vs, ctx, problems) : undefined;
  const vhExtauth = vs.spec.virtualHost.options?.extauth;
  const vhAuth = vhExtauth ? authBinding(vhExtauth, 'virtualHost.options.extauth', 'virtual_host', vhName, vs.metadata.namespace, ctx, problems, warnings) : undefined;
  if (problems.length) return { problems, warnings };
  const ir: VirtualHostIR = { name: vhName, domains, routes, source: sourceOf(vs) };
  if (tls) ir.tls = tls;
  if (vhAuth && !('disabled' in vhAuth)) ir.auth = vhAuth;
  return { ir, problems, warnings };
}

/**
 * extauth options -> binding. A missing or rejected AuthConfig is reported but the binding stays: the
 * extauth service denies an unknown config, so the route stays closed until the reference is fixed.
 */
function authBinding(
  ext: NonNullable<NonNullable<Route['options']>['extauth']>,
  where: string,
  sourceType: 'virtual_host' | 'route',
  sourceName: string,
  ns: string,
  ctx: VsContext,
  problems: Problem[],
  warnings: Problem[],
): AuthBindingIR | undefined {
  if (ext.disable) return { disabled: true };
  if (ext.customAuth) {
    problems.push({ code: 'NotSupported', message: `${where}.customAuth: custom auth servers are not supported; use configRef` });
    return undefined;
  }
  if (!ext.configRef) return undefined;
  const acNs = ext.configRef.namespace ?? ns;
  const key = nsName(acNs, ext.configRef.name);
  if (ctx.rejectedAuth.has(key)) {
    warnings.push({ code: 'AuthConfigRejected', message: `${where}.configRef: AuthConfig ${acNs}.${ext.configRef.name} is rejected; requests are denied until it is fixed` });
  } else if (!ctx.authConfigs.has(key)) {
    warnings.push({ code: 'AuthConfigNotFound', message: `${where}.configRef: AuthConfig ${acNs}.${ext.configRef.name} not found; requests are denied until it exists` });
  }
  const version = ctx.authConfigs.get(key)?.version;
  return { configId: `${acNs}.${ext.configRef.name}`, ...(version !== undefined ? { configVersion: version } : {}), sourceType, sourceName };
}

function downstreamTls(vs: VirtualService, ctx: VsContext, problems: Problem[]): DownstreamTlsIR | undefined {
  const ssl = vs.spec.sslConfig;
  if (!ssl) return undefined;
  const sniDomains = ssl.sniDomains ?? [];
  if (ssl.sslFiles) return { certChain: { filename: ssl.sslFiles.tlsCert }, privateKey: { filename: ssl.sslFiles.tlsKey }, sniDomains };
  if (!ssl.secretRef) return undefined;
  const secretNs = ssl.secretRef.namespace ?? vs.metadata.namespace;
  const secret = ctx.index.secrets.get(nsName(secretNs, ssl.secretRef.name));
  if (!secret) {
    problems.push({ code: 'SecretNotFound', message: `sslConfig.secretRef: Secret ${secretNs}.${ssl.secretRef.name} not found` });
    return undefined;
  }
  const material = tlsMaterialFromSecret(secret);
  const where = `sslConfig.secretRef (Secret ${secretNs}.${ssl.secretRef.name})`;
  const found = checkTlsMaterial(material, where);
  if (!material.certChain || !material.privateKey) found.unshift(`${where}: needs tls.crt and tls.key`);
  for (const message of [...new Set(found)]) problems.push({ code: 'InvalidTls', message });
  if (found.length || !material.certChain || !material.privateKey) return undefined;
  return { certChain: { inline: material.certChain }, privateKey: { inline: material.privateKey }, sniDomains };
}

function translateRoute(route: Route, i: number, where: string, ns: string, ctx: VsContext, problems: Problem[]): RouteIR | undefined {
  const matchers = (route.matchers?.length ? route.matchers : [{ prefix: '/' }]).map((m, j) => translateMatcher(m, `${where}.matchers[${j}]`, problems));
  let action: RouteIR['action'] | undefined;
  if (route.routeAction) {
    const dests = route.routeAction.single
      ? [{ destination: route.routeAction.single, weight: 1 }]
      : (route.routeAction.multi?.destinations ?? []).map((d) => ({ destination: d.destination, weight: d.weight ?? 1 }));
    const clusters: WeightedClusterIR[] = [];
    dests.forEach((d, j) => {
      const path = route.routeAction?.single ? `${where}.routeAction.single` : `${where}.routeAction.multi.destinations[${j}].destination`;
      const cluster = resolveDestination(d.destination, path, ns, ctx, problems);
      if (cluster) clusters.push({ cluster, weight: d.weight });
    });
    if (clusters.length > 1 && clusters.every((c) => c.weight === 0)) {
      problems.push({ code: 'InvalidSpec', message: `${where}.routeAction.multi: at least one destination needs a weight above 0` });
    }
    action = { type: 'route', clusters: clusters.filter((c) => c.weight > 0 || clusters.length === 1) };
  } else if (route.directResponseAction) {
    action = { type: 'directResponse', status: route.directResponseAction.status };
    if (route.directResponseAction.body !== undefined) action.body = route.directResponseAction.body;
  } else if (route.redirectAction) {
    action = { type: 'redirect', ...route.redirectAction };
  } else if (route.graphqlApiRef ?? route.graphqlSchemaRef) {
    const ref = (route.graphqlApiRef ?? route.graphqlSchemaRef)!;
    const field = route.graphqlApiRef ? 'graphqlApiRef' : 'graphqlSchemaRef';
    const apiNs = ref.namespace ?? ns;
    const key = nsName(apiNs, ref.name);
    if (ctx.rejectedApis.has(key)) {
      problems.push({ code: 'GraphQLApiRejected', message: `${where}.${field}: GraphQLApi ${apiNs}.${ref.name} is rejected` });
    } else if (!ctx.graphqlApis.has(key)) {
      problems.push({ code: 'GraphQLApiNotFound', message: `${where}.${field}: GraphQLApi ${apiNs}.${ref.name} not found` });
    } else {
      action = { type: 'graphql', api: { kind: 'GraphQLApi', namespace: apiNs, name: ref.name } };
    }
  }
  if (!action) return undefined;

  const ir: RouteIR = { name: route.name ?? `<unnamed-${i}>`, matchers, action, timeout: parseDuration(route.options?.timeout ?? DEFAULT_ROUTE_TIMEOUT) };
  const opts = route.options;
  if (opts?.prefixRewrite !== undefined) ir.prefixRewrite = opts.prefixRewrite;
  if (opts?.retries) {
    ir.retries = { retryOn: opts.retries.retryOn ?? '5xx', numRetries: opts.retries.numRetries ?? 1 };
    if (opts.retries.perTryTimeout) ir.retries.perTryTimeout = parseDuration(opts.retries.perTryTimeout);
  }
  return ir;
}

function resolveDestination(dest: Destination, where: string, ns: string, ctx: VsContext, problems: Problem[]): string | undefined {
  if (dest.upstream) {
    const upNs = dest.upstream.namespace ?? ns;
    const key = nsName(upNs, dest.upstream.name);
    if (ctx.rejectedUpstreams.has(key)) {
      problems.push({ code: 'UpstreamRejected', message: `${where}: Upstream ${upNs}.${dest.upstream.name} is rejected` });
      return undefined;
    }
    const up = ctx.upstreams.get(key);
    if (!up) {
      problems.push({ code: 'UpstreamNotFound', message: `${where}: Upstream ${upNs}.${dest.upstream.name} not found` });
      return undefined;
    }
    return up.cluster;
  }
  if (dest.kube) {
    const svcNs = dest.kube.ref.namespace ?? ns;
    const svc = ctx.index.services.get(nsName(svcNs, dest.kube.ref.name));
    if (!svc) {
      problems.push({ code: 'ServiceNotFound', message: `${where}.kube: Service ${svcNs}.${dest.kube.ref.name} not found` });
      return undefined;
    }
    if (!svc.spec.spec.ports.some((p) => p.port === dest.kube?.port)) {
      const have = svc.spec.spec.ports.map((p) => p.port).join(', ');
      problems.push({ code: 'ServicePortNotFound', message: `${where}.kube: Service ${svcNs}.${dest.kube.ref.name} has no port ${dest.kube.port} (ports: ${have})` });
      return undefined;
    }
    // Routed through the upstream discovery made for this Service port.
    return clusterName(ctx.writeNamespace, discoveredUpstreamName(svcNs, dest.kube.ref.name, dest.kube.port));
  }
  return undefined;
}

export function discoveredUpstreamName(namespace: string, service: string, port: number): string {
  return `${namespace}-${service}-${port}`;
}

function stringMatch(value: string, regex: boolean | undefined, where: string, problems: Problem[]): StringMatchIR {
  if (regex) {
    const err = re2Error(value);
    if (err) problems.push({ code: 'InvalidRegex', message: `${where}: invalid regex ${JSON.stringify(value)}: ${err}` });
    return { regex: value };
  }
  return { exact: value };
}

function translateMatcher(m: Matcher, where: string, problems: Problem[]): MatcherIR {
  const caseSensitive = m.caseSensitive ?? true;
  let path: MatcherIR['path'];
  if (m.exact !== undefined) path = { exact: m.exact };
  else if (m.regex !== undefined) {
    const err = re2Error(m.regex);
    if (err) problems.push({ code: 'InvalidRegex', message: `${where}.regex: invalid regex ${JSON.stringify(m.regex)}: ${err}` });
    path = { regex: caseSensitive ? m.regex : `(?i)${m.regex}` };
  } else path = { prefix: m.prefix ?? '/' };
  return {
    path,
    caseSensitive,
    headers: (m.headers ?? []).map((h, j) => {
      const header: MatcherIR['headers'][number] = { name: h.name, invert: h.invertMatch ?? false };
      if (h.value !== undefined && h.value !== '') header.match = stringMatch(h.value, h.regex, `${where}.headers[${j}]`, problems);
      return header;
    }),
    queryParameters: (m.queryParameters ?? []).map((q, j) => {
      const param: MatcherIR['queryParameters'][number] = { name: q.name };
      if (q.value !== undefined && q.value !== '') param.match = stringMatch(q.value, q.regex, `${where}.queryParameters[${j}]`, problems);
      return param;
    }),
    methods: (m.methods ?? []).map((x) => x.toUpperCase()),
  };
}

export type { SourceRef, Upstream };
