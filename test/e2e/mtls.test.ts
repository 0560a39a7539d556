// Downstream TLS as Gloo configures it: a Secret with ca.crt means clients must present a certificate signed
// by that CA (unless oneWayTls), verifySubjectAltName narrows which, and sslConfig.parameters / alpnProtocols
// set the TLS versions and the protocols offered. Certificates: test/e2e/fixtures (the server's) and
// test/e2e/fixtures/mtls (two client CAs' certificates; the CA keys are not kept).
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually } from '../support/util.js';

const fixtures = path.join(import.meta.dirname, 'fixtures');
const read = (f: string): string => fs.readFileSync(path.join(fixtures, f), 'utf8');
const serverCert = read('secure.example.com.crt');
const serverKey = read('secure.example.com.key');
const clientCa = read('mtls/client-ca.crt');
const otherCa = read('mtls/other-ca.crt');
/** signed by client-ca, SANs DNS:client.example.com and URI:spiffe://example.com/client */
const client = { cert: read('mtls/client.crt'), key: read('mtls/client.key') };
/** signed by client-ca, SAN DNS:wrong.example.com */
const wrongSan = { cert: read('mtls/wrong-san.crt'), key: read('mtls/wrong-san.key') };
/** signed by other-ca, SAN DNS:client.example.com */
const otherClient = { cert: read('mtls/other-client.crt'), key: read('mtls/other-client.key') };
/** an OCSP response (good, until 2126) for the server's certificate, signed by it */
const ocspStaple = fs.readFileSync(path.join(fixtures, 'mtls/secure.example.com.ocsp.der'));
const b64 = (s: string | Buffer): string => Buffer.from(s).toString('base64');

const indent = (pem: string): string =>
  pem
    .trim()
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');

/** The server's certificate with the CA its clients' certificates must be signed by. */
const mtlsSecret = (ca: string): string => `
apiVersion: v1
kind: Secret
metadata: { name: mtls-cert, namespace: default }
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(serverCert)}
  tls.key: |
${indent(serverKey)}
  ca.crt: |
${indent(ca)}
`;

/** A VirtualService answering its name on the ssl gateway for one SNI name, with sslConfig's other fields. */
const vs = (name: string, sslConfig: string): string => `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  sslConfig:
    sniDomains: [${name}.example.com]
${sslConfig
  .trim()
  .split('\n')
  .map((l) => `    ${l}`)
  .join('\n')}
  virtualHost:
    domains: [${name}.example.com]
    routes: [{ directResponseAction: { status: 200, body: ${name} } }]
`;

let gw: Gateway;

beforeAll(async () => {
  gw = await startGateway({
    'secret.yaml': mtlsSecret(clientCa),
    'vs.yaml': [
      `
apiVersion: v1
kind: Secret
metadata: { name: server-only, namespace: default }
type: kubernetes.io/tls
stringData:
  tls.crt: |
${indent(serverCert)}
  tls.key: |
${indent(serverKey)}
`,
      vs('mtls', 'secretRef: { name: mtls-cert, namespace: default }'),
      vs('oneway', 'secretRef: { name: mtls-cert, namespace: default }\noneWayTls: true'),
      vs('san', 'secretRef: { name: mtls-cert, namespace: default }\nverifySubjectAltName: [spiffe://example.com/client]'),
      vs('tls13', 'secretRef: { name: server-only }\nparameters: { minimumProtocolVersion: TLSv1_3 }'),
      vs('alpn', 'secretRef: { name: server-only }\nalpnProtocols: [http/1.1]'),
      `
apiVersion: v1
kind: Secret
metadata: { name: stapled, namespace: default }
type: kubernetes.io/tls
data: { tls.crt: ${b64(serverCert)}, tls.key: ${b64(serverKey)}, tls.ocsp-staple: ${b64(ocspStaple)} }
`,
      vs('stapled', 'secretRef: { name: stapled }\nocspStaplePolicy: MUST_STAPLE'),
    ].join('\n---\n'),
  });
});

afterAll(async () => {
  await gw?.stop();
});

interface Outcome {
  status?: number;
  body?: string;
  alpn?: string | false | null;
  protocol?: string | null;
  error?: string;
}

/**
 * GET / over TLS to `<name>.example.com` with `options` (a client certificate, versions, ALPN), on HTTP/1.1
 * (or just the handshake's outcome when the server picked h2). The server certificate is checked against its
 * self-signed issuer, not the name (the SNI names here are not in it).
 */
function get(name: string, options: tls.ConnectionOptions = {}): Promise<Outcome> {
  const servername = `${name}.example.com`;
  return new Promise((resolve) => {
    const socket = tls.connect({
      host: '127.0.0.1',
      port: gw.ports.https,
      servername,
      ca: serverCert,
      checkServerIdentity: () => undefined,
      ALPNProtocols: ['http/1.1'],
      ...options,
    });
    let data = '';
    const done = (o: Outcome): void => {
      socket.destroy();
      resolve(o);
    };
    socket.setTimeout(5000, () => done({ error: 'timeout' }));
    socket.once('error', (err) => {
      console.log('ERR', name, err.message);
      done({ error: err.message });
    });
    socket.once('secureConnect', () => {
      const negotiated = { alpn: socket.alpnProtocol, protocol: socket.getProtocol() };
      if (socket.alpnProtocol === 'h2') return done(negotiated);
      socket.write(`GET / HTTP/1.1\r\nhost: ${servername}\r\nconnection: close\r\n\r\n`);
      socket.on('data', (c: Buffer) => (data += c.toString()));
      socket.once('end', () => {
        const status = /^HTTP\/1\.1 (\d+)/.exec(data);
        if (!status) return done({ ...negotiated, error: `no HTTP response (${JSON.stringify(data.slice(0, 80))})` });
        done({ ...negotiated, status: Number(status[1]), body: data.slice(data.indexOf('\r\n\r\n') + 4) });
      });
    });
  });
}

describe('downstream mTLS (sslConfig with a CA)', () => {
  it('serves a client whose certificate the Secret’s ca.crt signed', async () => {
    const r = await eventually('the mtls virtual service to answer', async () => {
      const o = await get('mtls', client);
      return o.status === 200 ? o : undefined;
    });
    expect(r).toMatchObject({ status: 200, body: 'mtls' });
  });

  it('refuses a client without a certificate', async () => {
    const r = await get('mtls');
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/alert certificate required/);
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const r = await get('mtls', otherClient);
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/alert unknown ca/);
  });

  it('with oneWayTls: true, serves a client without a certificate', async () => {
    expect(await get('oneway')).toMatchObject({ status: 200, body: 'oneway' });
    // a certificate presented is still verified against the CA
    expect(await get('oneway', client)).toMatchObject({ status: 200, body: 'oneway' });
    expect((await get('oneway', otherClient)).error).toMatch(/alert unknown ca/);
  });

  it('with verifySubjectAltName, refuses a client certificate with another SAN', async () => {
    expect(await get('san', client)).toMatchObject({ status: 200, body: 'san' });
    const r = await get('san', wrongSan);
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/alert certificate unknown/);
  });

  it('takes a rotated CA for new handshakes without changing the listener', async () => {
    const listenersBefore = await listenerVersions();
    try {
      gw.write('secret.yaml', mtlsSecret(otherCa));
      await eventually('the client of the new CA to be served', async () => {
        const o = await get('mtls', otherClient);
        return o.status === 200 ? o : undefined;
      });
      expect((await get('mtls', client)).error).toMatch(/alert unknown ca/);
      expect(await listenerVersions()).toEqual(listenersBefore);
    } finally {
      gw.write('secret.yaml', mtlsSecret(clientCa));
      await eventually('the first CA back', async () => ((await get('mtls', client)).status === 200 ? true : undefined));
    }
  });
});

describe('sslConfig.parameters and alpnProtocols', () => {
  it('with minimumProtocolVersion TLSv1_3, refuses a TLS 1.2 client and serves a TLS 1.3 one', async () => {
    const r = await get('tls13', { maxVersion: 'TLSv1.2' });
    expect(r.status).toBeUndefined();
    expect(r.error).toMatch(/protocol version/i);
    expect(await get('tls13')).toMatchObject({ status: 200, protocol: 'TLSv1.3' });
  });

  it('keeps TLS 1.2 as the floor when parameters are unset', async () => {
    expect(await get('alpn', { maxVersion: 'TLSv1.2' })).toMatchObject({ status: 200, protocol: 'TLSv1.2' });
    const r = await get('alpn', { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' });
    expect(r.error).toMatch(/protocol version/i);
  });

  it('offers the alpnProtocols given, and h2, http/1.1 when unset (as Gloo)', async () => {
    expect(await get('alpn', { ALPNProtocols: ['h2', 'http/1.1'] })).toMatchObject({ alpn: 'http/1.1', status: 200 });
    expect(await get('oneway', { ALPNProtocols: ['h2', 'http/1.1'] })).toMatchObject({ alpn: 'h2' });
  });
});

describe('OCSP stapling', () => {
  it("staples the Secret's tls.ocsp-staple to the handshake", async () => {
    const stapled = await new Promise<Buffer | string>((resolve) => {
      const socket = tls.connect({
        host: '127.0.0.1',
        port: gw.ports.https,
        servername: 'stapled.example.com',
        ca: serverCert,
        checkServerIdentity: () => undefined,
        requestOCSP: true,
      });
      let response: Buffer | undefined;
      socket.once('OCSPResponse', (r: Buffer) => (response = r));
      socket.once('secureConnect', () => {
        resolve(response ?? 'no OCSP response');
        socket.destroy();
      });
      socket.once('error', (err) => resolve(err.message));
    });
    expect(Buffer.isBuffer(stapled) ? stapled.equals(ocspStaple) : stapled).toBe(true);
    expect(await get('stapled')).toMatchObject({ status: 200, body: 'stapled' });
  });
});

/** version_info of each dynamic listener in Envoy's config dump. */
async function listenerVersions(): Promise<Record<string, string>> {
  const dump = (await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).json()) as {
    configs: { name: string; active_state?: { version_info?: string } }[];
  };
  return Object.fromEntries(dump.configs.map((c) => [c.name, c.active_state?.version_info ?? '']));
}
