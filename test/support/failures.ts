// Which test files had a failing test (failures-setup.ts, a setup file of the e2e project, counts them), so the
// harness keeps the logs of the processes a failed file started instead of deleting them with their directory.
// Free of vitest imports: the benchmarks use the harness outside vitest.
import fs from 'node:fs';
import path from 'node:path';

export const failures = { count: 0 };

/**
 * Moves `logDir` into `<repo>/.cache/e2e-failures/<name>-<time>/` when a test of this file failed, and says where;
 * returns whether it did.
 */
export function keepLogsIfFailed(root: string, logDir: string, name: string): boolean {
  if (failures.count === 0 || !fs.existsSync(logDir)) return false;
  const kept = path.join(root, '.cache', 'e2e-failures', `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}`);
  fs.mkdirSync(path.dirname(kept), { recursive: true });
  fs.cpSync(logDir, kept, { recursive: true });
  process.stderr.write(`a test failed: the logs of ${name} are kept in ${kept}\n`);
  return true;
}
