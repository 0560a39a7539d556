// Where the writing commands (create, add/remove route, edit, delete) put resources. File mode: the
// directory `legate run` watches (one resource per file named <kind>-<ns>-<name>.yaml for new ones;
// an existing resource is changed in the file that holds it, its comments and other documents kept,
// through the yaml package's Document API), after a validation with the directory's other resources as
// the controller would do it: nothing is written when the resource would be Rejected. Kubernetes mode:
// cli/ctl/kube-store.ts.
import fs from 'node:fs';
import path from 'node:path';
import { isMap, isSeq, parseAllDocuments, parseDocument, stringify, type Document } from 'yaml';
import { isKnownKind, type KindName } from '../../controller/api/kinds.js';
import { listFiles } from '../../controller/source/file/source.js';
import { CliError } from './backend.js';

export interface Resource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; [k: string]: unknown };
  spec?: Record<string, unknown>;
  [k: string]: unknown;
}

/** A change to one resource: plain data in Kubernetes mode, the file's YAML nodes (comments kept) in file mode. */
export interface Edit {
  value(): Resource;
  /** the length of the list at `at` (0 when missing) */
  length(at: readonly string[]): number;
  /** inserts `item` at `index` of the list at `at`, creating the list */
  insert(at: readonly string[], index: number, item: unknown): void;
  /** removes and returns item `index` of the list at `at` */
  remove(at: readonly string[], index: number): unknown;
}

export interface Store {
  readonly mode: 'file' | 'kubernetes';
  /** where new resources go without -n (the install namespace, as glooctl's gloo-system) */
  readonly defaultNamespace: string;
  /** the resources of this kind and name (in `namespace`, else in every namespace) */
  find(kind: KindName, name: string, namespace?: string): Promise<Resource[]>;
  create(r: Resource): Promise<string>;
  update(kind: KindName, namespace: string, name: string, change: (e: Edit) => void): Promise<{ where: string; value: Resource }>;
  /** the resource as text to edit, and how to save the edited text */
  editable(kind: KindName, namespace: string, name: string): Promise<{ text: string; save(text: string): Promise<string> }>;
  delete(kind: KindName, namespace: string, name: string): Promise<string>;
}

export const nsOf = (r: Resource): string => r.metadata.namespace ?? 'default';
export const label = (kind: string, namespace: string, name: string): string => `${kind} ${namespace}.${name}`;

/** Refuses a resource the controller would reject; `others` are the resources it is checked with. */
export async function validate(r: Resource, others: readonly import('../../controller/api/meta.js').RawResource[]): Promise<void> {
  const [{ parseResources }, { validateResources }] = await Promise.all([
    import('../../controller/source/parse.js'),
    import('../../controller/validation/files.js'),
  ]);
  const parsed = parseResources(stringify(r), 'legatectl');
  if (parsed.errors.length) throw new CliError(parsed.errors.map((e) => e.message).join('; '));
  const mine = parsed.resources[0];
  if (!mine) throw new CliError('no resource to write');
  const key = (x: { kind: string; metadata: { namespace: string; name: string } }) =>
    `${x.kind}/${x.metadata.namespace}/${x.metadata.name}`;
  const verdict = validateResources([...others.filter((o) => key(o) !== key(mine)), mine], []);
  const status = verdict.resources.find(
    (v) => v.kind === mine.kind && v.namespace === mine.metadata.namespace && v.name === mine.metadata.name,
  );
  if (status?.state === 'Rejected') {
    throw new CliError(
      `${label(mine.kind, mine.metadata.namespace, mine.metadata.name)} would be Rejected: ${status.reason ?? ''}; nothing written`,
    );
  }
}

/**
 * Refuses a resource whose fields do not pass its kind's schema (unknown fields, wrong types, what Legate does not
 * support). For a cluster, where the other resources are not at hand: references are the controller's to check.
 */
export async function validateShape(r: Resource): Promise<void> {
  const { kindInfo } = await import('../../controller/api/kinds.js');
  const { formatIssues } = await import('../../controller/api/issues.js');
  const info = kindInfo(r.kind as KindName);
  const [schema, value, prefix] = info.spec ? [info.spec, r.spec ?? {}, 'spec'] : [info.body, r, ''];
  const result = schema?.safeParse(value);
  if (result && !result.success) {
    const where = `${r.kind} ${nsOf(r)}.${r.metadata.name}`;
    throw new CliError(`${where} would be Rejected: ${formatIssues(prefix, result.error, schema)}; nothing written`);
  }
}

/** The kind a document is, when it is one Legate knows (Gloo's groups included). */
function docKind(o: unknown): KindName | undefined {
  const kind = (o as { kind?: unknown } | null)?.kind;
  return typeof kind === 'string' && isKnownKind(kind) ? kind : undefined;
}

function serialize(docs: readonly Document[]): string {
  return docs
    .map((d, i) => {
      const text = d.toString({ lineWidth: 0 });
      return i > 0 && !text.startsWith('---') ? `---\n${text}` : text;
    })
    .join('');
}

/** Writes through a hidden temporary file and a rename, so the watcher never reads half a file. */
function writeAtomically(file: string, text: string): void {
  const tmp = path.join(path.dirname(file), `.${path.basename(file)}.legatectl-${process.pid}`);
  fs.writeFileSync(tmp, text);
  fs.renameSync(tmp, file);
}

function getNode(doc: Document, at: readonly string[]): unknown {
  return doc.getIn(at, true);
}

class YamlEdit implements Edit {
  constructor(private readonly doc: Document) {}
  value(): Resource {
    return this.doc.toJS() as Resource;
  }
  length(at: readonly string[]): number {
    const node = getNode(this.doc, at);
    return isSeq(node) ? node.items.length : 0;
  }
  insert(at: readonly string[], index: number, item: unknown): void {
    const node = getNode(this.doc, at);
    if (!isSeq(node)) return this.doc.setIn(at, this.doc.createNode([item]));
    // a comment above the first item belongs to it, not to the list: it stays with it when one goes before it
    const first = node.items[0] as { commentBefore?: string | null } | undefined;
    if (index === 0 && first && node.commentBefore && !first.commentBefore) {
      first.commentBefore = node.commentBefore;
      node.commentBefore = null;
    }
    node.items.splice(index, 0, this.doc.createNode(item));
  }
  remove(at: readonly string[], index: number): unknown {
    const node = getNode(this.doc, at);
    if (!isSeq(node)) return undefined;
    const [removed] = node.items.splice(index, 1);
    return (removed as { toJSON?: () => unknown } | undefined)?.toJSON?.() ?? removed;
  }
}

interface Located {
  file: string;
  docs: Document[];
  index: number;
}

export class FileStore implements Store {
  readonly mode = 'file' as const;
  constructor(
    readonly dir: string,
    readonly defaultNamespace: string,
  ) {}

  private locate(kind: KindName, name: string, namespace?: string): Located[] {
    const found: Located[] = [];
    for (const file of listFiles(this.dir)) {
      let docs: Document[];
      try {
        const parsed = parseAllDocuments(fs.readFileSync(file, 'utf8'));
        if (!Array.isArray(parsed)) continue;
        docs = parsed;
      } catch {
        continue;
      }
      docs.forEach((doc, index) => {
        const o = doc.toJS() as Resource | null;
        if (!o || docKind(o) !== kind || o.metadata?.name !== name) return;
        if (namespace !== undefined && nsOf(o) !== namespace) return;
        found.push({ file, docs, index });
      });
    }
    return found;
  }

  private one(kind: KindName, namespace: string, name: string): Located {
    const [found] = this.locate(kind, name, namespace);
    if (!found) throw new CliError(`${label(kind, namespace, name)} not found in ${this.dir}`);
    return found;
  }

  private async others(): Promise<import('../../controller/api/meta.js').RawResource[]> {
    const { readResourcePaths } = await import('../validate.js');
    return readResourcePaths([this.dir]).resources;
  }

  async find(kind: KindName, name: string, namespace?: string): Promise<Resource[]> {
    return this.locate(kind, name, namespace).map((l) => l.docs[l.index]!.toJS() as Resource);
  }

  async create(r: Resource): Promise<string> {
    const kind = r.kind as KindName;
    if (this.locate(kind, r.metadata.name, nsOf(r)).length) throw new CliError(`${label(kind, nsOf(r), r.metadata.name)} already exists`);
    const file = path.join(this.dir, `${kind.toLowerCase()}-${nsOf(r)}-${r.metadata.name}.yaml`);
    if (fs.existsSync(file)) throw new CliError(`${file} already exists`);
    await validate(r, await this.others());
    writeAtomically(file, stringify(r, { lineWidth: 0 }));
    return file;
  }

  async update(kind: KindName, namespace: string, name: string, change: (e: Edit) => void): Promise<{ where: string; value: Resource }> {
    const at = this.one(kind, namespace, name);
    const doc = at.docs[at.index]!;
    const edit = new YamlEdit(doc);
    change(edit);
    await validate(edit.value(), await this.others());
    writeAtomically(at.file, serialize(at.docs));
    return { where: at.file, value: edit.value() };
  }

  async editable(kind: KindName, namespace: string, name: string): Promise<{ text: string; save(text: string): Promise<string> }> {
    const at = this.one(kind, namespace, name);
    const text = at.docs[at.index]!.toString({ lineWidth: 0 }).replace(/^---\n/, '');
    return {
      text,
      save: async (edited: string) => {
        const doc = parseDocument(edited, { prettyErrors: true, uniqueKeys: true });
        if (doc.errors.length) throw new CliError(`invalid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
        if (!isMap(doc.contents)) throw new CliError('the edited text is not one resource');
        const value = doc.toJS() as Resource;
        sameIdentity(value, kind, namespace, name);
        await validate(value, await this.others());
        at.docs[at.index] = doc;
        writeAtomically(at.file, serialize(at.docs));
        return at.file;
      },
    };
  }

  async delete(kind: KindName, namespace: string, name: string): Promise<string> {
    const at = this.one(kind, namespace, name);
    at.docs.splice(at.index, 1);
    if (at.docs.every((d) => d.contents === null)) fs.rmSync(at.file);
    else writeAtomically(at.file, serialize(at.docs));
    return at.file;
  }
}

export function sameIdentity(value: Resource, kind: KindName, namespace: string, name: string): void {
  const now = `${String(value?.kind)} ${value?.metadata?.namespace ?? 'default'}.${String(value?.metadata?.name)}`;
  if (docKind(value) !== kind || (value.metadata.namespace ?? 'default') !== namespace || value.metadata.name !== name) {
    throw new CliError(`the edit changed which resource this is (${now}, not ${label(kind, namespace, name)}); nothing written`);
  }
}
