// legatectl against a cluster: resources and their statuses straight from the API server (every group
// Legate reads, Gloo's included), Deployments and Pods of the install namespace, the gateway-proxy
// Service's address, pod logs through the pod logs API, and the controller API and Envoy's admin
// interface through the API server's pod proxy (`pods/NAME:PORT/proxy/…`: the API server dials the
// pod's IP itself, so no port-forward and no local port is needed).
import { canonicalApiVersion, KIND_NAMES, kindInfo, type KindName } from '../../controller/api/kinds.js';
import type { Envelope } from '../../common/envelope.js';
import { DISCOVERED_BY, DISCOVERED_BY_LABEL } from '../../controller/discovery/kube.js';
import type { Backend, ListedResource, LogSource, ProxyInfo, ProxySelector, ResourceListing, ResourceQuery } from './backend.js';
import { CliError } from './errors.js';
import { asKubeStatus, KubeApiError, KubeClient, type KubeResponse, type KubeTarget } from './kube-client.js';
import {
  containerPort,
  deploymentProblems,
  LABELS,
  podProblems,
  PORTS,
  preferReady,
  serviceUrl,
  type Deployment,
  type KubeList,
  type Node,
  type Pod,
  type Service,
} from './kube-health.js';

export interface KubeBackendOptions extends KubeTarget {
  /** where Legate is installed: its Deployments, Pods and Services (-n, --install-namespace) */
  namespace: string;
  /** the label (key, or key=value) that marks Legate's pods, as glooctl's -p (default `legate`) */
  podSelector: string;
  /** why this backend was chosen, when the user did not ask for it (said in errors) */
  chosenBecause?: string | undefined;
}

/** Kinds only the controller knows: generated Proxies, and core kinds (no status subresource; Secrets redacted). */
const CONTROLLER_KINDS: readonly KindName[] = ['Proxy', 'Service', 'Endpoints', 'Secret'];

/** The custom kinds stored in the API server, each under Legate's group and its Gloo alias. */
function storedKinds(): { kind: KindName; apiVersions: string[]; plural: string }[] {
  return KIND_NAMES.filter((k) => kindInfo(k).group !== '' && !CONTROLLER_KINDS.includes(k)).map((kind) => ({
    kind,
    apiVersions: [canonicalApiVersion(kind), ...kindInfo(kind).aliases],
    plural: kindInfo(kind).plural,
  }));
}

interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; managedFields?: unknown; [k: string]: unknown };
  spec?: Record<string, unknown>;
  status?: Record<string, unknown>;
  [k: string]: unknown;
}

/** An object as kubectl shows it (without managedFields), with `status.statuses` always there. */
function listed(o: KubeObject, apiVersion: string, kind: string): ListedResource {
  const { managedFields: _managed, ...metadata } = o.metadata;
  const status = (o.status ?? {}) as ListedResource['status'];
  return {
    ...o,
    apiVersion: o.apiVersion ?? apiVersion,
    kind: o.kind ?? kind,
    metadata: { ...metadata, namespace: o.metadata.namespace ?? '' },
    status: { ...status, statuses: status.statuses ?? {} },
  };
}

function withoutManagedFields(o: KubeObject): KubeObject {
  const { managedFields: _managed, ...metadata } = o.metadata;
  return { ...o, metadata };
}

const enc = encodeURIComponent;

export class KubeBackend implements Backend {
  readonly mode = 'kubernetes' as const;
  private readonly kube: KubeClient;
  private pods?: Promise<Pod[]>;

  constructor(private readonly options: KubeBackendOptions) {
    this.kube = KubeClient.load(options, options.chosenBecause ? `chosen because ${options.chosenBecause}` : undefined);
  }

  /** where Legate is installed (-n, --install-namespace) */
  get installNamespace(): string {
    return this.options.namespace;
  }

  /** The API server client, for the commands that write (cli/ctl/store.ts). */
  get client(): KubeClient {
    return this.kube;
  }

  /** The cluster and namespace, and why this backend: for messages. */
  describe(): string {
    return `the cluster ${this.kube.describe()}, namespace ${this.options.namespace}`;
  }

  /** A CliError about the cluster that also says which cluster (and why it was picked). */
  private fail(message: string): CliError {
    return new CliError(`${message} [${this.describe()}]`);
  }

  private async list<T>(pathAndQuery: string): Promise<T[]> {
    return (await this.kube.json<KubeList<T>>(pathAndQuery)).items;
  }

  /** Legate's pods in the install namespace (label -p), listed once per command. */
  private legatePods(): Promise<Pod[]> {
    this.pods ??= this.list<Pod>(`/api/v1/namespaces/${enc(this.options.namespace)}/pods?labelSelector=${enc(this.options.podSelector)}`);
    return this.pods;
  }

  private async componentPods(component: string): Promise<Pod[]> {
    const key = LABELS.component;
    return preferReady((await this.legatePods()).filter((p) => p.metadata.labels?.[key] === component));
  }

  private podProxyPath(pod: Pod, port: number, pathAndQuery: string): string {
    return `/api/v1/namespaces/${enc(pod.metadata.namespace)}/pods/${enc(pod.metadata.name)}:${port}/proxy${pathAndQuery}`;
  }

  /** A request through the API server's pod proxy: the pod's own answer, or a CliError saying what stood between. */
  private async viaPodProxy(pod: Pod, port: number, pathAndQuery: string, method: 'GET' | 'POST', what: string): Promise<KubeResponse> {
    const res = await this.kube.request(method, this.podProxyPath(pod, port, pathAndQuery));
    const status = res.status >= 400 ? asKubeStatus(res.contentType, res.text) : undefined;
    if (status) {
      const target = `pod ${pod.metadata.namespace}/${pod.metadata.name} port ${port}`;
      const rbac =
        res.status === 403 ? ` (legatectl needs '${method === 'GET' ? 'get' : 'create'}' on pods/proxy in ${pod.metadata.namespace})` : '';
      throw this.fail(
        `cannot reach ${what} (${target}) through the API server's pod proxy: ${status.message ?? `HTTP ${res.status}`}${rbac}`,
      );
    }
    return res;
  }

  async api<T>(pathAndQuery: string): Promise<T> {
    const [pod] = await this.componentPods('controller');
    if (!pod) {
      throw this.fail(
        `no Legate controller pod (label ${LABELS.component}=controller) in namespace ${this.options.namespace}; ` +
          'is Legate installed there? (-n NAMESPACE)',
      );
    }
    const res = await this.viaPodProxy(pod, containerPort(pod, PORTS.controllerApi), pathAndQuery, 'GET', 'the Legate controller');
    let body: Envelope<T>;
    try {
      body = JSON.parse(res.text) as Envelope<T>;
    } catch {
      throw new CliError(`unexpected answer from the Legate controller for ${pathAndQuery}: HTTP ${res.status}: ${res.text.slice(0, 200)}`);
    }
    if (body.status !== 'ok' || body.error) throw new CliError(body.error ?? `HTTP ${res.status}`);
    return body.data as T;
  }

  async resources(query: ResourceQuery = {}): Promise<ResourceListing> {
    const listing: ResourceListing = { items: [], unavailable: [] };
    const wanted = (kind: KindName): boolean => !query.kind || query.kind === kind;
    const lists: Promise<void>[] = [];
    for (const k of storedKinds().filter((s) => wanted(s.kind))) {
      for (const apiVersion of k.apiVersions) {
        const base = `/apis/${apiVersion}${query.namespace ? `/namespaces/${enc(query.namespace)}` : ''}/${k.plural}`;
        const selector = query.name ? `?fieldSelector=${enc(`metadata.name=${query.name}`)}` : '';
        const canonical = apiVersion === canonicalApiVersion(k.kind);
        lists.push(
          this.list<KubeObject>(base + selector).then(
            (items) => void listing.items.push(...items.map((o) => listed(o, apiVersion, k.kind))),
            (err: unknown) => {
              // Gloo's groups exist only with `legate crds --gloo-groups`; Legate's own must be there
              if (err instanceof KubeApiError && err.code === 404 && !canonical) return;
              const reason =
                err instanceof KubeApiError && err.code === 404
                  ? `the CRD ${k.plural}.${apiVersion.split('/')[0]} is not installed (legate crds | kubectl apply --server-side -f -)`
                  : err instanceof KubeApiError && err.code === 403
                    ? `${err.message} (legatectl needs 'list' on ${k.plural}.${apiVersion.split('/')[0]})`
                    : err instanceof Error
                      ? err.message
                      : String(err);
              listing.unavailable.push({ kinds: [k.kind], reason });
            },
          ),
        );
      }
    }
    // what only the controller knows: Proxies it generated, core kinds it read, Upstreams it discovered
    const fromController = CONTROLLER_KINDS.filter(wanted);
    let controllerItems: ListedResource[] = [];
    if (fromController.length || wanted('Upstream')) {
      const q = new URLSearchParams();
      if (query.kind) q.set('kind', query.kind);
      if (query.namespace) q.set('namespace', query.namespace);
      lists.push(
        this.api<ListedResource[]>(`/api/v1/resources${q.size ? `?${q}` : ''}`).then(
          (items) => void (controllerItems = items),
          (err: unknown) => {
            const reason = err instanceof Error ? err.message : String(err);
            if (fromController.length) listing.unavailable.push({ kinds: fromController, reason });
          },
        ),
      );
    }
    await Promise.all(lists);
    const stored = new Set(listing.items.map((r) => `${r.kind}/${r.metadata.namespace}/${r.metadata.name}`));
    for (const r of controllerItems) {
      if (query.name && r.metadata.name !== query.name) continue;
      const discovered =
        r.kind === 'Upstream' &&
        r.metadata.labels?.[DISCOVERED_BY_LABEL] === DISCOVERED_BY &&
        !stored.has(`Upstream/${r.metadata.namespace}/${r.metadata.name}`);
      if (fromController.includes(r.kind as KindName) || discovered) listing.items.push(r);
    }
    return listing;
  }

  async componentProblems(which: 'deployments' | 'pods'): Promise<string[]> {
    const ns = this.options.namespace;
    if (which === 'deployments')
      return deploymentProblems(await this.list<Deployment>(`/apis/apps/v1/namespaces/${enc(ns)}/deployments`), ns);
    return podProblems(await this.legatePods(), ns, this.options.podSelector);
  }

  async proxies(): Promise<ProxyInfo[]> {
    return (await this.componentPods('gateway-proxy')).map((pod) => {
      const name = pod.metadata.labels?.[LABELS.proxyId] ?? 'gateway-proxy';
      const port = containerPort(pod, PORTS.envoyAdmin);
      return {
        namespace: pod.metadata.namespace,
        name,
        role: `${pod.metadata.namespace}~${name}`,
        adminUrl: this.kube.server + this.podProxyPath(pod, port, ''),
        pod: pod.metadata.name,
      };
    });
  }

  private async proxyPod(proxy: ProxyInfo): Promise<Pod> {
    const pod = (await this.legatePods()).find((p) => p.metadata.name === proxy.pod);
    if (!pod) throw new CliError(`pod ${proxy.namespace}/${proxy.pod ?? '?'} is gone`);
    return pod;
  }

  async proxyAdmin(proxy: ProxyInfo, pathAndQuery: string, method: 'GET' | 'POST' = 'GET'): Promise<string> {
    const pod = await this.proxyPod(proxy);
    const res = await this.viaPodProxy(
      pod,
      containerPort(pod, PORTS.envoyAdmin),
      pathAndQuery,
      method,
      `Envoy's admin interface of ${proxy.name}`,
    );
    if (res.status >= 300) throw new CliError(`Envoy admin ${pathAndQuery}: HTTP ${res.status}: ${res.text.trim()}`);
    return res.text;
  }

  logLevelResetHint(proxy: ProxyInfo): string {
    const path = proxy.adminUrl.slice(this.kube.server.length);
    return `kubectl create --raw '${path}/logging?level=info' -f /dev/null`;
  }

  private async podLog(pod: Pod, container: string, follow: boolean, write: (text: string) => void): Promise<void> {
    const path =
      `/api/v1/namespaces/${enc(pod.metadata.namespace)}/pods/${enc(pod.metadata.name)}/log?container=${enc(container)}` +
      (follow ? '&follow=true' : '');
    try {
      if (follow) await this.kube.stream(path, write);
      else {
        const res = await this.kube.request('GET', path, { accept: '*/*', timeoutMs: 60_000 });
        if (res.status >= 300) throw this.kube.apiError(res, '');
        write(res.text);
      }
    } catch (err) {
      const message = err instanceof Error ? err.message.replace(/^: /, '') : String(err);
      throw this.fail(
        `cannot read the log of pod ${pod.metadata.namespace}/${pod.metadata.name} (container ${container}) through the pod logs API ` +
          `(served by the node's kubelet; legatectl needs 'get' on pods/log): ${message}`,
      );
    }
  }

  async proxyLog(proxy: ProxyInfo, follow: boolean, write: (text: string) => void): Promise<void> {
    const pod = await this.proxyPod(proxy);
    const container = pod.spec?.containers?.[0]?.name ?? 'envoy';
    await this.podLog(pod, container, follow, write);
  }

  async proxyUrl(selector: ProxySelector, port: string, localCluster: boolean): Promise<{ url: string; note?: string }> {
    const ns = selector.namespace ?? this.options.namespace;
    const name = selector.name ?? 'gateway-proxy';
    let svc: Service;
    try {
      svc = await this.kube.json<Service>(`/api/v1/namespaces/${enc(ns)}/services/${enc(name)}`);
    } catch (err) {
      if (err instanceof KubeApiError && err.code === 404) {
        throw this.fail(`no Service ${ns}/${name} (the gateway proxy's Service is named after it: --name PROXY, -n NAMESPACE)`);
      }
      throw err;
    }
    const nodes = localCluster ? await this.list<Node>('/api/v1/nodes') : [];
    return serviceUrl(svc, port, { localCluster, nodes });
  }

  async logs(): Promise<LogSource[]> {
    const sources: LogSource[] = [];
    for (const pod of await this.legatePods()) {
      for (const c of pod.spec?.containers ?? []) {
        // the API server answers a pod without a node with no log at all (204): say why it is empty
        const unscheduled = pod.spec?.nodeName ? '' : ' (not scheduled on a node: no log yet)';
        sources.push({
          title: `${pod.metadata.namespace}/${pod.metadata.name} (${c.name})${unscheduled}`,
          read: async () => {
            let text = '';
            await this.podLog(pod, c.name, false, (t) => (text += t));
            return text;
          },
        });
      }
    }
    if (!sources.length) throw this.fail(`no pods with label ${this.options.podSelector} in namespace ${this.options.namespace}`);
    return sources;
  }

  /** glooctl's `debug yaml` set: the install namespace's workloads and configuration (never its Secrets). */
  async installObjects(): Promise<{ objects: unknown[]; problems: string[] }> {
    const ns = enc(this.options.namespace);
    const kinds: [string, string][] = [
      ['Deployment', `/apis/apps/v1/namespaces/${ns}/deployments`],
      ['DaemonSet', `/apis/apps/v1/namespaces/${ns}/daemonsets`],
      ['Service', `/api/v1/namespaces/${ns}/services`],
      ['ConfigMap', `/api/v1/namespaces/${ns}/configmaps`],
      ['ServiceAccount', `/api/v1/namespaces/${ns}/serviceaccounts`],
      ['Role', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/roles`],
      ['RoleBinding', `/apis/rbac.authorization.k8s.io/v1/namespaces/${ns}/rolebindings`],
      ['Job', `/apis/batch/v1/namespaces/${ns}/jobs`],
    ];
    const problems: string[] = [];
    const groups = await Promise.all(
      kinds.map(async ([kind, path]) => {
        try {
          const items = await this.list<KubeObject>(path);
          const apiVersion = path.startsWith('/api/v1') ? 'v1' : path.split('/').slice(2, 4).join('/');
          return items.map((o) => withoutManagedFields({ ...o, apiVersion, kind }));
        } catch (err) {
          problems.push(`cannot list ${kind}s in ${this.options.namespace}: ${err instanceof Error ? err.message : String(err)}`);
          return [];
        }
      }),
    );
    return { objects: groups.flat(), problems };
  }

  async platformVersion(): Promise<string | undefined> {
    return (await this.kube.json<{ gitVersion?: string }>('/version').catch(() => undefined))?.gitVersion;
  }
}
