// TLS both ways: an ssl gateway terminating TLS with a certificate from a Secret (chosen by SNI), or from the user's
// own SDS server (sslConfig.sds: a grpc-js SecretDiscoveryService in this test), and an upstream reached over TLS,
// verified against the CA in a Secret.
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TypeUrls, encodeAny } from '../../envoy/protos.js';
import { bindServer, loadEnvoyService, lookupService, type BoundServer } from '../../extensions/common/grpc.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const cert = fs.readFileSync(path.join(fixtures, 'secure.example.com.crt'), 'utf8');
const key = fs.readFileSync(path.join(fixtures, 'secure.example.com.key'), 'utf8');
// the same names, another key: what a rotated Secret holds
const rotatedCert = fs.readFileSync(path.join(fixtures, 'secure.example.com-rotated.crt'), 'utf8');
const rotatedKey = fs.readFileSync(path.join(fixtures, 'secure.example.com-rotated.key'), 'utf8');
const fingerprint = (pem: string): string => new X509Certificate(pem).fingerprint256;
const indent = (pem: string): string =>
  pem
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

let gw: Gateway;
let tlsUpstream: https.Server;
let sds: BoundServer;
/** the secret names Envoy asked the SDS server for */
const sdsAsked = new Set<string>();

/** A State-of-the-World SecretDiscoveryService serving one certificate, `sds-cert` (the rotated one). */
async function startSds(): Promise<BoundServer> {
  const service = lookupService(loadEnvoyService('envoy/service/secret/v3/sds.proto'), 'envoy.service.secret.v3.SecretDiscoveryService');
  const secrets: Record<string, object> = {
    'sds-cert': {
      name: 'sds-cert',
      tls_certificate: { certificate_chain: { inline_string: rotatedCert }, private_key: { inline_string: rotatedKey } },
    },
  };
  const server = new grpc.Server();
  const unimplemented = (call: grpc.ServerDuplexStream<unknown, unknown>): void => {
    call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: 'not served' });
  };
  server.addService(service.service, {
    StreamSecrets(call: grpc.ServerDuplexStream<{ resource_names?: string[]; response_nonce?: string }, unknown>) {
      let sent = '';
      let nonce = 0;
      call.on('data', (req) => {
        const names = [...(req.resource_names ?? [])].sort();
        for (const n of names) sdsAsked.add(n);
        // an ACK of what was sent already is not answered again
        if (JSON.stringify(names) === sent) return;
        sent = JSON.stringify(names);
        const resources = names.flatMap((n) => (secrets[n] ? [encodeAny(TypeUrls.secret, secrets[n])] : []));
        call.write({ version_info: '1', resources, type_url: TypeUrls.secret, nonce: String(++nonce) });
      });
      call.on('end', () => call.end());
    },
    DeltaSecrets: unimplemented,
    FetchSecrets: (_call: unknown, done: grpc.sendUnaryData<unknown>) => done({ code: grpc.status.UNIMPLEMENTED }),
  });
  return bindServer(server, '127.0.0.1', 0);
}

/** The Secret the ssl VirtualService serves (rotated by one test). */
const servingSecret = (crt: string, k: string): string => `
apiVersion: v1
kind: Secret
metadata: { name: secure-cert, namespace: default }
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(crt)}
  tls.key: |
${indent(k)}
`;

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
  sds = await startSds();
  tlsUpstream = https.createServer({ cert, key }, (req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ upstream: 'tls', sni: (req.socket as unknown as { servername?: string }).servername ?? null }));
  });
  await new Promise<void>((r) => tlsUpstream.listen(0, '127.0.0.1', () => r()));
  const upPort = (tlsUpstream.address() as AddressInfo).port;
  gw = await startGateway({
    'cert.yaml': servingSecret(cert, key),
    'tls.yaml': `
apiVersion: v1
kind: Secret
metadata: { name: upstream-ca, namespace: default }
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
    secretRef: { name: upstream-ca }
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
  await sds?.stop(500);
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

  it('redirects http to https (httpsRedirect with the gateway port) and serves the redirected request', async () => {
    gw.write(
      'redirect.yaml',
      `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: to-https, namespace: default }
spec:
  virtualHost:
    domains: [secure.example.com]
    routes:
      - redirectAction: { httpsRedirect: true, portRedirect: ${gw.ports.https} }
`,
    );
    const r = await gw.until('/a?b=1', (x) => x.status === 301, { host: `secure.example.com:${gw.ports.http}` });
    const location = new URL(r.headers.get('location')!);
    expect(location.href).toBe(`https://secure.example.com:${gw.ports.https}/a?b=1`);
    expect(await httpsGet(Number(location.port), location.hostname, location.pathname + location.search)).toEqual({
      status: 200,
      body: 'secure',
    });
  });

  it('refuses TLS below 1.2', async () => {
    const outcome = await new Promise<string>((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port: gw.ports.https,
        servername: 'secure.example.com',
        minVersion: 'TLSv1',
        maxVersion: 'TLSv1.1',
        ciphers: 'DEFAULT@SECLEVEL=0',
        ca: cert,
      });
      socket.once('secureConnect', () => {
        resolve(`connected with ${socket.getProtocol()}`);
        socket.destroy();
      });
      socket.once('error', (err) => resolve(err.message));
    });
    expect(outcome).toMatch(/protocol version/i);
    // the same client allowed TLS 1.2 connects
    expect((await httpsGet(gw.ports.https, 'secure.example.com', '/')).status).toBe(200);
  });

  it("rotates a Secret's certificate for new handshakes without closing open connections", async () => {
    const agent = new https.Agent({ keepAlive: true, maxSockets: 1 });
    const get = (): Promise<{ status: number; body: string; fingerprint: string; localPort: number }> =>
      new Promise((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: gw.ports.https,
            path: '/',
            servername: 'secure.example.com',
            headers: { host: 'secure.example.com' },
            ca: [cert, rotatedCert],
            agent,
          },
          (res) => {
            // read now: a keep-alive socket goes back to the agent (res.socket null) once the response ends
            const socket = res.socket as tls.TLSSocket;
            const fingerprint = socket.getPeerCertificate().fingerprint256;
            const localPort = socket.localPort ?? 0;
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => {
              resolve({
                status: res.statusCode ?? 0,
                body,
                fingerprint,
                localPort,
              });
            });
          },
        );
        req.on('error', reject);
        req.end();
      });
    try {
      const before = await get();
      expect(before).toMatchObject({ status: 200, body: 'secure', fingerprint: fingerprint(cert) });
      const listenersBefore = await listenerVersions();

      gw.write('cert.yaml', servingSecret(rotatedCert, rotatedKey));
      const fresh = await eventually('a new handshake to get the rotated certificate', async () => {
        const f = await new Promise<string>((resolve, reject) => {
          const s = tls.connect(
            { host: '127.0.0.1', port: gw.ports.https, servername: 'secure.example.com', ca: [cert, rotatedCert] },
            () => {
              resolve(s.getPeerCertificate().fingerprint256);
              s.destroy();
            },
          );
          s.on('error', reject);
        });
        return f === fingerprint(rotatedCert) ? f : undefined;
      });
      expect(fresh).toBe(fingerprint(rotatedCert));
      // past Envoy's drain time (legate run: 1 s): a listener change would have closed the connection by now
      await new Promise((r) => setTimeout(r, 1500));
      const after = await get();
      expect(after).toMatchObject({ status: 200, body: 'secure', fingerprint: fingerprint(cert), localPort: before.localPort });
      expect(await listenerVersions()).toEqual(listenersBefore);
    } finally {
      agent.destroy();
      gw.write('cert.yaml', servingSecret(cert, key));
    }
  });

  it('rejects only the VirtualService whose certificate is bad, the others keep serving', async () => {
    gw.write(
      'broken.yaml',
      `
apiVersion: v1
kind: Secret
metadata: { name: broken-cert, namespace: default }
type: kubernetes.io/tls
stringData:
  tls.crt: not a certificate
  tls.key: not a key
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: broken, namespace: default }
spec:
  sslConfig:
    secretRef: { name: broken-cert }
    sniDomains: [broken.example.com]
  virtualHost:
    domains: [broken.example.com]
    routes:
      - directResponseAction: { status: 200, body: broken }
`,
    );
    const status = await eventually('the broken VirtualService to be rejected', async () => {
      const out = gw.ctl('get', 'virtualservices', 'broken', '-n', 'default', '-o', 'json');
      if (out.status !== 0) return undefined;
      const s =
        JSON.parse(out.stdout).status?.statuses?.['legate-system'] ?? Object.values(JSON.parse(out.stdout).status?.statuses ?? {})[0];
      return s?.state === 'Rejected' ? s : undefined;
    });
    expect(String(status.reason)).toContain('broken-cert');
    expect(await httpsGet(gw.ports.https, 'secure.example.com', '/')).toEqual({ status: 200, body: 'secure' });
    gw.remove('broken.yaml');
  });

  it("serves the certificate of the user's SDS server (sslConfig.sds), asked through a cluster to targetUri", async () => {
    gw.write(
      'sds.yaml',
      `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: from-sds, namespace: default }
spec:
  sslConfig:
    sds:
      targetUri: 127.0.0.1:${sds.port}
      clusterName: gateway_proxy_sds
      certificatesSecretName: sds-cert
    sniDomains: [sds.example.com]
  virtualHost:
    domains: [sds.example.com]
    routes:
      - directResponseAction: { status: 200, body: from sds }
`,
    );
    // the SDS server's certificate is secure.example.com's rotated one: the fingerprint says where it came from
    const served = await eventually('https with the SDS certificate', async () => {
      const r = await new Promise<{ status: number; body: string; fingerprint: string }>((resolve, reject) => {
        const req = https.request(
          {
            host: '127.0.0.1',
            port: gw.ports.https,
            path: '/',
            servername: 'sds.example.com',
            headers: { host: 'sds.example.com' },
            ca: rotatedCert,
            checkServerIdentity: () => undefined,
            timeout: 5000,
          },
          (res) => {
            const fp = (res.socket as tls.TLSSocket).getPeerCertificate().fingerprint256;
            let body = '';
            res.on('data', (c: Buffer) => (body += c.toString()));
            res.on('end', () => resolve({ status: res.statusCode ?? 0, body, fingerprint: fp }));
          },
        );
        req.on('error', reject);
        req.end();
      });
      return r.status === 200 ? r : undefined;
    });
    expect(served).toEqual({ status: 200, body: 'from sds', fingerprint: fingerprint(rotatedCert) });
    expect([...sdsAsked]).toEqual(['sds-cert']);
    // the Secret-backed VirtualService keeps its own certificate
    expect(await httpsGet(gw.ports.https, 'secure.example.com', '/')).toEqual({ status: 200, body: 'secure' });
    gw.remove('sds.yaml');
  });
});

/** version_info of each dynamic listener in Envoy's config dump. */
async function listenerVersions(): Promise<Record<string, string>> {
  const dump = (await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).json()) as {
    configs: { name: string; active_state?: { version_info?: string } }[];
  };
  return Object.fromEntries(dump.configs.map((c) => [c.name, c.active_state?.version_info ?? '']));
}
