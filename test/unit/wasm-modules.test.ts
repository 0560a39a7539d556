// The controller's reader of the user's wasm module files (httpGateway.options.wasm filePath): the digest translation
// compares with the pinned sha256, read again only when the file changes, and why a file cannot be read.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { moduleSha256Reader } from '../../controller/wasm-modules.js';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-wasm-modules-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
const sha = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

describe('moduleSha256Reader', () => {
  it("returns the file's SHA-256, and the new one after the file changes", () => {
    const file = path.join(dir, 'filter.wasm');
    fs.writeFileSync(file, 'module one');
    const read = moduleSha256Reader();
    expect(read(file)).toBe(sha('module one'));
    expect(read(file)).toBe(sha('module one'));
    fs.writeFileSync(file, 'module number two');
    expect(read(file)).toBe(sha('module number two'));
  });

  it('says why a path is not a readable file', () => {
    const read = moduleSha256Reader();
    expect(read(path.join(dir, 'missing.wasm'))).toEqual({ error: 'no such file on the controller' });
    expect(read(dir)).toEqual({ error: 'is not a file' });
  });
});
