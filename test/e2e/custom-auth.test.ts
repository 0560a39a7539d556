// A user's own ext_authz server (Gloo's Settings namedExtauth + options.extauth.customAuth, and Settings extauth for a
// customAuth without a name) end to end: a gRPC Authorization server in this test behind an Upstream, asked by Envoy
// where a virtual host or route names it.
import net, { type AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindServer, loadEnvoyService, lookupService, type BoundServer } from '../../extensions/common/grpc.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

const Authorization = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization');

/** What the server reads of a CheckRequest (proto-loader, keepCase). */
interface CheckRequestIn {
  attributes: { request: { http: { path: string; headers: Record<string, string> } }; context_extensions?: Record<string, string> };
}

let gw: Gateway;
let app: EchoUpstream;
let authz: BoundServer;
/** path -> context extensions of each check the server answered */
const checks: { path: string; context: Record<string, string> }[] = [];

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', () => resolve()));
  const port = (s.address() as AddressInfo).port;
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

const upstream = (name: string, port: number, h2 = false): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  ${h2 ? 'useHttp2: true' : ''}
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;

const to = 'routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }';

beforeAll(async () => {
  app = await startEcho('app');
  const server = new grpc.Server();
  server.addService(Authorization.service, {
    // allows `x-allow: yes`; `x-pay: me` is denied with a status, body and header of the server's; others 403
    Check(call: grpc.ServerUnaryCall<CheckRequestIn, unknown>, done: grpc.sendUnaryData<unknown>) {
      const { request, context_extensions: context = {} } = call.request.attributes;
      checks.push({ path: request.http.path, context });
      const headers = request.http.headers;
      if (headers['x-allow'] === 'yes') {
        done(null, { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-checked-by', value: 'my-authz' } }] } });
      } else if (headers['x-pay'] === 'me') {
        done(null, {
          status: { code: 7 },
          denied_response: {
            status: { code: 'PaymentRequired' },
            body: 'pay first',
            headers: [{ header: { key: 'x-denied-by', value: 'my-authz' } }],
          },
        });
      } else done(null, { status: { code: 7 } });
    },
  });
  authz = await bindServer(server, '127.0.0.1', 0);
  const down = await closedPort();
  gw = await startGateway({
    'settings.yaml': `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec:
  # open-source Gloo's way: customAuth without a name asks this server
  extauth:
    extauthzServerRef: { name: authz, namespace: gloo-system }
    requestTimeout: 2s
  namedExtauth:
    my-authz:
      extauthzServerRef: { name: authz, namespace: gloo-system }
      requestTimeout: 2s
    down-open:
      extauthzServerRef: { name: authz-down, namespace: gloo-system }
      failureModeAllow: true
    down-closed:
      extauthzServerRef: { name: authz-down, namespace: gloo-system }
      statusOnError: 503
    gone:
      extauthzServerRef: { name: no-such-upstream, namespace: gloo-system }
      failureModeAllow: true
`,
    'upstreams.yaml': [upstream('app', app.port), upstream('authz', authz.port, true), upstream('authz-down', down, true)].join('---\n'),
    'api.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: api, namespace: gloo-system }
spec:
  virtualHost:
    domains: [api.example.com]
    options:
      extauth:
        customAuth:
          name: my-authz
          contextExtensions: { tenant: acme }
    routes:
      - matchers: [{ prefix: /public }]
        options: { extauth: { disable: true } }
        ${to}
      - matchers: [{ prefix: /partner }]
        options: { extauth: { customAuth: { name: my-authz, contextExtensions: { tenant: partner } } } }
        ${to}
      - matchers: [{ prefix: /down-open }]
        options: { extauth: { customAuth: { name: down-open } } }
        ${to}
      - matchers: [{ prefix: /down-closed }]
        options: { extauth: { customAuth: { name: down-closed } } }
        ${to}
      - matchers: [{ prefix: /gone }]
        options: { extauth: { customAuth: { name: gone } } }
        ${to}
      - matchers: [{ prefix: / }]
        ${to}
`,
    // Gloo's custom auth guide: the VirtualService names no server
    'oss.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: oss, namespace: gloo-system }
spec:
  virtualHost:
    domains: [oss.example.com]
    routes:
      - matchers: [{ prefix: /tenant }]
        options: { extauth: { customAuth: { contextExtensions: { tenant: acme } } } }
        ${to}
      - matchers: [{ prefix: / }]
        ${to}
    options:
      extauth:
        customAuth: {}
`,
  });
  await gw.until('/', (r) => r.status === 403, { host: 'api.example.com' }, 30_000);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await authz?.stop(500);
  await app?.close();
});

const on = { host: 'api.example.com' };

describe('customAuth with Settings namedExtauth', () => {
  it('asks the server: a request it allows reaches the upstream with its headers, others are denied', async () => {
    const ok = await gw.request('/orders', { ...on, headers: { 'x-allow': 'yes' } });
    expect(ok.status).toBe(200);
    expect(ok.json<{ headers: Record<string, string> }>().headers['x-checked-by']).toBe('my-authz');
    expect((await gw.request('/orders', on)).status).toBe(403);
  });

  it("answers with the server's own denial: status, body and headers", async () => {
    const r = await gw.request('/orders', { ...on, headers: { 'x-pay': 'me' } });
    expect(r.status).toBe(402);
    expect(r.text).toBe('pay first');
    expect(r.headers.get('x-denied-by')).toBe('my-authz');
  });

  it("sends the virtual host's or the route's contextExtensions", async () => {
    checks.length = 0;
    await gw.request('/orders/1', { ...on, headers: { 'x-allow': 'yes' } });
    await gw.request('/partner/1', { ...on, headers: { 'x-allow': 'yes' } });
    expect(checks).toEqual([
      { path: '/orders/1', context: { tenant: 'acme' } },
      { path: '/partner/1', context: { tenant: 'partner' } },
    ]);
  });

  it('does not ask for a route with extauth.disable', async () => {
    checks.length = 0;
    expect((await gw.request('/public/x', on)).status).toBe(200);
    expect(checks).toEqual([]);
  });

  it('lets requests through a server that is down only with failureModeAllow', async () => {
    expect((await gw.request('/down-open', on)).status).toBe(200);
    expect((await gw.request('/down-closed', on)).status).toBe(503);
  });

  it("denies where the server's Upstream is missing, whatever failureModeAllow says, and warns on the Settings", async () => {
    expect((await gw.request('/gone', on)).status).toBe(403);
    const settings = gw.ctl('get', 'settings', 'default', '-n', 'gloo-system', '-o', 'json').stdout;
    expect(settings).toContain('namedExtauth.gone.extauthzServerRef: Upstream gloo-system.no-such-upstream not found');
  });
});

describe('customAuth without a name: the server of Settings extauth', () => {
  const oss = { host: 'oss.example.com' };
  it('asks the extauthzServerRef of Settings extauth, with the route contextExtensions', async () => {
    await gw.until('/', (r) => r.status === 403, oss);
    checks.length = 0;
    const ok = await gw.request('/orders', { ...oss, headers: { 'x-allow': 'yes' } });
    expect(ok.status).toBe(200);
    expect(ok.json<{ headers: Record<string, string> }>().headers['x-checked-by']).toBe('my-authz');
    expect((await gw.request('/tenant/1', oss)).status).toBe(403);
    expect(checks).toEqual([
      { path: '/orders', context: {} },
      { path: '/tenant/1', context: { tenant: 'acme' } },
    ]);
    const vs = gw.ctl('get', 'vs', 'oss', '-n', 'gloo-system', '-o', 'json').stdout;
    expect(JSON.parse(vs).status.statuses['legate-system'].state).toBe('Accepted');
  });
});
