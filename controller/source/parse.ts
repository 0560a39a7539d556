// YAML text -> RawResources. Pure; shared by the file source, the golden tests and offline checks.
import { parseAllDocuments } from 'yaml';
import type { RawResource } from '../api/meta.js';

export interface ParseError {
  origin: string;
  message: string;
}

export interface ParseResult {
  resources: RawResource[];
  errors: ParseError[];
  /** True when the text is not valid YAML: callers keep the file's previous resources. */
  syntaxError: boolean;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function parseResources(text: string, file: string, defaultNamespace = 'default'): ParseResult {
  const resources: RawResource[] = [];
  const errors: ParseError[] = [];
  const docs = parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true });
  const list = Array.isArray(docs) ? docs : [];
  let syntaxError = !Array.isArray(docs);
  list.forEach((doc, i) => {
    const origin = `${file}#${i + 1}`;
    if (doc.errors.length) {
      syntaxError = true;
      const first = doc.errors[0];
      const pos = first?.linePos?.[0];
      errors.push({
        origin,
        // prettyErrors end the first line with the position and a colon before an excerpt: said once here
        message: `invalid YAML${pos ? ` at line ${pos.line}, column ${pos.col}` : ''}: ${(first?.message.split('\n')[0] ?? 'parse error')
          .replace(/ at line \d+, column \d+:?$/, '')
          .replace(/:$/, '')}`,
      });
      return;
    }
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (value === null || value === undefined) return; // empty document
    const items = isRecord(value) && value['kind'] === 'List' && Array.isArray(value['items']) ? (value['items'] as unknown[]) : [value];
    items.forEach((item, j) => {
      const where = items.length > 1 ? `${origin}.items[${j}]` : origin;
      if (!isRecord(item)) {
        errors.push({ origin: where, message: 'a resource must be a mapping with apiVersion, kind, metadata' });
        return;
      }
      const { apiVersion, kind, metadata, spec, status: _status, ...rest } = item;
      if (typeof apiVersion !== 'string' || !apiVersion) return void errors.push({ origin: where, message: 'apiVersion: required string' });
      if (typeof kind !== 'string' || !kind) return void errors.push({ origin: where, message: 'kind: required string' });
      if (!isRecord(metadata) || typeof metadata['name'] !== 'string' || !metadata['name']) {
        return void errors.push({ origin: where, message: `${kind}: metadata.name: required string` });
      }
      const namespace = typeof metadata['namespace'] === 'string' && metadata['namespace'] ? metadata['namespace'] : defaultNamespace;
      const meta: RawResource['metadata'] = { name: metadata['name'], namespace };
      if (isRecord(metadata['labels'])) meta.labels = stringMap(metadata['labels']);
      if (isRecord(metadata['annotations'])) meta.annotations = stringMap(metadata['annotations']);
      resources.push({ apiVersion, kind, metadata: meta, spec, body: rest, origin: where });
    });
  });
  return { resources, errors, syntaxError };
}

function stringMap(v: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, String(x)]));
}
