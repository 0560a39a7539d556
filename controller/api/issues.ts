// zod issues -> the `path: message` reasons users read in a resource's status. An unknown field says
// which known field it was probably meant to be; a Gloo field Legate refuses says so and why
// (primitives.ts `notSupported`), so a typo and a missing feature never look alike.
import type { z } from 'zod';
import { NOT_SUPPORTED } from './primitives.js';

/** Formats zod issues as `path: message` lines; `schema` (the one that failed) lets unknown fields get a suggestion. */
export function formatIssues(prefix: string, error: z.ZodError, schema?: z.ZodType): string {
  return error.issues
    .map((issue) => {
      const path = pathText([prefix, ...issue.path.map(String)].filter(Boolean));
      if (issue.code === 'unrecognized_keys') {
        const known = schema ? knownKeysAt(schema, issue.path) : [];
        return issue.keys.map((k) => `${path ? path + '.' : ''}${k}: unknown field${suggestion(k, known)}`).join('; ');
      }
      if (issue.code === 'custom' && issue.message.startsWith(`${NOT_SUPPORTED}: `)) {
        return `${NOT_SUPPORTED}: ${path} is not supported by Legate (${issue.message.slice(NOT_SUPPORTED.length + 2)})`;
      }
      if (issue.code === 'invalid_type') {
        return `${path}: ${issue.message.replace(/^Invalid input: /, '')}`;
      }
      return `${path}: ${issue.message}`;
    })
    .join('; ');
}

function pathText(segments: string[]): string {
  let path = '';
  for (const segment of segments) path += /^\d+$/.test(segment) ? `[${segment}]` : path ? `.${segment}` : segment;
  return path;
}

/** `; did you mean x?` when one known field is a near miss of `key` (case, or a small edit distance). */
export function suggestion(key: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestDistance = Math.max(1, Math.floor(key.length / 3)) + 1;
  for (const candidate of known) {
    const d = candidate.toLowerCase() === key.toLowerCase() ? 0 : editDistance(key, candidate);
    if (d < bestDistance) [best, bestDistance] = [candidate, d];
  }
  return best === undefined ? '' : `; did you mean ${best}?`;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length]!;
}

interface SchemaDef {
  type: string;
  shape?: Record<string, z.ZodType>;
  innerType?: z.ZodType;
  element?: z.ZodType;
  valueType?: z.ZodType;
  options?: readonly z.ZodType[];
  in?: z.ZodType;
  out?: z.ZodType;
  getter?: () => z.ZodType;
}

const defOf = (schema: z.ZodType): SchemaDef => (schema as unknown as { _zod: { def: SchemaDef } })._zod.def;

/** The keys of the object schemas found at `path` inside `schema` (every union branch's). */
export function knownKeysAt(schema: z.ZodType, path: readonly PropertyKey[]): string[] {
  let current: z.ZodType[] = [schema];
  for (const segment of [...path, undefined]) {
    const objects: z.ZodType[] = [];
    const seen = new Set<z.ZodType>();
    const expand = (s: z.ZodType, depth: number): void => {
      if (seen.has(s) || depth > 20) return;
      seen.add(s);
      const def = defOf(s);
      const inner = def.innerType ?? def.in ?? def.getter?.();
      if (inner && def.type !== 'array' && def.type !== 'record') expand(inner, depth + 1);
      if (def.type === 'pipe' && def.out) expand(def.out, depth + 1);
      for (const o of def.options ?? []) expand(o, depth + 1);
      if (def.type === 'object' || def.type === 'array' || def.type === 'record') objects.push(s);
    };
    for (const s of current) expand(s, 0);
    if (segment === undefined) return [...new Set(objects.flatMap((o) => Object.keys(defOf(o).shape ?? {})))];
    const next: z.ZodType[] = [];
    for (const o of objects) {
      const def = defOf(o);
      if (def.type === 'object' && typeof segment === 'string' && def.shape?.[segment]) next.push(def.shape[segment]);
      if (def.type === 'array' && typeof segment === 'number' && def.element) next.push(def.element);
      if (def.type === 'record' && def.valueType) next.push(def.valueType);
    }
    current = next;
  }
  return [];
}
