// Starts `legate run` the way a user does, on free loopback ports with a config directory of the
// scenario's files, and exposes what the scenarios need: pids, ports, file writes, Envoy admin.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { freePort, get, waitFor } from './net.js';
import { startProcess, type Started } from './procs.js';
import type { BenchContext, MeasuredProcess } from './types.js';

export interface RunJson {
  components: Record<string, { pid?: number; log: string; endpoints: Record<string, string> }>;
}

export interface Legate {
  configDir: string;
  stateDir: string;
  ports: { http: number; admin: number; xds: number; api: number };
  proc: Started;
  controllerPid: number;
  envoyPid: number;
  /** pid of every component in run.json (controller, envoy, graphql, extauth, ...) */
  pids: Record<string, number>;
  /** Writes a file into the watched directory atomically (write elsewhere, then rename). */
  write(file: string, text: string): void;
  /** Lines of a component's log (controller, envoy) as parsed JSON where possible. */
  logLines(component: string): Record<string, unknown>[];
  stop(): Promise<void>;
}

export function envoyPath(root: string): string {
  return process.env['LEGATE_ENVOY'] ?? path.join(root, '.venv', 'bin', 'envoy');
}

export async function startLegate(
  ctx: BenchContext,
  name: string,
  files: Record<string, string>,
  cpus: string | undefined,
  /** the default gateways' access log (`legate run --access-log`); off unless a scenario measures it */
  accessLog = 'off',
  /** more `legate run` flags (e.g. --stats-listener-port) */
  args: readonly string[] = [],
): Promise<Legate> {
  const base = fs.mkdtempSync(path.join(ctx.workDir, `${name}-`));
  const configDir = path.join(base, 'config');
  const stateDir = path.join(base, 'state');
  const staging = path.join(base, 'staging');
  for (const d of [configDir, stateDir, staging]) fs.mkdirSync(d);
  for (const [file, text] of Object.entries(files)) fs.writeFileSync(path.join(configDir, file), text);
  const ports = { http: await freePort(), admin: await freePort(), xds: await freePort(), api: await freePort() };
  // Any other port flag `legate run` has (HTTPS listener, extension services...) gets a free port too,
  // so a benchmark never collides with a gateway already running on the default ports.
  const extraPorts: string[] = [];
  for (const flag of otherPortFlags(ctx.root)) extraPorts.push(`--${flag}`, String(await freePort()));
  const proc = startProcess(`legate run (${name})`, process.execPath, {
    args: [
      path.join(ctx.root, 'bin', 'legate.js'),
      'run',
      '--config',
      configDir,
      '--state-dir',
      stateDir,
      '--http-port',
      String(ports.http),
      '--admin-port',
      String(ports.admin),
      '--xds-port',
      String(ports.xds),
      '--api-port',
      String(ports.api),
      '--access-log',
      accessLog,
      ...extraPorts,
      ...args,
    ],
    cwd: ctx.root,
    env: { LOG_LEVEL: 'info' },
    cpus,
  });
  const stop = (): Promise<void> => proc.stop();
  ctx.defer(stop);
  // `legate run` writes run.json once the controller is healthy and Envoy is ready.
  const runJson = await waitFor(
    'legate run to write run.json',
    () => {
      const file = path.join(stateDir, 'run.json');
      return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as RunJson) : undefined;
    },
    { timeoutMs: 60_000, abortIf: () => (proc.alive() ? undefined : `legate run exited:\n${proc.output().slice(-4000)}`) },
  );
  const controllerPid = runJson.components['controller']?.pid;
  const envoyPid = runJson.components['envoy']?.pid;
  if (!controllerPid || !envoyPid) throw new Error(`run.json lacks controller/envoy pids: ${JSON.stringify(runJson)}`);
  const pids = Object.fromEntries(Object.entries(runJson.components).flatMap(([k, c]) => (c.pid ? [[k, c.pid]] : [])));
  return {
    configDir,
    stateDir,
    ports,
    proc,
    controllerPid,
    envoyPid,
    pids,
    write: (file, text) => {
      const tmp = path.join(staging, file);
      fs.writeFileSync(tmp, text);
      fs.renameSync(tmp, path.join(configDir, file));
    },
    logLines: (component) => {
      let text: string;
      try {
        text = fs.readFileSync(path.join(stateDir, 'logs', `${component}.log`), 'utf8');
      } catch {
        return [];
      }
      return text
        .split('\n')
        .filter((l) => l.startsWith('{'))
        .flatMap((l) => {
          try {
            return [JSON.parse(l) as Record<string, unknown>];
          } catch {
            return [];
          }
        });
    },
    stop,
  };
}

/**
 * The processes of a `legate run` whose CPU a request through it is charged to: Envoy (proxy), every
 * extension process it started (idle ones cost ~0), and the controller (control plane, not summed).
 */
export function legateProcesses(gw: Legate): MeasuredProcess[] {
  const out: MeasuredProcess[] = [{ label: 'envoy', role: 'proxy', pid: gw.envoyPid }];
  for (const name of ['graphql', 'extauth', 'ratelimit']) {
    const pid = gw.pids[name];
    if (pid) out.push({ label: name, role: 'extension', pid });
  }
  out.push({ label: 'controller', role: 'control-plane', pid: gw.controllerPid });
  return out;
}

let portFlags: string[] | undefined;
/** `--*-port` flags of `legate run --help` beyond the four the scenarios use. */
function otherPortFlags(root: string): string[] {
  if (!portFlags) {
    const help =
      spawnSync(process.execPath, [path.join(root, 'bin', 'legate.js'), 'run', '--help'], { encoding: 'utf8', timeout: 30_000 }).stdout ??
      '';
    const known = new Set(['http-port', 'admin-port', 'xds-port', 'api-port']);
    portFlags = [...new Set([...help.matchAll(/--([a-z][a-z-]*-port)\b/g)].map((m) => m[1]!))].filter((f) => !known.has(f));
  }
  return portFlags;
}

/** Envoy's worker-thread count, from its admin /server_info. */
export async function envoyConcurrency(adminPort: number): Promise<number> {
  const r = await get(adminPort, '/server_info');
  const info = JSON.parse(r.text) as { command_line_options?: { concurrency?: number } };
  const c = info.command_line_options?.concurrency;
  if (typeof c !== 'number') throw new Error(`no concurrency in /server_info: ${r.text.slice(0, 300)}`);
  return c;
}

/** Waits until GET path (with Host) answers 200 with exactly `body`. */
export function untilServed(
  port: number,
  pathAndQuery: string,
  host: string | undefined,
  body: string,
  timeoutMs: number,
  intervalMs = 100,
  abortIf?: () => string | undefined,
): Promise<number> {
  return waitFor(
    `${host ?? '127.0.0.1'}${pathAndQuery} to answer ${JSON.stringify(body.slice(0, 60))}`,
    async () => {
      const r = await get(port, pathAndQuery, host);
      return r.status === 200 && r.text === body ? Date.now() : undefined;
    },
    { timeoutMs, intervalMs, ...(abortIf ? { abortIf } : {}) },
  );
}

/** Envoy counters by exact name (0 for a counter Envoy does not have, e.g. a wasm stat before its first use). */
export async function envoyStats(adminPort: number, names: readonly string[]): Promise<Record<string, number>> {
  const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const r = await get(adminPort, `/stats?usedonly&filter=${encodeURIComponent(`^(${names.map(escape).join('|')})$`)}`);
  if (r.status !== 200) throw new Error(`Envoy admin /stats answered ${r.status}: ${r.text.slice(0, 200)}`);
  const out: Record<string, number> = Object.fromEntries(names.map((n) => [n, 0]));
  for (const line of r.text.split('\n')) {
    const m = /^(\S+): (\d+)$/.exec(line);
    if (m && m[1]! in out) out[m[1]!] = Number(m[2]);
  }
  return out;
}
