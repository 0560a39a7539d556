// Kubernetes source: list+watch (client-node informers: resourceVersion, bookmarks, re-list on 410
// Gone) of every custom kind under Legate's groups and, where their CRDs are installed, Gloo's; plus
// Services, EndpointSlices (as Endpoints) and Secrets. Snapshots are whole, debounced, and only sent
// when a resource the pipeline reads changed (not for status writes). An informer that fails is
// restarted with backoff while its cache keeps the last objects, so served config stays.
//
// At scale: objects are trimmed on receipt (trimObject: no managedFields, status or last-applied copy
// in the caches); whether an event changed anything is decided per object (the content the pipeline
// reads, compared with that object's previous one), not by serializing every resource; and an object
// that did not change gives the same RawResource object snapshot after snapshot (as EndpointSlices the
// same Endpoints), which lets the pipeline skip what did not change (PipelineMemo).
import { createHash } from 'node:crypto';
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../../common/log.js';
import { KIND_NAMES, kindInfo } from '../../api/kinds.js';
import { resourceKey, type RawResource } from '../../api/meta.js';
import type { KubeLabelSelector } from '../../api/schemas.js';
import type { ResourceSource, SourceSnapshot } from '../source.js';
import { limitRequestRate, reuseConnections } from './connections.js';
import { endpointsFromSlices, sliceServiceKey, toRawResource, trimObject, type KubeObject } from './convert.js';

export interface KubeSourceOptions {
  kubeConfig: k8s.KubeConfig;
  logger: Logger;
  /** what else keeps the controller from being current (leader election), listed with the source's own */
  extraProblems?: () => string[];
  /** namespaces to watch; empty: all (Settings watchNamespaces) */
  namespaces?: readonly string[];
  /** ms between the first change after a quiet spell and its snapshot. Default 10 */
  quietMs?: number;
  /**
   * ms at least between two snapshots, so a burst of changes is gathered. Default 250, or what the
   * last snapshot took to handle if that is more (the controller then spends at most half of a long
   * burst translating, and Envoy gets fewer, larger updates)
   */
  debounceMs?: number;
  /** longest backoff after errors. Default 30000 */
  maxBackoffMs?: number;
}

/** One watched collection: what it lists, and how its objects become RawResources. */
interface Watched {
  path: string;
  apiVersion: string;
  kind: string;
  list: () => Promise<k8s.KubernetesListObject<KubeObject>>;
  /** group/version not served (CRD not installed): retried slowly, counted as synced */
  missing: boolean;
  synced: boolean;
  /** a restart is scheduled (an informer may report one failure twice: error event and rejection) */
  retrying: boolean;
  /** why it is not current, until it lists again */
  failure?: string;
  informer?: k8s.Informer<KubeObject> & k8s.ObjectCache<KubeObject>;
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function statusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown; response?: { statusCode?: unknown } } | undefined;
  const code = e?.code ?? e?.statusCode ?? e?.response?.statusCode;
  return typeof code === 'number' ? code : undefined;
}

export class KubeSource implements ResourceSource {
  readonly description: string;
  private readonly watched: Watched[] = [];
  private readonly log: Logger;
  /** each cached object's RawResource (an updated object is a new object in the cache) */
  private readonly raws = new WeakMap<KubeObject, RawResource>();
  /** per Service, the EndpointSlices its Endpoints were made from, and those Endpoints */
  private endpoints = new Map<string, { slices: KubeObject[]; raw: RawResource }>();
  /** per watched object (`<path> <namespace>/<name>`), a digest of what the pipeline reads of it */
  private readonly contents = new Map<string, string>();

  constructor(private readonly options: KubeSourceOptions) {
    this.log = options.logger;
    this.description = `cluster ${options.kubeConfig.getCurrentCluster()?.server ?? '(in-cluster)'}`;
    reuseConnections(options.kubeConfig);
    const custom = options.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const core = options.kubeConfig.makeApiClient(k8s.CoreV1Api);
    const discovery = options.kubeConfig.makeApiClient(k8s.DiscoveryV1Api);
    const asList = (p: Promise<unknown>) =>
      p.then((l) => {
        const list = JSON.parse(JSON.stringify(l)) as k8s.KubernetesListObject<KubeObject>;
        for (const item of list.items) trimObject(item);
        return list;
      });
    for (const kind of KIND_NAMES) {
      const info = kindInfo(kind);
      if (info.group === '') continue;
      for (const apiVersion of [`${info.group}/${info.version}`, ...info.aliases]) {
        const [group = '', version = ''] = apiVersion.split('/');
        this.add(`/apis/${apiVersion}/${info.plural}`, apiVersion, kind, () =>
          asList(custom.listClusterCustomObject({ group, version, plural: info.plural })),
        );
      }
    }
    this.add('/api/v1/services', 'v1', 'Service', () => asList(core.listServiceForAllNamespaces()));
    this.add('/api/v1/secrets', 'v1', 'Secret', () => asList(core.listSecretForAllNamespaces()));
    this.add('/api/v1/configmaps', 'v1', 'ConfigMap', () => asList(core.listConfigMapForAllNamespaces()));
    this.add('/apis/discovery.k8s.io/v1/endpointslices', 'discovery.k8s.io/v1', 'EndpointSlice', () =>
      asList(discovery.listEndpointSliceForAllNamespaces()),
    );
    // only their labels are read, for Settings watchNamespaceSelectors
    this.add('/api/v1/namespaces', 'v1', 'Namespace', () => asList(core.listNamespace()));
  }

  private add(path: string, apiVersion: string, kind: string, list: Watched['list']): void {
    this.watched.push({ path, apiVersion, kind, list, missing: false, synced: false, retrying: false });
  }

  watch(signal: AbortSignal, onSnapshot: (snapshot: SourceSnapshot) => void): void {
    const quietMs = this.options.quietMs ?? 10;
    const debounceMs = this.options.debounceMs ?? 250;
    let timer: NodeJS.Timeout | undefined;
    let dirty = true;
    /** when the next snapshot may go at the earliest */
    let next = -Infinity;
    const emit = (): void => {
      timer = undefined;
      if (signal.aborted || !dirty || !this.watched.every((w) => w.synced || w.missing)) return;
      dirty = false;
      const start = performance.now();
      onSnapshot(this.snapshot());
      const end = performance.now();
      next = end + Math.max(debounceMs, end - start);
    };
    const soon = (): void => {
      dirty = true;
      if (!timer && !signal.aborted) timer = setTimeout(emit, Math.max(quietMs, next - performance.now()));
    };
    for (const w of this.watched) this.run(w, signal, soon, 0);
    signal.addEventListener('abort', () => {
      if (timer) clearTimeout(timer);
      for (const w of this.watched) void w.informer?.stop();
    });
  }

  /** Starts (or restarts) one informer; on failure retries with exponential backoff. */
  private run(w: Watched, signal: AbortSignal, changed: () => void, attempt: number): void {
    if (signal.aborted) return;
    const maxBackoff = this.options.maxBackoffMs ?? 30_000;
    const retry = (delay: number): void => {
      if (w.retrying) return;
      w.retrying = true;
      const t = setTimeout(() => {
        w.retrying = false;
        this.run(w, signal, changed, attempt + 1);
      }, delay);
      t.unref();
    };
    if (!w.informer) {
      // client-node handles BOOKMARK events but does not ask for them: asked here, a reconnect resumes
      // from a recent resourceVersion even on a quiet collection, rather than risk 410 and a re-list
      const informer = k8s.makeInformer(this.options.kubeConfig, `${w.path}?allowWatchBookmarks=true`, w.list);
      // the informer keeps the very object it hands to these: trimmed here, trimmed in its cache
      const updated = (obj: KubeObject): void => {
        trimObject(obj);
        const id = `${w.path} ${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
        // status writes and resourceVersion bumps change nothing the pipeline reads
        const content = createHash('sha256')
          .update(JSON.stringify({ ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } }))
          .digest('base64');
        if (this.contents.get(id) === content) return;
        this.contents.set(id, content);
        changed();
      };
      informer.on(k8s.ADD, updated);
      informer.on(k8s.UPDATE, updated);
      informer.on(k8s.DELETE, (obj: KubeObject) => {
        this.contents.delete(`${w.path} ${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`);
        changed();
      });
      informer.on(k8s.ERROR, (err: unknown) => {
        if (signal.aborted) return;
        w.failure = `watch failed: ${errorText(err)}`;
        this.log.warn('watch failed; restarting it (the last objects keep serving)', { path: w.path, error: err });
        retry(Math.min(maxBackoff, 1000 * 2 ** Math.min(attempt, 5)));
      });
      w.informer = informer;
    }
    w.informer.start().then(
      () => {
        delete w.failure;
        w.synced = true;
        w.missing = false;
        attempt = 0;
        changed();
      },
      (err: unknown) => {
        if (signal.aborted) return;
        // without RBAC on namespaces only watchNamespaceSelectors is lost (problems() says so when Settings use it)
        if (statusCode(err) === 404 || (statusCode(err) === 403 && w.kind === 'Namespace')) {
          // CRD not installed (Gloo's groups usually): look again now and then
          if (!w.missing) this.log.info('API group not served; not watching it', { path: w.path });
          w.missing = true;
          changed();
          retry(maxBackoff);
          return;
        }
        const delay = Math.min(maxBackoff, 1000 * 2 ** Math.min(attempt, 5));
        w.failure = `cannot list: ${errorText(err)}`;
        this.log.warn('cannot list; retrying', { path: w.path, error: err, retryInMs: delay });
        retry(delay);
      },
    );
  }

  problems(): string[] {
    const selectorProblem =
      this.namespaceSelectors().length > 0 && this.watched.some((w) => w.kind === 'Namespace' && w.missing)
        ? ['Settings watchNamespaceSelectors: namespaces cannot be listed (RBAC: list/watch namespaces), so no namespace matches']
        : [];
    const failing = this.watched.filter((w) => w.failure !== undefined);
    // one line per distinct failure: an unreachable API server fails every watch the same way
    const byFailure = new Map<string, string[]>();
    for (const w of failing) byFailure.set(w.failure ?? '', [...(byFailure.get(w.failure ?? '') ?? []), w.path]);
    return [
      ...(this.options.extraProblems?.() ?? []),
      ...selectorProblem,
      ...[...byFailure].map(([failure, paths]) => {
        const what = paths.length === 1 ? paths[0] : `${paths.length} watches`;
        return `${what}: ${failure} (serving the last objects)`;
      }),
    ];
  }

  private snapshot(): SourceSnapshot {
    const byKey = new Map<string, RawResource>();
    const slices: KubeObject[] = [];
    const namespaces = this.watchNamespaces();
    // Settings kubernetes.rateLimits: the client's requests from now on
    const limits = (this.settings()?.spec as { kubernetes?: { rateLimits?: Record<string, unknown> } } | undefined)?.kubernetes?.rateLimits;
    const num = (v: unknown): number | undefined => (typeof v === 'number' && v >= 0 ? v : undefined);
    limitRequestRate(this.options.kubeConfig, { QPS: num(limits?.['QPS']) ?? 0, burst: num(limits?.['burst']) ?? 0 });
    for (const w of this.watched) {
      for (const obj of w.informer?.list() ?? []) {
        // Settings are always read: they say which namespaces the rest comes from
        if (w.kind === 'Namespace') continue;
        if (w.kind !== 'Settings' && !inScope(namespaces, obj.metadata?.namespace)) continue;
        if (w.kind === 'EndpointSlice') {
          slices.push(obj);
          continue;
        }
        let raw = this.raws.get(obj);
        if (!raw) {
          raw = toRawResource(obj, w.apiVersion, w.kind);
          if (raw) this.raws.set(obj, raw);
        }
        if (raw) byKey.set(resourceKey(raw.kind, raw.metadata.namespace, raw.metadata.name), raw);
      }
    }
    for (const ep of this.endpointsOf(slices)) byKey.set(resourceKey(ep.kind, ep.metadata.namespace, ep.metadata.name), ep);
    return { resources: [...byKey.values()], errors: [] };
  }

  /** endpointsFromSlices, giving back last snapshot's Endpoints of a Service whose slices are the same objects. */
  private endpointsOf(slices: readonly KubeObject[]): RawResource[] {
    const byService = new Map<string, KubeObject[]>();
    for (const slice of slices) {
      // the slices endpointsFromSlices reads, grouped as it groups them
      const key = sliceServiceKey(slice);
      if (key === undefined) continue;
      const list = byService.get(key);
      if (list) list.push(slice);
      else byService.set(key, [slice]);
    }
    const next = new Map<string, { slices: KubeObject[]; raw: RawResource }>();
    const out: RawResource[] = [];
    for (const [key, group] of byService) {
      const before = this.endpoints.get(key);
      if (before && before.slices.length === group.length && before.slices.every((s, i) => s === group[i])) {
        next.set(key, before);
        out.push(before.raw);
        continue;
      }
      for (const raw of endpointsFromSlices(group)) {
        next.set(key, { slices: group, raw });
        out.push(raw);
      }
    }
    this.endpoints = next;
    return out;
  }

  /**
   * The namespaces to read: --watch-namespaces, else the Settings' watchNamespaces (the one named
   * `default` first, as the pipeline picks it), else all. A Settings change takes effect at once:
   * every namespace is watched anyway, the filter is applied to each snapshot.
   */
  scope(): readonly string[] | undefined {
    return this.watchNamespaces();
  }

  private watchNamespaces(): readonly string[] | undefined {
    if (this.options.namespaces?.length) return this.options.namespaces;
    const listed = (this.settings()?.spec as { watchNamespaces?: unknown } | undefined)?.watchNamespaces;
    const names = Array.isArray(listed) ? listed.filter((n): n is string => typeof n === 'string') : [];
    // as Gloo: watchNamespaces, when set, wins over the selectors
    if (names.length > 0) return names;
    const selectors = this.namespaceSelectors();
    if (selectors.length === 0) return [];
    const matching = this.watched
      .filter((w) => w.kind === 'Namespace')
      .flatMap((w) => w.informer?.list() ?? [])
      .filter((ns) => selectors.some((sel) => labelsMatch(sel, ns.metadata?.labels ?? {})))
      .map((ns) => ns.metadata?.name ?? '');
    // no namespace matches: nothing but Settings is read (not everything)
    return matching.length > 0 ? matching : undefined;
  }

  private settings(): KubeObject | undefined {
    return this.watched
      .filter((w) => w.kind === 'Settings')
      .flatMap((w) => w.informer?.list() ?? [])
      .sort((a, b) => Number(b.metadata?.name === 'default') - Number(a.metadata?.name === 'default'))[0];
  }

  private namespaceSelectors(): KubeLabelSelector[] {
    const listed = (this.settings()?.spec as { watchNamespaceSelectors?: unknown } | undefined)?.watchNamespaceSelectors;
    return Array.isArray(listed) ? (listed as KubeLabelSelector[]) : [];
  }
}

/** Kubernetes label selector semantics: every matchLabels pair and every expression holds. */
export function labelsMatch(selector: KubeLabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const values = e.values ?? [];
    if (e.operator === 'In' && !(has && values.includes(labels[e.key] ?? ''))) return false;
    if (e.operator === 'NotIn' && has && values.includes(labels[e.key] ?? '')) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

/** `undefined`: no namespace is in scope (selectors that match none); empty: every namespace. */
function inScope(namespaces: readonly string[] | undefined, namespace: string | undefined): boolean {
  if (namespaces === undefined) return false;
  return namespaces.length === 0 || (namespace !== undefined && namespaces.includes(namespace));
}
