// The last accepted resources on disk (controller/state/accepted.ts): written on change, never
// Secrets, read back validated.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import type { RawResource } from '../../controller/api/meta.js';
import { validateResource, type LegateResource } from '../../controller/api/resources.js';
import { AcceptedWriter, loadAccepted } from '../../controller/state/accepted.js';

const logger = createLogger('test', { level: 'error' });

function accepted(...raws: RawResource[]): Map<string, LegateResource> {
  return new Map(
    raws.map((raw) => {
      const r = validateResource(raw);
      if (!r.ok) throw new Error(r.reason);
      return [`${raw.kind}/${raw.metadata.namespace}/${raw.metadata.name}`, r.resource];
    }),
  );
}

const upstream: RawResource = {
  apiVersion: 'legate.dev/v1',
  kind: 'Upstream',
  metadata: { name: 'app', namespace: 'legate-system' },
  spec: { static: { hosts: [{ addr: '127.0.0.1', port: 1 }] } },
  body: {},
  origin: 'app.yaml#1',
};
const secret: RawResource = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 's', namespace: 'legate-system' },
  body: { stringData: { token: 'never-on-disk' } },
  origin: 'app.yaml#2',
};

describe('accepted store', () => {
  it('writes the accepted versions without Secrets and reads them back', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-accepted-'));
    const file = path.join(dir, 'accepted.json');
    const writer = new AcceptedWriter(file, logger);
    writer.update(accepted(upstream, secret));
    writer.flush();
    expect(fs.readFileSync(file, 'utf8')).not.toContain('never-on-disk');
    const back = loadAccepted(file, logger);
    expect([...back.keys()]).toEqual(['Upstream/legate-system/app']);
    expect(back.get('Upstream/legate-system/app')?.raw.origin).toBe('app.yaml#1');
    fs.rmSync(dir, { recursive: true });
  });

  it('starts empty from a missing or damaged file, and drops versions that no longer validate', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-accepted-'));
    const file = path.join(dir, 'accepted.json');
    expect(loadAccepted(file, logger).size).toBe(0);
    fs.writeFileSync(file, '{not json');
    expect(loadAccepted(file, logger).size).toBe(0);
    fs.writeFileSync(
      file,
      JSON.stringify({ format: 1, resources: [upstream, { ...upstream, metadata: { name: 'bad', namespace: 'x' }, spec: 5 }] }),
    );
    expect([...loadAccepted(file, logger).keys()]).toEqual(['Upstream/legate-system/app']);
    fs.rmSync(dir, { recursive: true });
  });
});
