// The resources one resource references, read from its spec by Gloo's field names; the console turns them
// around for "referenced by". Unqualified refs default to the referencing resource's namespace, as in Gloo.

export interface Ref {
  kind: string;
  namespace: string;
  name: string;
}

interface Item {
  kind: string;
  metadata: { name: string; namespace: string };
  spec?: unknown;
}

/** Field name -> the kind it references (its value is a ResourceRef {name, namespace}, or a list of them). */
const REF_FIELDS: Record<string, string> = {
  upstream: 'Upstream',
  upstreamRef: 'Upstream',
  upstreamGroup: 'UpstreamGroup',
  configRef: 'AuthConfig',
  graphqlApiRef: 'GraphQLApi',
  secretRef: 'Secret',
  clientSecretRef: 'Secret',
  credentialsSecretRef: 'Secret',
  apiKeySecretRefs: 'Secret',
  secretRefs: 'Secret',
  virtualServices: 'VirtualService',
  routeTables: 'RouteTable',
  routeOptions: 'RouteOption',
  virtualHostOptions: 'VirtualHostOption',
  delegateOptions: 'RouteOption',
  ratelimitServerRef: 'Upstream',
  extauthServerRef: 'Upstream',
};

export function referencesOf(item: Item): Ref[] {
  const out = new Map<string, Ref>();
  const own = item.metadata.namespace;
  const add = (kind: string, v: unknown): void => {
    if (!v || typeof v !== 'object') return;
    const r = v as { name?: unknown; namespace?: unknown };
    if (typeof r.name !== 'string' || r.name === '') return;
    const ref = { kind, namespace: typeof r.namespace === 'string' && r.namespace !== '' ? r.namespace : own, name: r.name };
    out.set(`${kind}/${ref.namespace}/${ref.name}`, ref);
  };
  const walk = (value: unknown, parent: string): void => {
    if (Array.isArray(value)) {
      for (const v of value) walk(v, parent);
      return;
    }
    if (!value || typeof value !== 'object') return;
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const kind = REF_FIELDS[k];
      if (kind) {
        for (const one of Array.isArray(v) ? v : [v]) add(kind, one);
      } else if (k === 'ref' && parent === 'delegateAction') add('RouteTable', v);
      else if (k === 'refs' && parent === 'rateLimitConfigs') for (const one of Array.isArray(v) ? v : []) add('RateLimitConfig', one);
      else if (parent === 'delegateAction' && k === 'name' && typeof v === 'string') add('RouteTable', value);
      walk(v, k);
    }
  };
  walk(item.spec, '');
  return [...out.values()];
}

/** Every resource's references out and in, by `kind/namespace/name`. */
export function referenceIndex(items: readonly Item[]): Map<string, { out: Ref[]; in: Ref[] }> {
  const index = new Map<string, { out: Ref[]; in: Ref[] }>();
  const entry = (key: string): { out: Ref[]; in: Ref[] } => {
    let e = index.get(key);
    if (!e) index.set(key, (e = { out: [], in: [] }));
    return e;
  };
  for (const item of items) {
    const from = { kind: item.kind, namespace: item.metadata.namespace, name: item.metadata.name };
    const refs = referencesOf(item);
    entry(`${from.kind}/${from.namespace}/${from.name}`).out.push(...refs);
    for (const r of refs) entry(`${r.kind}/${r.namespace}/${r.name}`).in.push(from);
  }
  return index;
}
