// The Envoy bootstrap is pinned by a golden file, and Envoy itself validates it (--mode validate).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderBootstrap } from '../../controller/bootstrap/bootstrap.js';

const envoy = path.resolve(import.meta.dirname, '../../.venv/bin/envoy');

// the second with the stats listener (legate run --stats-listener-port, the chart's stats.enabled)
describe.each([
  ['gateway-proxy', undefined],
  ['gateway-proxy-stats', 8081],
])('bootstrap %s', (name, statsPort) => {
  const golden = path.join(import.meta.dirname, 'bootstrap', `${name}.out.yaml`);
  const text = renderBootstrap({
    role: 'legate-system~gateway-proxy',
    xdsHost: '127.0.0.1',
    xdsPort: 9977,
    adminHost: '127.0.0.1',
    adminPort: 19000,
    ...(statsPort ? { statsPort } : {}),
  });

  it('matches the golden file', () => {
    if (process.env['UPDATE_GOLDEN'] || !fs.existsSync(golden)) fs.writeFileSync(golden, text);
    expect(text).toBe(fs.readFileSync(golden, 'utf8'));
  });

  it('is accepted by Envoy', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'legate-bs-')), 'bootstrap.yaml');
    fs.writeFileSync(file, text);
    const r = spawnSync(envoy, ['--mode', 'validate', '-c', file, '--disable-hot-restart', '-l', 'error'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.stderr + r.stdout).toContain('configuration');
    expect(r.status).toBe(0);
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
