// The Settings of a Gloo Enterprise install through the real Envoy: gloo.regexMaxProgramSize (Envoy's runtime RE2
// limit, served over RTDS), extauth.userIdHeader (the client's copy removed before any filter; Legate's extauth service
// sets it to the authenticated user), and an HTTP ext_authz server (namedExtauth httpService) written in this test.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
let authServer: http.Server;
/** what the HTTP auth server was asked: method, path and the headers it saw */
const asked: { method: string; path: string; headers: http.IncomingHttpHeaders }[] = [];

const basic = (user: string, password: string): string => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const to = 'routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }';
// RE2 program size about 400: over Envoy's default limit (100), under the Settings' 1024
const LONG = `/long/[a-z]{400}`;

interface Echo {
  headers: Record<string, string>;
}

beforeAll(async () => {
  app = await startEcho('app');
  // allows `x-token: good` (and says who in x-auth-user), denies others with 401 and a header for the client
  authServer = http.createServer((req, res) => {
    asked.push({ method: req.method ?? '', path: req.url ?? '', headers: req.headers });
    if (req.headers['x-token'] === 'good') {
      res.writeHead(200, { 'x-auth-user': 'alice', 'x-internal': 'never-forwarded' });
    } else {
      res.writeHead(401, { 'x-auth-reason': 'bad token', 'x-internal': 'never-shown' });
    }
    res.end();
  });
  await new Promise<void>((resolve) => authServer.listen(0, '127.0.0.1', () => resolve()));
  const authPort = (authServer.address() as AddressInfo).port;
  gw = await startGateway({
    'settings.yaml': `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec:
  gloo:
    regexMaxProgramSize: 1024
    istioOptions: { appendXForwardedHost: true, enableAutoMtls: false, enableIntegration: false }
  gateway:
    isolateVirtualHostsBySslConfig: false
    validation: { warnRouteShortCircuiting: false }
  extauth:
    userIdHeader: x-user-id
  namedExtauth:
    http-authz:
      extauthzServerRef: { name: http-authz, namespace: gloo-system }
      httpService:
        pathPrefix: /check
        request:
          allowedHeaders: [x-token]
          headersToAdd: { x-gateway: legate }
        response:
          allowedUpstreamHeaders: [x-auth-user]
          allowedClientHeaders: [x-auth-reason]
  consoleOptions: { readOnly: false, apiExplorerEnabled: true }
  graphqlOptions: { schemaChangeValidationOptions: { rejectBreakingChanges: false, processingRules: [] } }
`,
    'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: http-authz, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${authPort} }] }
`,
    'auth.yaml': `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: basic, namespace: gloo-system }
spec:
  configs:
    - basicAuth:
        apr:
          users:
            user: { salt: "TYiryv0/", hashedPassword: "8BvzLUO9IfGPGGsPnAgSu1" }
`,
    'vs.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: app, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ regex: '${LONG}' }]
        ${to}
      - matchers: [{ prefix: /basic }]
        options: { extauth: { configRef: { name: basic, namespace: gloo-system } } }
        ${to}
      - matchers: [{ prefix: /http }]
        options: { extauth: { customAuth: { name: http-authz } } }
        ${to}
      - matchers: [{ prefix: / }]
        ${to}
`,
  });
  await gw.until('/basic', (r) => r.status === 200, { headers: { authorization: basic('user', 'password') } }, 30_000);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((resolve) => (authServer ? authServer.close(() => resolve()) : resolve()));
  await app?.close();
});

describe("Gloo Enterprise's Settings", () => {
  it('is Accepted, its default values included', () => {
    const out = JSON.parse(gw.ctl('get', 'settings', 'default', '-n', 'gloo-system', '-o', 'json').stdout) as {
      status: { statuses: Record<string, { state: string; reason?: string }> };
    };
    expect(Object.values(out.status.statuses)).toEqual([{ state: 'Accepted', reportedBy: expect.any(String) }]);
  });

  it('regexMaxProgramSize: Envoy takes a regex whose RE2 program is larger than its default limit', async () => {
    const r = await gw.request(`/long/${'a'.repeat(400)}`);
    expect(r.status).toBe(200);
    expect(r.json<{ path: string }>().path).toBe(`/long/${'a'.repeat(400)}`);
    expect((await gw.request(`/long/${'a'.repeat(399)}`)).status).toBe(200);
  });

  it('userIdHeader: the authenticated user reaches the upstream in it; a client cannot set it', async () => {
    const r = await gw.request('/basic', { headers: { authorization: basic('user', 'password'), 'x-user-id': 'admin' } });
    expect(r.status).toBe(200);
    expect(r.json<Echo>().headers['x-user-id']).toBe('user');
    // where no auth runs, the client's copy is removed all the same
    const open = await gw.request('/anything', { headers: { 'x-user-id': 'admin' } });
    expect(open.status).toBe(200);
    expect(open.json<Echo>().headers['x-user-id']).toBeUndefined();
    expect((await gw.request('/basic', { headers: { authorization: basic('user', 'wrong') } })).status).toBe(401);
  });

  it('httpService: Envoy asks the HTTP server under pathPrefix with the allowed and added headers', async () => {
    asked.length = 0;
    const ok = await gw.request('/http/orders?id=1', { headers: { 'x-token': 'good', 'x-other': 'not sent' } });
    expect(ok.status).toBe(200);
    expect(asked).toHaveLength(1);
    expect(asked[0]!.path).toBe('/check/http/orders?id=1');
    expect(asked[0]!.headers['x-token']).toBe('good');
    expect(asked[0]!.headers['x-gateway']).toBe('legate');
    expect(asked[0]!.headers['x-other']).toBeUndefined();
    // the allowed response header goes upstream, the others do not
    const seen = ok.json<Echo>().headers;
    expect(seen['x-auth-user']).toBe('alice');
    expect(seen['x-internal']).toBeUndefined();
  });

  it("httpService: a denial is the server's status, with the allowed client headers", async () => {
    const denied = await gw.request('/http/orders', { headers: { 'x-token': 'bad' } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-auth-reason')).toBe('bad token');
    expect(denied.headers.get('x-internal')).toBeNull();
  });
});
