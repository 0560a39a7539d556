// Kubernetes objects -> the RawResources the pipeline reads. Pure. EndpointSlices (discovery.k8s.io/v1)
// become one core `Endpoints` per Service, the shape translation already resolves upstreams from.
import { resourceKey, type RawResource } from '../../api/meta.js';

export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
    generation?: number;
    [k: string]: unknown;
  };
  spec?: unknown;
  status?: unknown;
  [k: string]: unknown;
}

/** Where a resource came from, as statuses and `legatectl` show it. */
export function kubeOrigin(apiVersion: string, kind: string, namespace: string, name: string): string {
  return `kube:${apiVersion}/${kind}/${namespace}/${name}`;
}

/** Written by client-side `kubectl apply`: a whole copy of the object, which nothing here reads. */
export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';

/**
 * Drops, in place, what the controller never reads from a watched object, before the informer's
 * cache keeps it: managedFields (server-side apply's field owners: often larger than the object), the
 * last-applied annotation (client-side apply's copy of the object), status, and metadata other than
 * name, namespace, labels, annotations, generation, uid and resourceVersion (which the informer
 * compares to tell an update). What toRawResource and endpointsFromSlices read is left as it was.
 */
export function trimObject<T extends KubeObject>(obj: T): T {
  const meta = obj.metadata;
  if (meta) {
    for (const key of Object.keys(meta)) {
      if (!KEPT_METADATA.has(key)) delete meta[key];
    }
    if (meta.annotations && LAST_APPLIED_ANNOTATION in meta.annotations) {
      const { [LAST_APPLIED_ANNOTATION]: _copy, ...rest } = meta.annotations;
      if (Object.keys(rest).length) meta.annotations = rest;
      else delete meta.annotations;
    }
  }
  delete obj.status;
  return obj;
}

const KEPT_METADATA = new Set(['name', 'namespace', 'labels', 'annotations', 'generation', 'uid', 'resourceVersion']);

/** A watched object as a RawResource: spec as is, other top-level fields (not status) in body. */
export function toRawResource(obj: KubeObject, apiVersion: string, kind: string): RawResource | undefined {
  const meta = obj.metadata;
  if (!meta?.name) return undefined;
  const namespace = meta.namespace ?? 'default';
  const body: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(obj)) {
    if (k !== 'apiVersion' && k !== 'kind' && k !== 'metadata' && k !== 'spec' && k !== 'status') body[k] = v;
  }
  const raw: RawResource = {
    apiVersion,
    kind,
    metadata: {
      name: meta.name,
      namespace,
      ...(meta.labels ? { labels: meta.labels } : {}),
      ...(meta.annotations ? { annotations: meta.annotations } : {}),
      ...(typeof meta.generation === 'number' ? { generation: meta.generation } : {}),
    },
    body,
    origin: kubeOrigin(apiVersion, kind, namespace, meta.name),
  };
  if (obj.spec !== undefined) raw.spec = obj.spec;
  return raw;
}

interface EndpointSlice extends KubeObject {
  addressType?: string;
  endpoints?: { addresses?: string[]; conditions?: { ready?: boolean | null; serving?: boolean | null } }[];
  ports?: { name?: string | null; port?: number | null; protocol?: string | null }[];
}

/**
 * The Endpoints an EndpointSlice contributes to (`resourceKey` of its Service's Endpoints), or undefined
 * for a slice without a Service label or of an address type other than IPv4/IPv6.
 */
export function sliceServiceKey(slice: EndpointSlice): string | undefined {
  const service = slice.metadata?.labels?.['kubernetes.io/service-name'];
  if (!service || (slice.addressType !== undefined && slice.addressType !== 'IPv4' && slice.addressType !== 'IPv6')) return undefined;
  return resourceKey('Endpoints', slice.metadata?.namespace ?? 'default', service);
}

/**
 * EndpointSlices grouped by their Service (label kubernetes.io/service-name) into core Endpoints:
 * one subset per slice, with its ready addresses (ready unset counts as ready, as kube-proxy does).
 */
export function endpointsFromSlices(slices: readonly EndpointSlice[]): RawResource[] {
  const byService = new Map<string, { namespace: string; name: string; subsets: unknown[] }>();
  for (const slice of slices) {
    const key = sliceServiceKey(slice);
    if (key === undefined) continue;
    const namespace = slice.metadata?.namespace ?? 'default';
    const service = slice.metadata?.labels?.['kubernetes.io/service-name'] ?? '';
    let entry = byService.get(key);
    if (!entry) {
      entry = { namespace, name: service, subsets: [] };
      byService.set(key, entry);
    }
    const ready = (slice.endpoints ?? []).filter((e) => e.conditions?.ready !== false);
    const addresses = ready.flatMap((e) => (e.addresses ?? []).map((ip) => ({ ip })));
    const ports = (slice.ports ?? [])
      .filter((p) => typeof p.port === 'number')
      .map((p) => ({ ...(p.name ? { name: p.name } : {}), port: p.port as number, ...(p.protocol ? { protocol: p.protocol } : {}) }));
    if (addresses.length && ports.length) entry.subsets.push({ addresses, ports });
  }
  return [...byService.values()].map((e) => ({
    apiVersion: 'v1',
    kind: 'Endpoints',
    metadata: { name: e.name, namespace: e.namespace },
    body: { subsets: e.subsets },
    origin: kubeOrigin('discovery.k8s.io/v1', 'EndpointSlice', e.namespace, e.name),
  }));
}
