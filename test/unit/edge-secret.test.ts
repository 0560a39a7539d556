// The edge cache's secret file: created once (mode 0600), reused across controller starts, replaced
// when it does not hold a usable secret.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadOrCreateEdgeSecret } from '../../cli/edge-secret.js';

describe('edge secret file', () => {
  it('creates a secret readable only by its owner, and returns the same one next time', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'legate-edge-')), 'state', 'edge-secret');
    const first = loadOrCreateEdgeSecret(file);
    expect(first).toMatch(/^[A-Za-z0-9_-]{32}$/);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(loadOrCreateEdgeSecret(file)).toBe(first);
  });

  it('replaces a file that does not hold a usable secret', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'legate-edge-')), 'edge-secret');
    fs.writeFileSync(file, 'short\n');
    const secret = loadOrCreateEdgeSecret(file);
    expect(secret).not.toBe('short');
    expect(fs.readFileSync(file, 'utf8').trim()).toBe(secret);
  });
});
