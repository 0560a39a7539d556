// Upstream discovery (spec 1.5, 2.3): every port of every Service becomes an Upstream named
// `<namespace>-<service>-<port>` in the write namespace. Pure: the caller supplies the Services.
import type { Service, Upstream } from '../api/resources.js';
import { canonicalApiVersion } from '../api/kinds.js';
import { formatIssues, UpstreamSpecSchema } from '../api/schemas.js';

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

/** Settings discovery.udsOptions: whether Services become Upstreams, and which (by their labels). */
export interface DiscoveryOptions {
  enabled?: boolean;
  watchLabels?: Record<string, string>;
  /** Settings upstreamOptions.globalAnnotations: as if every Service carried them (its own win) */
  globalAnnotations?: Record<string, string>;
}

/** Gloo's annotations on a Service that shape the Upstreams discovered from it. */
export const UPSTREAM_CONFIG_ANNOTATION = 'gloo.solo.io/upstream_config';
export const UPSTREAM_CONFIG_DEEP_MERGE_ANNOTATION = 'gloo.solo.io/upstream_config.deep_merge';
const SSL_SERVICE = {
  secret: 'gloo.solo.io/sslService.secret',
  tlsCert: 'gloo.solo.io/sslService.tlsCert',
  tlsKey: 'gloo.solo.io/sslService.tlsKey',
  rootCa: 'gloo.solo.io/sslService.rootCa',
} as const;

export interface Discovery {
  upstreams: Upstream[];
  /** an annotation that could not be applied, by the discovered Upstream it was for (which is served without it) */
  problems: { upstream: Upstream; message: string }[];
}

export function discoverUpstreams(services: readonly Service[], writeNamespace: string, options: DiscoveryOptions = {}): Discovery {
  const out: Discovery = { upstreams: [], problems: [] };
  if (options.enabled === false) return out;
  const watchLabels = Object.entries(options.watchLabels ?? {});
  for (const svc of services) {
    if (!watchLabels.every(([k, v]) => svc.metadata.labels?.[k] === v)) continue;
    const annotations = { ...options.globalAnnotations, ...svc.metadata.annotations };
    for (const port of svc.spec.spec.ports) {
      const name = sanitizeName(`${svc.metadata.namespace}-${svc.metadata.name}-${port.port}`);
      const metadata = { name, namespace: writeNamespace, labels: { [DISCOVERED_BY_LABEL]: DISCOVERED_BY } };
      const h2 = /^(grpc|h2|http2)/.test(port.name ?? '') || annotations['gloo.solo.io/h2_service'] === 'true';
      let spec: Upstream['spec'] = {
        kube: { serviceName: svc.metadata.name, serviceNamespace: svc.metadata.namespace, servicePort: port.port },
        ...(svc.metadata.labels ? { discoveryMetadata: { labels: svc.metadata.labels } } : {}),
        ...(h2 ? { useHttp2: true } : {}),
      };
      if (svc.spec.spec.selector) spec.kube = { ...spec.kube!, selector: svc.spec.spec.selector };
      const ssl = sslFromAnnotations(annotations, port.port, svc.metadata.namespace);
      if (ssl) spec.sslConfig = ssl;
      const apiVersion = canonicalApiVersion('Upstream');
      const origin = `discovered from Service ${svc.metadata.namespace}.${svc.metadata.name}`;
      let problem: string | undefined;
      const config = annotations[UPSTREAM_CONFIG_ANNOTATION];
      if (config !== undefined) {
        const merged = withUpstreamConfig(spec, config, annotations[UPSTREAM_CONFIG_DEEP_MERGE_ANNOTATION] === 'true');
        if (typeof merged === 'string') problem = `Service ${svc.metadata.namespace}.${svc.metadata.name}: ${merged}`;
        else spec = merged;
      }
      const raw = { apiVersion, kind: 'Upstream', metadata, spec, body: {}, origin };
      const upstream: Upstream = { kind: 'Upstream', apiVersion, metadata, spec, raw };
      out.upstreams.push(upstream);
      if (problem) out.problems.push({ upstream, message: problem });
    }
  }
  return out;
}

/** Gloo's sslService annotations: `name` for every port, or `port:name` for that port only. */
function sslFromAnnotations(annotations: Record<string, string>, port: number, namespace: string): Upstream['spec']['sslConfig'] {
  const value = (key: string): string => {
    const raw = annotations[key] ?? '';
    const parts = raw.split(':');
    if (parts.length !== 2) return raw;
    return Number(parts[0]) === port ? (parts[1] ?? '') : '';
  };
  const secret = value(SSL_SERVICE.secret);
  if (secret) return { secretRef: { name: secret, namespace } };
  const files = { tlsCert: value(SSL_SERVICE.tlsCert), tlsKey: value(SSL_SERVICE.tlsKey), rootCa: value(SSL_SERVICE.rootCa) };
  if (!files.tlsCert && !files.tlsKey && !files.rootCa) return undefined;
  return { sslFiles: Object.fromEntries(Object.entries(files).filter(([, v]) => v)) };
}

const camel = (key: string): string => key.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());

/** Proto JSON takes snake_case names too (Gloo's docs use them): keys become camelCase, values are kept. */
function camelKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(camelKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [camel(k), camelKeys(v)]));
}

function deepMerge(base: unknown, over: unknown): unknown {
  if (base === null || over === null || typeof base !== 'object' || typeof over !== 'object' || Array.isArray(base) || Array.isArray(over))
    return over;
  const out: Record<string, unknown> = { ...(base as Record<string, unknown>) };
  for (const [k, v] of Object.entries(over)) out[k] = k in out ? deepMerge(out[k], v) : v;
  return out;
}

/**
 * The annotation's Upstream fields over the discovered ones, as Gloo merges them: each top-level field replaces the
 * discovered one (or, with the deep_merge annotation, is merged into it). Gloo's docs write the fields either bare or
 * under `spec`. Returns the reason when the JSON or the result is not a valid Upstream spec.
 */
function withUpstreamConfig(spec: Upstream['spec'], json: string, deep: boolean): Upstream['spec'] | string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (err) {
    return `annotation ${UPSTREAM_CONFIG_ANNOTATION} is not JSON: ${(err as Error).message}`;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return `annotation ${UPSTREAM_CONFIG_ANNOTATION}: expected an object`;
  let fields = camelKeys(parsed) as Record<string, unknown>;
  if (typeof fields.spec === 'object' && fields.spec !== null && Object.keys(fields).length === 1)
    fields = fields.spec as Record<string, unknown>;
  const merged = deep ? deepMerge(spec, fields) : { ...spec, ...fields };
  const result = UpstreamSpecSchema.safeParse(merged);
  if (!result.success) return `annotation ${UPSTREAM_CONFIG_ANNOTATION}: ${formatIssues('', result.error, UpstreamSpecSchema)}`;
  return result.data;
}
