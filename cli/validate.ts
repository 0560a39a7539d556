// `legate validate` and `legatectl validate -f`: read resource files and directories (or `-` for stdin), give every
// resource the status the controller would, and exit 1 when one would be Rejected (controller/validation/files.ts).
import fs from 'node:fs';
import path from 'node:path';
import type { RawResource } from '../controller/api/meta.js';
import { listFiles } from '../controller/source/file/source.js';
import { parseResources } from '../controller/source/parse.js';
import type { LoadError } from '../controller/source/source.js';
import { formatVerdict, validateResources } from '../controller/validation/files.js';
import { createLogger } from '../common/log.js';
import { regoChecker } from '../controller/rego-check.js';
import { DEFAULT_RENDER_OPTIONS } from '../controller/translate/render.js';
import { UsageError } from './flags.js';

/** Reads each path: a directory's resource files (recursive), a file, or `-` (stdin). */
export function readResourcePaths(paths: readonly string[]): { resources: RawResource[]; errors: LoadError[] } {
  const resources: RawResource[] = [];
  const errors: LoadError[] = [];
  const read = (file: string, shown: string): void => {
    let text: string;
    try {
      text = file === '-' ? fs.readFileSync(0, 'utf8') : fs.readFileSync(file, 'utf8');
    } catch (err) {
      errors.push({ origin: shown, message: `cannot read: ${err instanceof Error ? err.message : String(err)}` });
      return;
    }
    const parsed = parseResources(text, shown);
    resources.push(...parsed.resources);
    errors.push(...parsed.errors);
  };
  for (const p of paths) {
    if (p === '-') {
      read('-', '(stdin)');
      continue;
    }
    if (!fs.existsSync(p)) throw new UsageError(`${p}: no such file or directory`);
    if (fs.statSync(p).isDirectory()) {
      for (const file of listFiles(p)) read(file, path.relative(process.cwd(), file) || file);
    } else read(p, p);
  }
  return { resources, errors };
}

/** Validates the paths, prints the verdict, and returns the exit code: 0 valid, 1 not. */
export function validatePaths(paths: readonly string[], write: (text: string) => void, output: 'text' | 'json' = 'text'): number {
  if (!paths.length) throw new UsageError('name at least one file or directory (- for stdin)');
  const { resources, errors } = readResourcePaths(paths);
  // opaAuth Rego is compiled as the controller does, when an opa binary is here (quietly skipped otherwise)
  const regoCheck = regoChecker(createLogger('validate', { level: 'error' }));
  const verdict = validateResources(resources, errors, regoCheck ? { render: { ...DEFAULT_RENDER_OPTIONS, regoCheck } } : undefined);
  write(output === 'json' ? JSON.stringify(verdict, null, 2) + '\n' : formatVerdict(verdict));
  return verdict.ok ? 0 : 1;
}
