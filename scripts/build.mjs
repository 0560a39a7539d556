// Bundles each entry point with esbuild; node_modules stay external (loaded at runtime).
import { readFileSync, rmSync } from 'node:fs';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const entries = {
  legate: 'cli/legate.ts',
  legatectl: 'cli/legatectl.ts',
};

// chunk names carry a content hash: drop the last build's so none linger
rmSync(new URL('../dist/chunks', import.meta.url), { recursive: true, force: true });

await build({
  entryPoints: entries,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  // each command imports its heavy modules when it runs (cli/commands/*.ts): with splitting they are
  // chunks of their own, so an extension process loads its service and not the controller or the others
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  target: 'node24',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  define: { LEGATE_VERSION: JSON.stringify(version) },
  banner: {
    js: "import { createRequire as __legateCreateRequire } from 'node:module'; const require = __legateCreateRequire(import.meta.url);",
  },
});
