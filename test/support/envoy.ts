// A real Envoy (the project's .venv one) bootstrapped by `legate bootstrap` to a controller started
// by the test, on a random admin port. Used where no `legate run` supervises Envoy (the Kubernetes
// suites). stop() ends it; its log stays in the test's directory.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ROOT } from './gateway.js';
import { eventually, freePort, stopProcess } from './util.js';

export interface LocalEnvoy {
  adminPort: number;
  process: ChildProcess;
  log(): string;
  stop(): Promise<void>;
}

/** GET on a port (of 127.0.0.1 unless `address`) with a chosen Host header; never throws on HTTP errors. */
export function httpGet(
  port: number,
  pathAndQuery: string,
  host = 'localhost',
  address = '127.0.0.1',
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: address, port, path: pathAndQuery, headers: { host }, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

export interface LocalEnvoyOptions {
  /** where Envoy's admin listens (default 127.0.0.1), e.g. a test network address a pod IP points at */
  adminHost?: string;
  /** Envoy's log level (default warn) */
  logLevel?: string;
}

/** Starts Envoy against the xDS server on `xdsPort` and waits until its admin says ready. */
export async function startLocalEnvoy(dir: string, xdsPort: number, options: LocalEnvoyOptions = {}): Promise<LocalEnvoy> {
  const adminPort = await freePort();
  const adminHost = options.adminHost ?? '127.0.0.1';
  const bootstrap = spawnSync(
    process.execPath,
    [
      ...[path.join(ROOT, 'bin', 'legate.js'), 'bootstrap', '--xds-port', String(xdsPort)],
      ...['--admin-host', adminHost, '--admin-port', String(adminPort)],
    ],
    { encoding: 'utf8' },
  );
  if (bootstrap.status !== 0) throw new Error(`legate bootstrap failed: ${bootstrap.stderr}`);
  const config = path.join(dir, `envoy-${adminPort}.yaml`);
  const logFile = path.join(dir, `envoy-${adminPort}.log`);
  fs.writeFileSync(config, bootstrap.stdout);
  const log = fs.openSync(logFile, 'a');
  const child = spawn(
    path.join(ROOT, '.venv/bin/envoy'),
    // drained as legate run drains (cli/commands/run.ts): every old connection told to close at once
    [
      '-c',
      config,
      '--disable-hot-restart',
      '--drain-time-s',
      '1',
      '--drain-strategy',
      'immediate',
      '-l',
      options.logLevel ?? 'warn',
    ].concat(['--base-id', String(adminPort)]),
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const stop = (): Promise<void> => stopProcess(child);
  try {
    await eventually(
      'Envoy admin ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`envoy exited:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
        return (await httpGet(adminPort, '/ready', 'localhost', adminHost).catch(() => ({ status: 0 }))).status === 200 ? true : undefined;
      },
      30_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { adminPort, process: child, log: () => fs.readFileSync(logFile, 'utf8'), stop };
}
