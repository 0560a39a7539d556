// The controller's reader of the user's wasm module files (httpGateway.options.wasm filePath): the digest translation
// compares with the pinned sha256, read again only when the file changes, and why a file cannot be read.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { MAX_KNOWN_MODULES, moduleSha256Reader } from '../../controller/wasm-modules.js';

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

  it('remembers a bounded number of files (paths come from resources), the least recently asked forgotten first', () => {
    const read = moduleSha256Reader();
    const files = Array.from({ length: MAX_KNOWN_MODULES + 1 }, (_, i) => path.join(dir, `m${i}.wasm`));
    for (const f of files) fs.writeFileSync(f, f);
    read(files[0]!);
    for (const f of files.slice(2)) read(f);
    read(files[0]!); // asked again: the most recent now
    read(files[1]!); // one more than the bound: the least recently asked (files[2]) goes
    const reads = vi.spyOn(fs, 'readFileSync');
    try {
      read(files[0]!);
      read(files.at(-1)!);
      expect(reads).not.toHaveBeenCalled();
      expect(read(files[2]!)).toBe(sha(files[2]!));
      expect(reads).toHaveBeenCalledTimes(1);
    } finally {
      reads.mockRestore();
    }
  });
});
