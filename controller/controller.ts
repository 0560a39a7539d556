// Controller composition root: a resource source -> pipeline -> xDS cache/server, statuses, loopback API.
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { ExtensionTypeUrls, encodeExtensionConfig } from '../common/contract.js';
import type { Logger } from '../common/log.js';
import { TypeUrls } from '../envoy/protos.js';
import { VERSION } from '../common/version.js';
import { isKnownKind } from './api/kinds.js';
import type { LegateResource } from './api/resources.js';
import type { VirtualHostIR } from './translate/ir.js';
import type { TranslateOptions } from './translate/translate.js';
import { collectDefaultMetrics, Histogram, Registry } from 'prom-client';
import { startAdminServer, type RunningAdmin } from '../common/admin.js';
import { SpanRecorder } from '../common/trace.js';
import { startApiServer, type ApiResource } from './admin/api.js';
import { startDevModeServer } from './admin/devmode.js';
import { controllerMetrics } from './admin/metrics.js';
import { configStatusSeries } from './observability/config-status.js';
import { proxyRole } from './translate/names.js';
import { runPipeline, withRuntime, type PipelineMemo, type PipelineOptions, type PipelineOutput } from './pipeline.js';
import type { ResourceSource, SourceSnapshot } from './source/source.js';
import { AcceptedWriter, RESTORED_NOTE, loadAccepted } from './state/accepted.js';
import { LatestStatuses, StatusBook, type StatusSink } from './status/book.js';
import { StatusHistory } from './status/history.js';
import { matchRequest } from './routetest/match.js';
import { DEFAULT_RENDER_OPTIONS, type RenderOptions } from './translate/render.js';
import type { WasmCodeSource } from './translate/features/wasm/index.js';
import { moduleSha256Reader } from './wasm-modules.js';
import { regoChecker } from './rego-check.js';
import { Validator, beforeFirstSnapshot } from './validation/admission.js';
import { checkRequest, startWebhookServer, type RunningWebhook } from './validation/server.js';
import { SnapshotCache } from './xds/cache.js';
import { AdsServer } from './xds/server.js';

export interface ControllerOptions {
  /** where resources come from (a directory: FileSource) */
  source: ResourceSource;
  /** where statuses go besides the controller API (e.g. the Kubernetes status subresource) */
  statusSinks?: readonly StatusSink[];
  xds: { host: string; port: number; tls?: { cert: Buffer; key: Buffer; ca: Buffer } };
  api: { host: string; port: number };
  writeNamespace?: string;
  defaultGateway: TranslateOptions['defaultGateway'];
  defaultSslPort?: number;
  /** Where Envoy reaches the extension services. */
  render?: RenderOptions;
  logger: Logger;
  /** where the wasm modules are, and whether Envoy reads them from disk or fetches them from the API */
  /** the filters' directory; with `remote`, Envoys fetch them from the API at `fetchFrom` (default: the API's own address) */
  wasm?: { dir: string; source: 'local' | 'remote'; fetchFrom?: { host: string; port: number } };
  /** the admin interface (spec 4.3), when set */
  admin?: { host: string; port: number };
  /** where the dev-mode endpoint listens when Settings has devMode: true */
  devMode?: { host: string; port: number };
  /** keeps the last accepted version of each resource across restarts (controller/state/accepted.ts) */
  acceptedFile?: string;
  /** the validating admission webhook (controller/validation/): where it listens, its certificate */
  webhook?: { host: string; port: number; cert: string; key: string; namespaces?: readonly string[] };
}

export interface RunningController {
  xdsPort: number;
  apiPort: number;
  adminPort?: number;
  webhookPort?: number;
  /** Latest pipeline output (for tests and diagnostics). */
  current(): PipelineOutput | undefined;
  stop(): Promise<void>;
}

export async function startController(options: ControllerOptions): Promise<RunningController> {
  const log = options.logger;
  const extensionEncoder = (_typeUrl: string, resource: object): Uint8Array => encodeExtensionConfig(resource);
  const cache = new SnapshotCache({
    encoders: Object.fromEntries(Object.values(ExtensionTypeUrls).map((t) => [t, extensionEncoder])),
    onListenerError: (error, role) => log.error('xDS subscriber failed', { role, error }),
  });
  // statuses: the pipeline's, overlaid with NACKs; the API shows the latest
  const latestStatuses = new LatestStatuses();
  const history = new StatusHistory();
  const statuses = new StatusBook([latestStatuses, history, ...(options.statusSinks ?? [])]);
  let output: PipelineOutput | undefined;
  let source: SourceSnapshot = { resources: [], errors: [] };
  let lastAccepted = options.acceptedFile ? loadAccepted(options.acceptedFile, log) : new Map<string, LegateResource>();
  // the versions restored at start, while they are what serves (statuses say so)
  const restored = new Map(lastAccepted);
  const acceptedWriter = options.acceptedFile ? new AcceptedWriter(options.acceptedFile, log, lastAccepted) : undefined;
  let lastServed = new Map<string, VirtualHostIR>();
  let memo: PipelineMemo | undefined;

  const ads = new AdsServer(cache, {
    logger: log.child('xds'),
    // extension services always get their full set of configs
    wildcardTypes: [TypeUrls.listener, TypeUrls.cluster, ...Object.values(ExtensionTypeUrls)],
    observers: [statuses.nacks],
  });

  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'legate_controller_' });
  const spans = new SpanRecorder();
  const metrics = controllerMetrics(registry, {
    cache,
    ads,
    sourceProblems: () => options.source.problems?.().length ?? 0,
    resourceStates: () => {
      const out: Record<string, Record<string, number>> = {};
      for (const { resource, status } of output?.listed.values() ?? []) {
        const states = (out[resource.kind] ??= {});
        states[status.state] = (states[status.state] ?? 0) + 1;
      }
      return out;
    },
  });
  let devServer: { port: number; stop(): Promise<void> } | undefined;
  let devServerStarting = false;
  const devView = {
    // as read, but Secrets shown as the API shows them (keys and sizes, never values)
    input: () => ({
      resources: source.resources.map((r) => (r.kind === 'Secret' ? { ...r, body: redactSecretBody(r.body) } : r)),
      errors: source.errors,
    }),
    ir: () => output?.proxies ?? [],
    roles: () => cache.roles(),
    xds: (role: string) => view.served(role)[role],
  };
  const syncDevMode = (wanted: boolean): void => {
    if (!options.devMode || devServerStarting) return;
    if (wanted && !devServer) {
      devServerStarting = true;
      startDevModeServer(devView, options.devMode.host, options.devMode.port, log.child('devmode'))
        .then((s) => (devServer = s))
        .catch((err: unknown) => log.error('cannot start the dev-mode endpoint', { error: err }))
        .finally(() => (devServerStarting = false));
    } else if (!wanted && devServer) {
      const s = devServer;
      devServer = undefined;
      void s.stop();
      log.info('dev-mode endpoint stopped (settings.devMode is off)');
    }
  };

  // wasm modules: local paths for an Envoy on this host, or served by the API with their sha256
  const wasmFiles = new Map<string, Buffer>();
  let render = options.render ?? DEFAULT_RENDER_OPTIONS;
  // The edge cache's verified-header value: a secret only this controller's Envoys know (docs/wasm.md).
  if (render.wasm.bearerCheck.verifiedValue === '') {
    render = {
      ...render,
      wasm: { ...render.wasm, bearerCheck: { ...render.wasm.bearerCheck, verifiedValue: randomBytes(24).toString('base64url') } },
    };
  }
  // the user's wasm modules named by file: their sha256 is checked at translation
  if (!render.wasm.moduleSha256) render = { ...render, wasm: { ...render.wasm, moduleSha256: moduleSha256Reader() } };
  // opaAuth Rego that does not compile is a reason on its AuthConfig (when an opa binary is here, as in the image)
  if (!render.regoCheck) {
    const regoCheck = regoChecker(log);
    if (regoCheck) render = { ...render, regoCheck };
  }
  if (options.wasm) {
    const base = render;
    const modules = ['bearer-check', 'graphql-check'];
    let code: WasmCodeSource;
    if (options.wasm.source === 'local') {
      code = { type: 'local', files: Object.fromEntries(modules.map((m) => [m, path.join(options.wasm!.dir, `${m}.wasm`)])) };
    } else {
      const remote: Record<string, { path: string; sha256: string }> = {};
      for (const m of modules) {
        const bytes = fs.readFileSync(path.join(options.wasm.dir, `${m}.wasm`));
        const urlPath = `/wasm/${m}.wasm`;
        wasmFiles.set(urlPath, bytes);
        remote[m] = { path: urlPath, sha256: createHash('sha256').update(bytes).digest('hex') };
      }
      const from = options.wasm.fetchFrom ?? {
        host: options.api.host === '0.0.0.0' ? '127.0.0.1' : options.api.host,
        port: options.api.port,
      };
      code = { type: 'remote', host: from.host, port: from.port, modules: remote };
    }
    render = { ...base, wasm: { ...base.wasm, code } };
  }

  let runningWriteNamespace: string | undefined;
  let loggedStatusProblems = '';
  const pipelineOptions: PipelineOptions = {
    ...(options.writeNamespace ? { writeNamespace: options.writeNamespace } : {}),
    ...(options.defaultSslPort ? { defaultSslPort: options.defaultSslPort } : {}),
    render,
    defaultGateway: options.defaultGateway,
  };
  // the webhook's check runs the same pipeline on the resources of the last snapshot plus the candidate
  const validator = options.webhook
    ? new Validator({
        pipeline: pipelineOptions,
        ...(options.webhook.namespaces ? { namespaces: options.webhook.namespaces } : {}),
        // the source's namespaces, watchNamespaceSelectors resolved (Kubernetes): what it does not read is admitted untouched
        ...(options.source.scope ? { scope: options.source.scope.bind(options.source) } : {}),
      })
    : undefined;
  let validatorReady = false;

  const reconcile = (snapshot: SourceSnapshot): void => {
    source = snapshot;
    const started = performance.now();
    const endSpan = spans.start('controller.translate', { resources: snapshot.resources.length });
    const out = runPipeline({
      resources: snapshot.resources,
      lastAccepted,
      lastServed,
      memo,
      options: runningWriteNamespace ? { ...pipelineOptions, runningWriteNamespace } : pipelineOptions,
    });
    // the proxies' node ids name the first write namespace; a later one waits for a restart
    runningWriteNamespace ??= out.writeNamespace;
    if (restored.size) noteRestored(out, restored);
    // the map this run read (not out.accepted): the run's memo is then reusable as it is
    validator?.setCurrent(snapshot.resources, lastAccepted, out);
    lastAccepted = out.accepted;
    validatorReady = true;
    acceptedWriter?.update(out.accepted);
    lastServed = out.served;
    memo = out.memo;
    output = out;
    statuses.translated(out);
    const proxyRoles = new Set(out.proxies.map(proxyRole));
    for (const [role, snap] of out.xds) {
      try {
        // a proxy waits for its runtime layer (RTDS) before it starts: Envoy's defaults when Settings set none
        statuses.nacks.served(role, cache.set(role, proxyRoles.has(role) ? withRuntime(snap) : snap));
      } catch (err) {
        log.error('cannot encode xDS snapshot; keeping the previous one', { role, error: err });
      }
    }
    const rejected = [...out.listed.values()].filter((l) => l.status.state === 'Rejected');
    for (const r of rejected) {
      log.warn('resource rejected', {
        kind: r.resource.kind,
        namespace: r.resource.metadata.namespace,
        name: r.resource.metadata.name,
        reason: r.status.reason,
      });
    }
    const seconds = (performance.now() - started) / 1000;
    metrics.translation.observe(seconds);
    metrics.resourcesIn();
    const configStatus = configStatusSeries(out.listed.values(), out.observability, isKnownKind);
    metrics.configStatus(configStatus.series);
    const statusProblems = configStatus.problems.join('\n');
    if (statusProblems && statusProblems !== loggedStatusProblems) log.warn(statusProblems);
    loggedStatusProblems = statusProblems;
    endSpan();
    log.info('configuration translated', {
      resources: snapshot.resources.length,
      rejected: rejected.length,
      proxies: out.proxies.length,
      ms: Math.round(seconds * 1000),
    });
    syncDevMode(out.devMode);
  };

  // a new publication of the statuses is a new generation of the resource list (its ETag)
  let published: ReturnType<LatestStatuses['get']> | undefined;
  let generation = 0;
  const view = {
    version: VERSION,
    generation: (): number => {
      const now = latestStatuses.get();
      if (now !== published) {
        published = now;
        generation++;
      }
      return generation;
    },
    resources: (): ApiResource[] => {
      const { writeNamespace: ns, reports } = latestStatuses.get();
      return reports.map(({ resource, status: shown }) => {
        const item: ApiResource = {
          apiVersion: resource.apiVersion,
          kind: resource.kind,
          metadata: resource.metadata,
          // a Proxy (the IR) carries values read from Secrets (private keys, header secrets)
          ...(resource.spec !== undefined ? { spec: resource.kind === 'Proxy' ? redactSecrets(resource.spec) : resource.spec } : {}),
          ...(resource.kind === 'Secret' ? redactSecretBody(resource.body) : resource.body),
          status: { statuses: { [ns]: shown } },
        };
        return item;
      });
    },
    loadErrors: () => source.errors,
    source: () => ({ description: options.source.description, problems: options.source.problems?.() ?? [] }),
    served: (role?: string) => {
      const result: Record<string, Record<string, unknown[]>> = {};
      for (const r of cache.roles()) {
        if (role && r !== role) continue;
        const snap = cache.get(r);
        if (!snap) continue;
        const types: Record<string, unknown[]> = {};
        const hidden = secretHeaderValues(output?.proxies ?? []);
        for (const [typeUrl, t] of snap.types) types[typeUrl] = t.resources.map((x) => redactSecrets(x.resource, hidden));
        result[r] = types;
      }
      return result;
    },
    connections: () => ads.connections(),
    routeTest: (req: Parameters<typeof matchRequest>[1]) => matchRequest(output?.proxies ?? [], req),
    history: (filter: Parameters<StatusHistory['list']>[0]) => history.list(filter),
  };

  const { port: xdsPort } = await ads.start({
    host: options.xds.host,
    port: options.xds.port,
    ...(options.xds.tls ? { tls: options.xds.tls } : {}),
  });
  log.info('xDS server listening', { address: `${options.xds.host}:${xdsPort}` });
  let api: { server: http.Server; port: number };
  try {
    api = await startApiServer(view, options.api.host, options.api.port, log.child('api'), wasmFiles);
  } catch (err) {
    await ads.stop();
    throw err;
  }
  log.info('controller API listening', { address: `${options.api.host}:${api.port}` });

  let admin: RunningAdmin | undefined;
  if (options.admin) {
    try {
      admin = await startAdminServer({
        component: 'controller',
        ...options.admin,
        logger: log,
        registry,
        spans,
        extra: { '/snapshots/proxies': () => output?.proxies ?? [] },
      });
    } catch (err) {
      api.server.close();
      await ads.stop();
      throw err;
    }
  }

  let webhook: RunningWebhook | undefined;
  if (options.webhook && validator) {
    const seconds = new Histogram({
      name: 'legate_controller_validation_seconds',
      help: 'time the validating webhook took per AdmissionReview, by verdict',
      labelNames: ['allowed'],
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    });
    // before the first snapshot the Settings restored at start (if any) say whether to admit anyway
    const known = [...restored.values()].filter((r) => r.kind === 'Settings').map((r) => r.raw);
    const check = checkRequest((change) => (validatorReady ? validator.check(change) : beforeFirstSnapshot(change, known)));
    try {
      webhook = await startWebhookServer({
        host: options.webhook.host,
        port: options.webhook.port,
        cert: options.webhook.cert,
        key: options.webhook.key,
        check,
        logger: log.child('webhook'),
        observe: (s, allowed) => seconds.observe({ allowed: String(allowed) }, s),
      });
    } catch (err) {
      await admin?.stop();
      api.server.close();
      await ads.stop();
      throw err;
    }
    log.info('validating webhook listening', { address: `https://${options.webhook.host}:${webhook.port}/validation` });
  }

  const abort = new AbortController();
  if (restored.size) options.source.seed?.([...restored.values()].map((r) => r.raw));
  options.source.watch(abort.signal, reconcile);
  log.info('watching resources', { source: options.source.description });

  return {
    xdsPort,
    apiPort: api.port,
    ...(admin ? { adminPort: admin.port } : {}),
    ...(webhook ? { webhookPort: webhook.port } : {}),
    current: () => output,
    stop: async () => {
      abort.abort();
      await webhook?.stop();
      acceptedWriter?.flush();
      await admin?.stop();
      await devServer?.stop();
      const closed = new Promise<void>((resolve) => api.server.close(() => resolve()));
      api.server.closeAllConnections();
      await closed;
      await ads.stop();
    },
  };
}

/**
 * A rejected resource served from the version restored at start says so; `restored` forgets what is
 * no longer served from it (accepted since, or gone).
 */
function noteRestored(out: PipelineOutput, restored: Map<string, LegateResource>): void {
  for (const [key, version] of restored) {
    const listed = out.listed.get(key);
    // served from the restored version: it was rejected, or its file does not load since the restart
    // (the file source then hands over the restored resource, marked)
    const raw = listed?.resource;
    const served =
      out.accepted.get(key) === version || (raw?.loadError !== undefined && raw.spec === version.raw.spec && raw.body === version.raw.body);
    if (!listed || !served) {
      restored.delete(key);
      continue;
    }
    const { status } = listed;
    if (status.state === 'Rejected' && status.reason?.endsWith(SERVING_LAST_ACCEPTED)) {
      listed.status = { ...status, reason: status.reason.slice(0, -SERVING_LAST_ACCEPTED.length) + RESTORED_NOTE };
    }
  }
}

const SERVING_LAST_ACCEPTED = '(serving the last accepted version)';

// The controller API is loopback-only, but secrets still never leave it: legatectl shows their keys
// and sizes, and served extension configs show that a client secret is set, not what it is.
function redactSecretBody(body: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...body };
  for (const field of ['data', 'stringData']) {
    const values = body[field];
    if (values && typeof values === 'object') {
      out[field] = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, `<redacted, ${String(v).length} bytes>`]));
    }
  }
  return out;
}

/** `headerValues`: values of Envoy HeaderValues ({key, value}) to hide, the ones read from Secrets. */
function redactSecrets(value: unknown, headerValues: ReadonlySet<string> = new Set()): unknown {
  if (Array.isArray(value)) return value.map((v) => redactSecrets(v, headerValues));
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    const header = typeof o['key'] === 'string' && typeof o['value'] === 'string' && headerValues.has(o['value']);
    return Object.fromEntries(
      Object.entries(o).map(([k, v]) => [
        k,
        (/secret|private_?key|privateKey|session_?token/i.test(k) && v !== null && v !== undefined && !k.endsWith('Ref')) ||
        (header && k === 'value')
          ? '<redacted>'
          : k === 'localJwks' && typeof v === 'string'
            ? redactJwks(v)
            : k === 'local_jwks' && v && typeof v === 'object' && typeof (v as Record<string, unknown>)['inline_string'] === 'string'
              ? { ...v, inline_string: redactJwks((v as Record<string, string>)['inline_string']!) }
              : redactSecrets(v, headerValues),
      ]),
    );
  }
  return value;
}

// JWK members that are secret: a symmetric key (`k`) and the private parts of RSA / EC / OKP keys.
const SECRET_JWK_MEMBERS = ['k', 'd', 'p', 'q', 'dp', 'dq', 'qi', 'oth'];

/** A JWKS (JSON text) with its secret key material replaced; public keys stay readable. */
function redactJwks(text: string): string {
  try {
    const jwks = JSON.parse(text) as { keys?: Record<string, unknown>[] };
    if (!Array.isArray(jwks.keys)) return '<redacted>';
    const keys = jwks.keys.map((key) =>
      Object.fromEntries(Object.entries(key).map(([m, v]) => [m, SECRET_JWK_MEMBERS.includes(m) ? '<redacted>' : v])),
    );
    return JSON.stringify({ ...jwks, keys });
  } catch {
    return '<redacted>';
  }
}

/** The values of headers read from Secrets in the IR (`secretValue`), as rendered (% escaped) too. */
function secretHeaderValues(ir: unknown, out = new Set<string>()): Set<string> {
  if (Array.isArray(ir)) for (const v of ir) secretHeaderValues(v, out);
  else if (ir && typeof ir === 'object') {
    for (const [k, v] of Object.entries(ir)) {
      if (k === 'secretValue' && typeof v === 'string') out.add(v).add(v.replaceAll('%', '%%'));
      else secretHeaderValues(v, out);
    }
  }
  return out;
}
