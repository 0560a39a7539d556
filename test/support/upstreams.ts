// Small HTTP upstreams on random loopback ports. Each answers with JSON describing the request, so
// tests can see which upstream served it and what path and headers arrived.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface EchoUpstream {
  name: string;
  port: number;
  /** requests seen, newest last */
  seen: { method: string; path: string; headers: http.IncomingHttpHeaders }[];
  close(): Promise<void>;
}

export interface EchoOptions {
  /** delay before answering, for timeout tests */
  delayMs?: number;
  /** status to answer with (default 200) */
  status?: number;
}

export async function startEcho(name: string, options: EchoOptions = {}): Promise<EchoUpstream> {
  const seen: EchoUpstream['seen'] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    const body = JSON.stringify({ upstream: name, method: req.method, path: req.url, headers: req.headers });
    const answer = (): void => {
      res.writeHead(options.status ?? 200, { 'content-type': 'application/json', 'x-upstream': name });
      res.end(body);
    };
    if (options.delayMs) setTimeout(answer, options.delayMs);
    else answer();
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    name,
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * The resources the auth suites share: an Upstream `app` (legate-system) at `port` on loopback, and a
 * VirtualService `shop` on every domain with `/public` open, then one route per [prefix, AuthConfig]
 * (AuthConfigs in legate-system), in order: put `/` last.
 */
export function appBehindAuth(port: number, protectedRoutes: readonly (readonly [prefix: string, authConfig: string])[]): string {
  const toApp = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }';
  const routes = protectedRoutes.map(
    ([prefix, authConfig]) => `      - matchers: [{ prefix: ${prefix} }]
        ${toApp}
        options: { extauth: { configRef: { name: ${authConfig}, namespace: legate-system } } }
`,
  );
  return `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /public }]
        ${toApp}
${routes.join('')}`;
}
