// legatectl starts fast: the Kubernetes client (about half a second to load) is imported only by the commands that
// reach a cluster. This walks the static imports from cli/legatectl.ts (dynamic `import()` is where loading is
// deferred) and fails if one of them reaches @kubernetes/client-node.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.join(import.meta.dirname, '..', '..');
const STATIC_IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+'([^']+)'/gm;

function staticImports(file: string): string[] {
  const text = fs.readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(STATIC_IMPORT)) {
    if (/^\s*(?:import|export)\s+type\s/.test(m[0])) continue; // erased at build
    out.push(m[1]!);
  }
  return out;
}

/** The chain of files from `entry` to `target` by static imports, or undefined. */
function pathTo(entry: string, target: string): string[] | undefined {
  const seen = new Set<string>();
  const walk = (file: string, chain: string[]): string[] | undefined => {
    if (seen.has(file)) return undefined;
    seen.add(file);
    for (const spec of staticImports(file)) {
      if (spec === target) return [...chain, file, spec];
      if (!spec.startsWith('.')) continue;
      const resolved = path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts'));
      if (!fs.existsSync(resolved)) continue;
      const found = walk(resolved, [...chain, file]);
      if (found) return found;
    }
    return undefined;
  };
  return walk(entry, []);
}

describe('legatectl start-up', () => {
  it('does not load the Kubernetes client for every command', () => {
    const chain = pathTo(path.join(ROOT, 'cli', 'legatectl.ts'), '@kubernetes/client-node');
    expect(chain?.map((f) => path.relative(ROOT, f))).toBeUndefined();
  });

  it('the walk finds the client where it is imported (the check can fail)', () => {
    expect(pathTo(path.join(ROOT, 'cli', 'ctl', 'kube-backend.ts'), '@kubernetes/client-node')).toBeDefined();
  });
});
