// TLS both ways: an ssl gateway terminating TLS with a certificate from a Secret (chosen by SNI), and
// an upstream reached over TLS, verified against the CA in a Secret.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from './harness/gateway.js';
import { eventually } from './harness/util.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const cert = fs.readFileSync(path.join(fixtures, 'secure.example.com.crt'), 'utf8');
const key = fs.readFileSync(path.join(fixtures, 'secure.example.com.key'), 'utf8');
const indent = (pem: string): string =>
  pem
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

let gw: Gateway;
let tlsUpstream: https.Server;

function httpsGet(port: number, servername: string, p: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: p, servername, headers: { host: servername }, ca: cert, timeout: 5000 },
      (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

beforeAll(async () => {
  tlsUpstream = https.createServer({ cert, key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ upstream: 'tls', sni: (req.socket as unknown as { servername?: string }).servername ?? null }));
  });
  await new Promise<void>((r) => tlsUpstream.listen(0, '127.0.0.1', () => r()));
  const upPort = (tlsUpstream.address() as AddressInfo).port;
  gw = await startGateway({
    'tls.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: secure-cert, namespace: default }
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(cert)}
  tls.key: |
${indent(key)}
  ca.crt: |
${indent(cert)}
---
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: tls-upstream, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${upPort} }] }
  sslConfig:
    secretRef: { name: secure-cert }
    sni: secure.example.com
    verifySubjectAltName: [secure.example.com]
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: secure, namespace: default }
spec:
  sslConfig:
    secretRef: { name: secure-cert }
    sniDomains: [secure.example.com]
  virtualHost:
    domains: [secure.example.com]
    routes:
      - matchers: [{ prefix: /up }]
        routeAction: { single: { upstream: { name: tls-upstream } } }
      - directResponseAction: { status: 200, body: secure }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: plain, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /up }]
        routeAction: { single: { upstream: { name: tls-upstream } } }
`,
  });
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((r) => tlsUpstream?.close(() => r()));
});

describe('tls', () => {
  it('terminates TLS on the ssl gateway with the certificate chosen by SNI', async () => {
    const r = await eventually('https to answer', () => httpsGet(gw.ports.https, 'secure.example.com', '/'));
    expect(r).toEqual({ status: 200, body: 'secure' });
  });

  it('does not serve ssl virtual services on the plain listener', async () => {
    expect((await gw.request('/', { host: 'secure.example.com' })).status).toBe(404);
  });

  it('originates TLS to an upstream, verifying its certificate and sending SNI', async () => {
    const r = await gw.until('/up', (x) => x.status === 200);
    expect(r.json()).toEqual({ upstream: 'tls', sni: 'secure.example.com' });
    const viaTls = await httpsGet(gw.ports.https, 'secure.example.com', '/up');
    expect(JSON.parse(viaTls.body)['upstream']).toBe('tls');
  });
});
