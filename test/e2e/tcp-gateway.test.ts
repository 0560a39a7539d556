// TCP and hybrid Gateways through the real Envoy, written as Gloo's guides write them: a tcpGateway proxying a raw TCP
// echo server (Gloo's TCP proxy guide); SNI passthrough to two TLS backends by their SNI names (the client's TLS
// session ends at the backend, whose certificate it sees) and TLS terminated by Envoy for a third name; a hybridGateway
// whose 127.0.0.1/32 clients get the HTTP gateway and every other client a TCP gateway; and a hybridGateway that
// delegates to a MatchableHttpGateway chosen by label, whose virtualServiceExpressions pick the VirtualService.
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import tls from 'node:tls';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const serverCert = fs.readFileSync(path.join(fixtures, 'secure.example.com.crt'), 'utf8');
const serverKey = fs.readFileSync(path.join(fixtures, 'secure.example.com.key'), 'utf8');
/** the TLS backends' own certificate (so the client can tell a passthrough from Envoy's termination) */
const backendCert = fs.readFileSync(path.join(fixtures, 'secure.example.com-rotated.crt'), 'utf8');
const backendKey = fs.readFileSync(path.join(fixtures, 'secure.example.com-rotated.key'), 'utf8');

const indent = (pem: string, by = '    '): string =>
  pem
    .trim()
    .split('\n')
    .map((l) => `${by}${l}`)
    .join('\n');

interface Server {
  port: number;
  close(): Promise<void>;
}

async function listen(server: net.Server): Promise<Server> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const open = new Set<net.Socket>();
  server.on('connection', (s: net.Socket) => {
    open.add(s);
    s.on('close', () => open.delete(s));
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}

/** Gloo's tcp-echo: every byte back, after a greeting that names the server. */
const tcpEcho = (name: string): Promise<Server> =>
  listen(
    net.createServer((s) => {
      s.on('error', () => s.destroy());
      s.write(`${name}\n`);
      s.pipe(s);
    }),
  );

/** A TLS server that names itself and echoes, with the backends' certificate. */
const tlsEcho = (name: string): Promise<Server> =>
  listen(
    tls.createServer({ cert: backendCert, key: backendKey }, (s) => {
      s.on('error', () => s.destroy());
      s.write(`${name} sni=${(s as tls.TLSSocket & { servername?: string }).servername ?? ''}\n`);
      s.pipe(s);
    }),
  );

/** Connects (from `localAddress`), sends `message` after the greeting, and resolves with all it read until `want` appears. */
function talk(
  connect: () => net.Socket,
  message: string,
  want: string,
  ready: 'connect' | 'secureConnect' = 'connect',
): Promise<{ text: string; peerCert?: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect();
    let text = '';
    socket.setTimeout(5000, () => socket.destroy(new Error(`timed out, read ${JSON.stringify(text)}`)));
    socket.once(ready, () => socket.write(message));
    socket.on('data', (c: Buffer) => {
      text += c.toString();
      if (!text.includes(want)) return;
      const peer = socket instanceof tls.TLSSocket ? socket.getPeerCertificate().fingerprint256 : undefined;
      socket.destroy();
      resolve({ text, ...(peer ? { peerCert: peer } : {}) });
    });
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed, read ${JSON.stringify(text)}`)));
  });
}

const fingerprint = (pem: string): string => new crypto.X509Certificate(pem).fingerprint256;

let gw: Gateway;
let echo: Server;
let other: Server;
let tlsA: Server;
let tlsB: Server;
let http: EchoUpstream;
let tcpPort: number;
let sniPort: number;
let hybridPort: number;
let delegatedPort: number;
let missingPort: number;

beforeAll(async () => {
  [echo, other, tlsA, tlsB, http] = await Promise.all([
    tcpEcho('echo'),
    tcpEcho('other'),
    tlsEcho('backend-a'),
    tlsEcho('backend-b'),
    startEcho('web'),
  ]);
  [tcpPort, sniPort, hybridPort, delegatedPort, missingPort] = await Promise.all([
    freePort(),
    freePort(),
    freePort(),
    freePort(),
    freePort(),
  ]);
  const upstream = (name: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;
  gw = await startGateway({
    'upstreams.yaml': [
      upstream('gloo-system-tcp-echo-1025', echo.port),
      upstream('other', other.port),
      upstream('tls-a', tlsA.port),
      upstream('tls-b', tlsB.port),
      upstream('web', http.port),
      `
apiVersion: v1
kind: Secret
metadata: { name: tcp-cert, namespace: gloo-system }
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(serverCert)}
  tls.key: |
${indent(serverKey)}
`,
    ].join('\n---\n'),
    'tcp.yaml': `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata:
  name: tcp
  namespace: gloo-system
spec:
  bindAddress: 127.0.0.1
  bindPort: ${tcpPort}
  tcpGateway:
    tcpHosts:
    - name: one
      destination:
        single:
          upstream:
            name: gloo-system-tcp-echo-1025
            namespace: gloo-system
  useProxyProto: false
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: tcp-sni, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${sniPort}
  tcpGateway:
    tcpHosts:
      - name: a
        sslConfig: { sniDomains: [a.example.com] }
        destination: { single: { upstream: { name: tls-a, namespace: gloo-system } } }
      - name: b
        sslConfig: { sniDomains: [b.example.com] }
        destination: { single: { upstream: { name: tls-b, namespace: gloo-system } } }
      - name: terminated
        sslConfig:
          secretRef: { name: tcp-cert, namespace: gloo-system }
          sniDomains: [secure.example.com]
          alpnProtocols: [allow_empty]
        destination: { single: { upstream: { name: gloo-system-tcp-echo-1025, namespace: gloo-system } } }
    options:
      tcpProxySettings: { maxConnectAttempts: 2, idleTimeout: 30s }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: tcp-missing, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${missingPort}
  tcpGateway:
    tcpHosts:
      - name: gone
        destination: { single: { upstream: { name: not-there, namespace: gloo-system } } }
`,
    'hybrid.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: web, namespace: gloo-system } } }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${hybridPort}
  hybridGateway:
    matchedGateways:
      - httpGateway:
          virtualServices:
            - name: default
              namespace: gloo-system
        matcher:
          sourcePrefixRanges:
            - addressPrefix: 127.0.0.1
              prefixLen: 32
      - tcpGateway:
          tcpHosts:
            - name: everyone-else
              destination: { single: { upstream: { name: other, namespace: gloo-system } } }
        matcher: {}
  proxyNames:
  - gateway-proxy
  useProxyProto: false
`,
    'delegated.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: team-a, namespace: team-a, labels: { team: a } }
spec:
  virtualHost:
    domains: [a.example.com]
    routes: [{ directResponseAction: { status: 200, body: team a } }]
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: team-b, namespace: team-b, labels: { team: b } }
spec:
  virtualHost:
    domains: [b.example.com]
    routes: [{ directResponseAction: { status: 200, body: team b } }]
---
apiVersion: gateway.solo.io/v1
kind: MatchableHttpGateway
metadata: { name: team-a-gateway, namespace: gloo-system, labels: { owner: team-a } }
spec:
  matcher:
    sourcePrefixRanges: [{ addressPrefix: 127.0.0.1, prefixLen: 32 }]
  httpGateway:
    virtualServiceExpressions:
      expressions:
        - { key: team, operator: In, values: [a] }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: delegated, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${delegatedPort}
  hybridGateway:
    delegatedHttpGateways:
      selector:
        labels: { owner: team-a }
      httpConnectionManagerSettings: { serverName: team-a-edge }
    delegatedTcpGateways:
      ref: { name: passthrough-a }
---
apiVersion: gateway.solo.io/v1
kind: MatchableTcpGateway
metadata: { name: passthrough-a, namespace: gloo-system }
spec:
  matcher:
    sslConfig: { sniDomains: [a.example.com] }
  tcpGateway:
    tcpHosts:
      - name: a
        destination: { single: { upstream: { name: tls-a } } }
`,
  });
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([echo, other, tlsA, tlsB, http].map((s) => s?.close()));
});

const plain =
  (port: number, localAddress = '127.0.0.1') =>
  (): net.Socket =>
    net.connect({ host: '127.0.0.1', port, localAddress });
const secure = (port: number, servername: string) => (): net.Socket =>
  tls.connect({ host: '127.0.0.1', port, servername, ca: [serverCert, backendCert], checkServerIdentity: () => undefined });

/** One HTTP/1.1 request from `localAddress`; the raw response. */
async function get(port: number, host: string, localAddress = '127.0.0.1'): Promise<string> {
  const { text } = await talk(plain(port, localAddress), `GET / HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`, '\r\n\r\n');
  return text;
}

describe('tcpGateway', () => {
  it('proxies a raw TCP connection to the upstream (Gloo’s tcp-echo guide)', async () => {
    const r = await eventually('the tcp listener to proxy', async () => {
      try {
        return await talk(plain(tcpPort), 'hello over tcp\n', 'hello over tcp');
      } catch {
        return undefined;
      }
    });
    expect(r.text).toBe('echo\nhello over tcp\n');
  });

  it('passes TLS through by SNI name: each name reaches its backend, which terminates TLS itself', async () => {
    const a = await eventually('the SNI listener', async () => {
      try {
        return await talk(secure(sniPort, 'a.example.com'), 'to a\n', 'to a', 'secureConnect');
      } catch {
        return undefined;
      }
    });
    expect(a.text).toBe('backend-a sni=a.example.com\nto a\n');
    expect(a.peerCert).toBe(fingerprint(backendCert));
    const b = await talk(secure(sniPort, 'b.example.com'), 'to b\n', 'to b', 'secureConnect');
    expect(b.text).toBe('backend-b sni=b.example.com\nto b\n');
    expect(b.peerCert).toBe(fingerprint(backendCert));
  });

  it('terminates TLS with the Secret’s certificate for a host with secretRef, and proxies the plain bytes', async () => {
    const r = await talk(secure(sniPort, 'secure.example.com'), 'decrypted\n', 'decrypted', 'secureConnect');
    expect(r.text).toBe('echo\ndecrypted\n');
    expect(r.peerCert).toBe(fingerprint(serverCert));
  });

  it('refuses a connection whose SNI name no tcpHost has', async () => {
    await expect(talk(secure(sniPort, 'c.example.com'), 'x', 'x', 'secureConnect')).rejects.toThrow();
  });

  it('reports the Gateways and the MatchableHttpGateway (legatectl get gw / hgw): Accepted, a missing upstream a Warning', () => {
    const list = (kind: string): { metadata: { name: string }; status: { statuses: Record<string, { state: string }> } }[] =>
      JSON.parse(gw.ctl('get', kind, '-n', 'gloo-system', '-o', 'json').stdout);
    const states = [...list('gw'), ...list('hgw')].map((r) => [r.metadata.name, r.status.statuses['legate-system']?.state]);
    expect(Object.fromEntries(states)).toEqual({
      tcp: 'Accepted',
      'tcp-missing': 'Warning',
      'tcp-sni': 'Accepted',
      'gateway-proxy': 'Accepted',
      delegated: 'Accepted',
      'team-a-gateway': 'Accepted',
    });
  });

  it('closes the connections of a tcpHost whose upstream is missing; Envoy takes the listener and the others serve', async () => {
    // accepted (so not ECONNREFUSED), then closed or reset by Envoy
    await expect(talk(plain(missingPort), 'anyone?\n', 'anyone?')).rejects.toThrow(/closed|ECONNRESET/);
    expect((await talk(plain(tcpPort), 'still\n', 'still')).text).toBe('echo\nstill\n');
  });
});

describe('hybridGateway', () => {
  it('serves the HTTP gateway to 127.0.0.1/32 clients', async () => {
    const r = await eventually('the hybrid listener', async () => {
      try {
        const text = await get(hybridPort, 'anything.example.com');
        return text.startsWith('HTTP/1.1 200') ? text : undefined;
      } catch {
        return undefined;
      }
    });
    expect(r).toMatch(/x-upstream: web/);
  });

  it('sends every other client to its TCP gateway', async () => {
    const r = await talk(plain(hybridPort, '127.0.0.2'), 'from elsewhere\n', 'from elsewhere');
    expect(r.text).toBe('other\nfrom elsewhere\n');
  });

  it('serves a MatchableHttpGateway picked by label (its expressions pick the VirtualService), a MatchableTcpGateway by ref', async () => {
    const r = await eventually('the delegated listener', async () => {
      try {
        const text = await get(delegatedPort, 'a.example.com');
        return text.startsWith('HTTP/1.1 200') ? text : undefined;
      } catch {
        return undefined;
      }
    });
    expect(r).toMatch(/team a$/);
    // the Gateway's httpConnectionManagerSettings reach the delegated HCM
    expect(r).toMatch(/server: team-a-edge/);
    // team-b's VirtualService is not one the expressions pick
    expect(await get(delegatedPort, 'b.example.com')).toMatch(/^HTTP\/1\.1 404/);
    // the MatchableTcpGateway a ref picks takes the TLS connections for its matcher's SNI name, passed through
    const tcp = await talk(secure(delegatedPort, 'a.example.com'), 'via tgw\n', 'via tgw', 'secureConnect');
    expect(tcp.text).toBe('backend-a sni=a.example.com\nvia tgw\n');
    // and only 127.0.0.1/32 matches the delegated gateway: no filter chain for anyone else
    await expect(get(delegatedPort, 'a.example.com', '127.0.0.2')).rejects.toThrow();
  });
});
