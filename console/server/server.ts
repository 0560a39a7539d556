// The console's server: the web app (dist/console), and a read-only JSON API over the controller API that
// legatectl reads, Envoy's admin (served vs desired, stats) and Prometheus. Every answer is redacted
// (redact.ts). Loopback by default; on any other address every request needs the bearer token.
import { timingSafeEqual } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { stringify } from 'yaml';
import { sendError, sendOk } from '../../common/envelope.js';
import type { Logger } from '../../common/log.js';
import { gatewayDashboard, upstreamDashboard, type DashboardModel } from '../../controller/observability/dashboards.js';
import { EnvoyStatsSource, PrometheusSource, type MetricsSource } from './dashboards.js';
import { redactResource, redactValue } from './redact.js';
import { referenceIndex, type Ref } from './refs.js';

export interface ConsoleOptions {
  host: string;
  port: number;
  /** required unless `host` is loopback */
  token?: string;
  /** the controller API (what legatectl reads) */
  apiUrl: string;
  /** Envoy's admin interface: served config, stats */
  envoyAdminUrl?: string;
  /** the gateway's HTTP address: the GraphQL explorer's requests go there */
  gatewayUrl?: string;
  prometheusUrl?: string;
  /** the built web app (index.html, app.js, …) */
  staticDir: string;
  version: string;
  logger: Logger;
}

export interface RunningConsole {
  port: number;
  url: string;
  stop(): Promise<void>;
}

interface ApiItem {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
  spec?: unknown;
  status?: { statuses?: Record<string, { state?: string; reason?: string | null }> };
  [extra: string]: unknown;
}

const HISTORY_SHOWN = 500;

/** How old the console's copy of the resources may be before it reads them again (in the background). */
const FRESH_MS = 1000;

interface ResourceView {
  items: readonly ApiItem[];
  summaries: readonly ReturnType<typeof summarize>[];
  byKey: ReadonlyMap<string, ApiItem>;
  refs: ReturnType<typeof referenceIndex>;
}

function resourceView(items: ApiItem[]): ResourceView {
  return {
    items,
    summaries: items.map(summarize),
    byKey: new Map(items.map((i) => [`${i.kind}/${i.metadata.namespace}/${i.metadata.name}`, i])),
    refs: referenceIndex(items),
  };
}

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);
const COOKIE = 'legate_console_token';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.ttf': 'font/ttf',
  '.woff2': 'font/woff2',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
};

export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith('127.');
}

/** One resource as the list shows it: identity, state, reason. */
export function summarize(item: ApiItem): { kind: string; namespace: string; name: string; state: string; reason?: string } {
  const status = Object.values(item.status?.statuses ?? {})[0];
  return {
    kind: item.kind,
    namespace: item.metadata.namespace,
    name: item.metadata.name,
    state: status?.state ?? 'Pending',
    ...(status?.reason ? { reason: status.reason } : {}),
  };
}

export async function startConsole(options: ConsoleOptions): Promise<RunningConsole> {
  if (!isLoopback(options.host) && !options.token) {
    throw new Error(`the console listens on ${options.host}, beyond loopback: it needs a token (--console-token or LEGATE_CONSOLE_TOKEN)`);
  }
  const log = options.logger;
  const metrics: MetricsSource | undefined = options.prometheusUrl
    ? new PrometheusSource(options.prometheusUrl)
    : options.envoyAdminUrl
      ? new EnvoyStatsSource(options.envoyAdminUrl)
      : undefined;

  const controller = async <T>(p: string): Promise<T> => {
    const res = await fetch(`${options.apiUrl}${p}`, { signal: AbortSignal.timeout(5000) });
    const body = (await res.json()) as { status: string; data?: T; error?: string };
    if (body.status !== 'ok') throw new HttpError(res.status, body.error ?? `controller API ${p}: ${res.status}`);
    return body.data as T;
  };
  const envoy = async <T>(p: string): Promise<T> => {
    if (!options.envoyAdminUrl) throw new HttpError(404, "the console was not told Envoy's admin address (--envoy-admin)");
    const res = await fetch(`${options.envoyAdminUrl}${p}`, { signal: AbortSignal.timeout(5000) });
    if (!res.ok) throw new HttpError(502, `Envoy admin ${p}: ${res.status}`);
    return (await res.json()) as T;
  };
  // The resources, redacted, with their reference index: read from the controller at most every FRESH_MS; an
  // older copy answers at once while a new one is read (a page never waits on 1,000 resources being re-read).
  let cached: { at: number; etag: string | null; view: ResourceView } | undefined;
  let reading: Promise<ResourceView> | undefined;
  const readResources = async (): Promise<ResourceView> => {
    const res = await fetch(`${options.apiUrl}/api/v1/resources`, {
      signal: AbortSignal.timeout(10_000),
      headers: cached?.etag ? { 'if-none-match': cached.etag } : {},
    });
    if (res.status === 304 && cached) {
      cached.at = Date.now();
      return cached.view;
    }
    const body = (await res.json()) as { status: string; data?: ApiItem[]; error?: string };
    if (body.status !== 'ok' || !body.data) throw new HttpError(502, body.error ?? `controller API /api/v1/resources: ${res.status}`);
    const view = resourceView(body.data.map((r) => redactResource(r)));
    cached = { at: Date.now(), etag: res.headers.get('etag'), view };
    return view;
  };
  const read = (): Promise<ResourceView> => (reading ??= readResources().finally(() => (reading = undefined)));
  const view = async (): Promise<ResourceView> => {
    if (!cached) return read();
    if (Date.now() - cached.at > FRESH_MS) read().catch((err: unknown) => log.warn('cannot read the resources', { error: err }));
    return cached.view;
  };

  const readOverview = async (): Promise<unknown> => {
    const [version, items, connections, source, server] = await Promise.all([
      controller<{ version: string }>('/api/v1/version').catch(() => undefined),
      view(),
      controller<ConnectionJson[]>('/api/v1/connections').catch(() => []),
      controller<{ description: string; problems: string[] }>('/api/v1/source').catch(() => undefined),
      options.envoyAdminUrl ? envoy<{ version?: string; state?: string }>('/server_info').catch(() => undefined) : undefined,
    ]);
    const counts: Record<string, Record<string, number>> = {};
    for (const s of items.summaries) {
      const byState = (counts[s.kind] ??= {});
      byState[s.state] = (byState[s.state] ?? 0) + 1;
    }
    return {
      console: { version: options.version, metrics: metrics?.name ?? 'none' },
      controller: { healthy: version !== undefined, version: version?.version, source },
      envoy: server ? { healthy: server.state === 'LIVE', state: server.state, version: server.version } : { healthy: false },
      connections: connections.map((c) => ({ role: c.role, nodeId: c.nodeId, connectedAt: c.connectedAt })),
      counts,
    };
  };
  // like the resources: at most a second old, an older answer given at once while a new one is read
  const overview = staleWhileRevalidate(readOverview, FRESH_MS, (err) => log.warn('cannot read the overview', { error: err }));

  const authorized = (req: http.IncomingMessage): boolean => {
    if (!options.token) return true;
    const header = req.headers.authorization;
    const cookie = (req.headers.cookie ?? '')
      .split(';')
      .map((c) => c.trim())
      .find((c) => c.startsWith(`${COOKIE}=`))
      ?.slice(COOKIE.length + 1);
    const given = header?.startsWith('Bearer ') ? header.slice(7) : cookie ? decodeURIComponent(cookie) : undefined;
    return given !== undefined && sameSecret(given, options.token);
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, url: URL): Promise<void> => {
    const q = url.searchParams;
    switch (url.pathname) {
      case '/api/overview':
        return sendOk(res, await overview());
      case '/api/resources': {
        const kind = q.get('kind');
        const ns = q.get('namespace');
        const state = q.get('state');
        const { summaries } = await view();
        const namespaces = [...new Set(summaries.filter((i) => !kind || i.kind === kind).map((i) => i.namespace))].sort();
        const list = summaries.filter((s) => (!kind || s.kind === kind) && (!ns || s.namespace === ns) && (!state || s.state === state));
        return sendOk(res, { namespaces, items: list });
      }
      case '/api/resource':
      case '/api/resource.yaml': {
        const kind = q.get('kind') ?? '';
        const ns = q.get('namespace') ?? '';
        const name = q.get('name') ?? '';
        const { items, byKey, refs: index } = await view();
        const item = byKey.get(`${kind}/${ns}/${name}`);
        if (!item) throw new HttpError(404, `${kind} ${ns}.${name} not found`);
        const yaml = stringify(item, { lineWidth: 0 });
        if (url.pathname.endsWith('.yaml')) {
          const file = `${kind.toLowerCase()}-${ns}-${name}.yaml`.replace(/[^\w.-]/g, '_');
          res.writeHead(200, {
            'content-type': 'application/yaml; charset=utf-8',
            'content-disposition': `attachment; filename="${file}"`,
          });
          res.end(yaml);
          return;
        }
        const refs = index.get(`${kind}/${ns}/${name}`) ?? { out: [], in: [] };
        const mark = (r: Ref): Ref & { missing?: true } => (byKey.has(`${r.kind}/${r.namespace}/${r.name}`) ? r : { ...r, missing: true });
        const history = await controller<unknown[]>(
          `/api/v1/history?kind=${encodeURIComponent(kind)}&namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`,
        ).catch(() => []);
        const endpoints = kind === 'GraphQLApi' ? graphqlEndpoints(items, ns, name) : undefined;
        const explorerOff = kind === 'GraphQLApi' && !explorerEnabled(items);
        return sendOk(res, {
          ...summarize(item),
          resource: item,
          yaml,
          references: refs.out.map(mark),
          referencedBy: refs.in,
          history,
          ...(endpoints ? { endpoints } : {}),
          ...(explorerOff ? { explorerDisabled: EXPLORER_OFF } : {}),
        });
      }
      case '/api/history': {
        // the newest HISTORY_SHOWN (a page shows the latest changes; a resource's own page asks for its own)
        const events = await controller<unknown[]>(`/api/v1/history${url.search}`);
        return sendOk(res, events.slice(-HISTORY_SHOWN));
      }
      case '/api/routetest':
        return sendOk(res, await controller(`/api/v1/routetest${url.search}`));
      case '/api/served':
        return sendOk(res, await servedVsDesired(controller, options.envoyAdminUrl ? envoy : undefined));
      case '/api/dashboard': {
        // ?upstream=NS/NAME: that Upstream's dashboard; none: the whole gateway's
        const upstream = q.get('upstream');
        const [ns, name] = upstream ? upstream.split('/') : [];
        if (upstream && (!ns || !name)) throw new HttpError(400, 'upstream= is NAMESPACE/NAME');
        const model: DashboardModel = ns && name ? upstreamDashboard({ namespace: ns, name }) : gatewayDashboard();
        if (!metrics)
          throw new HttpError(404, 'no metrics source: neither Prometheus (--prometheus) nor Envoy admin (--envoy-admin) is set');
        const panels = model.panels.map((p) => ({ key: p.key, title: p.title, description: p.description, unit: p.unit }));
        return sendOk(res, { source: metrics.name, title: model.title, panels, values: await metrics.values(model) });
      }
      case '/api/gateway':
        return sendOk(res, { url: options.gatewayUrl ?? null });
      case '/gw':
        if (!explorerEnabled((await view()).items)) throw new HttpError(403, EXPLORER_OFF);
        return forwardToGateway(req, res, q);
      default:
        return serveStatic(res, url.pathname);
    }
  };

  const forwardToGateway = async (req: http.IncomingMessage, res: http.ServerResponse, q: URLSearchParams): Promise<void> => {
    // the GraphQL explorer's requests, sent to the gateway with the Host the virtual service matches
    if (!options.gatewayUrl) throw new HttpError(404, 'the console was not told the gateway address (--gateway)');
    if (req.method !== 'POST' && req.method !== 'GET') throw new HttpError(405, `method ${req.method} not allowed`);
    const target = new URL(q.get('path') ?? '/graphql', options.gatewayUrl);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const headers: Record<string, string> = { host: q.get('host') || target.host };
    for (const h of ['content-type', 'accept', 'authorization']) {
      const v = req.headers[h];
      if (typeof v === 'string' && !(h === 'authorization' && options.token && v === `Bearer ${options.token}`)) headers[h] = v;
    }
    const answer = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const r = http.request(target, { method: req.method, headers, timeout: 10_000 }, resolve);
      r.on('error', reject);
      r.end(Buffer.concat(chunks));
    });
    res.writeHead(answer.statusCode ?? 502, { 'content-type': answer.headers['content-type'] ?? 'application/octet-stream' });
    answer.pipe(res);
  };

  const serveStatic = (res: http.ServerResponse, pathname: string): void => {
    const rel = pathname === '/' ? 'index.html' : path.normalize(decodeURIComponent(pathname)).replace(/^([/\\])+/, '');
    const file = path.join(options.staticDir, rel);
    if (!file.startsWith(options.staticDir) || rel.startsWith('..')) return sendError(res, 404, 'not found');
    fs.readFile(file, (err, bytes) => {
      if (err) {
        // the app's own routes (#/…) all start at index.html
        if (pathname.startsWith('/api/')) return sendError(res, 404, `no such endpoint ${pathname}`);
        return sendError(res, 404, `not found: ${pathname}`);
      }
      res.writeHead(200, {
        'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream',
        'content-length': bytes.length,
        'cache-control': rel === 'index.html' ? 'no-cache' : 'max-age=300',
        'x-content-type-options': 'nosniff',
      });
      res.end(bytes);
    });
  };

  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://console');
    // liveness for legatectl check and the chart's probes: says nothing but that it answers
    if (url.pathname === '/healthz') return sendOk(res, 'ok');
    if (options.token && url.pathname === '/login' && req.method === 'GET') {
      // a browser cannot send a bearer header on navigation: /login?token=… sets it as a cookie
      const given = url.searchParams.get('token') ?? '';
      if (!sameSecret(given, options.token)) return sendError(res, 401, 'wrong token');
      res.writeHead(303, {
        location: '/',
        'set-cookie': `${COOKIE}=${encodeURIComponent(given)}; HttpOnly; SameSite=Strict; Path=/`,
      });
      res.end();
      return;
    }
    if (!authorized(req)) {
      res.setHeader('www-authenticate', 'Bearer realm="legate console"');
      return sendError(res, 401, 'this console needs its token: Authorization: Bearer <token>, or open /login?token=<token>');
    }
    if (req.method !== 'GET' && !(req.method === 'POST' && url.pathname === '/gw')) return sendError(res, 405, `the console is read-only`);
    handle(req, res, url).catch((err: unknown) => {
      const code = err instanceof HttpError ? err.code : 502;
      if (!(err instanceof HttpError)) log.warn('console request failed', { path: url.pathname, error: err });
      if (!res.headersSent) sendError(res, code, err instanceof Error ? err.message : String(err));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shown = options.host.includes(':') ? `[${options.host}]` : options.host;
  return {
    port,
    url: `http://${shown}:${port}/`,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface RouteSpec {
  matchers?: { prefix?: string; exact?: string }[];
  graphqlApiRef?: { name?: string; namespace?: string };
}

/** Where the gateway serves a GraphQL API: the host and path of each route that names it. */
const EXPLORER_OFF = 'the GraphQL explorer is off: Settings consoleOptions.apiExplorerEnabled is false';

/** Settings consoleOptions.apiExplorerEnabled (Gloo's default true), of the Settings the controller reads (`default` first). */
export function explorerEnabled(items: readonly ApiItem[]): boolean {
  const settings = items
    .filter((i) => i.kind === 'Settings')
    .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  const spec = settings?.spec as { consoleOptions?: { apiExplorerEnabled?: boolean } } | undefined;
  return spec?.consoleOptions?.apiExplorerEnabled !== false;
}

export function graphqlEndpoints(items: readonly ApiItem[], ns: string, name: string): { host: string; path: string; via: string }[] {
  const out: { host: string; path: string; via: string }[] = [];
  for (const item of items) {
    if (item.kind !== 'VirtualService' && item.kind !== 'RouteTable') continue;
    const spec = item.spec as { virtualHost?: { domains?: string[]; routes?: RouteSpec[] }; routes?: RouteSpec[] } | undefined;
    const routes = item.kind === 'VirtualService' ? spec?.virtualHost?.routes : spec?.routes;
    const domain = item.kind === 'VirtualService' ? (spec?.virtualHost?.domains?.[0] ?? '*') : '*';
    for (const r of routes ?? []) {
      const ref = r.graphqlApiRef;
      if (!ref || ref.name !== name || (ref.namespace ?? item.metadata.namespace) !== ns) continue;
      const m = r.matchers?.[0];
      out.push({
        host: domain.includes('*') ? '' : domain,
        path: m?.exact ?? m?.prefix ?? '/',
        via: `${item.kind} ${item.metadata.namespace}.${item.metadata.name}`,
      });
    }
  }
  return out;
}

/** `read`, remembered for `freshMs`; past that the remembered value answers while `read` runs again (once). */
function staleWhileRevalidate<T>(read: () => Promise<T>, freshMs: number, onError: (err: unknown) => void): () => Promise<T> {
  let last: { at: number; value: T } | undefined;
  let running: Promise<T> | undefined;
  const again = (): Promise<T> =>
    (running ??= read()
      .then((value) => ((last = { at: Date.now(), value }), value))
      .finally(() => (running = undefined)));
  return async () => {
    if (!last) return again();
    if (Date.now() - last.at > freshMs) again().catch(onError);
    return last.value;
  };
}

class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

interface ConnectionJson {
  role: string;
  nodeId: string;
  connectedAt: string;
  types: Record<string, { sentVersion?: string; ackedVersion?: string; lastNack?: { version: string; message: string; at: string } }>;
}

interface DumpEntry {
  version_info?: string;
  /** listeners keep theirs here */
  active_state?: { version_info?: string };
  last_updated?: string;
  error_state?: { details?: string; last_update_attempt?: string };
  [k: string]: unknown;
}

/** Config dump sections: the type URL's short name -> where its dynamic resources are and their name. */
const DUMP_SECTIONS: Record<string, { lists: string[]; name: (e: DumpEntry) => string | undefined }> = {
  Listener: {
    lists: ['dynamic_listeners'],
    name: (e) => e['name'] as string | undefined,
  },
  Cluster: {
    lists: ['dynamic_active_clusters', 'dynamic_warming_clusters'],
    name: (e) => (e['cluster'] as { name?: string } | undefined)?.name,
  },
  RouteConfiguration: {
    lists: ['dynamic_route_configs'],
    name: (e) => (e['route_config'] as { name?: string } | undefined)?.name,
  },
  ClusterLoadAssignment: {
    lists: ['dynamic_endpoint_configs'],
    name: (e) => (e['endpoint_config'] as { cluster_name?: string } | undefined)?.cluster_name,
  },
  Secret: {
    lists: ['dynamic_active_secrets', 'dynamic_warming_secrets'],
    name: (e) => e['name'] as string | undefined,
  },
};

/** What the controller serves each role vs what the Envoy (admin) holds, by type and name, with NACKs. */
async function servedVsDesired(
  controller: <T>(p: string) => Promise<T>,
  envoy: (<T>(p: string) => Promise<T>) | undefined,
): Promise<unknown> {
  const [served, connections] = await Promise.all([
    controller<Record<string, Record<string, { name?: string }[]>>>('/api/v1/served'),
    controller<ConnectionJson[]>('/api/v1/connections'),
  ]);
  let dump: { configs?: Record<string, unknown>[] } | undefined;
  let dumpError: string | undefined;
  if (envoy)
    dump = await envoy<{ configs?: Record<string, unknown>[] }>('/config_dump?include_eds').catch(
      (e: unknown) => ((dumpError = String(e)), undefined),
    );
  const held = new Map<string, Map<string, DumpEntry>>();
  for (const section of dump?.configs ?? []) {
    for (const [type, spec] of Object.entries(DUMP_SECTIONS)) {
      for (const list of spec.lists) {
        const entries = section[list];
        if (!Array.isArray(entries)) continue;
        const byName = held.get(type) ?? new Map<string, DumpEntry>();
        held.set(type, byName);
        for (const e of entries as DumpEntry[]) {
          const n = spec.name(e) ?? (e['name'] as string | undefined);
          if (n) byName.set(n, e);
        }
      }
    }
  }
  const roles = Object.entries(served).map(([role, types]) => {
    const conns = connections.filter((c) => c.role === role);
    return {
      role,
      connections: conns.map((c) => ({
        nodeId: c.nodeId,
        types: Object.fromEntries(
          Object.entries(c.types).map(([t, s]) => [
            short(t),
            {
              sentVersion: s.sentVersion ?? null,
              ackedVersion: s.ackedVersion ?? null,
              lastNack: s.lastNack ? redactValue(s.lastNack) : null,
            },
          ]),
        ),
      })),
      types: Object.entries(types).map(([typeUrl, list]) => {
        const type = short(typeUrl);
        const desired = list.map((r) => r.name ?? (r as { cluster_name?: string }).cluster_name ?? '').filter((n) => n !== '');
        const mine = role.endsWith('~gateway-proxy') ? held.get(type) : undefined;
        return {
          type,
          desired: desired.length,
          ...(mine
            ? {
                held: mine.size,
                missing: desired.filter((n) => !mine.has(n)),
                extra: [...mine.keys()].filter((n) => !desired.includes(n)),
                errors: [...mine.entries()]
                  .filter(([, e]) => e.error_state)
                  .map(([n, e]) => ({ name: n, details: e.error_state?.details ?? '', at: e.error_state?.last_update_attempt ?? '' })),
                versions: [...new Set([...mine.values()].map((e) => e.version_info ?? e.active_state?.version_info ?? ''))].filter(
                  (v) => v !== '',
                ),
              }
            : {}),
        };
      }),
    };
  });
  return { envoy: envoy ? (dump ? 'read' : `unreadable: ${dumpError}`) : 'not configured', roles };
}

function short(typeUrl: string): string {
  return typeUrl.split('.').pop() ?? typeUrl;
}
