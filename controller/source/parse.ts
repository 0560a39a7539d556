// YAML text -> RawResources. Pure; shared by the file source, the golden tests and offline checks.
import { CORE_SCHEMA, loadAll } from 'js-yaml';
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

const PARSE_OPTIONS = { prettyErrors: true, uniqueKeys: true } as const;

export function parseResources(text: string, file: string, defaultNamespace = 'default'): ParseResult {
  const resources: RawResource[] = [];
  const errors: ParseError[] = [];
  const docs = parseAllDocuments(text, PARSE_OPTIONS);
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
    const value = toValue(doc);
    if (value instanceof Error) {
      syntaxError = true;
      errors.push({ origin, message: `invalid YAML: ${value.message}` });
      return;
    }
    documentResources(value, origin, defaultNamespace, resources, errors);
  });
  return { resources, errors, syntaxError };
}

/**
 * A parsed document's value, or the Error that building it threw: the yaml library throws (rather
 * than reporting a document error) for an alias bomb (more than 100 alias expansions) and could for
 * other hostile input; one such document must not take the whole source, and the controller, down.
 */
function toValue(doc: { toJS(options: { maxAliasCount: number }): unknown }): unknown {
  try {
    return doc.toJS({ maxAliasCount: 100 });
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err));
  }
}

/** One document's value -> its resources (a `List` holds several) or why it holds none. */
function documentResources(value: unknown, origin: string, defaultNamespace: string, resources: RawResource[], errors: ParseError[]): void {
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
}

/** What one parse of a file read per document, for the next parse of that file to reuse. */
export interface DocumentMemo {
  /** by `<index of its first document>:<its text>` */
  readonly documents: ReadonlyMap<string, { count: number; resources: RawResource[]; errors: ParseError[] }>;
}

/**
 * parseResources for a file parsed before: only documents whose text (or position) changed are parsed
 * again; the others give the very same RawResource objects as last time, so later stages can tell at a
 * glance what did not change. Same result as parseResources; when splitting the text into documents is
 * not certain to give the same documents as the YAML parser would (directives, `...` end markers) or a
 * document does not parse (error positions are the file's), the whole text is parsed instead.
 */
export function parseResourcesReusing(
  text: string,
  file: string,
  previous: DocumentMemo | undefined,
  defaultNamespace = 'default',
): ParseResult & { memo: DocumentMemo } {
  const whole = (): ParseResult & { memo: DocumentMemo } => ({
    ...parseResources(text, file, defaultNamespace),
    memo: { documents: new Map() },
  });
  const chunks = splitDocuments(text);
  if (!chunks) return whole();
  const documents = new Map<string, { count: number; resources: RawResource[]; errors: ParseError[] }>();
  const resources: RawResource[] = [];
  const errors: ParseError[] = [];
  let index = 0;
  for (const chunk of chunks) {
    const key = `${index}:${chunk}`;
    let entry = previous?.documents.get(key);
    if (!entry) {
      const values = fastDocumentValues(chunk);
      if (!values) return whole(); // reported there, with the yaml library's messages and the file's document numbers
      entry = { count: values.length, resources: [], errors: [] };
      for (let i = 0; i < values.length; i++) {
        documentResources(values[i], `${file}#${index + i + 1}`, defaultNamespace, entry.resources, entry.errors);
      }
    }
    documents.set(key, entry);
    resources.push(...entry.resources);
    errors.push(...entry.errors);
    index += entry.count;
  }
  return { resources, errors, syntaxError: false, memo: { documents } };
}

/**
 * Where js-yaml and the yaml library read a plain scalar differently: a number too large for a double (an exponent
 * of three digits or more, or hundreds of digits) is Infinity to the yaml library and a string to js-yaml.
 */
const NUMBER_OVERFLOW = /[eE]\+?\d{3}|\d{300}/;

/**
 * A chunk's document values by js-yaml (about ten times faster than the yaml library's document model, which a
 * cold load of thousands of resources spent most of its time in), or undefined for anything that is not plain:
 * a syntax error, a duplicate key, any alias (js-yaml shares aliased nodes, so an alias bomb would blow up later,
 * when the value is serialised) or a number that may overflow. The caller then parses with the yaml library, whose
 * values for plain documents are the same (YAML 1.2 core schema; test/unit/parse-fast.test.ts compares them).
 */
export function fastDocumentValues(chunk: string): unknown[] | undefined {
  if (NUMBER_OVERFLOW.test(chunk)) return undefined;
  try {
    return loadAll(chunk, { schema: CORE_SCHEMA, maxAliases: 0 });
  } catch {
    return undefined;
  }
}

/**
 * The text of each document, cut before every `---` marker line, when that is what the YAML parser
 * would do too; undefined when a line could be a directive (`%`) or a document end marker (`...`).
 */
export function splitDocuments(text: string): string[] | undefined {
  const chunks: string[] = [];
  let start = 0;
  for (let at = 0; at < text.length;) {
    const end = text.indexOf('\n', at);
    const next = end === -1 ? text.length : end + 1;
    const c = text.charCodeAt(at);
    if (c === 0x25 /* % */ || text.startsWith('...', at)) return undefined;
    if (text.startsWith('---', at) && (at + 3 === text.length || ' \t\r\n'.includes(text[at + 3]!))) {
      if (at > start) chunks.push(text.slice(start, at));
      start = at;
    }
    at = next;
  }
  if (start < text.length) chunks.push(text.slice(start));
  return chunks;
}

function stringMap(v: Record<string, unknown>): Record<string, string> {
  return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, String(x)]));
}
