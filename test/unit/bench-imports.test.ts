// The benchmarks run outside vitest (`make bench`) but share the e2e harness: every bench module must load in a
// plain Node process (a harness module calling vitest's hooks at import once broke every scenario).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const root = path.resolve(import.meta.dirname, '../..');

function modules(dir: string): string[] {
  return fs
    .readdirSync(path.join(root, dir), { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? modules(path.join(dir, e.name)) : e.name.endsWith('.ts') ? [path.join(dir, e.name)] : []));
}

describe('bench modules', () => {
  it('load without vitest', () => {
    // run.ts and the micro benchmarks run on import; the scenarios and their library are what run.ts loads lazily
    const files = [...modules('bench/lib'), ...modules('bench/scenarios')];
    const script = files.map((f) => `await import(${JSON.stringify(path.join(root, f))});`).join('\n');
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
  }, 90_000);
});
