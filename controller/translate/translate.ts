// Stage 1: resources -> Proxy IR + upstream IR + reports. Pure: no I/O, clock or environment.
//
// The core handles what every proxy has (Settings, Services/Endpoints/Secrets as lookups, Gateways,
// virtual services, routes and their matchers, domain conflicts); each feature in features/index.ts
// resolves its own kinds and binds its options (feature.ts).
//
// "Fail closed, keep last good": a resource that fails is reported; if an earlier version of it was
// accepted, that version is translated instead, so a bad edit never takes down what was serving.
import { isValidatedKind, type KindName } from '../api/kinds.js';
import type { Gateway, LegateResource, VirtualService } from '../api/resources.js';
import type { GatewaySpec, HttpGateway, InvalidConfigPolicy } from '../api/schemas.js';
import { isKind, keyOf } from '../api/resources.js';
import { resourceKey } from '../api/meta.js';
import type { Route } from '../api/routes.js';
import {
  checkRouteTable,
  flattenRoutes,
  newTrace,
  resolveRouteTables,
  traceUnchanged,
  type DelegationTrace,
  type RouteTables,
  type RouteTablesMemo,
} from './delegation/index.js';
import { expressionsMatcher } from './delegation/select.js';
import { parseDuration } from './duration.js';
import type {
  Attempt,
  BindSink,
  ExtensionResources,
  Feature,
  FeatureBinding,
  Problem,
  ResolveContext,
  Resolved,
  RouteSite,
  UpstreamLookup,
} from './feature.js';
import { features as defaultFeatures } from './features/index.js';
import type { ChainMatchIR, DownstreamTlsIR, ListenerIR, ProxyIR, RouteIR, UpstreamIR, VirtualHostIR } from './ir.js';
import { translateMatcher } from './matchers.js';
import { listenerName, nsName, sourceOf, virtualHostName } from './names.js';
import { SHARED_KINDS, prepareVirtualService, resolveShared, type SharedResources } from './prepare.js';
import { Reporter, type Report } from './reporter.js';

export const DEFAULT_PROXY_NAME = 'gateway-proxy';
export const DEFAULT_ROUTE_TIMEOUT = '15s';

/** Kinds the core reads itself; every other validated kind belongs to exactly one feature. */
export const CORE_KINDS: readonly KindName[] = [
  'Settings',
  'Service',
  'Endpoints',
  'Secret',
  'ConfigMap',
  'Gateway',
  'VirtualService',
  'RouteTable',
  ...SHARED_KINDS,
];

/** Gloo's default body for a replaced route, naming Legate's command. */
export const DEFAULT_INVALID_ROUTE_BODY =
  'Legate has invalid configuration. Administrators should run `legatectl check` to find and fix config errors.';

export interface TranslateOptions {
  /** Where generated resources (Proxy, discovered Upstreams) live; also the status key. */
  writeNamespace: string;
  /** The Gateway assumed when none exists (its options: e.g. the access log `legate controller --access-log` asks) */
  defaultGateway: { bindAddress: string; bindPort: number; options?: GatewaySpec['options'] };
  /** Port of the ssl gateway assumed when no Gateway exists and a virtual service has sslConfig. */
  defaultSslPort?: number;
  /** Settings gloo.invalidConfigPolicy: what a route to a missing or rejected destination (or, with replaceInvalidRoutes,
   * any route with a problem) answers. */
  invalidConfigPolicy?: InvalidConfigPolicy;
  /**
   * resourceKey()s of resources their schema rejected that have no accepted version to serve: a reference to one is
   * "rejected", not "not found"
   */
  invalid?: readonly string[];
  /** Settings gloo.disableKubernetesDestinations: routes may not name a Service (`kube`) directly */
  disableKubernetesDestinations?: boolean;
  /** Settings gateway.readGatewaysFromAllNamespaces; false: only Gateways in the write namespace (unset: all, Legate's default) */
  readGatewaysFromAllNamespaces?: boolean;
  /** Settings gateway.translateEmptyGateways; false: a Gateway no VirtualService selects gets no listener (unset: it does) */
  translateEmptyGateways?: boolean;
}

export interface TranslateInput {
  resources: readonly LegateResource[];
  /** Last accepted version of each resource, by keyOf(). */
  lastAccepted: ReadonlyMap<string, LegateResource>;
  options: TranslateOptions;
  /** The features to run (default: features/index.ts with default render options). */
  features?: readonly Feature[];
  /**
   * The virtual host each VirtualService last served, by keyOf(): served again when neither the
   * current nor the last accepted version translates any more (a Service it routes to is gone).
   */
  lastServed?: ReadonlyMap<string, VirtualHostIR>;
  /**
   * Reuse what an earlier run translated (its TranslateOutput.memo). `featuresKey` must be equal
   * between two runs only when `features` behave the same (the pipeline uses its render options).
   */
  reuse?: { featuresKey: string; memo: TranslateMemo | undefined };
}

/**
 * What one run translated, for the next run to reuse (incremental translation). A VirtualService's
 * virtual host depends on the VirtualService, its last accepted version and last served virtual host,
 * and on what the features resolved from every other resource. So when nothing but VirtualServices
 * changed (the same objects, in the same order, with the same last accepted versions, the same options
 * and features), each VirtualService whose own inputs are the same objects as last time gets its last
 * result back with its reports, without being translated again. Anything else is a full run. Gateways,
 * domain and SNI conflicts are decided again every run (they look at every VirtualService).
 */
export interface TranslateMemo {
  readonly context: TranslateContext;
  readonly routeTables: RouteTablesMemo;
  readonly virtualServices: ReadonlyMap<string, VirtualServiceMemo>;
  /** virtual host -> gateway and proxy name -> the same with its routes' final names */
  readonly named: ReadonlyMap<VirtualHostIR, ReadonlyMap<string, VirtualHostIR>>;
}

/** What the features' bindings are a function of. */
interface TranslateContext {
  /** the features key and the options */
  readonly key: string;
  /** every resource but the VirtualServices and RouteTables (delegation tells which it read), in order */
  readonly others: readonly LegateResource[];
  /** and the last accepted version of each */
  readonly othersAccepted: readonly (LegateResource | undefined)[];
}

interface VirtualServiceMemo {
  readonly vs: VirtualService;
  /**
   * Whether the result depends on the last accepted version and last served virtual host (only when
   * the current version failed: then they were looked at), and what they were.
   */
  readonly fellBack: boolean;
  readonly lastAccepted: LegateResource | undefined;
  readonly lastServed: VirtualHostIR | undefined;
  /** what it serves, if anything */
  readonly served: { vs: VirtualService; vh: VirtualHostIR } | undefined;
  /** what translating it reported */
  readonly reports: readonly Report[];
  /** the RouteTables it delegated to */
  readonly trace: DelegationTrace;
}

function sameContext(a: TranslateContext, b: TranslateContext): boolean {
  if (a.key !== b.key || a.others.length !== b.others.length) return false;
  for (let i = 0; i < a.others.length; i++) {
    if (a.others[i] !== b.others[i] || a.othersAccepted[i] !== b.othersAccepted[i]) return false;
  }
  return true;
}

export interface TranslateOutput {
  proxies: ProxyIR[];
  upstreams: UpstreamIR[];
  reports: Report[];
  /** The version of each resource that is now served (current or last accepted), by keyOf(). */
  accepted: Map<string, LegateResource>;
  /** Per extension role (graphql, extauth): what its service should serve. */
  extensions: ExtensionResources[];
  /** The virtual host each VirtualService serves now, by keyOf(): feed back as `lastServed`. */
  served: Map<string, VirtualHostIR>;
  /** With `reuse`: feed back as `reuse.memo` next time (unset when this run cannot be reused). */
  memo?: TranslateMemo;
}

// localeCompare without arguments is this collator's compare (ECMA-402), minus the per-call set-up
const collator = new Intl.Collator();

export function translate(input: TranslateInput): TranslateOutput {
  const reporter = new Reporter();
  const accepted = new Map<string, LegateResource>();
  const { resources, lastAccepted, options } = input;
  const features = input.features ?? defaultFeatures();

  for (const r of resources) {
    if (r.kind === 'Service' || r.kind === 'Endpoints' || r.kind === 'Secret' || r.kind === 'ConfigMap' || r.kind === 'Settings')
      accepted.set(keyOf(r), r);
  }
  let upstreams: UpstreamLookup | undefined;
  // A feature that reads VirtualServices while resolving would make its bindings depend on them.
  let readsVirtualServices = false;
  const invalid = new Set(options.invalid ?? []);
  const ctx: ResolveContext = {
    writeNamespace: options.writeNamespace,
    disableKubernetesDestinations: options.disableKubernetesDestinations ?? false,
    invalid: (kind, namespace, name) => invalid.has(resourceKey(kind, namespace, name)),
    invalidKeys: (kind) => [...invalid].filter((k) => k.startsWith(`${kind}/`)).map((k) => k.slice(kind.length + 1)),
    index: {
      services: byNsName(resources.filter(isKind('Service'))),
      endpoints: byNsName(resources.filter(isKind('Endpoints'))),
      secrets: byNsName(resources.filter(isKind('Secret'))),
      configMaps: byNsName(resources.filter(isKind('ConfigMap'))),
    },
    ofKind: (kind) => {
      if (kind === 'VirtualService') readsVirtualServices = true;
      return resources.filter(isKind(kind));
    },
    resolveEach<R extends LegateResource, T>(items: readonly R[], attempt: (r: R) => Attempt<T>): Resolved<T> {
      const results = new Map<string, T>();
      const rejected = new Set<string>();
      for (const item of items) {
        const key = nsName(item.metadata.namespace, item.metadata.name);
        const used = withFallback(item, lastAccepted, reporter, attempt);
        if (used) {
          results.set(key, used.result);
          accepted.set(keyOf(item), used.resource);
        } else {
          rejected.add(key);
        }
      }
      return { results, rejected };
    },
    reportError: (resource, code, message) => reporter.error(resource, code, message),
    upstreamOptions(upstream) {
      const out: Required<Attempt<Partial<UpstreamIR>>> = { ir: {}, problems: [], warnings: [] };
      for (const f of features) {
        const part = f.resolveUpstream?.(upstream, ctx.index);
        if (!part) continue;
        out.problems.push(...part.problems);
        out.warnings.push(...(part.warnings ?? []));
        Object.assign(out.ir, part.ir);
      }
      return out;
    },
    upstreams() {
      if (!upstreams) throw new Error('upstreams are not resolved yet: the upstreams feature must come first in features/index.ts');
      return upstreams;
    },
    publishUpstreams(lookup) {
      upstreams = lookup;
    },
  };
  const bindings = features.map((f) => f.resolve?.(ctx) ?? {});
  const shared = resolveShared(ctx);

  let context: TranslateContext | undefined;
  if (input.reuse && !readsVirtualServices) {
    const others = resources.filter((r) => r.kind !== 'VirtualService' && r.kind !== 'RouteTable');
    context = {
      key: JSON.stringify([input.reuse.featuresKey, options]),
      others,
      othersAccepted: others.map((r) => lastAccepted.get(keyOf(r))),
    };
  }
  const memo = input.reuse?.memo;
  const reusable = context !== undefined && memo !== undefined && sameContext(memo.context, context);
  const vsMemo = new Map<string, VirtualServiceMemo>();
  const policy = options.invalidConfigPolicy?.replaceInvalidRoutes ? options.invalidConfigPolicy : undefined;
  const routeFor = (route: Route, site: RouteSite, name: string, sink: BindSink) =>
    translateRoute(route, site, name, bindings, sink, policy);
  const routeTables = resolveRouteTables({
    tables: resources.filter(isKind('RouteTable')),
    lastAccepted,
    serve: (rt, attempt, r) => withFallback(rt, lastAccepted, r, attempt)?.resource,
    report: (r) => reporter.reports.push(r),
    check: (rt) => checkRouteTable(rt, routeFor),
    memo: reusable ? memo.routeTables : undefined,
  });

  const virtualHosts = new Map<string, { vs: VirtualService; vh: VirtualHostIR }>();
  for (const vs of resources.filter(isKind('VirtualService'))) {
    const key = keyOf(vs);
    const previousVs = lastAccepted.get(key);
    const previous = input.lastServed?.get(key);
    const hit = reusable ? memo.virtualServices.get(key) : undefined;
    const same = hit && hit.vs === vs && (!hit.fellBack || (hit.lastAccepted === previousVs && hit.lastServed === previous));
    if (hit && same && traceUnchanged(hit.trace, routeTables)) {
      reporter.reports.push(...hit.reports);
      if (hit.served) virtualHosts.set(key, hit.served);
      vsMemo.set(key, hit);
      continue;
    }
    const mark = reporter.reports.length;
    let served: { vs: VirtualService; vh: VirtualHostIR } | undefined;
    const trace = newTrace();
    const used = withFallback(vs, lastAccepted, reporter, (v) => translateVirtualService(v, bindings, shared, routeTables, trace, policy));
    reporter.reports.push(...trace.reports);
    if (used) {
      served = { vs: used.resource, vh: used.result };
    } else if (previous && previousVs) {
      // What it references went away: its last virtual host keeps serving (the routes to what is
      // gone fail on their own, the others keep working) until it is fixed.
      reporter.warn(sourceOf(vs), 'ServingLastAccepted', 'serving the last accepted version until this one is fixed');
      served = { vs: previousVs as VirtualService, vh: previous };
    }
    if (served) virtualHosts.set(key, served);
    if (context) {
      // withFallback returns the current version only when its first attempt succeeded
      const fellBack = used?.resource !== vs;
      const reports = reporter.reports.slice(mark);
      vsMemo.set(key, { vs, fellBack, lastAccepted: previousVs, lastServed: previous, served, reports, trace });
    }
  }

  let gateways = resources.filter(isKind('Gateway'));
  if (options.readGatewaysFromAllNamespaces === false) {
    for (const gw of gateways.filter((g) => g.metadata.namespace !== options.writeNamespace)) {
      const why = `not read: Settings gateway.readGatewaysFromAllNamespaces is false and this Gateway is not in ${options.writeNamespace}`;
      reporter.warn(sourceOf(gw), 'NotServed', why);
    }
    gateways = gateways.filter((g) => g.metadata.namespace === options.writeNamespace);
  }
  if (gateways.length === 0) {
    gateways = [defaultGateway(options, false)];
    if ([...virtualHosts.values()].some(({ vs }) => vs.spec.sslConfig)) gateways.push(defaultGateway(options, true));
  }
  // a Gateway whose options fail keeps serving its last accepted version (or serves nothing)
  const gatewayChains = new Map<Gateway, BoundChain[]>();
  gateways = gateways.flatMap((gw) => {
    const bound = bindGateway(gw, bindings);
    if (bound.problems.length === 0) {
      for (const w of bound.warnings) reporter.warn(sourceOf(gw), w.code, w.message);
      gatewayChains.set(gw, bound.chains);
      return [gw];
    }
    for (const p of bound.problems) reporter.error(sourceOf(gw), p.code, p.message);
    const previous = lastAccepted.get(keyOf(gw));
    if (previous?.kind !== 'Gateway') return [];
    const last = bindGateway(previous, bindings);
    if (last.problems.length > 0) return [];
    reporter.warn(sourceOf(gw), 'ServingLastAccepted', 'serving the last accepted version until this one is fixed');
    gatewayChains.set(previous, last.chains);
    return [previous];
  });
  for (const gw of gateways) accepted.set(keyOf(gw), gw);

  const proxies = new Map<string, ProxyIR>();
  const conflicted = new Set<string>();
  const named = new Map<VirtualHostIR, Map<string, VirtualHostIR>>();
  const selectedSomewhere = new Set<VirtualService>();
  for (const gw of gateways) {
    for (const { chain, spec, ir: bound } of gatewayChains.get(gw) ?? []) {
      const ssl = spec.tcpGateway ? false : (spec.ssl ?? false);
      let kept: { vs: VirtualService; vh: VirtualHostIR }[] = [];
      if (!spec.tcpGateway) {
        const http = spec.httpGateway ?? {};
        const ns = chain?.source?.namespace ?? gw.metadata.namespace;
        const selected = [...virtualHosts.values()].filter(({ vs }) => httpGatewaySelects(http, ssl, ns, vs));
        for (const { vs } of selected) selectedSomewhere.add(vs);
        if (selected.length === 0 && options.translateEmptyGateways === false && !chain) {
          const why = 'no listener: no VirtualService selects this Gateway and Settings gateway.translateEmptyGateways is false';
          reporter.warn(sourceOf(gw), 'NotServed', why);
          continue;
        }
        kept = resolveDomainConflicts(selected, lastAccepted, reporter, conflicted);
        if (ssl) kept = resolveSniConflicts(kept, reporter, conflicted);
      }
      const listener: ListenerIR = {
        name: listenerName(gw.spec.bindAddress ?? '::', gw.spec.bindPort),
        bindAddress: gw.spec.bindAddress ?? '::',
        bindPort: gw.spec.bindPort,
        ssl,
        source: sourceOf(gw),
        virtualHosts: [],
        ...bound,
        ...(chain ? { chain } : {}),
      };
      for (const proxyName of gw.spec.proxyNames ?? [DEFAULT_PROXY_NAME]) {
        let proxy = proxies.get(proxyName);
        if (!proxy) {
          proxy = { name: proxyName, namespace: options.writeNamespace, listeners: [] };
          proxies.set(proxyName, proxy);
        }
        const at = `${gw.metadata.name}\u0000${proxyName}`;
        const vhosts = kept.map(({ vh }) => {
          let one = reusable ? memo.named.get(vh)?.get(at) : undefined;
          one ??= withRouteNames(vh, gw.metadata.name, proxyName, bindings);
          if (context) {
            let byAt = named.get(vh);
            if (!byAt) named.set(vh, (byAt = new Map()));
            byAt.set(at, one);
          }
          return one;
        });
        const invalid = invalidRouteResponse(options.invalidConfigPolicy, vhosts);
        proxy.listeners.push({ ...listener, virtualHosts: vhosts.sort((a, b) => collator.compare(a.name, b.name)), ...invalid });
      }
    }
  }

  const userGateways = resources.some(isKind('Gateway'));
  for (const { vs } of virtualHosts.values()) {
    if (selectedSomewhere.has(vs)) continue;
    const which = vs.spec.sslConfig ? 'no Gateway with ssl: true selects it' : 'no Gateway selects it';
    const why = userGateways ? ' (with Gateway resources, Legate adds no default gateway on :8080 / :8443)' : '';
    reporter.warn(sourceOf(vs), 'NotServed', `not served: ${which}${why}`);
  }
  for (const [key, { vs }] of virtualHosts) if (!conflicted.has(key)) accepted.set(key, vs);
  const reports = withoutRepeats(reporter.reports);
  const moved = acceptRouteTables(routeTables, reports, accepted);

  for (const r of resources) {
    if (!isValidatedKind(r.kind)) {
      reporter.warn(sourceOf(r), 'NotSupported', `Legate stores ${r.kind} resources but does not act on them yet`);
    }
  }

  return {
    proxies: [...proxies.values()].sort((a, b) => a.name.localeCompare(b.name)),
    upstreams: [...(upstreams?.resolved.values() ?? [])].sort((a, b) => a.cluster.localeCompare(b.cluster)),
    reports,
    accepted,
    extensions: bindings.flatMap((b) => b.extensionResources?.() ?? []),
    served: new Map([...virtualHosts].filter(([key]) => !conflicted.has(key)).map(([key, { vh }]) => [key, vh])),
    ...(context ? { memo: { context, routeTables: { ...routeTables.memo, accepted, moved }, virtualServices: vsMemo, named } } : {}),
  };
}

/** A RouteTable reached from several VirtualServices reports the same problem once. */
function withoutRepeats(reports: Report[]): Report[] {
  const seen = new Set<string>();
  return reports.filter((r) => {
    if (r.resource.kind !== 'RouteTable') return true;
    const id = JSON.stringify([r.resource.namespace, r.resource.name, r.severity, r.code, r.message]);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/**
 * A RouteTable without errors is accepted as it serves; one with errors keeps its last accepted version. Returns
 * the tables (nsNames) whose accepted version is not the last accepted one read.
 */
function acceptRouteTables(tables: RouteTables, reports: readonly Report[], accepted: Map<string, LegateResource>): string[] {
  const failed = new Set(
    reports
      .filter((r) => r.resource.kind === 'RouteTable' && r.severity === 'error')
      .map((r) => keyOf({ kind: 'RouteTable', metadata: r.resource })),
  );
  const moved: string[] = [];
  for (const rt of tables.index.ordered) {
    const { key: name, resource: key } = tables.keysOf(rt);
    const last = tables.lastAccepted.get(key);
    const served = tables.served.get(name);
    const now = !failed.has(key) && served ? served : last;
    if (now) accepted.set(key, now);
    if (now !== last) moved.push(name);
  }
  return moved;
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
  attempt: (r: R) => Attempt<T>,
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
  const spec: GatewaySpec = ssl
    ? { bindAddress: options.defaultGateway.bindAddress, bindPort: options.defaultSslPort ?? 8443, ssl: true, httpGateway: {} }
    : { bindAddress: options.defaultGateway.bindAddress, bindPort: options.defaultGateway.bindPort, httpGateway: {} };
  if (options.defaultGateway.options) spec.options = options.defaultGateway.options;
  const raw = { apiVersion: 'gateway.legate.dev/v1', kind: 'Gateway', metadata, spec, body: {}, origin: '(default)' };
  return { kind: 'Gateway', apiVersion: raw.apiVersion, metadata, spec, raw };
}

/** One filter chain group of a Gateway's listener: its spec as a Gateway of its own, and the listener fields bound from it. */
interface BoundChain {
  chain?: ChainMatchIR;
  spec: GatewaySpec;
  ir: Partial<ListenerIR>;
}

/**
 * A Gateway's chains (the Gateway itself, or each matched gateway of a hybridGateway), each through every feature's
 * bindGateway: the listener fields they set, and what they found.
 */
function bindGateway(gw: Gateway, bindings: readonly FeatureBinding[]): BindSink & { chains: BoundChain[] } {
  const sink: BindSink = { problems: [], warnings: [] };
  const { httpGateway: _http, tcpGateway: _tcp, hybridGateway, ...common } = gw.spec;
  let units: { chain?: ChainMatchIR; where?: string; spec: GatewaySpec }[] = [{ spec: gw.spec }];
  if (hybridGateway) {
    units = [];
    for (const b of bindings) {
      const chains = b.gatewayChains?.(gw, sink);
      if (!chains) continue;
      units = chains.map((c) => ({
        chain: c.match,
        where: c.where,
        spec: {
          ...common,
          ssl: c.ssl,
          ...(c.httpGateway ? { httpGateway: c.httpGateway } : {}),
          ...(c.tcpGateway ? { tcpGateway: c.tcpGateway } : {}),
        },
      }));
      break;
    }
  }
  if ((gw.spec.tcpGateway || hybridGateway) && gw.spec.ssl) {
    const tls = gw.spec.tcpGateway ? "each tcpHost's sslConfig" : "each matcher's sslConfig";
    sink.warnings.push({
      code: 'InvalidSpec',
      message: `spec.ssl: ignored on a ${gw.spec.tcpGateway ? 'tcpGateway' : 'hybridGateway'}: TLS is ${tls}`,
    });
  }
  const chains = units.map((unit) => {
    const one: BindSink = { problems: [], warnings: [] };
    const ir: ListenerIR = { name: '', bindAddress: '', bindPort: 0, ssl: unit.spec.ssl ?? false, source: sourceOf(gw), virtualHosts: [] };
    const expressions = unit.spec.httpGateway?.virtualServiceExpressions?.expressions;
    if (expressions) {
      const matcher = expressionsMatcher(expressions, 'the virtual service selector expression is invalid');
      if (typeof matcher === 'string') {
        one.problems.push({ code: 'InvalidSpec', message: `spec.httpGateway.virtualServiceExpressions.${matcher}` });
      }
    }
    // references in a MatchableHttpGateway / MatchableTcpGateway resolve in its namespace
    const ns = unit.chain?.source?.namespace ?? gw.metadata.namespace;
    for (const b of bindings) b.bindGateway?.({ ...gw, metadata: { ...gw.metadata, namespace: ns }, spec: unit.spec }, ir, one);
    // a matched gateway's fields are found where it is written
    const at = (p: Problem): Problem => {
      if (!unit.where) return p;
      const message = p.message.replace(/^spec\.(httpGateway|tcpGateway)\b/, `${unit.where}.$1`);
      return { ...p, message };
    };
    sink.problems.push(...one.problems.map(at));
    sink.warnings.push(...one.warnings.map(at));
    // the core's own fields are set where the listener is built; the rest is what the features bound
    const { name: _name, bindAddress: _address, bindPort: _port, ssl: _ssl, source: _source, virtualHosts: _vhosts, ...bound } = ir;
    return { ...(unit.chain ? { chain: unit.chain } : {}), spec: unit.spec, ir: bound };
  });
  // a Gateway-wide field (options) is bound once per chain: report what it found once
  const once = (list: Problem[]): Problem[] => [...new Map(list.map((p) => [`${p.code}\u0000${p.message}`, p])).values()];
  return { problems: once(sink.problems), warnings: once(sink.warnings), chains };
}

/**
 * Whether an HTTP gateway serves a VirtualService, as Gloo decides: only the ones with sslConfig on an ssl gateway
 * (and only the others elsewhere); then, in Gloo's priority, virtualServiceExpressions, virtualServiceSelector (both
 * within virtualServiceNamespaces), virtualServices refs, or every VirtualService of virtualServiceNamespaces.
 */
function httpGatewaySelects(http: HttpGateway, ssl: boolean, gatewayNs: string, vs: VirtualService): boolean {
  if (ssl !== (vs.spec.sslConfig !== undefined)) return false;
  const namespaces = http.virtualServiceNamespaces ?? [];
  const inNamespaces = !namespaces.length || namespaces.includes('*') || namespaces.includes(vs.metadata.namespace);
  const labels = vs.metadata.labels ?? {};
  if (http.virtualServiceExpressions) {
    const matcher = expressionsMatcher(http.virtualServiceExpressions.expressions ?? [], '');
    return typeof matcher !== 'string' && matcher(labels) && inNamespaces;
  }
  if (http.virtualServiceSelector) {
    return Object.entries(http.virtualServiceSelector).every(([k, v]) => labels[k] === v) && inNamespaces;
  }
  if (http.virtualServices?.length) {
    return http.virtualServices.some((ref) => ref.name === vs.metadata.name && (ref.namespace ?? gatewayNs) === vs.metadata.namespace);
  }
  return inNamespaces;
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
        `domain conflict: the [${domain}] domain is present in other virtual services that belong to the same Gateway as this one: ` +
          `[${others.join(', ')}]`,
      );
      losers.add(keyOf(vs));
      conflicted.add(keyOf(vs));
    }
  }
  return selected.filter(({ vs }) => !losers.has(keyOf(vs)));
}

/** What differs between two TLS contexts (sniDomains aside), for the conflict message. */
function tlsDifference(a: DownstreamTlsIR, b: DownstreamTlsIR): string | undefined {
  const { certChain: ac, privateKey: ak, sniDomains: _a, ...aRest } = a;
  const { certChain: bc, privateKey: bk, sniDomains: _b, ...bRest } = b;
  if (JSON.stringify([ac, ak]) !== JSON.stringify([bc, bk])) return 'a different certificate';
  const keys = [...new Set([...Object.keys(aRest), ...Object.keys(bRest)])].sort();
  const differ = keys.filter((k) => JSON.stringify(aRest[k as keyof typeof aRest]) !== JSON.stringify(bRest[k as keyof typeof bRest]));
  return differ.length ? `different TLS settings (${differ.join(', ')})` : undefined;
}

/** On an ssl gateway, one SNI set can only have one TLS context (Envoy needs unique filter chains). */
function resolveSniConflicts(
  selected: { vs: VirtualService; vh: VirtualHostIR }[],
  reporter: Reporter,
  conflicted: Set<string>,
): { vs: VirtualService; vh: VirtualHostIR }[] {
  const owners = new Map<string, { vs: VirtualService; tls: DownstreamTlsIR }>();
  const kept: { vs: VirtualService; vh: VirtualHostIR }[] = [];
  const ordered = [...selected].sort((a, b) => keyOf(a.vs).localeCompare(keyOf(b.vs)));
  for (const entry of ordered) {
    const tls = entry.vh.tls;
    if (!tls) continue;
    const sni = JSON.stringify([...new Set(tls.sniDomains)].sort());
    const owner = owners.get(sni);
    const difference = owner && tlsDifference(owner.tls, tls);
    if (owner && difference) {
      const names = tls.sniDomains.length ? tls.sniDomains.join(', ') : '(no sniDomains: the default certificate)';
      reporter.error(
        sourceOf(entry.vs),
        'DomainConflict',
        `sslConfig conflict: SNI [${names}] already has ${difference} from virtual service ` +
          `${owner.vs.metadata.namespace}.${owner.vs.metadata.name}`,
      );
      conflicted.add(keyOf(entry.vs));
      continue;
    }
    if (!owner) owners.set(sni, { vs: entry.vs, tls });
    kept.push(entry);
  }
  return kept;
}

function withRouteNames(vh: VirtualHostIR, gateway: string, proxy: string, bindings: readonly FeatureBinding[]): VirtualHostIR {
  return {
    ...vh,
    routes: vh.routes.map((r) => {
      let named: RouteIR = { ...r, name: `vs:${gateway}_${proxy}_${vh.source.namespace}_${vh.source.name}_route:${r.name}` };
      for (const b of bindings) if (b.routeNamed) named = b.routeNamed(named);
      return named;
    }),
  };
}

/** With replaceInvalidRoutes, a listener that has a route to a missing destination answers for it. */
function invalidRouteResponse(policy: InvalidConfigPolicy | undefined, vhosts: readonly VirtualHostIR[]): Partial<ListenerIR> {
  if (!policy?.replaceInvalidRoutes) return {};
  const invalid = vhosts.some((vh) => vh.routes.some((r) => r.action.type === 'route' && r.action.clusters.some((c) => c.invalid)));
  if (!invalid) return {};
  return {
    invalidRouteResponse: {
      status: policy.invalidRouteResponseCode ?? 404,
      body: policy.invalidRouteResponseBody ?? DEFAULT_INVALID_ROUTE_BODY,
    },
  };
}

function translateVirtualService(
  original: VirtualService,
  bindings: readonly FeatureBinding[],
  shared: SharedResources,
  routeTables: RouteTables,
  trace: DelegationTrace,
  policy: InvalidConfigPolicy | undefined,
): Attempt<VirtualHostIR> {
  const prepared = prepareVirtualService(original, shared);
  const vs = prepared.vs;
  const sink: BindSink = { problems: [], warnings: [] };
  const name = virtualHostName(vs.metadata.namespace, vs.metadata.name);
  const domains = vs.spec.virtualHost.domains?.length ? [...new Set(vs.spec.virtualHost.domains)] : ['*'];
  // delegateActions become the routes of the RouteTables they pick (delegation/), each with its site
  const translate = (route: Route, site: RouteSite, routeName: string, s: BindSink) =>
    translateRoute(route, site, routeName, bindings, s, policy);
  const routes = flattenRoutes(vs, routeTables, sink, translate, trace, prepared.route);
  // what merging options and groups found (the virtual host's, then each route's as flattening read it) comes first
  sink.warnings.unshift(...prepared.warnings);
  const ir: VirtualHostIR = { name, domains, routes, source: sourceOf(vs) };
  for (const b of bindings) b.bindVirtualHost?.(vs, ir, sink);
  const named = (list: Problem[]): Problem[] => list.map((p) => ({ ...p, message: prepared.rename(p.message) }));
  if (sink.problems.length) return { problems: named(sink.problems), warnings: named(sink.warnings) };
  return { ir, problems: [], warnings: named(sink.warnings) };
}

/**
 * One route (as written, or flattened from a delegation): matchers, the action a feature gives it, options. With
 * `replace` (Settings gloo.invalidConfigPolicy.replaceInvalidRoutes), a route whose action or options have problems
 * answers the configured response instead and its problems are warnings, so the rest of its VirtualService serves (as
 * Gloo replaces an invalid route); matchers that cannot be translated leave nothing to match, and stay problems.
 */
function translateRoute(
  route: Route,
  site: RouteSite,
  name: string,
  bindings: readonly FeatureBinding[],
  sink: BindSink,
  replace?: InvalidConfigPolicy,
): RouteIR | undefined {
  const matcherProblems: Problem[] = [];
  const matchers = (route.matchers?.length ? route.matchers : [{ prefix: '/' }]).map((m, j) =>
    translateMatcher(m, `${site.where}.matchers[${j}]`, matcherProblems),
  );
  sink.problems.push(...matcherProblems);
  const own: BindSink = { problems: [], warnings: sink.warnings };
  let action: RouteIR['action'] | undefined;
  for (const b of bindings) {
    action = b.routeAction?.(route, site, own);
    if (action) break;
  }
  let ir: RouteIR | undefined;
  if (action) {
    ir = { name, matchers, action, timeout: parseDuration(route.options?.timeout ?? DEFAULT_ROUTE_TIMEOUT) };
    for (const b of bindings) b.bindRoute?.(route, ir, site, own);
  }
  if (!own.problems.length || !replace || matcherProblems.length) {
    sink.problems.push(...own.problems);
    return ir;
  }
  const status = replace.invalidRouteResponseCode ?? 404;
  const why = `the route answers ${status} instead (Settings gloo.invalidConfigPolicy.replaceInvalidRoutes)`;
  for (const p of own.problems) sink.warnings.push({ code: p.code, message: `${p.message}; ${why}` });
  const body = replace.invalidRouteResponseBody ?? DEFAULT_INVALID_ROUTE_BODY;
  return { name, matchers, action: { type: 'directResponse', status, body }, timeout: parseDuration(DEFAULT_ROUTE_TIMEOUT) };
}
