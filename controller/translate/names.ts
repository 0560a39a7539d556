// Names Gloo users know, shared by the core and the features.
import type { SourceRef } from './ir.js';

/** Map key of a namespaced resource. */
export function nsName(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Envoy cluster name for an upstream, as Gloo users know it: `<upstream>_<namespace>`. */
export function clusterName(namespace: string, name: string): string {
  return `${name}_${namespace}`;
}

/** The upstream discovery makes for a Service port: `<namespace>-<service>-<port>`. */
export function discoveredUpstreamName(namespace: string, service: string, port: number): string {
  return `${namespace}-${service}-${port}`;
}

export function sourceOf(r: { kind: string; metadata: { namespace: string; name: string } }): SourceRef {
  return { kind: r.kind, namespace: r.metadata.namespace, name: r.metadata.name };
}
