// What several fault suites share: a fake OAuth2 introspection provider whose behaviour a test
// switches (ok, slow, down, garbage, 500), and one config with a plain route, a GraphQL route and a
// protected route, all answered by one echo upstream.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** The test's secrets: never to be found in a log, a dump or a metric (security.test.ts greps for them). */
export const SECRETS = {
  clientSecret: 'faults-client-secret-7Qx2Lp9Vw4',
  token: 'good-faults-token-Zr8Kd3Nm6Tq1Yb5',
} as const;

export type ProviderMode = 'ok' | 'slow' | 'down' | 'garbage' | '500';

export interface FakeProvider {
  port: number;
  url: string;
  mode: ProviderMode;
  slowMs: number;
  /** introspection calls received, by the mode they met */
  calls: Record<string, number>;
  close(): Promise<void>;
}

/**
 * RFC 7662 introspection on loopback: tokens starting with `good-` are active (scope products:read),
 * others inactive. `down` closes every connection as soon as it opens (the provider is unreachable in
 * practice; the port stays ours so nothing else takes it).
 */
export async function startFakeProvider(): Promise<FakeProvider> {
  const provider: FakeProvider = { port: 0, url: '', mode: 'ok', slowMs: 2500, calls: {}, close: async () => undefined };
  const server = http.createServer((req, res) => {
    const mode = provider.mode;
    provider.calls[mode] = (provider.calls[mode] ?? 0) + 1;
    if (mode === 'down') {
      req.socket.destroy();
      return;
    }
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const token = new URLSearchParams(body).get('token') ?? '';
      const answer = (): void => {
        if (mode === '500') {
          res.writeHead(500, { 'content-type': 'text/plain' });
          res.end('internal error');
        } else if (mode === 'garbage') {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"active": tru\u0000e, <html>');
        } else {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(
            JSON.stringify(token.startsWith('good-') ? { active: true, scope: 'products:read', client_id: 'faults' } : { active: false }),
          );
        }
      };
      if (mode === 'slow') setTimeout(answer, provider.slowMs);
      else answer();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  provider.port = (server.address() as AddressInfo).port;
  provider.url = `http://127.0.0.1:${provider.port}/introspect`;
  provider.close = () =>
    new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  return provider;
}

/**
 * An Upstream `app` (the echo), a GraphQLApi `echo` whose `Query.echo` calls the app, an AuthConfig
 * `faults` (introspection at `introspectionUrl`, no cache: every request asks), and a VirtualService
 * with `/graphql` (the API), `/secure` (protected) and `/` (plain).
 */
export function gatewayConfig(appPort: number, introspectionUrl: string): string {
  return `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${appPort} }] }
---
apiVersion: v1
kind: Secret
metadata: { name: faults-client, namespace: legate-system }
stringData: { clientSecret: ${SECRETS.clientSecret} }
---
apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: faults, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspection:
            introspectionUrl: ${introspectionUrl}
            clientId: faults
            clientSecretRef: { name: faults-client, namespace: legate-system }
          cacheTimeout: 0s
          requiredScopes: { scope: [products:read] }
---
apiVersion: graphql.legate.dev/v1beta1
kind: GraphQLApi
metadata: { name: echo, namespace: legate-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|echo:
            restResolver:
              upstreamRef: { name: app, namespace: legate-system }
              request: { headers: { ':method': GET, ':path': /from-graphql } }
    schemaDefinition: |
      type Query {
        echo: Echo @resolve(name: "Query|echo")
        hello(name: String): String
      }
      type Echo { upstream: String, path: String, method: String }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: faults, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: echo, namespace: legate-system }
      - matchers: [{ prefix: /secure }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
        options: { extauth: { configRef: { name: faults, namespace: legate-system } } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`;
}

export const GRAPHQL_QUERY = JSON.stringify({ query: '{ echo { upstream path } }' });
export const GRAPHQL_ANSWER = JSON.stringify({ data: { echo: { upstream: 'app', path: '/from-graphql' } } });
export const bearer = (token: string = SECRETS.token): Record<string, string> => ({ authorization: `Bearer ${token}` });
