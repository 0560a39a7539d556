import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { runPipeline } from '../../controller/pipeline.js';
import { FileSource } from '../../controller/source/file/source.js';

let dir: string;
const quiet = createLogger('test', { write: () => undefined });
const vs = (name: string) =>
  `apiVersion: gateway.legate.dev/v1\nkind: VirtualService\nmetadata: { name: ${name}, namespace: default }\nspec: { virtualHost: {} }\n`;
const write = (file: string, text: string) => {
  fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
  fs.writeFileSync(path.join(dir, file), text);
  // make sure the stamp changes even within one mtime tick
  const t = new Date(Date.now() + Math.random() * 1000);
  fs.utimesSync(path.join(dir, file), t, t);
};

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-src-'));
});
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('FileSource', () => {
  it('loads many resources per file and from subdirectories, ignoring other files', () => {
    write('a.yaml', vs('one') + '---\n' + vs('two'));
    write('nested/b.yml', vs('three'));
    write('notes.txt', 'not yaml');
    write('legate.values.yaml', 'processes: []\n');
    const { snapshot } = new FileSource(dir, quiet).scan();
    expect(snapshot.resources.map((r) => r.metadata.name).sort()).toEqual(['one', 'three', 'two']);
    expect(snapshot.errors).toEqual([]);
  });

  it('keeps the last good resources of a file that stops parsing, and reports where', () => {
    const src = new FileSource(dir, quiet);
    write('a.yaml', vs('one'));
    write('b.yaml', vs('other'));
    src.scan();
    write('a.yaml', 'apiVersion: [oops\n');
    const { snapshot, changed } = src.scan();
    expect(changed).toBe(true);
    expect(snapshot.resources.map((r) => r.metadata.name).sort()).toEqual(['one', 'other']);
    expect(snapshot.errors).toHaveLength(1);
    expect(snapshot.errors[0]!.origin).toBe('a.yaml#1');
    expect(snapshot.errors[0]!.message).toMatch(/invalid YAML at line \d+, column \d+/);
    // the position once, and no dangling colon
    expect(snapshot.errors[0]!.message.match(/line \d+/g)).toHaveLength(1);
    expect(snapshot.errors[0]!.message).not.toMatch(/:$/);
    // the kept resources say why they are the last version read
    const kept = snapshot.resources.find((r) => r.metadata.name === 'one');
    expect(kept?.loadError).toMatch(/^its file does not load: a\.yaml#1: invalid YAML at line/);
    expect(snapshot.resources.find((r) => r.metadata.name === 'other')?.loadError).toBeUndefined();
  });

  it('shows a resource whose file stops loading as Rejected, its last version serving', () => {
    const src = new FileSource(dir, quiet);
    write('a.yaml', vs('one'));
    const first = runPipeline({ resources: src.scan().snapshot.resources, lastAccepted: new Map() });
    expect(first.listed.get('VirtualService/default/one')?.status.state).toBe('Accepted');
    write('a.yaml', 'apiVersion: [oops\n');
    const second = runPipeline({ resources: src.scan().snapshot.resources, lastAccepted: first.accepted });
    const status = second.listed.get('VirtualService/default/one')?.status;
    expect(status?.state).toBe('Rejected');
    expect(status?.reason).toMatch(/its file does not load: a\.yaml#1: invalid YAML .*\(serving the last accepted version\)$/);
    expect(second.xds.get('legate-system~gateway-proxy')).toBeDefined();
  });

  it('reports documents that are not resources without dropping the rest of the file', () => {
    write('a.yaml', 'kind: VirtualService\n---\n' + vs('ok') + '---\n- a list\n');
    const { snapshot } = new FileSource(dir, quiet).scan();
    expect(snapshot.resources.map((r) => r.metadata.name)).toEqual(['ok']);
    expect(snapshot.errors.map((e) => e.message)).toEqual([
      'apiVersion: required string',
      'a resource must be a mapping with apiVersion, kind, metadata',
    ]);
  });

  it('lets a later file replace a resource with the same kind, namespace and name, and says so', () => {
    write('a.yaml', vs('same'));
    write('b.yaml', vs('same').replace('virtualHost: {}', 'virtualHost: { domains: [b] }'));
    const { snapshot } = new FileSource(dir, quiet).scan();
    expect(snapshot.resources).toHaveLength(1);
    expect(snapshot.resources[0]!.origin).toBe('b.yaml#1');
    expect(snapshot.errors[0]!.message).toContain('also defined in a.yaml#1');
  });

  it('drops the resources of a deleted file and reports no change when nothing changed', () => {
    const src = new FileSource(dir, quiet);
    write('a.yaml', vs('one'));
    src.scan();
    expect(src.scan().changed).toBe(false);
    fs.rmSync(path.join(dir, 'a.yaml'));
    const { snapshot, changed } = src.scan();
    expect(changed).toBe(true);
    expect(snapshot.resources).toEqual([]);
  });
});
