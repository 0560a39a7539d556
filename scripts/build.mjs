// Bundles each entry point with esbuild; node_modules stay external (loaded at runtime).
import { readFileSync } from 'node:fs';
import { build } from 'esbuild';

const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));

const entries = {
  legate: 'cli/legate.ts',
  legatectl: 'cli/legatectl.ts',
};

await build({
  entryPoints: entries,
  outdir: 'dist',
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node24',
  packages: 'external',
  sourcemap: 'linked',
  logLevel: 'warning',
  define: { LEGATE_VERSION: JSON.stringify(version) },
  banner: {
    js: "import { createRequire as __legateCreateRequire } from 'node:module'; const require = __legateCreateRequire(import.meta.url);",
  },
});
