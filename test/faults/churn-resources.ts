// Realistic resources for the churn tests: per index a VirtualService with its own Upstream, AuthConfig
// (API keys in a Secret), GraphQLApi (its own schema), RateLimitConfig and a regex route, all valid and
// served. Every name, domain, regex and schema type is unique to its index and round, so whatever a
// table keeps of a deleted resource is never reused by the next round.

export const CHURN_NAMESPACE = 'churn';

export interface ChurnGroup {
  index: number;
  /** the resources of this index, YAML documents */
  documents: string[];
  /** kind/name of each (all in CHURN_NAMESPACE), for creating and deleting them through an API */
  objects: { kind: string; name: string; document: string }[];
}

/** The group of resources of `index` in `round`; `upstreamPort` is where every Upstream points. */
export function churnGroup(round: number, index: number, upstreamPort: number): ChurnGroup {
  const id = `r${round}-${index}`;
  const ns = CHURN_NAMESPACE;
  const objects: ChurnGroup['objects'] = [];
  const add = (kind: string, name: string, document: string) => objects.push({ kind, name, document });
  add(
    'Upstream',
    `up-${id}`,
    `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: up-${id}, namespace: ${ns}, labels: { churn: '${id}' } }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${upstreamPort} }] }
`,
  );
  add(
    'Secret',
    `key-${id}`,
    `apiVersion: v1
kind: Secret
metadata: { name: key-${id}, namespace: ${ns} }
type: extauth.solo.io/apikey
stringData: { api-key: 'key-${id}-${'k'.repeat(24)}' }
`,
  );
  add(
    'AuthConfig',
    `auth-${id}`,
    `apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: auth-${id}, namespace: ${ns} }
spec:
  configs: [{ apiKeyAuth: { headerName: x-api-key-${index}, apiKeySecretRefs: [{ name: key-${id}, namespace: ${ns} }] } }]
`,
  );
  add(
    'GraphQLApi',
    `gql-${id}`,
    `apiVersion: graphql.gloo.solo.io/v1beta1
kind: GraphQLApi
metadata: { name: gql-${id}, namespace: ${ns} }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|item:
            mockResolver: { syncResponse: { id: ${index}, title: 'item ${id}' } }
    schemaDefinition: |
      type Query { item: Item_${round}_${index} @resolve(name: "Query|item") }
      type Item_${round}_${index} { id: Int!, title: String, note_${index}: String }
`,
  );
  add(
    'RateLimitConfig',
    `rl-${id}`,
    `apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: rl-${id}, namespace: ${ns} }
spec:
  raw:
    descriptors: [{ key: generic_key, value: churn-${id}, rateLimit: { requestsPerUnit: ${1000 + index}, unit: SECOND } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: churn-${id} } }] }]
`,
  );
  const to = `routeAction: { single: { upstream: { name: up-${id}, namespace: ${ns} } } }`;
  add(
    'VirtualService',
    `vs-${id}`,
    `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: vs-${id}, namespace: ${ns}, labels: { churn: '${id}' } }
spec:
  virtualHost:
    domains: ['${id}.churn.example']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: gql-${id}, namespace: ${ns} }
      - matchers: [{ regex: '/items/[0-9]+/${id}-[a-z]{2,${3 + (index % 5)}}' }]
        ${to}
      - matchers: [{ prefix: /limited }]
        ${to}
        options: { rateLimitConfigs: { refs: [{ name: rl-${id}, namespace: ${ns} }] } }
      - matchers: [{ prefix: /private, headers: [{ name: x-churn, value: '${id}-.*', regex: true }] }]
        ${to}
        options: { extauth: { configRef: { name: auth-${id}, namespace: ${ns} } } }
      - matchers: [{ prefix: / }]
        ${to}
        options: { prefixRewrite: /${id}/ }
`,
  );
  return { index, documents: objects.map((o) => o.document), objects };
}

/** Kinds in the order they are deleted in (what refers first, what is referred to last). */
export const DELETE_ORDER = ['VirtualService', 'GraphQLApi', 'RateLimitConfig', 'AuthConfig', 'Secret', 'Upstream'];
