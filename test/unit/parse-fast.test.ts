// The file source parses plain YAML documents with js-yaml (fast) and anything else with the yaml library (its
// messages, alias limits): both must give the same documents for what js-yaml accepts, or a resource would
// change meaning with the parser that read it. Compared on every YAML file of the repository, document by
// document, and on scalars where YAML parsers are known to differ.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { fastDocumentValues, parseResources, parseResourcesReusing, splitDocuments } from '../../controller/source/parse.js';

const root = path.resolve(import.meta.dirname, '../..');

function yamlFiles(dir: string): string[] {
  return fs.readdirSync(path.join(root, dir), { withFileTypes: true }).flatMap((e) => {
    if (e.name.startsWith('.') || e.name === 'node_modules' || e.name === 'dist') return [];
    const rel = path.join(dir, e.name);
    if (e.isDirectory()) return yamlFiles(rel);
    return /\.ya?ml$/.test(e.name) ? [rel] : [];
  });
}

function bothParsers(chunk: string): { fast: unknown[] | undefined; reference: unknown[] | undefined } {
  const fast = fastDocumentValues(chunk);
  const docs = parseAllDocuments(chunk, { uniqueKeys: true });
  const reference = Array.isArray(docs) && !docs.some((d) => d.errors.length) ? docs.map((d) => d.toJS({ maxAliasCount: 100 })) : undefined;
  return { fast, reference };
}

const TRICKY = [
  'a: 0o17\nb: 0x1F\nc: 017\nd: 1_000\ne: +12\nf: -0\ng: 1e3\nh: .inf\ni: -.Inf\nj: .nan\nk: 1.0\nl: 12345678901234567890\n',
  // numbers too large for a double: Infinity to the yaml library, a string to js-yaml
  `a: 1e400\nb: -1e400\nc: 1.8e308\nd: ${'9'.repeat(400)}\ne: 1.7976931348623157e308\n`,
  'routes:\n  - matchers: [{ prefix: 1e400 }]\n',
  'a: yes\nb: no\nc: on\nd: off\ne: True\nf: FALSE\ng: y\nh: ~\ni: null\nj: Null\nk:\n',
  'a: 2024-01-01\nb: 2024-01-01T10:00:00Z\nc: 12:30:45\nd: 1:20\n',
  'a: "x\\ty"\nb: \'it\'\'s\'\nc: |\n  line\n  two\nd: >-\n  folded\n  text\ne: "\\u00e9"\n',
  '? complex\n: value\n"1": one\n2: two\n',
  '__proto__: { polluted: true }\nconstructor: x\n',
  'a: !!str 12\nb: !!int "7"\n',
  'list:\n- a\n-   - b\n    - c\n- {x: 1, y: [1, 2]}\n',
  '# only a comment\n',
  '',
  '---\n',
  '--- # c\nkind: A\n',
  'a: &x 1\nb: *x\n',
  'a: 1\na: 2\n',
  'a: [1, 2\n',
  'key with spaces: v\n"quoted: key": v\n',
];

describe('fast YAML parse', () => {
  it('gives the yaml library’s values for every YAML document in the repository', () => {
    let compared = 0;
    for (const file of [...yamlFiles('examples'), ...yamlFiles('test'), ...yamlFiles('install'), ...yamlFiles('bench')]) {
      const text = fs.readFileSync(path.join(root, file), 'utf8');
      if (/\{\{/.test(text)) continue; // Helm templates are not YAML until rendered
      for (const chunk of splitDocuments(text) ?? []) {
        const { fast, reference } = bothParsers(chunk);
        if (fast === undefined) continue; // the yaml library parses it (and reports its errors)
        expect(reference, `${file}: js-yaml accepted a document the yaml library refuses:\n${chunk.slice(0, 200)}`).toBeDefined();
        expect(fast, file).toEqual(reference);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('gives the same values for scalars parsers are known to read differently, or leaves them to the yaml library', () => {
    for (const chunk of TRICKY) {
      const { fast, reference } = bothParsers(chunk);
      if (fast !== undefined) expect(fast, chunk).toEqual(reference);
    }
  });

  it('leaves aliases, duplicate keys and bad YAML to the yaml library (its messages)', () => {
    for (const chunk of ['a: &x 1\nb: *x\n', 'a: 1\na: 2\n', 'a: [1, 2\n']) expect(bothParsers(chunk).fast, chunk).toBeUndefined();
    const text = 'apiVersion: v1\nkind: A\nmetadata: {name: a}\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\nspec: {x: 1, x: 2}\n';
    expect(parseResourcesReusing(text, 'f.yaml', undefined).errors).toEqual(parseResources(text, 'f.yaml').errors);
  });

  it('numbers documents as the yaml library does (comments-only and empty documents)', () => {
    const text = [
      '# header\n---\napiVersion: v1\nkind: A\nmetadata: {name: a}\n',
      '---\n---\n# nothing\n---\napiVersion: v1\nkind: B\nmetadata: {name: b}\n',
    ].join('');
    const fast = parseResourcesReusing(text, 'f.yaml', undefined);
    const reference = parseResources(text, 'f.yaml');
    expect(fast.resources.map((r) => r.origin)).toEqual(reference.resources.map((r) => r.origin));
    expect(fast.resources).toEqual(reference.resources);
  });
});
