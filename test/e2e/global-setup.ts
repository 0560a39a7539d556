// The e2e suites run the built CLI (bin/legate.js -> dist/), the wasm filters (dist/wasm) and the real
// Envoy from .venv. Every process a test starts carries this run's mark in its environment (inherited from here):
// one still running when the suites end outlived its test, and fails the run (after it is stopped).
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'LEGATE_TEST_RUN';

/** The pids whose environment carries `MARK=id`, with their command lines. */
function marked(id: string): { pid: number; ppid: number; cmd: string }[] {
  const out: { pid: number; ppid: number; cmd: string }[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0');
      if (!env.includes(`${MARK}=${id}`)) continue;
      const stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      const cmd = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ').trim();
      out.push({ pid: Number(entry), ppid, cmd });
    } catch {
      // gone meanwhile, or not readable
    }
  }
  return out;
}

export default function setup(): () => Promise<void> {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'inherit' });
  for (const filter of ['bearer-check', 'graphql-check']) {
    if (!fs.existsSync(path.join(root, 'dist/wasm', `${filter}.wasm`))) execFileSync('make', ['wasm'], { cwd: root, stdio: 'inherit' });
  }
  if (!fs.existsSync(path.join(root, '.venv/bin/envoy'))) {
    throw new Error("Envoy is not installed in .venv: run 'make setup' (or ./envoy/install.sh)");
  }
  const id = randomUUID();
  process.env[MARK] = id;
  return async () => {
    // vitest's own process and its workers (still exiting) carry the mark too: only other processes are leaks
    const leaked = (): { pid: number; ppid: number; cmd: string }[] => {
      const all = marked(id);
      const ours = new Set([process.pid]);
      for (let grew = true; grew;) {
        grew = false;
        for (const p of all) {
          if (ours.has(p.pid) || !ours.has(p.ppid) || !/vitest|node_modules/.test(p.cmd)) continue;
          ours.add(p.pid);
          grew = true;
        }
      }
      return all.filter((p) => !ours.has(p.pid));
    };
    const deadline = Date.now() + 10_000;
    let left = leaked();
    while (left.length && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 250));
      left = leaked();
    }
    if (!left.length) return;
    for (const p of left) {
      try {
        process.kill(p.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    throw new Error(
      `${left.length} process(es) outlived the tests that started them (now killed):\n${left.map((p) => `  ${p.pid} ${p.cmd}`).join('\n')}`,
    );
  };
}
