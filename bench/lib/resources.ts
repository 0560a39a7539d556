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

export const toUpstream = (name = UPSTREAM_NAME): string => `routeAction: { single: { upstream: { name: ${name}, namespace: legate-system } } }`;

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
