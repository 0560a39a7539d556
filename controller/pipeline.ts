// The whole pure path from raw resources to statuses and per-proxy xDS snapshots:
// validate -> discover -> translate (stage 1) -> render (stage 2). No I/O; the controller and the
// golden tests call the same function.
import { canonicalApiVersion } from './api/kinds.js';
import { LEGATE_NAMESPACE, REPORTER, resourceKey, type RawResource, type ResourceStatus } from './api/meta.js';
import {
  isKind,
  keyOf,
  validateResource,
  type LegateResource,
  type Service,
  type Upstream,
  type ValidationResult,
} from './api/resources.js';
import { discoverUpstreams } from './discovery/kube.js';
import type { ProxyIR, SourceRef, VirtualHostIR } from './translate/ir.js';
import { clusterName, envoyNames, sourceOf } from './translate/names.js';
import type { ExtauthServerSettings, RatelimitServer, SettingsSpec, WasmChecks } from './api/schemas.js';
import type { SslParameters } from './api/primitives.js';
import type { ObservabilityOptions } from './api/observability.js';
import {
  DEFAULT_RATELIMIT,
  DEFAULT_RENDER_OPTIONS,
  extProcSettingsFilter,
  extauthHttp,
  features,
  SETTINGS_EXTAUTH_SERVER,
  type RenderOptions,
} from './translate/features/index.js';
import { parseDuration } from './translate/duration.js';
import { proxyRole } from './translate/names.js';
import { renderPlugins, renderProxyReusing, type RenderMemo } from './translate/render.js';
import type { Problem } from './translate/feature.js';
import type { Report } from './translate/reporter.js';
import { translate, type TranslateMemo, type TranslateOptions } from './translate/translate.js';
import type { XdsResource, XdsSnapshot } from './xds/types.js';
import { TypeUrls } from '../envoy/protos.js';
import { RUNTIME_LAYER } from './bootstrap/bootstrap.js';

export interface PipelineOptions {
  /** Used when no Settings resource names one. */
  writeNamespace?: string;
  /**
   * The write namespace the running proxies were started with (their node ids name it): kept when a Settings
   * change names another, which then waits for a restart (a warning on the Settings says so).
   */
  runningWriteNamespace?: string;
  defaultGateway?: TranslateOptions['defaultGateway'];
  /** Port of the default ssl gateway (used when no Gateway exists and a virtual service has sslConfig). */
  defaultSslPort?: number;
  /** Where Envoy reaches the extension services. */
  render?: RenderOptions;
}

export interface PipelineInput {
  resources: readonly RawResource[];
  lastAccepted: ReadonlyMap<string, LegateResource>;
  /** The virtual hosts served last time (PipelineOutput.served), kept when a dependency disappears. */
  lastServed?: ReadonlyMap<string, VirtualHostIR>;
  options?: PipelineOptions;
  /**
   * The previous run's memo (PipelineOutput.memo): what did not change since is not validated,
   * discovered, translated or rendered again. The output is the same as without it.
   */
  memo?: PipelineMemo;
  /** statuses only (the validating webhook): no Envoy config is rendered, `xds` and `envoyNames` stay empty */
  statusesOnly?: boolean;
}

/**
 * What a run computed, by the identity of its inputs, for the next run to reuse. Sources hand over
 * the very same RawResource object for a resource that did not change (the file source per YAML
 * document, the Kubernetes source per object version), so "unchanged" is an identity check: validation
 * is memoised per RawResource (the same validated object comes back, so later stages see identity
 * too), discovery per list of Services, stage 1 per VirtualService (TranslateMemo: only while nothing
 * else changed) and stage 2 per virtual host (RenderMemo). Plain data, no clock: the pipeline stays a
 * pure function of its input.
 */
export interface PipelineMemo {
  readonly validated: ReadonlyMap<RawResource, ValidationResult>;
  readonly discovered?: {
    services: readonly Service[];
    writeNamespace: string;
    udsKey: string;
    upstreams: readonly Upstream[];
    problems: readonly { upstream: Upstream; message: string }[];
  };
  readonly sslDefaults?: SslDefaultsMemo;
  readonly translate?: TranslateMemo;
  /** by node role */
  readonly render: ReadonlyMap<string, RenderMemo>;
}

export interface ListedResource {
  resource: RawResource;
  status: ResourceStatus;
}

export interface PipelineOutput {
  writeNamespace: string;
  /** Settings devMode: the controller serves the dev-mode endpoint */
  devMode: boolean;
  /** Settings observabilityOptions (the config status metrics; dashboards are `legate observability`'s) */
  observability?: ObservabilityOptions;
  /** Every resource (user's, discovered, generated Proxies) with its status, by key. */
  listed: Map<string, ListedResource>;
  proxies: ProxyIR[];
  /** Node role -> snapshot. */
  xds: Map<string, XdsSnapshot>;
  /** Feed back as `lastAccepted` next time. */
  accepted: Map<string, LegateResource>;
  reports: Report[];
  /** Every Envoy resource name rendered, with the resource it came from (to attribute NACKs). */
  envoyNames: Map<string, SourceRef>;
  /** Feed back as `lastServed` next time. */
  served: Map<string, VirtualHostIR>;
  /** Feed back as `memo` next time. */
  memo: PipelineMemo;
}

export function runPipeline(input: PipelineInput): PipelineOutput {
  const out = runOnce(input);
  // A Settings is applied whole or not at all: one that translation rejects (a problem only translation finds, e.g. an
  // invalid regex of extProc) must not have its other fields in force. The run is made again with the last accepted
  // version in its place (or none: the defaults), and the Settings keeps its Rejected status, saying which serves.
  const chosen = input.resources
    .filter((r) => r.kind === 'Settings')
    .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  if (!chosen) return out;
  const key = resourceKey('Settings', chosen.metadata.namespace, chosen.metadata.name);
  const listed = out.listed.get(key);
  const schemaOk = (input.memo?.validated.get(chosen) ?? out.memo.validated.get(chosen))?.ok;
  if (listed?.status.state !== 'Rejected' || !schemaOk) return out;
  const previous = input.lastAccepted.get(key);
  const others = input.resources.filter((r) => r !== chosen);
  const again = runOnce({ ...input, resources: previous ? [...others, previous.raw] : others, memo: out.memo }, previous ? undefined : key);
  const serving = previous ? ' (serving the last accepted version)' : " (Legate's default Settings serve until it is fixed)";
  const reason = (listed.status.reason ?? 'Rejected').replace(/ \(serving the last accepted version\)$/, '') + serving;
  again.listed.set(key, { resource: chosen, status: { state: 'Rejected', reason, reportedBy: REPORTER } });
  // the reports of the Settings as written stay what users see (legatectl, the webhook)
  again.reports.push(
    ...out.reports.filter((r) => r.resource.kind === 'Settings' && resourceKey('Settings', r.resource.namespace, r.resource.name) === key),
  );
  return again;
}

const ACCEPTED: ResourceStatus = Object.freeze({ state: 'Accepted', reportedBy: REPORTER });

/** `rejectedSettings`: the key of a Settings left out because translation rejects it (what names it says "rejected"). */
function runOnce(input: PipelineInput, rejectedSettings?: string): PipelineOutput {
  const rejectedBySchema = new Map<string, string>();
  const typed: LegateResource[] = [];
  const validated = new Map<RawResource, ValidationResult>();
  for (const raw of input.resources) {
    const result = input.memo?.validated.get(raw) ?? validateResource(raw);
    validated.set(raw, result);
    if (result.ok) {
      typed.push(result.resource);
      continue;
    }
    const key = resourceKey(raw.kind, raw.metadata.namespace, raw.metadata.name);
    rejectedBySchema.set(key, result.reason);
    // A bad edit of a resource that was accepted before keeps the accepted version in service.
    const previous = input.lastAccepted.get(key);
    if (previous) typed.push(previous);
  }

  const invalidKeys = [...rejectedBySchema.keys(), ...(rejectedSettings ? [rejectedSettings] : [])]
    .filter((key) => !input.lastAccepted.has(key))
    .sort();
  const settings = typed
    .filter(isKind('Settings'))
    .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  const wantedNamespace =
    settings?.spec.writeNamespace ?? settings?.spec.discoveryNamespace ?? input.options?.writeNamespace ?? LEGATE_NAMESPACE;
  const writeNamespace = input.options?.runningWriteNamespace ?? wantedNamespace;

  const services = typed.filter(isKind('Service'));
  const before = input.memo?.discovered;
  const globalAnnotations = settings?.spec.upstreamOptions?.globalAnnotations;
  const uds = { ...settings?.spec.discovery?.udsOptions, ...(globalAnnotations ? { globalAnnotations } : {}) };
  const udsKey = JSON.stringify(uds);
  const discovery =
    before && before.writeNamespace === writeNamespace && before.udsKey === udsKey && sameItems(before.services, services)
      ? before
      : { services, writeNamespace, udsKey, ...discoverUpstreams(services, writeNamespace, uds) };
  // only discovered upstreams are looked up in it (there are none without Services)
  const userKeys = discovery.upstreams.length || discovery.problems.length ? new Set(typed.map(keyOf)) : new Set<string>();
  const discovered = discovery.upstreams.filter((u) => !userKeys.has(keyOf(u)));
  const sslDefaults = settings?.spec.upstreamOptions?.sslParameters;
  const withDefaults = withSslParameters([...typed, ...discovered], sslDefaults, input.memo?.sslDefaults);
  const all = withDefaults.resources;

  const upstreamKeys = new Set(all.filter(isKind('Upstream')).map(keyOf));
  const { render: withRatelimit, warning: ratelimitWarning } = withRateLimitServer(
    withSettings(input.options?.render ?? DEFAULT_RENDER_OPTIONS, settings?.spec.wasmChecks),
    settings?.spec.ratelimitServer,
    settings?.metadata.namespace ?? LEGATE_NAMESPACE,
    (ns, name) => upstreamKeys.has(resourceKey('Upstream', ns, name)),
  );
  const named = withNamedExtauth(withRatelimit, settings?.spec.namedExtauth, settings?.metadata.namespace ?? LEGATE_NAMESPACE, (ns, name) =>
    upstreamKeys.has(resourceKey('Upstream', ns, name)),
  );
  const extProc = settings?.spec.extProc
    ? extProcSettingsFilter(settings.spec.extProc, settings.metadata.namespace, (ns, name) => {
        const u = all.find((r) => r.kind === 'Upstream' && r.metadata.namespace === ns && r.metadata.name === name);
        return u?.kind === 'Upstream' ? { http2: u.spec.useHttp2 ?? false } : 'missing';
      })
    : undefined;
  const withExtProc: RenderOptions = extProc?.filter ? { ...named.render, extProc: extProc.filter } : named.render;
  const breakers = settings?.spec.gloo?.circuitBreakers;
  const withBreakers: RenderOptions = breakers ? { ...withExtProc, circuitBreakers: breakers } : withExtProc;
  let withGrpcWeb: RenderOptions = settings?.spec.gloo?.disableGrpcWeb ? { ...withBreakers, disableGrpcWeb: true } : withBreakers;
  const extauthDefaults = settings?.spec.extauth;
  if (extauthDefaults) {
    const ref = extauthDefaults.extauthzServerRef;
    const filled = ref
      ? { ...extauthDefaults, extauthzServerRef: { ...ref, namespace: ref.namespace ?? settings.metadata.namespace } }
      : extauthDefaults;
    withGrpcWeb = { ...withGrpcWeb, extauthDefaults: filled };
    // a user's own server there is also the one `customAuth: {}` (no name) asks, as in open-source Gloo
    if (ref) {
      const refNs = ref.namespace ?? settings.metadata.namespace;
      const server = { ...filled, extauthzServerRef: { ...ref, namespace: refNs } };
      const missing = !upstreamKeys.has(resourceKey('Upstream', refNs, ref.name));
      const unnamed = { settings: server, cluster: clusterName(refNs, ref.name), ...(missing ? { missing: true as const } : {}) };
      withGrpcWeb = { ...withGrpcWeb, namedExtauth: { ...withGrpcWeb.namedExtauth, [SETTINGS_EXTAUTH_SERVER]: unnamed } };
    }
  }
  const oneWayTls = settings?.spec.gateway?.virtualServiceOptions?.oneWayTls;
  const withOneWayTls: RenderOptions = oneWayTls === undefined ? withGrpcWeb : { ...withGrpcWeb, oneWayTls };
  const withTlsWarning: RenderOptions = settings?.spec.gateway?.validation?.warnMissingTlsSecret
    ? { ...withOneWayTls, warnMissingTlsSecret: true }
    : withOneWayTls;
  const render: RenderOptions = settings?.spec.rbac?.requireRbac ? { ...withTlsWarning, requireRbac: true } : withTlsWarning;
  // features are a function of the render options: equal options, features that behave the same
  const featuresKey = JSON.stringify(render);
  const featureList = features(render);
  const out = translate({
    features: featureList,
    resources: all,
    lastAccepted: input.lastAccepted,
    ...(input.lastServed ? { lastServed: input.lastServed } : {}),
    reuse: { featuresKey, memo: input.memo?.translate },
    options: {
      writeNamespace,
      defaultGateway: input.options?.defaultGateway ?? { bindAddress: '::', bindPort: 8080 },
      defaultSslPort: input.options?.defaultSslPort ?? 8443,
      ...(settings?.spec.gloo?.invalidConfigPolicy ? { invalidConfigPolicy: settings.spec.gloo.invalidConfigPolicy } : {}),
      ...gatewaySettings(settings?.spec),
      // rejected by their schema with nothing accepted in their place: what names them says "rejected", not "not found"
      ...(invalidKeys.length ? { invalid: invalidKeys } : {}),
    },
  });
  if (settings && ratelimitWarning)
    out.reports.push({ resource: sourceOf(settings), severity: 'warning', code: 'UpstreamNotFound', message: ratelimitWarning });
  if (settings && extProc) {
    for (const message of extProc.problems)
      out.reports.push({ resource: sourceOf(settings), severity: 'error', code: 'InvalidRegex', message });
    for (const message of extProc.warnings)
      out.reports.push({ resource: sourceOf(settings), severity: 'warning', code: 'UpstreamNotFound', message });
  }
  if (settings && wantedNamespace !== writeNamespace) {
    const message =
      `the write namespace ${wantedNamespace} (discoveryNamespace/writeNamespace) takes effect when the controller and its ` +
      `proxies restart (their node ids name ${writeNamespace}); until then Legate keeps ${writeNamespace}`;
    out.reports.push({ resource: sourceOf(settings), severity: 'warning', code: 'RestartRequired', message });
  }
  for (const p of discovery.problems)
    if (!userKeys.has(keyOf(p.upstream)))
      out.reports.push({ resource: sourceOf(p.upstream), severity: 'warning', code: 'InvalidSpec', message: p.message });
  for (const message of named.warnings)
    if (settings) out.reports.push({ resource: sourceOf(settings), severity: 'warning', code: 'UpstreamNotFound', message });
  for (const p of named.problems) if (settings) out.reports.push({ resource: sourceOf(settings), severity: 'error', ...p });
  const rules = settings?.spec.graphqlOptions?.schemaChangeValidationOptions?.processingRules;
  if (settings && rules?.length) {
    const message =
      `graphqlOptions.schemaChangeValidationOptions.processingRules: ignored: Legate does not detect breaking GraphQL ` +
      `schema changes, so there is nothing for ${rules.length === 1 ? 'this rule' : 'these rules'} to tune`;
    out.reports.push({ resource: sourceOf(settings), severity: 'warning', code: 'NotSupported', message });
  }

  const listed = new Map<string, ListedResource>();
  const reportsOf = new Map<string, Report[]>();
  for (const report of out.reports) {
    const key = resourceKey(report.resource.kind, report.resource.namespace, report.resource.name);
    const list = reportsOf.get(key);
    if (list) list.push(report);
    else reportsOf.set(key, [report]);
  }
  const statusOf = (
    r: { kind: string; metadata: { namespace: string; name: string }; loadError?: string },
    schemaReason?: string,
  ): ResourceStatus => {
    const reported = reportsOf.get(keyOf(r));
    // most resources have nothing to report: one status for them all
    if (!reported && schemaReason === undefined && r.loadError === undefined) return ACCEPTED;
    const mine = reported ?? [];
    const errors = mine.filter((x) => x.severity === 'error').map((x) => x.message);
    if (schemaReason) errors.unshift(schemaReason);
    // the version read last is what serves; the current one cannot be read at all
    if (r.loadError) errors.unshift(r.loadError);
    const fallback =
      mine.some((x) => x.code === 'ServingLastAccepted') ||
      (schemaReason !== undefined && input.lastAccepted.has(keyOf(r))) ||
      (r.loadError !== undefined && input.lastAccepted.has(keyOf(r)));
    const warnings = mine.filter((x) => x.severity === 'warning' && x.code !== 'ServingLastAccepted').map((x) => x.message);
    if (errors.length) {
      const reason = errors.join('; ') + (fallback ? ' (serving the last accepted version)' : '');
      return { state: 'Rejected', reason, reportedBy: REPORTER };
    }
    if (warnings.length) return { state: 'Warning', reason: warnings.join('; '), reportedBy: REPORTER };
    return { state: 'Accepted', reportedBy: REPORTER };
  };
  for (const raw of input.resources) {
    const key = keyOf(raw);
    listed.set(key, { resource: raw, status: statusOf(raw, rejectedBySchema.get(key)) });
  }
  for (const u of discovered) listed.set(keyOf(u), { resource: u.raw, status: statusOf(u) });

  const xds = new Map<string, XdsSnapshot>();
  const plugins = renderPlugins(featureList);
  const rendered = new Map<string, RenderMemo>();
  // the extensions subscribe as their own roles; an empty set is served too, so they know
  for (const ext of out.extensions) xds.set(ext.role, new Map([[ext.typeUrl, ext.resources]]));
  for (const proxy of out.proxies) {
    const role = proxyRole(proxy);
    if (input.statusesOnly) {
      const kept = input.memo?.render.get(role);
      if (kept) rendered.set(role, kept);
    }
    const { snapshot, memo } = input.statusesOnly
      ? { snapshot: undefined, memo: undefined }
      : renderProxyReusing(proxy, out.upstreams, plugins, featuresKey, input.memo?.render.get(role));
    // the controller serves Envoy's default runtime layer to the proxies whose snapshot has none (proxyRuntime)
    const maxProgramSize = settings?.spec.gloo?.regexMaxProgramSize;
    if (snapshot) xds.set(role, maxProgramSize === undefined ? snapshot : withRuntime(snapshot, maxProgramSize));
    if (memo) rendered.set(role, memo);
    const metadata = { name: proxy.name, namespace: proxy.namespace };
    const raw: RawResource = {
      apiVersion: canonicalApiVersion('Proxy'),
      kind: 'Proxy',
      metadata,
      spec: { listeners: proxy.listeners },
      body: {},
      origin: '(generated)',
    };
    const key = resourceKey('Proxy', metadata.namespace, metadata.name);
    if (!listed.has(key)) listed.set(key, { resource: raw, status: { state: 'Accepted', reportedBy: REPORTER } });
  }

  return {
    writeNamespace,
    devMode: settings?.spec.devMode ?? false,
    ...(settings?.spec.observabilityOptions ? { observability: settings.spec.observabilityOptions } : {}),
    listed,
    proxies: out.proxies,
    xds,
    accepted: out.accepted,
    reports: out.reports,
    envoyNames: input.statusesOnly ? new Map() : envoyNames(out.proxies, out.upstreams),
    served: out.served,
    memo: {
      validated,
      discovered: discovery,
      ...(withDefaults.memo ? { sslDefaults: withDefaults.memo } : {}),
      ...(out.memo ? { translate: out.memo } : {}),
      render: rendered,
    },
  };
}

/** The runtime layer of every proxy, by RE2 program size limit: the same resource object run after run. */
const runtimeLayers = new Map<number, readonly XdsResource[]>();

/**
 * Settings gloo.regexMaxProgramSize as Envoy's runtime (RTDS): the program size above which Envoy refuses a regex.
 * Every proxy is served one (Envoy waits for its runtime layer before it starts), with Envoy's default of 100 when unset.
 */
export function withRuntime(snapshot: XdsSnapshot, maxProgramSize = 100): XdsSnapshot {
  if (snapshot.has(TypeUrls.runtime)) return snapshot;
  let layer = runtimeLayers.get(maxProgramSize);
  if (!layer) {
    const resource = { name: RUNTIME_LAYER, layer: { 're2.max_program_size.error_level': maxProgramSize } };
    layer = [{ name: RUNTIME_LAYER, resource }];
    runtimeLayers.set(maxProgramSize, layer);
  }
  return new Map([...snapshot, [TypeUrls.runtime, layer]]);
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Settings' wasmChecks tune the hot-path filters; the code source stays what the controller was given. */
function withSettings(render: RenderOptions, checks: WasmChecks | undefined): RenderOptions {
  if (!checks) return render;
  return {
    ...render,
    wasm: {
      ...render.wasm,
      bearerCheck: { ...render.wasm.bearerCheck, ...checks.bearerCheck },
      graphqlCheck: { ...render.wasm.graphqlCheck, ...checks.graphqlCheck },
    },
  };
}

/**
 * Settings' ratelimitServer tunes the ratelimit filter; ratelimitServerRef points it at an Upstream's
 * cluster instead of Legate's own service. A missing Upstream keeps Legate's own service (Envoy would
 * refuse a filter naming a cluster it does not have, and with it the listener) and is a warning.
 */
function withRateLimitServer(
  render: RenderOptions,
  server: RatelimitServer | undefined,
  ns: string,
  upstreamExists: (ns: string, name: string) => boolean,
): { render: RenderOptions; warning?: string } {
  if (!server) return { render };
  const rl = render.ratelimit ?? DEFAULT_RATELIMIT;
  const ref = server.ratelimitServerRef;
  const refNs = ref?.namespace ?? ns;
  const found = ref !== undefined && upstreamExists(refNs, ref.name);
  const warning =
    ref && !found
      ? `ratelimitServer.ratelimitServerRef: Upstream ${refNs}.${ref.name} not found; Envoy asks Legate's own service`
      : undefined;
  const out: RenderOptions = {
    ...render,
    ratelimit: {
      ...rl,
      ...(ref && found ? { serverCluster: clusterName(refNs, ref.name) } : {}),
      ...(server.requestTimeout !== undefined ? { requestTimeoutMs: durationMs(server.requestTimeout) } : {}),
      ...(server.denyOnFail !== undefined ? { denyOnFail: server.denyOnFail } : {}),
      ...(server.rateLimitBeforeAuth !== undefined ? { beforeAuth: server.rateLimitBeforeAuth } : {}),
      ...(server.enableXRatelimitHeaders !== undefined ? { xRateLimitHeaders: server.enableXRatelimitHeaders } : {}),
    },
  };
  return warning ? { render: out, warning } : { render: out };
}

/**
 * Settings' namedExtauth: the user's own ext_authz servers, each at its Upstream's cluster. A missing Upstream is a
 * warning; Envoy cannot reach the server, so the routes it checks are denied (failureModeAllow does not apply).
 */
function withNamedExtauth(
  render: RenderOptions,
  named: Record<string, ExtauthServerSettings> | undefined,
  ns: string,
  upstreamExists: (ns: string, name: string) => boolean,
): { render: RenderOptions; warnings: string[]; problems: Problem[] } {
  if (!named || Object.keys(named).length === 0) return { render, warnings: [], problems: [] };
  const warnings: string[] = [];
  const problems: Problem[] = [];
  const servers: NonNullable<RenderOptions['namedExtauth']> = {};
  for (const [name, server] of Object.entries(named).sort(([a], [b]) => a.localeCompare(b))) {
    const ref = server.extauthzServerRef;
    const refNs = ref.namespace ?? ns;
    const found = upstreamExists(refNs, ref.name);
    if (!found)
      warnings.push(
        `namedExtauth.${name}.extauthzServerRef: Upstream ${refNs}.${ref.name} not found; requests it checks are denied until it exists`,
      );
    const http = server.httpService ? extauthHttp(server.httpService, `namedExtauth.${name}.httpService`, { problems }) : undefined;
    servers[name] = {
      settings: server,
      cluster: clusterName(refNs, ref.name),
      ...(found ? {} : { missing: true as const }),
      ...(http ? { http } : {}),
    };
  }
  return { render: { ...render, namedExtauth: servers }, warnings, problems };
}

function durationMs(text: string): number {
  const d = parseDuration(text);
  return Math.max(1, Math.round(d.seconds * 1000 + (d.nanos ?? 0) / 1e6));
}

/** The Settings fields that change which Gateways and destinations translation takes, as TranslateOptions. */
type GatewaySettings = Pick<TranslateOptions, 'disableKubernetesDestinations' | 'readGatewaysFromAllNamespaces' | 'translateEmptyGateways'>;

function gatewaySettings(spec: SettingsSpec | undefined): GatewaySettings {
  const out: GatewaySettings = {};
  if (spec?.gloo?.disableKubernetesDestinations !== undefined) out.disableKubernetesDestinations = spec.gloo.disableKubernetesDestinations;
  if (spec?.gateway?.readGatewaysFromAllNamespaces !== undefined)
    out.readGatewaysFromAllNamespaces = spec.gateway.readGatewaysFromAllNamespaces;
  if (spec?.gateway?.translateEmptyGateways !== undefined) out.translateEmptyGateways = spec.gateway.translateEmptyGateways;
  return out;
}

/** Upstreams with Settings upstreamOptions.sslParameters filled in: the same copies run after run, for the memos. */
interface SslDefaultsMemo {
  key: string;
  /** each Upstream's copy with the defaults, by the Upstream it was made from */
  copies: WeakMap<LegateResource, LegateResource>;
}

function withSslParameters(
  resources: readonly LegateResource[],
  defaults: SslParameters | undefined,
  before: SslDefaultsMemo | undefined,
): { resources: readonly LegateResource[]; memo?: SslDefaultsMemo } {
  if (!defaults) return { resources };
  const key = JSON.stringify(defaults);
  const memo = before?.key === key ? before : { key, copies: new WeakMap<LegateResource, LegateResource>() };
  const out = resources.map((r) => {
    if (r.kind !== 'Upstream' || !r.spec.sslConfig || r.spec.sslConfig.parameters) return r;
    let copy = memo.copies.get(r);
    if (!copy) {
      copy = { ...r, spec: { ...r.spec, sslConfig: { ...r.spec.sslConfig, parameters: defaults } } };
      memo.copies.set(r, copy);
    }
    return copy;
  });
  return { resources: out, memo };
}
