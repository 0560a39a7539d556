// Resource envelope, status and API-group aliases shared by every kind.

export const LEGATE_NAMESPACE = 'legate-system';
export const REPORTER = 'legate';

export type ResourceState = 'Pending' | 'Accepted' | 'Rejected' | 'Warning';

export interface ResourceStatus {
  state: ResourceState;
  reason?: string;
  reportedBy: string;
  subresourceStatuses?: Record<string, ResourceStatus>;
}

export interface ObjectMeta {
  name: string;
  namespace: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  /** from a Kubernetes source: the spec's generation, reported back as status.observedGeneration */
  generation?: number;
}

/** A parsed resource as read from a source, before kind-specific validation. */
export interface RawResource {
  apiVersion: string;
  kind: string;
  metadata: ObjectMeta;
  spec?: unknown;
  /** Core kinds (Secret, Endpoints) keep other top-level fields here. */
  body: Record<string, unknown>;
  /** Where it came from, e.g. `examples/petstore.yaml#2`. */
  origin: string;
  /** Set when this is the last version read because its file no longer loads: why not. */
  loadError?: string;
}

/** Identity of a resource: kind (canonical) + namespace + name. */
export function resourceKey(kind: string, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}
