// The writing commands' store in Kubernetes mode (cli/ctl/store.ts): server-side apply with field manager
// legatectl; `edit` replaces the object (an update with its resourceVersion), since an apply cannot remove
// fields another manager owns. Loaded only by a command that writes to a cluster.
import { parseDocument, stringify } from 'yaml';
import { canonicalApiVersion, kindInfo, type KindName } from '../../controller/api/kinds.js';
import { CliError } from './backend.js';
import { KubeApiError, type KubeClient } from './kube-client.js';
import { label, nsOf, sameIdentity, validateShape, type Edit, type Resource, type Store } from './store.js';

const enc = encodeURIComponent;

/** Plain data edited in place (Kubernetes mode). */
class ObjectEdit implements Edit {
  constructor(private readonly obj: Resource) {}
  value(): Resource {
    return this.obj;
  }
  private list(at: readonly string[], create: boolean): unknown[] | undefined {
    let node: Record<string, unknown> = this.obj;
    for (const [i, key] of at.entries()) {
      const last = i === at.length - 1;
      if (node[key] === undefined) {
        if (!create) return undefined;
        node[key] = last ? [] : {};
      }
      if (last) return Array.isArray(node[key]) ? (node[key] as unknown[]) : undefined;
      node = node[key] as Record<string, unknown>;
    }
    return undefined;
  }
  length(at: readonly string[]): number {
    return this.list(at, false)?.length ?? 0;
  }
  insert(at: readonly string[], index: number, item: unknown): void {
    this.list(at, true)?.splice(index, 0, item);
  }
  remove(at: readonly string[], index: number): unknown {
    return this.list(at, false)?.splice(index, 1)[0];
  }
}

/** What one applies: no status, none of the fields the server sets. */
function forApply(o: Resource): Resource {
  const { status: _status, ...rest } = o;
  const { uid: _u, resourceVersion: _r, generation: _g, creationTimestamp: _c, managedFields: _m, selfLink: _s, ...metadata } = o.metadata;
  return { ...rest, metadata } as Resource;
}

export class KubeStore implements Store {
  readonly mode = 'kubernetes' as const;
  constructor(
    private readonly kube: KubeClient,
    readonly defaultNamespace: string,
  ) {}

  private static apiVersions(kind: KindName): string[] {
    return [canonicalApiVersion(kind), ...kindInfo(kind).aliases];
  }

  private static path(apiVersion: string, kind: KindName, namespace?: string, name?: string): string {
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    return `${base}${namespace ? `/namespaces/${enc(namespace)}` : ''}/${kindInfo(kind).plural}${name ? `/${enc(name)}` : ''}`;
  }

  async find(kind: KindName, name: string, namespace?: string): Promise<Resource[]> {
    const found: Resource[] = [];
    for (const apiVersion of KubeStore.apiVersions(kind)) {
      try {
        if (namespace) found.push(await this.kube.json<Resource>(KubeStore.path(apiVersion, kind, namespace, name)));
        else {
          const list = await this.kube.json<{ items: Resource[] }>(
            `${KubeStore.path(apiVersion, kind)}?fieldSelector=${enc(`metadata.name=${name}`)}`,
          );
          found.push(...list.items.map((o) => ({ ...o, apiVersion, kind })));
        }
      } catch (err) {
        if (err instanceof KubeApiError && err.code === 404) continue; // not there, or that group's CRD is not installed
        throw err;
      }
    }
    return found;
  }

  private async apply(r: Resource): Promise<Resource> {
    const kind = r.kind as KindName;
    const res = await this.kube.request(
      'PATCH',
      `${KubeStore.path(r.apiVersion, kind, nsOf(r), r.metadata.name)}?fieldManager=legatectl&force=true`,
      { body: JSON.stringify(forApply(r)), contentType: 'application/apply-patch+yaml' },
    );
    if (res.status >= 300) throw this.kube.apiError(res, `apply ${label(kind, nsOf(r), r.metadata.name)}`);
    return JSON.parse(res.text) as Resource;
  }

  private async one(kind: KindName, namespace: string, name: string): Promise<Resource> {
    const [found] = await this.find(kind, name, namespace);
    if (!found) throw new CliError(`${label(kind, namespace, name)} not found in the cluster ${this.kube.describe()}`);
    return found;
  }

  async create(r: Resource): Promise<string> {
    const kind = r.kind as KindName;
    if ((await this.find(kind, r.metadata.name, nsOf(r))).length)
      throw new CliError(`${label(kind, nsOf(r), r.metadata.name)} already exists`);
    await validateShape(r);
    await this.apply(r);
    return this.kube.describe();
  }

  async update(kind: KindName, namespace: string, name: string, change: (e: Edit) => void): Promise<{ where: string; value: Resource }> {
    const edit = new ObjectEdit(forApply(await this.one(kind, namespace, name)));
    change(edit);
    await validateShape(edit.value());
    return { where: this.kube.describe(), value: await this.apply(edit.value()) };
  }

  async editable(kind: KindName, namespace: string, name: string): Promise<{ text: string; save(text: string): Promise<string> }> {
    const current = await this.one(kind, namespace, name);
    const { resourceVersion } = current.metadata;
    return {
      text: stringify(forApply(current), { lineWidth: 0 }),
      save: async (edited: string) => {
        const doc = parseDocument(edited, { prettyErrors: true, uniqueKeys: true });
        if (doc.errors.length) throw new CliError(`invalid YAML: ${doc.errors[0]!.message.split('\n')[0]}`);
        const value = doc.toJS() as Resource;
        if (!value || typeof value !== 'object') throw new CliError('the edited text is not one resource');
        sameIdentity(value, kind, namespace, name);
        await validateShape(value);
        const body = { ...value, apiVersion: current.apiVersion, metadata: { ...value.metadata, resourceVersion } };
        const res = await this.kube.request('PUT', KubeStore.path(current.apiVersion, kind, namespace, name), {
          body: JSON.stringify(body),
        });
        if (res.status >= 300) throw this.kube.apiError(res, `update ${label(kind, namespace, name)}`);
        return this.kube.describe();
      },
    };
  }

  async delete(kind: KindName, namespace: string, name: string): Promise<string> {
    const current = await this.one(kind, namespace, name);
    const res = await this.kube.request('DELETE', KubeStore.path(current.apiVersion, kind, namespace, name));
    if (res.status >= 300) throw this.kube.apiError(res, `delete ${label(kind, namespace, name)}`);
    return this.kube.describe();
  }
}
