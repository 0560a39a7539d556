// Where an Upstream's connections go, through a real Envoy: a pipe upstream (an HTTP server on a Unix domain socket),
// and a failover endpoint with TLS of its own (upstreamSslConfig, Envoy's transport socket match) while the Upstream's
// own host speaks plain HTTP.
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from './harness/gateway.js';
import { freePort } from './harness/util.js';

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
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:${route('/socket', 'app-socket')}${route(
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
  await new Promise<void>((resolve) => (socketServer ? socketServer.close(() => resolve()) : resolve()));
  if (tlsBackup) {
    tlsBackup.closeAllConnections();
    await new Promise<void>((resolve) => tlsBackup.close(() => resolve()));
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
});
