// Legate resource files the scenarios write into a watched directory.

export const UPSTREAM_NAME = 'bench-upstream';

/** An Upstream with one static host (the bench upstream), in Legate's write namespace. */
export function upstreamYaml(port: number, name = UPSTREAM_NAME): string {
  return `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: ${name}, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;
}

export const toUpstream = (name = UPSTREAM_NAME): string =>
  `routeAction: { single: { upstream: { name: ${name}, namespace: legate-system } } }`;

/** A VirtualService whose only route sends everything (prefix /) to the upstream. */
export function catchAllVsYaml(name: string, domains: string[]): string {
  return `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${domains.map((d) => `'${d}'`).join(', ')}]
    routes:
      - matchers: [{ prefix: / }]
        ${toUpstream()}
`;
}

/**
 * A GraphQLApi over the products backend, resolved as in examples/graphql.yaml (author, pages and year
 * each call /details/{$parent.id}).
 */
export function productsGraphqlApiYaml(name: string, upstream: string): string {
  const ref = `upstreamRef: { name: ${upstream}, namespace: legate-system }`;
  const detail = (field: string): string => `          Product|${field}:
            restResolver:
              ${ref}
              request: { headers: { ':path': '/details/{$parent.id}' } }
              response: { resultRoot: '{$body.${field}}' }`;
  return `apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: ${name}, namespace: legate-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|productsForHome:
            restResolver:
              ${ref}
              request: { headers: { ':method': GET, ':path': /api/v1/products } }
${detail('author')}
${detail('pages')}
${detail('year')}
    schemaDefinition: |
      type Query {
        productsForHome: [Product] @resolve(name: "Query|productsForHome")
      }
      type Product {
        id: Int
        title: String
        author: String @resolve(name: "Product|author")
        pages: Int @resolve(name: "Product|pages")
        year: Int @resolve(name: "Product|year")
      }
`;
}

/** A VirtualService with one route: prefix `prefix` served by the GraphQLApi `api` (legate-system). */
export function graphqlVsYaml(name: string, prefix: string, api: string): string {
  return `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: ${prefix} }]
        graphqlApiRef: { name: ${api}, namespace: legate-system }
`;
}

/** A Secret holding an introspection client's secret (key clientSecret). */
export function clientSecretYaml(name: string, secret: string): string {
  return `apiVersion: v1
kind: Secret
metadata: { name: ${name}, namespace: legate-system }
stringData: { clientSecret: ${secret} }
`;
}

/** An AuthConfig with one OAuth2 introspection step; cacheTimeout undefined = the default (10 m). */
export function introspectionAuthConfigYaml(o: {
  name: string;
  url: string;
  clientId: string;
  secretName: string;
  scopes: string[];
  cacheTimeout?: string;
}): string {
  return `apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: ${o.name}, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: ${o.url}
            clientId: ${o.clientId}
            clientSecretRef: { name: ${o.secretName}, namespace: legate-system }
${
  o.cacheTimeout !== undefined ? `          cacheTimeout: ` + `${o.cacheTimeout}\n` : ''
}          requiredScopes: { scope: [${o.scopes.join(', ')}] }
`;
}

/** A route of a VirtualService: prefix -> the upstream, with an AuthConfig (legate-system) or none. */
export function routeYaml(prefix: string, authConfig?: string, upstream = UPSTREAM_NAME): string {
  return `      - matchers: [{ prefix: ${prefix} }]
        ${toUpstream(upstream)}${
          authConfig ? `\n        options: { extauth: { configRef: { name: ${authConfig}, namespace: ` + `legate-system } } }` : ''
        }`;
}

/** A route of a VirtualService: prefix -> the GraphQLApi `api` (legate-system). */
export function graphqlRouteYaml(prefix: string, api: string): string {
  return `      - matchers: [{ prefix: ${prefix} }]
        graphqlApiRef: { name: ${api}, namespace: legate-system }`;
}

/** A VirtualService on every domain with the given routes (see routeYaml, graphqlRouteYaml). */
export function vsWithRoutesYaml(name: string, routes: string[]): string {
  return `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
${routes.join('\n')}
`;
}

/** The Settings resource turning the wasm hot-path checks on or off (Settings.spec.wasmChecks; on is the default). */
export function wasmChecksSettingsYaml(o: { bearerCheck: boolean; graphqlCheck: boolean; cacheEntries?: number }): string {
  const cache = o.cacheEntries !== undefined ? `, cacheEntries: ${o.cacheEntries}` : '';
  return `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  wasmChecks:
    bearerCheck: { enabled: ${o.bearerCheck}${cache} }
    graphqlCheck: { enabled: ${o.graphqlCheck} }
`;
}
