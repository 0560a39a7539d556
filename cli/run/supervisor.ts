// Child-process supervision for `legate run`: start, log to files, restart on crash with backoff,
// stop everything (SIGTERM, then SIGKILL) on shutdown.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from '../../common/log.js';
import { runStartLine } from '../ctl/logs.js';

export interface ProcessSpec {
  name: string;
  command: string;
  args: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** Restart when it exits unexpectedly (default true). */
  restart?: boolean;
}

interface Managed {
  spec: ProcessSpec;
  child?: ChildProcess;
  restarts: number[];
  stopping: boolean;
  log: string;
}

export class Supervisor {
  private readonly procs = new Map<string, Managed>();
  private stopping = false;
  /** Called after a crashed process was started again (it has a new pid). */
  onRestart: ((name: string) => void) | undefined;

  constructor(
    private readonly logDir: string,
    private readonly logger: Logger,
  ) {
    fs.mkdirSync(logDir, { recursive: true });
  }

  logPath(name: string): string {
    return path.join(this.logDir, `${name}.log`);
  }

  start(spec: ProcessSpec): ChildProcess {
    const managed: Managed = { spec, restarts: [], stopping: false, log: this.logPath(spec.name) };
    this.procs.set(spec.name, managed);
    // logs append across runs: where this run's part begins (legatectl debug logs --errors-only reads from here)
    fs.appendFileSync(managed.log, runStartLine(process.pid));
    return this.launch(managed);
  }

  pid(name: string): number | undefined {
    return this.procs.get(name)?.child?.pid;
  }

  private launch(m: Managed): ChildProcess {
    const out = fs.openSync(m.log, 'a');
    const child = spawn(m.spec.command, m.spec.args, {
      cwd: m.spec.cwd,
      env: { ...process.env, ...m.spec.env },
      stdio: ['ignore', out, out],
    });
    fs.closeSync(out);
    m.child = child;
    this.logger.info('started', { process: m.spec.name, pid: child.pid, log: m.log });
    child.on('error', (err) => this.logger.error('cannot start', { process: m.spec.name, error: err }));
    child.on('exit', (code, signal) => {
      if (this.stopping || m.stopping) return;
      this.logger.error('exited unexpectedly', { process: m.spec.name, code, signal, log: m.log });
      if (m.spec.restart === false) return;
      const now = Date.now();
      m.restarts = m.restarts.filter((t) => now - t < 60_000);
      if (m.restarts.length >= 5) {
        this.logger.error('restarting too often; giving up', { process: m.spec.name });
        return;
      }
      m.restarts.push(now);
      const delay = 250 * 2 ** (m.restarts.length - 1);
      setTimeout(() => {
        if (this.stopping) return;
        this.launch(m);
        this.onRestart?.(m.spec.name);
      }, delay).unref();
    });
    return child;
  }

  /** Stops all processes in reverse start order. */
  async stopAll(graceMs = 5000): Promise<void> {
    this.stopping = true;
    const all = [...this.procs.values()].reverse();
    await Promise.all(all.map((m) => stopChild(m.child, graceMs)));
  }
}

export function stopChild(child: ChildProcess | undefined, graceMs: number): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
