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

/** Node role of a proxy, matched against Envoy's node.metadata.role: `<namespace>~<name>`. */
export function proxyRole(proxy: { namespace: string; name: string }): string {
  return `${proxy.namespace}~${proxy.name}`;
}

export function listenerName(bindAddress: string, bindPort: number): string {
  return `listener-${bindAddress}-${bindPort}`;
}

/** Envoy virtual host of a VirtualService: `<namespace>_<name>` (dots would confuse Envoy's stats). */
export function virtualHostName(namespace: string, name: string): string {
  return `${namespace}_${name}`.replace(/\./g, '_');
}

/** The filter chain that serves a virtual host's certificate on an ssl listener. */
export function tlsFilterChainName(virtualHost: string): string {
  return `${virtualHost}-tls`;
}

/**
 * Every Envoy resource name a translation produced, with the resource it came from: what a NACK's
 * message can name (a cluster, a virtual host, a TLS filter chain, a listener).
 */
export function envoyNames(
  proxies: readonly {
    listeners: readonly {
      name: string;
      source: SourceRef;
      virtualHosts: readonly { name: string; source: SourceRef; tls?: object | undefined }[];
    }[];
  }[],
  upstreams: readonly { cluster: string; source: SourceRef }[],
): Map<string, SourceRef> {
  const names = new Map<string, SourceRef>();
  for (const up of upstreams) names.set(up.cluster, up.source);
  for (const proxy of proxies) {
    for (const listener of proxy.listeners) {
      names.set(listener.name, listener.source);
      for (const vh of listener.virtualHosts) {
        names.set(vh.name, vh.source);
        if (vh.tls) {
          names.set(tlsFilterChainName(vh.name), vh.source);
          // Envoy names a certificate, key or CA file it cannot read by its path, not by the filter chain
          for (const material of Object.values(vh.tls)) {
            const file = (material as { filename?: unknown } | undefined)?.filename;
            if (typeof file === 'string' && file) names.set(file, vh.source);
          }
        }
      }
    }
  }
  return names;
}
