// The one version string every Legate component and legatectl report (spec 9: they must match).
// esbuild replaces LEGATE_VERSION at build time; under tsx it falls back to package.json.
import { createRequire } from 'node:module';

declare const LEGATE_VERSION: string | undefined;

function readVersion(): string {
  if (typeof LEGATE_VERSION === 'string') return LEGATE_VERSION;
  const require = createRequire(import.meta.url);
  for (const p of ['../package.json', '../../package.json']) {
    try {
      return (require(p) as { version: string }).version;
    } catch {
      // try the next location
    }
  }
  return '0.0.0-unknown';
}

export const VERSION = readVersion();
