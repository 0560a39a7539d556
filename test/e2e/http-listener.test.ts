// httpGateway.options end to end: a Gateway with Gloo's HttpListenerOptions (as Gloo's chart renders
// customHttpGateway.options) on the listener legate run serves, through a real Envoy to an echo upstream.
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { BOOKS_DESCRIPTOR_BIN, startGrpcBooks, type GrpcBooks } from '../support/grpc-books.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let echo: EchoUpstream;
let books: GrpcBooks;

const gateway = (port: number, extra = ''): string => `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: "::"
  bindPort: ${port}
  httpGateway:
    options:
      httpConnectionManagerSettings:
        useRemoteAddress: true
        xffNumTrustedHops: 1
        serverName: my-edge
        maxRequestHeadersKb: 1
        mergeSlashes: true
      gzip:
        contentType: [application/json]
        contentLength: 30
      healthCheck:
        path: /health
      grpcJsonTranscoder:
        protoDescriptorBin: ${BOOKS_DESCRIPTOR_BIN}
        services: [shop.v1.Books]
        autoMapping: true
        printOptions: { preserveProtoFieldNames: true }
${extra}`;

const everything = (port: number): string => `      httpLocalRatelimit:
        defaultLimit: { maxTokens: 2, tokensPerFill: 1, fillInterval: 100s }
        enableXRatelimitHeaders: true
      grpcWeb: { disable: true }
      buffer: { maxRequestBytes: 65536 }
      csrf:
        filterEnabled: { defaultValue: { numerator: 100, denominator: HUNDRED } }
        additionalOrigins: [{ suffix: .example.com }]
  # the chart's other HCM settings, on a second listener of the same proxy
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: settings, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${port}
  httpGateway:
    options:
      httpConnectionManagerSettings:
        skipXffAppend: true
        via: legate
        generateRequestId: true
        proxy100Continue: true
        streamIdleTimeout: 5m
        idleTimeout: 1h
        requestTimeout: 30s
        requestHeadersTimeout: 5s
        drainTimeout: 5s
        delayedCloseTimeout: 1s
        serverHeaderTransformation: APPEND_IF_ABSENT
        acceptHttp10: true
        defaultHostForHttp10: example.com
        allowChunkedLength: true
        enableTrailers: true
        properCaseHeaderKeyFormat: true
        forwardClientCertDetails: SANITIZE_SET
        setCurrentClientCertDetails: { subject: true, uri: true }
        preserveExternalRequestId: true
        upgrades: [{ websocket: { enabled: false } }, { connect: {} }]
        maxConnectionDuration: 10m
        maxStreamDuration: 1m
        maxHeadersCount: 50
        headersWithUnderscoresAction: REJECT_CLIENT_REQUEST
        maxRequestsPerConnection: 100
        pathWithEscapedSlashesAction: UNESCAPE_AND_REDIRECT
        codecType: HTTP1
        normalizePath: false
        uuidRequestIdConfig: { packTraceReason: false }
        http2ProtocolOptions: { maxConcurrentStreams: 100 }
        internalAddressConfig: { cidrRanges: [{ addressPrefix: 10.0.0.0, prefixLen: 8 }] }
        appendXForwardedPort: true
        tracing:
          requestHeadersForTags: [x-tenant]
          verbose: true
          tracePercentages: { randomSamplePercentage: 5 }
          literalsForTags: [{ tag: cluster, value: east }]
`;

/** The status Envoy answers a WebSocket upgrade request with. */
function upgradeStatus(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: '/ws', headers: { connection: 'Upgrade', upgrade: 'websocket' } });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

beforeAll(async () => {
  [echo, books] = await Promise.all([startEcho('echo'), startGrpcBooks()]);
  gw = await startGateway({
    'echo.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: echo, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echo.port} }] }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: books, namespace: gloo-system }
spec:
  useHttp2: true
  static: { hosts: [{ addr: 127.0.0.1, port: ${books.port} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:
      - matchers: [{ prefix: /shop.v1.Books/ }]
        routeAction: { single: { upstream: { name: books, namespace: gloo-system } } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
`,
  });
  gw.write('gateway.yaml', gateway(gw.ports.http));
  await gw.until('/ready-check', (r) => r.headers.get('server') === 'my-edge');
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  await books?.stop();
});

describe('httpGateway.options through Envoy', () => {
  it('names the server as serverName says', async () => {
    const r = await gw.request('/anything');
    expect(r.status).toBe(200);
    expect(r.headers.get('server')).toBe('my-edge');
  });

  it('appends the remote address to X-Forwarded-For (useRemoteAddress) and trusts one hop (xffNumTrustedHops)', async () => {
    const r = await gw.request('/xff', { headers: { 'x-forwarded-for': '203.0.113.7' } });
    const headers = r.json<{ headers: Record<string, string> }>().headers;
    // the address Envoy saw the connection from, after the client's own
    expect(headers['x-forwarded-for']).toMatch(/^203\.0\.113\.7,\d+\.\d+\.\d+\.\d+$/);
    // one trusted hop: the client is the address the hop in front of Envoy put there
    expect(headers['x-envoy-external-address']).toBe('203.0.113.7');
  });

  it('answers 431 to request headers over maxRequestHeadersKb', async () => {
    const r = await gw.request('/big', { headers: { 'x-big': 'a'.repeat(2048) } });
    expect(r.status).toBe(431);
  });

  it('normalizes the path (Gloo default) and merges slashes before the upstream sees it', async () => {
    const r = await gw.request('/a//b/../c');
    expect(r.json<{ path: string }>().path).toBe('/a/c');
  });

  it('compresses responses with gzip when the client accepts it', async () => {
    const plain = await gw.request('/gzip');
    expect(plain.headers.get('content-encoding')).toBeNull();
    const r = await gw.request('/gzip', { headers: { 'accept-encoding': 'gzip' } });
    expect(r.headers.get('content-encoding')).toBe('gzip');
  });

  it('answers the health check path itself', async () => {
    const before = echo.seen.length;
    const r = await gw.request('/health');
    expect(r.status).toBe(200);
    expect(echo.seen.slice(before).some((s) => s.path === '/health')).toBe(false);
  });

  it('transcodes JSON to the gRPC service with grpcJsonTranscoder', async () => {
    const r = await gw.request('/shop.v1.Books/GetBook', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 2 }),
    });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ id: '2', title: 'Sonnets', kind: 'POEMS', page_count: 154 });
    expect(books.calls.at(-1)?.method).toBe('GetBook');
  });

  it("has Gloo's HCM defaults: grpc_web filter, normalize_path, WebSocket upgrades", async () => {
    const dump = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump`)).text();
    expect(dump).toContain('envoy.filters.http.grpc_web');
    expect(dump).toContain('"normalize_path": true');
    // WebSocket on by default (Gloo's): the upgrade reaches the upstream, which answers without switching
    expect(await upgradeStatus(gw.ports.http)).toBe(200);
  });

  it('limits every request on the listener with httpLocalRatelimit', async () => {
    // with the rest of what Gloo's HttpListenerOptions carry, so Envoy takes all of it (a NACK would keep the old listener)
    const port = await freePort();
    gw.write('gateway.yaml', gateway(gw.ports.http, everything(port)));
    const r = await gw.until('/limited', (x) => x.status === 429);
    expect(r.status).toBe(429);
    const dump = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump`)).text();
    expect(dump).toContain('UuidRequestIdConfig');
    // grpcWeb.disable on the first listener, Gloo's default on the second
    const listeners = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).json();
    const withGrpcWeb = (listeners as { configs: { name: string; active_state?: unknown }[] }).configs
      .filter((l) => JSON.stringify(l.active_state ?? {}).includes('envoy.filters.http.grpc_web'))
      .map((l) => l.name);
    expect(withGrpcWeb).toEqual([`listener-127.0.0.1-${port}`]);
    const other = await fetch(`http://127.0.0.1:${port}/settings`);
    expect(other.status).toBe(200);
    expect(other.headers.get('via')).toBe('legate');
    // upgrades: websocket off on that listener (Envoy refuses the upgrade), on by default on the first
    expect(await upgradeStatus(port)).toBe(403);
  });
});
