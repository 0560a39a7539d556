// The edge cache's verified-header secret (docs/wasm.md "Edge cache"), kept in a file so a restarted
// controller renders the same Envoy config: a new secret would change every listener and make each
// Envoy drain its connections.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const VALID = /^[A-Za-z0-9_-]{32,256}$/;

/** The secret in `file`; a new one (written with mode 0600) when the file is missing or not a valid secret. */
export function loadOrCreateEdgeSecret(file: string): string {
  try {
    const existing = fs.readFileSync(file, 'utf8').trim();
    if (VALID.test(existing)) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const secret = randomBytes(24).toString('base64url');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${secret}\n`, { mode: 0o600 });
  fs.chmodSync(file, 0o600);
  return secret;
}
