// Keeps imports flowing one way (DESIGN.md §2) and the module graph free of cycles.
// Rules are checked on relative imports of .ts files under the product folders.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const folders = ['common', 'controller', 'extensions', 'envoy', 'cli'];

/** [from-glob, forbidden-target-prefix, unless-target] */
const rules = [
  ['controller/', 'extensions/', null, 'the controller never imports extension code (share contracts via common/)'],
  ['extensions/', 'controller/', null, 'extensions never import controller code (share contracts via common/)'],
  ['controller/api/', 'controller/', 'controller/api/', 'api/ is the bottom layer of the controller'],
  ['controller/translate/', 'controller/source/', null, 'translation is pure: no sources'],
  ['controller/translate/', 'controller/xds/', 'controller/xds/types.ts', 'translation does not depend on the xDS server'],
  ['controller/source/', 'controller/translate/', null, 'sources do not translate'],
  ['controller/source/', 'controller/xds/', null, 'sources do not serve'],
  ['controller/xds/', 'controller/translate/', null, 'the xDS server only serves snapshots'],
  ['controller/xds/', 'controller/source/', null, 'the xDS server only serves snapshots'],
  ['common/', 'controller/', null, 'common/ is shared by all and depends on none'],
  ['common/', 'extensions/', null, 'common/ is shared by all and depends on none'],
  ['common/', 'cli/', null, 'common/ is shared by all and depends on none'],
];

function walk(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (e.name !== 'node_modules' && e.name !== 'wasm') walk(full, out);
    } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(full);
  }
}

const files = [];
for (const f of folders) if (fs.existsSync(path.join(root, f))) walk(path.join(root, f), files);

const importRe = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)/g;
const graph = new Map();
const problems = [];
for (const file of files) {
  const rel = path.relative(root, file);
  const text = fs.readFileSync(file, 'utf8');
  const deps = [];
  for (const m of text.matchAll(importRe)) {
    const spec = m[1] ?? m[2];
    const target = path.relative(root, path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
    deps.push(target);
    for (const [from, forbidden, unless, why] of rules) {
      if (rel.startsWith(from) && target.startsWith(forbidden) && !(unless && target.startsWith(unless))) {
        problems.push(`${rel} imports ${target}: ${why}`);
      }
    }
    // features never import each other; only the composition list (features/index.ts) imports them all
    const feature = (p) => p.match(/^controller\/translate\/features\/([^/]+)\//)?.[1];
    if (feature(rel) && feature(target) && feature(rel) !== feature(target)) {
      problems.push(`${rel} imports ${target}: features never import each other`);
    }
    if (target.startsWith('controller/translate/features/') && !rel.startsWith('controller/translate/features/')) {
      const entry = /^controller\/translate\/features\/(index|[^/]+\/index)\.ts$/.test(target);
      if (!entry) problems.push(`${rel} imports ${target}: outside code uses a feature through its index.ts`);
    }
  }
  graph.set(rel, deps);
}

// cycle detection (DFS with colours)
const colour = new Map();
const stack = [];
function visit(node) {
  colour.set(node, 1);
  stack.push(node);
  for (const dep of graph.get(node) ?? []) {
    if (!graph.has(dep)) continue;
    if (colour.get(dep) === 1) problems.push(`import cycle: ${[...stack.slice(stack.indexOf(dep)), dep].join(' -> ')}`);
    else if (!colour.get(dep)) visit(dep);
  }
  stack.pop();
  colour.set(node, 2);
}
for (const node of graph.keys()) if (!colour.get(node)) visit(node);

if (problems.length) {
  console.error(problems.join('\n'));
  process.exit(1);
}
console.log(`imports ok: ${files.length} files, no cycles, layering respected`);
