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

/** GET on a loopback port with a chosen Host header; never throws on HTTP errors. */
export function httpGet(port: number, pathAndQuery: string, host = 'localhost'): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path: pathAndQuery, headers: { host }, timeout: 5000 }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timeout')));
  });
}

/** Starts Envoy against the xDS server on `xdsPort` and waits until its admin says ready. */
export async function startLocalEnvoy(dir: string, xdsPort: number, extraBootstrapArgs: string[] = []): Promise<LocalEnvoy> {
  const adminPort = await freePort();
  const bootstrap = spawnSync(
    process.execPath,
    [
      path.join(ROOT, 'bin', 'legate.js'),
      'bootstrap',
      '--xds-port',
      String(xdsPort),
      '--admin-port',
      String(adminPort),
      ...extraBootstrapArgs,
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
    ['-c', config, '--disable-hot-restart', '--drain-time-s', '1', '-l', 'warn', '--base-id', String(adminPort)],
    { stdio: ['ignore', log, log] },
  );
  fs.closeSync(log);
  const stop = (): Promise<void> => stopProcess(child);
  try {
    await eventually(
      'Envoy admin ready',
      async () => {
        if (child.exitCode !== null) throw new Error(`envoy exited:\n${fs.readFileSync(logFile, 'utf8').slice(-3000)}`);
        return (await httpGet(adminPort, '/ready').catch(() => ({ status: 0 }))).status === 200 ? true : undefined;
      },
      30_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { adminPort, process: child, log: () => fs.readFileSync(logFile, 'utf8'), stop };
}
