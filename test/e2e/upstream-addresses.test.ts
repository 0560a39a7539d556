// Where an Upstream's connections go, through a real Envoy: a pipe upstream (an HTTP server on a Unix domain socket),
// a failover endpoint with TLS of its own (upstreamSslConfig, Envoy's transport socket match) while the Upstream's
// own host speaks plain HTTP, and Upstreams tunnelled through an HTTP CONNECT proxy (httpProxyHostname,
// httpConnectHeaders, httpConnectSslConfig: TLS to the host behind the proxy, inside the tunnel); and an Upstream whose
// serviceSpec.grpcJsonTranscoder transcodes the JSON requests of the routes to it.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { BOOKS_DESCRIPTOR_BIN, startGrpcBooks, type GrpcBooks } from '../support/grpc-books.js';
import { freePort } from '../support/util.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const certFile = path.join(fixtures, 'secure.example.com.crt');
const cert = fs.readFileSync(certFile, 'utf8');
const key = fs.readFileSync(path.join(fixtures, 'secure.example.com.key'), 'utf8');

let gw: Gateway;
let tmp: string;
let socketServer: http.Server;
let tlsBackup: https.Server;
const seenOnSocket: string[] = [];
const tlsServerNames: string[] = [];
let connectProxy: http.Server;
let books: GrpcBooks;
let plainTarget: http.Server;
const connects: { target: string; headers: http.IncomingHttpHeaders }[] = [];

/** A forward proxy answering CONNECT host:port with a TCP tunnel there (and nothing else). */
async function startConnectProxy(): Promise<number> {
  connectProxy = http.createServer((_req, res) => res.writeHead(405).end());
  connectProxy.on('connect', (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const target = req.url ?? '';
    connects.push({ target, headers: req.headers });
    const i = target.lastIndexOf(':');
    const upstream = net.connect(Number(target.slice(i + 1)), target.slice(0, i), () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    upstream.on('error', () => socket.destroy());
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => connectProxy.listen(0, '127.0.0.1', () => resolve()));
  return (connectProxy.address() as AddressInfo).port;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-addr-'));
  const socketPath = path.join(tmp, 'app.sock');
  socketServer = http.createServer((req, res) => {
    seenOnSocket.push(req.url ?? '');
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ upstream: 'socket', path: req.url }));
  });
  await new Promise<void>((resolve) => socketServer.listen(socketPath, () => resolve()));
  tlsBackup = https.createServer({ cert, key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ upstream: 'tls-backup', path: req.url }));
  });
  tlsBackup.on('secureConnection', (s) => tlsServerNames.push((s as unknown as { servername?: string }).servername ?? ''));
  await new Promise<void>((resolve) => tlsBackup.listen(0, '127.0.0.1', () => resolve()));
  const backupPort = (tlsBackup.address() as AddressInfo).port;
  const closedPort = await freePort();
  const proxyPort = await startConnectProxy();
  books = await startGrpcBooks();
  plainTarget = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ upstream: 'behind-proxy', path: req.url }));
  });
  await new Promise<void>((resolve) => plainTarget.listen(0, '127.0.0.1', () => resolve()));
  const plainPort = (plainTarget.address() as AddressInfo).port;
  const route = (prefix: string, upstream: string, extra = ''): string => `
      - matchers: [{ prefix: ${prefix} }]
        routeAction: { single: { upstream: { name: ${upstream}, namespace: gloo-system } } }${extra}`;
  gw = await startGateway({
    'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app-socket, namespace: gloo-system }
spec:
  pipe: { path: ${socketPath} }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: primary, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${closedPort} }] }
  connectionConfig: { connectTimeout: 1s }
  failover:
    prioritizedLocalities:
      - localityEndpoints:
          - locality: { region: us-east-1 }
            lbEndpoints:
              - address: 127.0.0.1
                port: ${backupPort}
                upstreamSslConfig:
                  sni: secure.example.com
                  sslFiles: { rootCa: ${certFile} }
                  verifySubjectAltName: [secure.example.com]
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: via-proxy, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${proxyPort} }] }
  httpProxyHostname: 127.0.0.1:${plainPort}
  httpConnectHeaders: [{ key: proxy-authorization, value: Basic bGVnYXRlOnR1bm5lbA== }]
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: via-proxy-tls, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${proxyPort} }] }
  httpProxyHostname: 127.0.0.1:${backupPort}
  httpConnectSslConfig:
    sni: secure.example.com
    sslFiles: { rootCa: ${certFile} }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: books, namespace: gloo-system }
spec:
  useHttp2: true
  static:
    hosts: [{ addr: 127.0.0.1, port: ${books.port} }]
    serviceSpec:
      grpcJsonTranscoder:
        protoDescriptorBin: ${BOOKS_DESCRIPTOR_BIN}
        services: [shop.v1.Books]
        autoMapping: true
        printOptions: { preserveProtoFieldNames: true }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:${route('/shop.v1.Books/', 'books')}${route('/socket', 'app-socket')}${route('/tunnel-tls', 'via-proxy-tls')}${route(
      '/tunnel',
      'via-proxy',
    )}${route(
      '/failover',
      'primary',
      `
        options:
          retries: { retryOn: connect-failure, numRetries: 2, previousPriorities: { updateFrequency: 1 } }`,
    )}
`,
  });
  await gw.until('/socket/ready', (r) => r.status === 200);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await books?.stop();
  await new Promise<void>((resolve) => (socketServer ? socketServer.close(() => resolve()) : resolve()));
  if (tlsBackup) {
    tlsBackup.closeAllConnections();
    await new Promise<void>((resolve) => tlsBackup.close(() => resolve()));
  }
  for (const s of [connectProxy, plainTarget]) {
    if (!s) continue;
    s.closeAllConnections();
    await new Promise<void>((resolve) => s.close(() => resolve()));
  }
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

describe('upstream addresses through Envoy', () => {
  it('a pipe upstream: Envoy connects to the Unix domain socket', async () => {
    const r = await gw.request('/socket/hello');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ upstream: 'socket', path: '/socket/hello' });
    expect(seenOnSocket).toContain('/socket/hello');
  });

  it("a failover endpoint's upstreamSslConfig: TLS to it (with its SNI, its certificate verified), plain HTTP to the primary", async () => {
    const r = await gw.until('/failover/tls', (x) => x.status === 200);
    expect(r.json()).toMatchObject({ upstream: 'tls-backup', path: '/failover/tls' });
    expect(tlsServerNames).toContain('secure.example.com');
  });

  it('serviceSpec.grpcJsonTranscoder: a JSON request to a route to the Upstream reaches its gRPC service', async () => {
    const r = await gw.request('/shop.v1.Books/GetBook', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 1 }),
    });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ id: '1', title: 'The Comedy of Errors', page_count: 200 });
    expect(books.calls.at(-1)?.method).toBe('GetBook');
    // a route to another Upstream is not transcoded
    expect((await gw.request('/socket/x', { method: 'POST', body: '{}' })).json()).toMatchObject({ upstream: 'socket' });
  });

  it('httpProxyHostname: requests reach the host behind the CONNECT proxy, with httpConnectHeaders on the CONNECT', async () => {
    const r = await gw.request('/tunnel/hello');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ upstream: 'behind-proxy', path: '/tunnel/hello' });
    const plain = connects.find((c) => c.target !== '' && c.headers['proxy-authorization'] !== undefined);
    expect(plain?.headers['proxy-authorization']).toBe('Basic bGVnYXRlOnR1bm5lbA==');
  });

  it('httpConnectSslConfig: TLS to the host behind the proxy, inside the tunnel', async () => {
    const before = tlsServerNames.length;
    const r = await gw.request('/tunnel-tls/hello');
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ upstream: 'tls-backup', path: '/tunnel-tls/hello' });
    expect(tlsServerNames.slice(before)).toContain('secure.example.com');
    expect(connects.some((c) => c.target.endsWith(`:${(tlsBackup.address() as AddressInfo).port}`))).toBe(true);
  });
});
