// Where legatectl gets its facts. File mode (`legate run`) today; a Kubernetes backend can implement
// the same interface later (Deployments/Pods from the API server, admin ports by port-forward).
import fs from 'node:fs';
import net from 'node:net';
import type { Envelope } from '../../common/envelope.js';
import { VERSION } from '../../common/version.js';
import { findStateDir, readRunState, type RunState } from '../paths.js';

export class CliError extends Error {}

export interface ListedResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
  status: { statuses: Record<string, { state: string; reason?: string }> };
  [extra: string]: unknown;
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
  adminUrl: string;
  httpUrl: string;
  httpsUrl?: string;
  log?: string;
}

export interface LogSource {
  component: string;
  path: string;
}

export interface Backend {
  readonly mode: 'file';
  readonly controllerApi: string | undefined;
  api<T>(pathAndQuery: string): Promise<T>;
  components(): Promise<ComponentHealth[]>;
  proxies(): Promise<ProxyInfo[]>;
  logs(): LogSource[];
  /** the admin interfaces (START_STATS_SERVER) per component, when on */
  adminUrls(): Record<string, string>;
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
    this.controllerApi = controller ?? process.env['LEGATE_CONTROLLER'] ?? state?.components['controller']?.endpoints['api'];
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
        'or pass --state-dir DIR (or --controller URL for a controller without one)',
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

  logs(): LogSource[] {
    const state = this.requireState();
    return Object.entries(state.components)
      .map(([component, c]) => ({ component, path: c.log }))
      .filter((l) => fs.existsSync(l.path));
  }

  adminUrls(): Record<string, string> {
    const state = this.requireState();
    return Object.fromEntries(
      Object.entries(state.components)
        .filter(([, c]) => c.endpoints['admin'] && !c.endpoints['http'])
        .map(([n, c]) => [n, c.endpoints['admin'] as string]),
    );
  }
}

export const CLIENT_VERSION = VERSION;
