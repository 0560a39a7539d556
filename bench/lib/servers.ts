// Helpers for scenarios that start their own servers: a Node script that prints a JSON ready line, and
// resources shared by several scenarios (one `legate run` serving both GraphQL queries, say), started by
// the first scenario that asks and stopped when the last one releases it.
import path from 'node:path';
import { waitFor } from './net.js';
import { startProcess, type Started } from './procs.js';
import type { BenchContext } from './types.js';

export interface NodeServer<T> {
  pid: number;
  /** the JSON object of its ready line (`{"port":N,...}`) */
  info: T;
  proc: Started;
  stop(): Promise<void>;
}

/** Starts `node <script>` (path relative to bench/) pinned to the server CPUs; resolves on its ready line. */
export async function startNodeServer<T extends { port: number }>(
  ctx: BenchContext,
  name: string,
  script: string,
  env: Record<string, string> = {},
): Promise<NodeServer<T>> {
  const proc = startProcess(name, process.execPath, {
    args: [path.join(ctx.root, 'bench', script)],
    env: { PORT: '0', ...env },
    cpus: ctx.settings.serverCpus,
  });
  ctx.defer(() => proc.stop());
  try {
    const info = await waitFor(
      `${name} to listen`,
      () => {
        const line = /^\{"port":.*\}$/m.exec(proc.output())?.[0];
        return line ? (JSON.parse(line) as T) : undefined;
      },
      { timeoutMs: 20_000, intervalMs: 20, abortIf: () => (proc.alive() ? undefined : `${name} exited:\n${proc.output().slice(-4000)}`) },
    );
    return { pid: proc.pid, info, proc, stop: () => proc.stop() };
  } catch (err) {
    await proc.stop();
    throw err;
  }
}

interface SharedEntry {
  value: Promise<{ stop(): Promise<void> }>;
  refs: number;
}

/**
 * A resource shared by several scenarios under `key`: the first call starts it, every call takes a
 * reference, and `release()` stops it once every taker has released it.
 */
export async function acquire<T extends { stop(): Promise<void> }>(
  ctx: BenchContext,
  key: string,
  start: () => Promise<T>,
): Promise<{ value: T; release(): Promise<void> }> {
  const k = `shared:${key}`;
  let entry = ctx.facts.get(k) as SharedEntry | undefined;
  if (!entry) {
    entry = { value: start(), refs: 0 };
    ctx.facts.set(k, entry);
    // a failed start is not cached: the next scenario tries again (and fails with its own message)
    entry.value.catch(() => ctx.facts.delete(k));
  }
  const mine = entry;
  mine.refs++;
  let value: T;
  try {
    value = (await mine.value) as T;
  } catch (err) {
    mine.refs--;
    throw err;
  }
  let released = false;
  return {
    value,
    release: async () => {
      if (released) return;
      released = true;
      if (--mine.refs === 0) {
        if (ctx.facts.get(k) === mine) ctx.facts.delete(k);
        await value.stop();
      }
    },
  };
}
