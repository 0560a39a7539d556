// Where legatectl gets its facts: a local `legate run` (FileBackend: .legate/run.json and the
// controller API on loopback) or a cluster (KubeBackend, cli/ctl/kube-backend.ts: the API server,
// and the controller and Envoy admin through its pod proxy). Commands only talk to this interface.
import fs from 'node:fs';
import net from 'node:net';
import type { Envelope } from '../../common/envelope.js';
import { VERSION } from '../../common/version.js';
import type { KindName } from '../../controller/api/kinds.js';
import { findStateDir, readRunState, type RunState } from '../paths.js';
import { CliError } from './errors.js';
import { follow } from './logs.js';

export { CliError };

export interface ListedResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; generation?: number; [extra: string]: unknown };
  spec?: Record<string, unknown>;
  status: { statuses: Record<string, { state: string; reason?: string | null }>; observedGeneration?: number; [extra: string]: unknown };
  [extra: string]: unknown;
}

export interface ResourceQuery {
  kind?: KindName | undefined;
  namespace?: string | undefined;
  name?: string | undefined;
}

export interface ResourceListing {
  items: ListedResource[];
  /** kinds this backend could not read just now, and why (e.g. the controller is unreachable) */
  unavailable: { kinds: readonly string[]; reason: string }[];
}

export interface ComponentHealth {
  name: string;
  /** the component exists (a Deployment in Kubernetes, a `legate run` child in file mode) */
  deployed: boolean;
  running: boolean;
  ready: boolean;
  version?: string;
  message?: string;
}

export interface ProxyInfo {
  namespace: string;
  name: string;
  role: string;
  /** Envoy's admin interface: a loopback URL, or the API server's pod proxy URL of one pod */
  adminUrl: string;
  httpUrl?: string;
  httpsUrl?: string;
  log?: string;
  /** the pod, when there are several per proxy (Kubernetes) */
  pod?: string;
}

export interface LogSource {
  /** heading of its section in `debug logs`: `controller (/path/controller.log)`, `legate-system/pod (container)` */
  title: string;
  read(): Promise<string>;
}

export interface ProxySelector {
  namespace?: string | undefined;
  name?: string | undefined;
}

export interface Backend {
  readonly mode: 'file' | 'kubernetes';
  /** the controller API (the envelope's data, or a CliError) */
  api<T>(pathAndQuery: string): Promise<T>;
  /** resources with their statuses */
  resources(query?: ResourceQuery): Promise<ResourceListing>;
  /** the problems `check` reports on its Deployments and Pods lines */
  componentProblems(which: 'deployments' | 'pods', clientVersion: string): Promise<string[]>;
  proxies(): Promise<ProxyInfo[]>;
  /** a request to a proxy's Envoy admin interface; its body, or a CliError */
  proxyAdmin(proxy: ProxyInfo, pathAndQuery: string, method?: 'GET' | 'POST'): Promise<string>;
  /** how to set Envoy's log level back to info by hand (after `proxy logs` set it to debug) */
  logLevelResetHint(proxy: ProxyInfo): string;
  /** writes the proxy's log, then (follow) what it logs next until stopped */
  proxyLog(proxy: ProxyInfo, follow: boolean, write: (text: string) => void): Promise<void>;
  /** `proxy url`: the address clients use, and a note when it only works from some places */
  proxyUrl(selector: ProxySelector, port: string, localCluster: boolean): Promise<{ url: string; note?: string }>;
  /** every component's log */
  logs(): Promise<LogSource[]>;
  /** objects beside the resources for `debug yaml` (Kubernetes: the install namespace's Deployments, Services…) */
  installObjects(): Promise<{ objects: unknown[]; problems: string[] }>;
  /** the platform's version for `version` (Kubernetes' gitVersion), if any */
  platformVersion(): Promise<string | undefined>;
}

/** The proxy a `proxy` command means: the first one matching -n and --name, or a CliError naming those there are. */
export async function pickProxy(backend: Backend, selector: ProxySelector): Promise<ProxyInfo> {
  const proxies = await backend.proxies();
  const match = proxies.filter(
    (p) => (!selector.namespace || p.namespace === selector.namespace) && (!selector.name || p.name === selector.name),
  );
  const found = match[0];
  if (!found) {
    const known = [...new Set(proxies.map((p) => `${p.namespace}.${p.name}`))].join(', ') || 'none';
    throw new CliError(`no gateway proxy ${selector.namespace ?? '*'}.${selector.name ?? '*'} (known: ${known})`);
  }
  return found;
}

export interface BackendFlags {
  controller?: string | undefined;
  stateDir?: string | undefined;
}

async function getJson(url: string, timeoutMs = 3000): Promise<{ status: number; body: unknown }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  try {
    return { status: res.status, body: JSON.parse(text) };
  } catch {
    return { status: res.status, body: text };
  }
}

function alive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function tcpOpen(address: string, timeoutMs = 1000): Promise<boolean> {
  const i = address.lastIndexOf(':');
  return new Promise((resolve) => {
    const socket = net.connect({ host: address.slice(0, i), port: Number(address.slice(i + 1)) });
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

export class FileBackend implements Backend {
  readonly mode = 'file' as const;
  /** the controller API, when known (--controller, LEGATE_CONTROLLER, or the running instance's run.json) */
  readonly controllerApi: string | undefined;

  constructor(
    private readonly state: RunState | undefined,
    controller: string | undefined,
    /** where the running instance was looked for, for the error when it is not found */
    private readonly tried: readonly string[] = [],
  ) {
    this.controllerApi = controller ?? (process.env['LEGATE_CONTROLLER'] || undefined) ?? state?.components['controller']?.endpoints['api'];
  }

  /** Finds the running instance as every command does: --state-dir, else LEGATE_STATE_DIR, else .legate up from here. */
  static open(flags: BackendFlags): FileBackend {
    if (flags.stateDir) return new FileBackend(readRunState(flags.stateDir), flags.controller, [`--state-dir ${flags.stateDir}`]);
    const found = findStateDir();
    return new FileBackend(readRunState(found.dir), flags.controller, found.tried);
  }

  private notFound(): CliError {
    const where = this.tried.map((t) => `${t}/run.json`);
    return new CliError(
      `no running 'legate run' found (looked for ${where.join(', ') || '.legate/run.json'}); start one, ` +
        'or pass --state-dir DIR (or --controller URL for a controller without one); for a cluster, pass --kubeconfig PATH, ' +
        '--kube-context NAME or --backend kubernetes',
    );
  }

  private requireState(): RunState {
    if (!this.state) throw this.notFound();
    return this.state;
  }

  async api<T>(pathAndQuery: string): Promise<T> {
    if (!this.controllerApi) throw this.notFound();
    const url = `${this.controllerApi}${pathAndQuery}`;
    let res: Response;
    try {
      res = await fetch(url, { signal: AbortSignal.timeout(5000) });
    } catch {
      throw new CliError(`cannot reach the Legate controller at ${this.controllerApi} (is 'legate run' running? use --controller URL)`);
    }
    let body: Envelope<T>;
    try {
      body = (await res.json()) as Envelope<T>;
    } catch {
      throw new CliError(`unexpected answer from ${url}: HTTP ${res.status}`);
    }
    if (body.status !== 'ok' || body.error) throw new CliError(body.error ?? `HTTP ${res.status}`);
    return body.data as T;
  }

  async components(): Promise<ComponentHealth[]> {
    const state = this.requireState();
    const out: ComponentHealth[] = [];
    for (const [name, c] of Object.entries(state.components)) {
      const h: ComponentHealth = { name, deployed: true, running: alive(c.pid), ready: false };
      if (!h.running) {
        h.message = `process ${c.pid ?? '?'} is not running (see ${c.log})`;
        out.push(h);
        continue;
      }
      try {
        if (name === 'controller') {
          const v = await getJson(`${c.endpoints['api']}/api/v1/version`);
          h.ready = v.status === 200;
          h.version = (v.body as Envelope<{ version: string }>).data?.version ?? '';
        } else if (name === 'envoy') {
          const ready = await fetch(`${c.endpoints['admin']}/ready`, { signal: AbortSignal.timeout(3000) });
          h.ready = ready.status === 200;
          const info = await getJson(`${c.endpoints['admin']}/server_info`);
          h.version = String((info.body as { version?: string }).version ?? '').split('/')[1] ?? '';
          if (!h.ready) h.message = `Envoy is not ready (${(await ready.text()).trim()})`;
        } else if (name === 'console' && c.endpoints['http']) {
          h.ready = (await fetch(new URL('healthz', c.endpoints['http']), { signal: AbortSignal.timeout(3000) })).ok;
          h.version = state.version;
          if (!h.ready) h.message = `the console at ${c.endpoints['http']} does not answer`;
        } else if (c.endpoints['grpc']) {
          h.ready = await tcpOpen(c.endpoints['grpc']);
          h.version = state.version;
          if (!h.ready) h.message = `nothing listens on ${c.endpoints['grpc']}`;
        } else {
          h.ready = true; // an extra process of legate.values.yaml: running is all we know
        }
      } catch (err) {
        h.message = `cannot reach it: ${err instanceof Error ? err.message : String(err)}`;
      }
      out.push(h);
    }
    return out;
  }

  async proxies(): Promise<ProxyInfo[]> {
    const state = this.requireState();
    const envoy = state.components['envoy'];
    if (!envoy) return [];
    const [namespace = '', name = ''] = state.proxyRole.split('~');
    const p: ProxyInfo = {
      namespace,
      name,
      role: state.proxyRole,
      adminUrl: envoy.endpoints['admin'] ?? 'http://127.0.0.1:19000',
      httpUrl: envoy.endpoints['http'] ?? 'http://127.0.0.1:8080',
      log: envoy.log,
    };
    if (envoy.endpoints['https']) p.httpsUrl = envoy.endpoints['https'];
    return [p];
  }

  async resources(query: ResourceQuery = {}): Promise<ResourceListing> {
    const q = new URLSearchParams();
    if (query.kind) q.set('kind', query.kind);
    if (query.namespace) q.set('namespace', query.namespace);
    if (query.name) q.set('name', query.name);
    const items = await this.api<ListedResource[]>(`/api/v1/resources${q.size ? `?${q}` : ''}`);
    return { items, unavailable: [] };
  }

  async componentProblems(which: 'deployments' | 'pods', clientVersion: string): Promise<string[]> {
    const problems: string[] = [];
    for (const h of await this.components()) {
      if (which === 'deployments') {
        if (!h.deployed || !h.running) problems.push(`Deployment ${h.name} is not available! Message: ${h.message ?? 'not running'}`);
        continue;
      }
      if (!h.running) continue; // already reported under Deployments
      if (!h.ready) problems.push(`Pod ${h.name} is not ready! Message: ${h.message ?? 'not ready'}`);
      else if (h.name !== 'envoy' && h.version && h.version !== clientVersion) {
        problems.push(`Pod ${h.name} runs version ${h.version}, legatectl is ${clientVersion}`);
      }
    }
    return problems;
  }

  async proxyAdmin(proxy: ProxyInfo, pathAndQuery: string, method: 'GET' | 'POST' = 'GET'): Promise<string> {
    let res: Response;
    try {
      res = await fetch(`${proxy.adminUrl}${pathAndQuery}`, { method, signal: AbortSignal.timeout(10_000) });
    } catch {
      throw new CliError(`cannot reach Envoy's admin interface at ${proxy.adminUrl} (is the proxy running?)`);
    }
    const text = await res.text();
    if (!res.ok) throw new CliError(`Envoy admin ${pathAndQuery}: HTTP ${res.status}: ${text.trim()}`);
    return text;
  }

  logLevelResetHint(proxy: ProxyInfo): string {
    return `curl -X POST '${proxy.adminUrl}/logging?level=info'`;
  }

  async proxyLog(proxy: ProxyInfo, followIt: boolean, write: (text: string) => void): Promise<void> {
    if (!proxy.log) throw new CliError(`no log file known for proxy ${proxy.namespace}.${proxy.name}`);
    const text = fs.readFileSync(proxy.log, 'utf8');
    write(text);
    if (followIt) await follow(proxy.log, Buffer.byteLength(text), write);
  }

  async proxyUrl(selector: ProxySelector, port: string, localCluster: boolean): Promise<{ url: string; note?: string }> {
    if (localCluster) throw new CliError('-l (a node port on a cluster node) applies to the Kubernetes backend only');
    const p = await pickProxy(this, selector);
    if (port !== 'http' && port !== 'https') throw new CliError(`--port: expected http or https`);
    const recorded = port === 'https' ? p.httpsUrl : p.httpUrl;
    // the listeners the controller serves this proxy (Gateways replace the default ones), by kind
    const served = await this.api<Record<string, Record<string, unknown[]>>>(`/api/v1/served?role=${encodeURIComponent(p.role)}`);
    const listeners = Object.entries(served[p.role] ?? {}).find(([t]) => t.endsWith('.Listener'))?.[1] ?? [];
    const ports = listeners
      .map((l) => listenerPort(l))
      .filter((l): l is { port: number; tls: boolean } => l !== undefined && l.tls === (port === 'https'))
      .map((l) => l.port)
      .sort((a, b) => a - b);
    const recordedPort = recorded ? Number(new URL(recorded).port) : undefined;
    if (recorded && recordedPort !== undefined && ports.includes(recordedPort)) return { url: recorded };
    const first = ports[0];
    if (first === undefined) throw new CliError(`proxy ${p.namespace}.${p.name} serves no ${port} listener`);
    const url = `${port}://127.0.0.1:${first}`;
    const others = ports.length > 1 ? ` (also: ${ports.slice(1).join(', ')})` : '';
    return { url, note: `the ${port} listener is on port ${first}${others}, from a Gateway: the default one is not served` };
  }

  async logs(): Promise<LogSource[]> {
    const state = this.requireState();
    return Object.entries(state.components)
      .filter(([, c]) => fs.existsSync(c.log))
      .map(([component, c]) => ({ title: `${component} (${c.log})`, read: async () => fs.readFileSync(c.log, 'utf8') }));
  }

  async installObjects(): Promise<{ objects: unknown[]; problems: string[] }> {
    return { objects: [], problems: [] };
  }

  async platformVersion(): Promise<string | undefined> {
    return undefined;
  }
}

export const CLIENT_VERSION = VERSION;

/** An Envoy listener's port, and whether it terminates TLS (a filter chain with a transport socket). */
function listenerPort(listener: unknown): { port: number; tls: boolean } | undefined {
  const l = listener as {
    address?: { socket_address?: { port_value?: number } };
    filter_chains?: { transport_socket?: unknown }[];
  };
  const port = l.address?.socket_address?.port_value;
  if (port === undefined) return undefined;
  return { port, tls: (l.filter_chains ?? []).some((c) => c.transport_socket !== undefined) };
}
