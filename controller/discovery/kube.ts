// Upstream discovery (spec 1.5, 2.3): every port of every Service becomes an Upstream named
// `<namespace>-<service>-<port>` in the write namespace. Pure: the caller supplies the Services.
import type { Service, Upstream } from '../api/resources.js';
import { canonicalApiVersion } from '../api/kinds.js';

export const DISCOVERED_BY_LABEL = 'discovered_by';
export const DISCOVERED_BY = 'kubernetesplugin';

/** Kubernetes names are at most 63 characters; longer ones are cut and suffixed with a short hash. */
export function sanitizeName(name: string): string {
  const clean = name.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  if (clean.length <= 63) return clean;
  let hash = 0;
  for (const ch of clean) hash = (hash * 31 + ch.charCodeAt(0)) >>> 0;
  const suffix = hash.toString(16).padStart(8, '0');
  return `${clean.slice(0, 63 - suffix.length - 1)}-${suffix}`;
}

export function discoverUpstreams(services: readonly Service[], writeNamespace: string): Upstream[] {
  const upstreams: Upstream[] = [];
  for (const svc of services) {
    for (const port of svc.spec.spec.ports) {
      const name = sanitizeName(`${svc.metadata.namespace}-${svc.metadata.name}-${port.port}`);
      const metadata = { name, namespace: writeNamespace, labels: { [DISCOVERED_BY_LABEL]: DISCOVERED_BY } };
      const h2 = /^(grpc|h2|http2)/.test(port.name ?? '') || svc.metadata.annotations?.['gloo.solo.io/h2_service'] === 'true';
      const spec: Upstream['spec'] = {
        kube: { serviceName: svc.metadata.name, serviceNamespace: svc.metadata.namespace, servicePort: port.port },
        ...(svc.metadata.labels ? { discoveryMetadata: { labels: svc.metadata.labels } } : {}),
        ...(h2 ? { useHttp2: true } : {}),
      };
      if (svc.spec.spec.selector) spec.kube = { ...spec.kube!, selector: svc.spec.spec.selector };
      const apiVersion = canonicalApiVersion('Upstream');
      const raw = {
        apiVersion,
        kind: 'Upstream',
        metadata,
        spec,
        body: {},
        origin: `discovered from Service ${svc.metadata.namespace}.${svc.metadata.name}`,
      };
      upstreams.push({ kind: 'Upstream', apiVersion, metadata, spec, raw });
    }
  }
  return upstreams;
}
