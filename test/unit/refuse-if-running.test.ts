// `make run` refuses before it rebuilds anything when a `legate run` of this checkout is already running.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const SCRIPT = path.join(import.meta.dirname, '..', '..', 'scripts', 'refuse-if-running.mjs');
const dirs: string[] = [];

function check(state: object | undefined): { status: number | null; stderr: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-refuse-'));
  dirs.push(dir);
  if (state) fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify(state));
  const r = spawnSync(process.execPath, [SCRIPT], { encoding: 'utf8', env: { ...process.env, LEGATE_STATE_DIR: dir } });
  return { status: r.status, stderr: r.stderr };
}

afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

describe('make run: refuse-if-running', () => {
  it('refuses while the recorded legate run is alive, saying which', () => {
    const r = check({ pid: process.pid, configDir: '/some/examples' });
    expect(r.status).toBe(1);
    expect(r.stderr).toContain(`legate run is already running on /some/examples (pid ${process.pid}`);
  });

  it('goes ahead when nothing was recorded, or the recorded run is gone', () => {
    expect(check(undefined).status).toBe(0);
    const gone = spawnSync(process.execPath, ['-e', 'process.exit(0)']).pid;
    expect(check({ pid: gone, configDir: '/x' }).status).toBe(0);
  });
});
