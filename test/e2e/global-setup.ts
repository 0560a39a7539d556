// The e2e suites run the built CLI (bin/legate.js -> dist/), the wasm filters (dist/wasm) and the real
// Envoy from .venv.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export default function setup(): void {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
  execFileSync(process.execPath, [path.join(root, 'scripts/build.mjs')], { cwd: root, stdio: 'inherit' });
  for (const filter of ['bearer-check', 'graphql-check']) {
    if (!fs.existsSync(path.join(root, 'dist/wasm', `${filter}.wasm`))) execFileSync('make', ['wasm'], { cwd: root, stdio: 'inherit' });
  }
  if (!fs.existsSync(path.join(root, '.venv/bin/envoy'))) {
    throw new Error("Envoy is not installed in .venv: run 'make setup' (or ./envoy/install.sh)");
  }
}
