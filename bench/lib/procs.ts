// Child processes of the benchmark: started in their own process group (so a `legate run` takes its
// controller and Envoy with it), optionally pinned to CPUs with taskset, always stopped at the end,
// on failure and on Ctrl-C. Also reads CPU time and memory of a pid from /proc.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';

export interface Started {
  name: string;
  child: ChildProcess;
  pid: number;
  /** stdout+stderr so far (kept short) */
  output(): string;
  alive(): boolean;
  stop(graceMs?: number): Promise<void>;
}

export interface StartOptions {
  args?: string[];
  cwd?: string;
  env?: Record<string, string>;
  /** CPU list for taskset, e.g. "0"; undefined = not pinned */
  cpus?: string | undefined;
}

const running = new Set<Started>();
let tasksetOk: boolean | undefined;

export function hasTaskset(): boolean {
  tasksetOk ??= spawnSync('taskset', ['--version'], { stdio: 'ignore' }).status === 0;
  return tasksetOk;
}

/** Command and args, prefixed with `taskset -c CPUS` when pinning is asked for and available. */
export function pinned(cpus: string | undefined, command: string, args: string[]): [string, string[]] {
  if (cpus === undefined || !hasTaskset()) return [command, args];
  return ['taskset', ['-c', cpus, command, ...args]];
}

export function startProcess(name: string, command: string, options: StartOptions = {}): Started {
  const [cmd, args] = pinned(options.cpus, command, options.args ?? []);
  // taskset execs the command, so the pid is the command's own.
  const child = spawn(cmd, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // own process group: stop() can clean up the whole tree
  });
  let out = '';
  const keep = (d: Buffer): void => {
    out += d.toString();
    if (out.length > 64_000) out = out.slice(-32_000);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  child.on('error', (err) => keep(Buffer.from(`\n[spawn error] ${err.message}\n`)));
  if (child.pid === undefined) throw new Error(`cannot start ${name} (${cmd})`);
  const pid = child.pid;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const started: Started = {
    name,
    child,
    pid,
    output: () => out,
    alive: () => child.exitCode === null && child.signalCode === null,
    stop: (graceMs = 8000) => (stopping ??= stopNow(graceMs)),
  };
  let stopping: Promise<void> | undefined;
  const stopNow = async (graceMs: number): Promise<void> => {
    running.delete(started);
    if (started.alive()) {
      // the leader first: `legate run` stops its own children in order
      try {
        process.kill(pid, 'SIGTERM');
      } catch {
        // already gone
      }
      const timer = setTimeout(() => signalGroup(pid, 'SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    }
    // anything the leader left behind in its group (e.g. Envoy if `legate run` died first)
    signalGroup(pid, 'SIGKILL');
  };
  running.add(started);
  return started;
}

function signalGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch {
    // group gone
  }
}

/** Stops every process still running (reverse start order). */
export async function stopAll(): Promise<void> {
  for (const p of [...running].reverse()) await p.stop();
}

let handlersInstalled = false;
let interrupted = false;
/** True once Ctrl-C / SIGTERM arrived: the run is being torn down, its results are not written. */
export function isInterrupted(): boolean {
  return interrupted;
}
/** Stops children on Ctrl-C / SIGTERM, and kills them on any exit. */
export function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(sig, () => {
      interrupted = true;
      process.stderr.write(`\nbench: ${sig}, stopping child processes...\n`);
      void stopAll().finally(() => process.exit(130));
    });
  }
  process.on('exit', () => {
    for (const p of running) signalGroup(p.pid, 'SIGKILL');
  });
}

// ---- /proc readers ----

let clkTck: number | undefined;
function ticksPerSecond(): number {
  if (clkTck === undefined) {
    const r = spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' });
    const n = Number(r.stdout?.trim());
    clkTck = Number.isFinite(n) && n > 0 ? n : 100;
  }
  return clkTck;
}

/** User+system CPU seconds of a process (all its threads), from /proc/<pid>/stat. */
export function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  // the command name (field 2) may hold spaces: fields after the last ')' start at field 3
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / ticksPerSecond();
}

export interface Memory {
  /** resident set now, MiB */
  rssMiB: number;
  /** peak resident set, MiB */
  hwmMiB: number;
}

export function memory(pid: number): Memory {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (key: string): number => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Machine-wide CPU seconds from /proc/stat: busy (excluding idle, iowait and steal) and steal. */
export function machineCpu(): { busy: number; steal: number } {
  const line = fs
    .readFileSync('/proc/stat', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('cpu '));
  const f = (line ?? '').trim().split(/\s+/).slice(1).map(Number);
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = f;
  return { busy: (user + nice + system + irq + softirq) / ticksPerSecond(), steal: steal / ticksPerSecond() };
}

/** CPU seconds of this process plus its children that have exited and been reaped (e.g. wrk). */
export function selfAndReapedChildrenCpu(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14])) / ticksPerSecond();
}
