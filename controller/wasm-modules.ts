// The SHA-256 of a user's wasm module file (httpGateway.options.wasm filePath), for translation to compare with
// the sha256 the Gateway pins. Translation is pure; the controller hands it this reader. A file is hashed again
// only when its size or modification time changes.
import { createHash } from 'node:crypto';
import fs from 'node:fs';

export type ModuleSha256 = (file: string) => string | { error: string };

/** Files remembered at most (paths come from resources: the least recently asked is forgotten first). */
export const MAX_KNOWN_MODULES = 256;

export function moduleSha256Reader(): ModuleSha256 {
  const known = new Map<string, { size: number; mtimeMs: number; sha256: string }>();
  return (file) => {
    try {
      const st = fs.statSync(file);
      if (!st.isFile()) return { error: 'is not a file' };
      const hit = known.get(file);
      known.delete(file);
      if (hit && hit.size === st.size && hit.mtimeMs === st.mtimeMs) {
        known.set(file, hit);
        return hit.sha256;
      }
      const sha256 = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
      known.set(file, { size: st.size, mtimeMs: st.mtimeMs, sha256 });
      if (known.size > MAX_KNOWN_MODULES) known.delete(known.keys().next().value!);
      return sha256;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      return { error: code === 'ENOENT' ? 'no such file on the controller' : `cannot be read (${code ?? String(err)})` };
    }
  };
}
