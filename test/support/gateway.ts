// Starts the whole gateway the way a user does (`legate run --config DIR`), on random loopback ports
// and a temporary config directory, and cleans every process up afterwards.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { keepLogsIfFailed } from './failures.js';
import { eventually, freePort, stopProcess } from './util.js';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const LEGATE = path.join(ROOT, 'bin', 'legate.js');
const LEGATECTL = path.join(ROOT, 'bin', 'legatectl.js');

export interface GatewayResponse {
  status: number;
  headers: Headers;
  text: string;
  json<T = Record<string, unknown>>(): T;
}

export interface RequestOptions {
  host?: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
}

export interface Gateway {
  dir: string;
  stateDir: string;
  ports: {
    http: number;
    https: number;
    admin: number;
    xds: number;
    api: number;
    graphql: number;
    extauth: number;
    ratelimit: number;
    controllerStats: number;
    extauthStats: number;
    graphqlStats: number;
    ratelimitStats: number;
    dev: number;
  };
  /** Writes (or replaces) a resource file in the watched directory. */
  write(file: string, yaml: string): void;
  remove(file: string): void;
  request(pathAndQuery: string, options?: RequestOptions): Promise<GatewayResponse>;
  /** Retries the request until `check` passes (config changes apply asynchronously). */
  until(
    pathAndQuery: string,
    check: (r: GatewayResponse) => boolean,
    options?: RequestOptions,
    timeoutMs?: number,
  ): Promise<GatewayResponse>;
  /** Runs legatectl against this gateway. */
  ctl(...args: string[]): { status: number; stdout: string; stderr: string };
  log(component: string): string;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** extra environment for legate run and its components (e.g. START_STATS_SERVER) */
  env?: Record<string, string>;
  /** extra flags for legate run */
  args?: string[];
  /** directories copied into the config directory before start: name -> source path */
  copy?: Record<string, string>;
}

export async function startGateway(files: Record<string, string> = {}, options: StartOptions = {}): Promise<Gateway> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-e2e-'));
  const configDir = path.join(dir, 'config');
  const stateDir = path.join(dir, 'state');
  fs.mkdirSync(configDir);
  for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(configDir, name), text);
  for (const [name, src] of Object.entries(options.copy ?? {})) fs.cpSync(src, path.join(configDir, name), { recursive: true });
  const ports = {
    http: await freePort(),
    https: await freePort(),
    admin: await freePort(),
    xds: await freePort(),
    api: await freePort(),
    graphql: await freePort(),
    extauth: await freePort(),
    ratelimit: await freePort(),
    controllerStats: await freePort(),
    extauthStats: await freePort(),
    graphqlStats: await freePort(),
    ratelimitStats: await freePort(),
    dev: await freePort(),
  };
  const child: ChildProcess = spawn(
    process.execPath,
    [
      LEGATE,
      'run',
      '--config',
      configDir,
      '--state-dir',
      stateDir,
      '--http-port',
      String(ports.http),
      '--https-port',
      String(ports.https),
      '--admin-port',
      String(ports.admin),
      '--xds-port',
      String(ports.xds),
      '--api-port',
      String(ports.api),
      '--graphql-port',
      String(ports.graphql),
      '--extauth-port',
      String(ports.extauth),
      '--controller-stats-port',
      String(ports.controllerStats),
      '--extauth-stats-port',
      String(ports.extauthStats),
      '--graphql-stats-port',
      String(ports.graphqlStats),
      '--ratelimit-port',
      String(ports.ratelimit),
      '--ratelimit-stats-port',
      String(ports.ratelimitStats),
      '--dev-port',
      String(ports.dev),
      ...(options.args ?? []),
    ],
    { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, LOG_LEVEL: 'debug', ...options.env } },
  );
  let agent: http.Agent | undefined;
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const stop = async (): Promise<void> => {
    agent?.destroy();
    await stopProcess(child, 'SIGTERM', 10_000);
    // a file with a failed test keeps its gateway's component logs (the cause is often in them)
    keepLogsIfFailed(ROOT, path.join(stateDir, 'logs'), `gateway-${path.basename(dir)}`);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      'legate run to start',
      () => {
        if (child.exitCode !== null) throw new Error(`legate run exited with ${child.exitCode}: ${output}`);
        return fs.existsSync(path.join(stateDir, 'run.json')) ? true : undefined;
      },
      45_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }

  // node:http rather than fetch: fetch does not let a caller set the Host header.
  agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const pool = agent;
  // A kept-alive connection Envoy closes while idle (a listener drain after a config change) can cross the next
  // request on it: an idempotent request is sent again once on a new connection, as curl and browsers do.
  const request = async (pathAndQuery: string, options: RequestOptions = {}): Promise<GatewayResponse> => {
    try {
      return await send(pathAndQuery, options);
    } catch (err) {
      const idempotent = ['GET', 'HEAD', 'OPTIONS'].includes(options.method ?? 'GET');
      if (!idempotent || !(err instanceof Error) || !(err as { reusedSocket?: boolean }).reusedSocket) throw err;
      return send(pathAndQuery, options);
    }
  };
  const send = (pathAndQuery: string, options: RequestOptions): Promise<GatewayResponse> =>
    new Promise((resolve, reject) => {
      const headers: Record<string, string> = { ...options.headers };
      if (options.host) headers['host'] = options.host;
      if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
      const req = http.request(
        { host: '127.0.0.1', port: ports.http, path: pathAndQuery, method: options.method ?? 'GET', headers, agent: pool, timeout: 10_000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            const h = new Headers();
            for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) h.set(k, Array.isArray(v) ? v.join(', ') : v);
            resolve({ status: res.statusCode ?? 0, headers: h, text, json: <T>() => JSON.parse(text) as T });
          });
          res.on('error', reject);
        },
      );
      req.on('timeout', () => req.destroy(new Error(`request ${pathAndQuery} timed out`)));
      req.on('error', (err) => {
        const code = (err as NodeJS.ErrnoException).code;
        // closed under it before any answer byte: the only case worth sending again
        if (req.reusedSocket && (code === 'ECONNRESET' || err.message === 'socket hang up')) Object.assign(err, { reusedSocket: true });
        reject(err);
      });
      if (options.body !== undefined) req.write(options.body);
      req.end();
    });

  const componentLog = (component: string): string => {
    try {
      return fs.readFileSync(path.join(stateDir, 'logs', `${component}.log`), 'utf8');
    } catch {
      return '';
    }
  };
  return {
    dir: configDir,
    stateDir,
    ports,
    write: (file, yaml) => {
      // write-then-rename, as editors and kubectl-like tools do, so the watcher never sees half a file
      const tmp = path.join(dir, `.${file}.tmp`);
      fs.writeFileSync(tmp, yaml);
      fs.renameSync(tmp, path.join(configDir, file));
    },
    remove: (file) => fs.rmSync(path.join(configDir, file), { force: true }),
    request,
    until: async (p, check, options, timeoutMs = 15_000) => {
      let last: GatewayResponse | undefined;
      try {
        return await eventually(
          `${p} to satisfy the check`,
          async () => {
            const r = await request(p, options);
            last = r;
            return check(r) ? r : undefined;
          },
          timeoutMs,
        );
      } catch (err) {
        // say what the gateway kept answering, and what each component logged last (a flake under load is
        // diagnosed from this alone)
        const tail = (c: string): string => componentLog(c).trimEnd().split('\n').slice(-5).join('\n');
        const answer = last ? `${last.status} ${last.text.slice(0, 300)}` : 'none';
        throw new Error(
          `${err instanceof Error ? err.message : String(err)}; last answer: ${answer}\n` +
            ['controller', 'extauth', 'ratelimit', 'graphql'].map((c) => `--- ${c} log (last lines):\n${tail(c)}`).join('\n'),
          { cause: err },
        );
      }
    },
    ctl: (...args) => {
      const r = spawnSync(process.execPath, [LEGATECTL, ...args], {
        encoding: 'utf8',
        env: { ...process.env, LEGATE_STATE_DIR: stateDir },
        timeout: 20_000,
      });
      return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
    },
    log: componentLog,
    stop,
  };
}
