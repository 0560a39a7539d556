// legatectl run in the test's own process, from a scratch directory with no `legate run` and file mode forced, so
// nothing reaches a server: what unit tests of its command line share.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, vi } from 'vitest';
import { exitCodeOf, legatectl } from '../../cli/ctl/main.js';

/** Runs the file's tests from a new scratch directory (removed after), with legatectl's environment cleared. */
export function inScratchDirectory(prefix: string): void {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  const saved = { cwd: process.cwd(), env: { ...process.env } };
  beforeAll(() => {
    process.chdir(cwd);
    Object.assign(process.env, { LEGATE_STATE_DIR: '', LEGATE_CONTROLLER: '', LEGATE_BACKEND: 'file', KUBECONFIG: '/nonexistent' });
  });
  afterAll(() => {
    process.chdir(saved.cwd);
    process.env = saved.env;
    fs.rmSync(cwd, { recursive: true, force: true });
  });
}

/** Runs a command line as bin/legatectl.js would: its exit code, what it wrote, and its error line. */
export async function ctl(...args: string[]): Promise<{ status: number; stdout: string; stderr: string }> {
  let stdout = '';
  let stderr = '';
  const outSpy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => ((stdout += String(chunk)), true));
  const errSpy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => ((stderr += String(chunk)), true));
  try {
    return { status: await legatectl(args), stdout, stderr };
  } catch (err) {
    return { status: exitCodeOf(err), stdout, stderr: stderr + `legatectl: ${err instanceof Error ? err.message : String(err)}\n` };
  } finally {
    outSpy.mockRestore();
    errSpy.mockRestore();
  }
}
