import type { ChildProcess } from 'node:child_process';
import net from 'node:net';

/**
 * A port free to listen on, for a process the test starts. Taken below Linux's ephemeral range
 * (32768-60999): a port the kernel hands out for listen(0) is also what it hands out as the source port
 * of outgoing connections, and with many tests connecting in parallel one of them took such a port
 * between this check and the process binding it ("port(s) in use"). Each vitest worker draws from its own
 * slice of the range and never hands out a port twice in a row of recent ones: a gateway asks for a dozen ports
 * before any is bound, and two equal draws made two of its processes fight over one port.
 */
export async function freePort(): Promise<number> {
  const pool = Math.max(1, Number(process.env['VITEST_POOL_ID'] ?? '1')) - 1;
  const slice = 1500;
  const base = 20_000 + (pool % 8) * slice;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = base + Math.floor(Math.random() * slice);
    if (recent.has(port) || !(await canListen(port))) continue;
    recent.add(port);
    // forget the oldest once many are out: their tests are long over
    if (recent.size > 600) recent.delete(recent.values().next().value!);
    return port;
  }
  throw new Error(`no free port found in ${base}-${base + slice - 1}`);
}

/** Ports handed out by this worker, oldest first. */
const recent = new Set<number>();

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = net.createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns something other than undefined (or stops throwing). */
export async function eventually<T>(what: string, fn: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${last ? `: ${last instanceof Error ? last.message : String(last)}` : ''}`);
    await sleep(100);
  }
}

/** Stops a child: `signal` first, SIGKILL after `graceMs`; resolves once it has exited. */
export async function stopProcess(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM', graceMs = 5000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill(signal);
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
