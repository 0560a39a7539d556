// bin/legate.js started by an older Node re-runs itself under the pinned one (.tools/): signals sent to the
// process the user started reach the re-run, so stopping it stops everything (nothing is left running).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../support/gateway.js';
import { eventually, freePort } from '../support/util.js';

/** A `node` on PATH older than the pinned major (the machine's own), if there is one. */
function olderNode(): string | undefined {
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    const node = path.join(dir, 'node');
    if (!fs.existsSync(node)) continue;
    const v = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
    if (Number(v.replace(/^v/, '').split('.')[0]) < 24) return node;
  }
  return ['/usr/bin/node', '/usr/local/bin/node'].find(
    (n) => fs.existsSync(n) && Number(spawnSync(n, ['--version'], { encoding: 'utf8' }).stdout.trim().slice(1).split('.')[0]) < 24,
  );
}

/** The pids of `pid`'s children (from /proc). */
function children(pid: number): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === pid) out.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const old = olderNode();
// the re-run needs the pinned Node in .tools/ (make setup installs it only where the machine's Node is older)
const pinned = fs.existsSync(path.join(ROOT, '.tools')) && fs.readdirSync(path.join(ROOT, '.tools')).some((d) => d.startsWith('node-v'));

describe.skipIf(!old || !pinned)('legate under an older Node', () => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    it(`forwards ${signal} to the re-run under the pinned Node, and ends the same way`, async () => {
      const port = await freePort();
      const parent = spawn(
        old!,
        [path.join(ROOT, 'bin', 'legate.js'), 'ratelimit', '--port', String(port), '--xds-address', '127.0.0.1:1'],
        {
          stdio: 'ignore',
        },
      );
      let child: number | undefined;
      try {
        child = await eventually('the re-run under the pinned Node', () => children(parent.pid!)[0]);
        const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) =>
          parent.on('exit', (code, sig) => r({ code, signal: sig })),
        );
        parent.kill(signal);
        const end = await exited;
        expect(end.code === 0 || end.signal === signal || end.code === 128 + (signal === 'SIGTERM' ? 15 : 2)).toBe(true);
        await eventually('the re-run to be gone', () => (alive(child!) ? undefined : true), 10_000);
      } finally {
        // the re-run outlives its parent when the signal was not forwarded: it is stopped here either way
        if (child !== undefined && alive(child)) process.kill(child, 'SIGKILL');
        if (alive(parent.pid!)) parent.kill('SIGKILL');
      }
    });
  }
});
