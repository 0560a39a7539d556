// The seam every feature plugs into. A feature (features/<name>/) owns its resource kinds, resolves
// them in stage 1, binds its options on virtual hosts and routes, and renders its Envoy config in
// stage 2. Features never import each other; what one offers another goes through ResolveContext
// (today: the upstream lookup). The ordered list is features/index.ts; nothing registers itself.
import type { KindName } from '../api/kinds.js';
import type { Gateway, LegateResource, RouteTable, Upstream, VirtualService } from '../api/resources.js';
import type { Route } from '../api/routes.js';
import { GLOO_FILTER_PREDICATES, GLOO_FILTER_STAGES, type GlooFilterStage } from '../api/primitives.js';
import type { HttpGateway, TcpGateway } from '../api/schemas.js';
import type {
  Cluster,
  ClusterLoadAssignment,
  EnvoyRoute,
  HttpFilter,
  Listener,
  NetworkFilter,
  RouteConfiguration,
  TlsSecret,
  VirtualHost,
} from '../../envoy/typed.js';
import type { ChainMatchIR, ListenerIR, ProxyIR, RouteActionIR, RouteIR, SourceRef, UpstreamIR, VirtualHostIR } from './ir.js';
import type { ReportCode } from './reporter.js';

/** A user error found while resolving or binding; it becomes the status of the resource at fault. */
export interface Problem {
  code: ReportCode;
  message: string;
}

// ---------------------------------------------------------------------------------------------------
// Stage 1: resources -> IR

/** Resources by `<namespace>/<name>` (nsName), for kinds other features look things up in. */
export interface ResourceIndex {
  services: ReadonlyMap<string, LegateResource & { kind: 'Service' }>;
  endpoints: ReadonlyMap<string, LegateResource & { kind: 'Endpoints' }>;
  secrets: ReadonlyMap<string, LegateResource & { kind: 'Secret' }>;
  configMaps: ReadonlyMap<string, LegateResource & { kind: 'ConfigMap' }>;
}

/** What the upstreams feature offers every feature after it: resolved and rejected upstreams. */
export interface UpstreamLookup {
  /** by nsName */
  readonly resolved: ReadonlyMap<string, UpstreamIR>;
  /** nsNames of upstreams that failed (and have no last accepted version) */
  readonly rejected: ReadonlySet<string>;
}

/** The outcome of resolving every resource of a feature's kinds with "keep last good". */
export interface Resolved<T> {
  /** served result by nsName (the current version, or the last accepted one when the current fails) */
  readonly results: ReadonlyMap<string, T>;
  /** nsNames of resources that serve nothing */
  readonly rejected: ReadonlySet<string>;
}

export interface ResolveContext {
  readonly writeNamespace: string;
  /** Settings gloo.disableKubernetesDestinations */
  readonly disableKubernetesDestinations: boolean;
  /** Whether this resource is present but rejected by its schema, with no accepted version served in its place. */
  invalid(kind: KindName, namespace: string, name: string): boolean;
  /** The nsName()s of the resources of `kind` that invalid() says so of. */
  invalidKeys(kind: KindName): string[];
  readonly index: ResourceIndex;
  /** This translation's resources of `kind`. */
  ofKind<K extends KindName>(kind: K): Extract<LegateResource, { kind: K }>[];
  /**
   * Resolves each resource with `attempt`; a resource with problems is reported and, if an earlier
   * version was accepted, that version is resolved instead. Served versions are marked accepted.
   */
  resolveEach<R extends LegateResource, T>(resources: readonly R[], attempt: (r: R) => Attempt<T>): Resolved<T>;
  /** Reports an error on a resource outside resolveEach (e.g. a name clash between two kinds). */
  reportError(resource: SourceRef, code: ReportCode, message: string): void;
  /**
   * What the other features make of the Upstream fields they own (Feature.resolveUpstream), for the upstreams
   * feature to resolve with the rest of the Upstream: a problem there rejects the Upstream as its own would.
   */
  upstreamOptions(upstream: Upstream): Attempt<Partial<UpstreamIR>>;
  /** Upstreams, once the upstreams feature (first in the list) has published them. */
  upstreams(): UpstreamLookup;
  publishUpstreams(lookup: UpstreamLookup): void;
}

/** One resolution attempt: the IR when there are no problems; warnings are reported either way. */
export interface Attempt<T> {
  ir?: T;
  problems: Problem[];
  warnings?: Problem[];
}

/** Where a route sits, for messages (`virtualHost.routes[2]`) and lookups (the namespace of what holds it). */
export interface RouteSite {
  /** the VirtualService whose virtual host serves the route */
  vs: VirtualService;
  index: number;
  /** e.g. `virtualHost.routes[2]`, or `routes[0]` in the RouteTable that holds a delegated route */
  where: string;
  /** where references without a namespace resolve: the VirtualService's, or the RouteTable's that holds the route */
  namespace: string;
  /** the RouteTable holding the route when it was delegated to (its problems are reported there) */
  routeTable?: RouteTable;
  /** a RouteTable checked on its own: `vs` is a stand-in, so what needs the virtual host is checked where it is delegated to */
  alone?: true;
}

/** Problems and warnings of the virtual service being translated. */
export interface BindSink {
  problems: Problem[];
  warnings: Problem[];
}

/** One matched gateway of a hybridGateway: what selects its connections, and the HTTP or TCP gateway serving them. */
export interface GatewayChain {
  match: ChainMatchIR;
  /** where its fields are, for messages: `spec.hybridGateway.matchedGateways[0]`, `MatchableHttpGateway ns.name: spec` */
  where: string;
  httpGateway?: HttpGateway;
  tcpGateway?: TcpGateway;
  /** an HTTP gateway whose matcher has an sslConfig: it serves the VirtualServices with sslConfig */
  ssl: boolean;
}

/** An extension role's resources (e.g. the graphql service's GraphQL APIs), served over xDS. */
export interface ExtensionResources {
  role: string;
  typeUrl: string;
  resources: { name: string; resource: Record<string, unknown> }[];
}

/** What a feature resolved, and how it binds virtual services with it. Created once per translation. */
export interface FeatureBinding {
  /** The route's action, when this feature owns the field that sets it (e.g. graphqlApiRef). */
  routeAction?(route: Route, site: RouteSite, sink: BindSink): RouteActionIR | undefined;
  /** Apply route options this feature owns to a translated route. */
  bindRoute?(route: Route, ir: RouteIR, site: RouteSite, sink: BindSink): void;
  /** Apply virtual-host options this feature owns (after every route is bound). */
  bindVirtualHost?(vs: VirtualService, ir: VirtualHostIR, sink: BindSink): void;
  /**
   * Apply the Gateway fields this feature owns (`options`, `httpGateway.options`, …) to its listener; a
   * problem rejects the Gateway, whose last accepted version then serves.
   */
  bindGateway?(gw: Gateway, ir: ListenerIR, sink: BindSink): void;
  /**
   * A hybridGateway's matched gateways (inline, or the MatchableHttpGateways / MatchableTcpGateways it selects), each
   * bound and served as a Gateway of its own on the Gateway's listener; undefined when this feature does not expand it.
   */
  gatewayChains?(gw: Gateway, sink: BindSink): GatewayChain[] | undefined;
  /** A route got its final per-proxy name; adjust what refers to it. Returns the route to serve. */
  routeNamed?(route: RouteIR): RouteIR;
  /** Resources for an extension service's role (served even when empty, so the service knows). */
  extensionResources?(): ExtensionResources[];
}

// ---------------------------------------------------------------------------------------------------
// Stage 2: IR -> xDS

/**
 * Named HTTP filter stages (as Gloo's staged filters): a filter says where it belongs relative to a
 * well-known stage, so the chain has a stable order whatever the feature order.
 */
export const FilterStage = {
  /** fault injection, CORS */
  Fault: 100,
  /** cheap checks that reject early */
  Early: 200,
  /** authentication (ext_authz, JWT) */
  AuthN: 300,
  /** authorization */
  AuthZ: 400,
  /** rate limiting */
  RateLimit: 500,
  /** request processing that may answer itself (ext_proc GraphQL) */
  Processing: 600,
  /** always last */
  Route: 1000,
} as const;
export type WellKnownStage = (typeof FilterStage)[keyof typeof FilterStage];

/** A position in the chain: a stage and a side of it. Filters at one position keep feature order. */
export interface FilterPosition {
  stage: WellKnownStage;
  /** -1 before the stage, 0 during it, 1 after it */
  side: -1 | 0 | 1;
}

/** A position by name, as the IR keeps it. */
export interface NamedFilterPosition {
  stage: keyof typeof FilterStage;
  side: 'before' | 'during' | 'after';
}

/** Gloo's stages on Legate's: Gloo's CORS runs in Legate's Fault stage, its WAF in Early, Accepted in Processing. */
const GLOO_STAGE_ON_LEGATE: Record<(typeof GLOO_FILTER_STAGES)[number], keyof typeof FilterStage> = {
  FaultStage: 'Fault',
  CorsStage: 'Fault',
  WafStage: 'Early',
  AuthNStage: 'AuthN',
  AuthZStage: 'AuthZ',
  RateLimitStage: 'RateLimit',
  AcceptedStage: 'Processing',
  OutAuthStage: 'Route',
  RouteStage: 'Route',
};

/**
 * Where a filter with Gloo's FilterStage goes in Legate's chain. Nothing goes after the router: Gloo's out-auth and
 * route stages run just before it.
 */
export function glooFilterPosition(stage: GlooFilterStage): NamedFilterPosition {
  const name = enumName(GLOO_FILTER_STAGES, stage.stage) ?? 'FaultStage';
  const predicate = enumName(GLOO_FILTER_PREDICATES, stage.predicate) ?? 'During';
  const side = predicate === 'Before' ? 'before' : predicate === 'After' ? 'after' : 'during';
  if (name === 'OutAuthStage') return { stage: 'Route', side: 'before' };
  if (name === 'RouteStage') return { stage: 'Route', side: side === 'before' ? 'before' : 'during' };
  return { stage: GLOO_STAGE_ON_LEGATE[name], side };
}

/** A named position as the chain orders it. */
export function filterPosition(p: NamedFilterPosition): FilterPosition {
  return { stage: FilterStage[p.stage], side: p.side === 'before' ? -1 : p.side === 'after' ? 1 : 0 };
}

/** A protoEnum value (its name or its number) as its name. */
export function enumName<const N extends readonly string[]>(names: N, v: N[number] | number | undefined): N[number] | undefined {
  return typeof v === 'number' ? names[v] : v;
}

export const before = (stage: WellKnownStage): FilterPosition => ({ stage, side: -1 });
export const during = (stage: WellKnownStage): FilterPosition => ({ stage, side: 0 });
export const after = (stage: WellKnownStage): FilterPosition => ({ stage, side: 1 });

/** Orders positions: by stage, then before < during < after. */
export function comparePositions(a: FilterPosition, b: FilterPosition): number {
  return a.stage - b.stage || a.side - b.side;
}

export interface StagedHttpFilter {
  position: FilterPosition;
  filter: HttpFilter;
}

/** Stage-2 hooks. Each receives the IR and the Envoy object rendered so far, and fills in its part. */
export interface RenderPlugin {
  /** HTTP filters this plugin needs on every HCM of the proxy (usually disabled, enabled per route). */
  httpFilters?(proxy: ProxyIR, listener: ListenerIR): StagedHttpFilter[];
  /** Fill in or adjust an Envoy listener rendered from `ir`; `filters` is its filter chain (the HCM). */
  patchListener?(ir: ListenerIR, listener: Listener, filters: NetworkFilter[]): void;
  /** Fill in or adjust the Envoy RouteConfiguration of listener `ir`. */
  patchRouteConfig?(ir: ListenerIR, config: RouteConfiguration): void;
  /** Fill in or adjust an Envoy virtual host rendered from `ir`. */
  patchVirtualHost?(ir: VirtualHostIR, vhost: VirtualHost, proxy: ProxyIR): void;
  /**
   * What patchVirtualHost reads from `proxy` (JSON-able): an Envoy virtual host rendered earlier from the
   * same IR is reused only while this is unchanged. A plugin with patchVirtualHost and without this
   * turns reuse off (renderProxyReusing).
   */
  proxyContext?(proxy: ProxyIR): unknown;
  /** Fill in or adjust an Envoy route rendered from `ir` (in virtual host `vh`). */
  patchRoute?(ir: RouteIR, route: EnvoyRoute, vh: VirtualHostIR): void;
  /** The routes that take the place of `route` (patched and matched already), e.g. a narrower sibling
   * in front of it; undefined keeps it as it is. */
  expandRoute?(ir: RouteIR, route: EnvoyRoute): EnvoyRoute[] | undefined;
  /** Fill in or adjust an Envoy cluster rendered from `ir`. */
  patchCluster?(ir: UpstreamIR, cluster: Cluster): void;
  /** The ClusterLoadAssignment of an EDS upstream. */
  loadAssignment?(ir: UpstreamIR): ClusterLoadAssignment | undefined;
  /** Fill in or adjust the endpoints of an upstream (EDS, or a STRICT_DNS cluster's load_assignment), after loadAssignment. */
  patchLoadAssignment?(ir: UpstreamIR, assignment: ClusterLoadAssignment): void;
  /** Extra clusters (e.g. for extension services). */
  extraClusters?(proxy: ProxyIR, upstreams: readonly UpstreamIR[]): Cluster[];
  /** Extra listeners besides the proxy's own (e.g. internal listeners an upstream's cluster connects through). */
  extraListeners?(proxy: ProxyIR, upstreams: readonly UpstreamIR[]): Listener[];
  /** SDS secrets (TLS certificates referenced by name from listeners, or from clusters: the extensions' mutual TLS). */
  secrets?(proxy: ProxyIR): TlsSecret[];
}

export interface Feature {
  readonly name: string;
  /** The kinds this feature resolves; every validated kind is the core's or exactly one feature's. */
  readonly kinds: readonly KindName[];
  /** Stage 1 for the Upstream fields this feature owns (collected by ResolveContext.upstreamOptions); `index` for its Secrets. */
  resolveUpstream?(upstream: Upstream, index: ResourceIndex): Attempt<Partial<UpstreamIR>>;
  /** Stage 1: resolve this feature's resources and return how it binds virtual services. */
  resolve?(ctx: ResolveContext): FeatureBinding;
  /** Stage 2. */
  readonly render?: RenderPlugin;
}
