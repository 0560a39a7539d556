// Bundles each entry point with esbuild; node_modules stay external (loaded at runtime).
import { copyFileSync, readFileSync, rmSync } from 'node:fs';
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

// The web console (console/web): a browser bundle in dist/console, everything in it (no CDN at run time).
// GraphiQL (React and Monaco) is an entry of its own, loaded when an explorer opens; Monaco's language
// workers are built next to it.
const consoleOut = new URL('../dist/console/', import.meta.url);
rmSync(consoleOut, { recursive: true, force: true });
const browser = {
  bundle: true,
  platform: 'browser',
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: 'linked',
  logLevel: 'warning',
  define: { 'process.env.NODE_ENV': '"production"' },
  loader: { '.ttf': 'file', '.woff': 'file', '.woff2': 'file' },
};
await Promise.all([
  build({ ...browser, entryPoints: { app: 'console/web/main.ts' }, outdir: 'dist/console' }),
  // GraphiQL, React and Monaco's maps would be ~20 MB: none
  build({ ...browser, entryPoints: { explorer: 'console/web/graphiql.ts' }, outdir: 'dist/console', sourcemap: false }),
  build({
    ...browser,
    entryPoints: {
      'workers/editor.worker': 'monaco-editor/esm/vs/editor/editor.worker.js',
      'workers/json.worker': 'monaco-editor/esm/vs/language/json/json.worker.js',
      'workers/graphql.worker': 'monaco-graphql/esm/graphql.worker.js',
    },
    outdir: 'dist/console',
    sourcemap: false,
  }),
]);
copyFileSync(new URL('../console/web/index.html', import.meta.url), new URL('index.html', consoleOut));
