// Where things are in a checkout: the package root, the Envoy binary, the state directory.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The package root (the directory holding package.json), from dist/ or from source. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'controller'))) return dir;
    dir = path.dirname(dir);
  }
  return process.cwd();
}

export function defaultEnvoyPath(): string {
  return process.env['LEGATE_ENVOY'] ?? path.join(packageRoot(), '.venv', 'bin', 'envoy');
}

/** The entry script to start Legate components as child processes. */
export function legateEntry(): string {
  return path.join(packageRoot(), 'bin', 'legate.js');
}

/** Where `legate run` keeps its state: LEGATE_STATE_DIR, else ./.legate. */
export function defaultStateDir(): string {
  return process.env['LEGATE_STATE_DIR'] ?? path.join(process.cwd(), '.legate');
}

/**
 * Where a running `legate run` keeps its state, as every legatectl command looks for it: LEGATE_STATE_DIR,
 * else the nearest `.legate/run.json` from the current directory up. Also says where it looked.
 */
export function findStateDir(): { dir: string; tried: string[] } {
  const fromEnv = process.env['LEGATE_STATE_DIR'];
  if (fromEnv) return { dir: fromEnv, tried: [`LEGATE_STATE_DIR=${fromEnv}`] };
  const tried: string[] = [];
  for (let dir = process.cwd(); ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, '.legate');
    tried.push(candidate);
    if (fs.existsSync(runStatePath(candidate))) return { dir: candidate, tried };
    if (path.dirname(dir) === dir) return { dir: path.join(process.cwd(), '.legate'), tried };
  }
}

/** Whether a process with this pid exists (signal 0 checks without signalling). */
export function processAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** What `legate run` records so legatectl finds every component without flags. */
export interface RunState {
  version: string;
  pid: number;
  startedAt: string;
  configDir: string;
  logDir: string;
  writeNamespace: string;
  proxyRole: string;
  components: Record<string, ComponentState>;
}

export interface ComponentState {
  pid?: number;
  log: string;
  /** name -> URL or host:port */
  endpoints: Record<string, string>;
}

export function runStatePath(stateDir: string): string {
  return path.join(stateDir, 'run.json');
}

export function readRunState(stateDir: string): RunState | undefined {
  try {
    return JSON.parse(fs.readFileSync(runStatePath(stateDir), 'utf8')) as RunState;
  } catch {
    return undefined;
  }
}
