// Mutual TLS between Envoy and the extension services (`legate run --extensions-mtls`): a route behind extauth
// (an API key) and a rate-limited route answer as they do in cleartext, over TLS connections Envoy opened with its
// client certificate (its cluster stats count the handshakes); the extension ports refuse cleartext HTTP/2, a client
// without a certificate and one whose certificate another CA signed; Envoy takes a rotated client certificate from its
// files (SDS secrets on files) without a restart. On Legate's HTTP/2 server; LEGATE_HTTP2_TRANSPORT=node runs it on
// node:http2 (passes too; the unit suite test/unit/h2-tls.test.ts runs both).
import { execFileSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs';
import http2 from 'node:http2';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureExtensionsTls } from '../../cli/run/xds-tls.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

let gw: Gateway;
let app: EchoUpstream;
let other: string;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: legate-system } } }';

function resources(port: number): string {
  return `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: v1
kind: Secret
metadata: { name: client-a, namespace: legate-system }
stringData: { api-key: key-a }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: apikey, namespace: legate-system }
spec:
  configs: [{ apiKeyAuth: { apiKeySecretRefs: [{ name: client-a }] } }]
---
apiVersion: ratelimit.solo.io/v1alpha1
kind: RateLimitConfig
metadata: { name: two, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: two, rateLimit: { requestsPerUnit: 2, unit: MINUTE } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: two } }] }]
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /guarded }]
        ${toApp}
        options: { extauth: { configRef: { name: apikey, namespace: legate-system } } }
      - matchers: [{ prefix: /limited }]
        ${toApp}
        options: { rateLimitConfigs: { refs: [{ name: two }] } }
      - matchers: [{ prefix: / }]
        ${toApp}
`;
}

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'shop.yaml': resources(app.port) }, { args: ['--extensions-mtls'] });
  // certificates of another CA, as a stranger would have
  other = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-other-ca-'));
  ensureExtensionsTls(other);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
  if (other) fs.rmSync(other, { recursive: true, force: true });
});

/** One gRPC-shaped POST on a new connection to an extension port: its :status, or why there was none. */
function call(url: string, options: http2.SecureClientSessionOptions = {}): Promise<string> {
  return new Promise((resolve) => {
    const session = http2.connect(url, options);
    const done = (outcome: string): void => {
      session.destroy();
      resolve(outcome);
    };
    session.on('error', (err: NodeJS.ErrnoException) => done(`refused (${err.code ?? err.message})`));
    session.setTimeout(5000, () => done('refused (timeout)'));
    const req = session.request({
      ':method': 'POST',
      ':path': '/envoy.service.auth.v3.Authorization/Check',
      'content-type': 'application/grpc',
    });
    let status: string | undefined;
    req.on('response', (h) => (status = String(h[':status'])));
    req.on('error', (err: NodeJS.ErrnoException) => done(`refused (${err.code ?? err.message}; ${String(err.cause)})`));
    req.on('close', () => done(status ?? 'refused (closed without an answer)'));
    req.resume();
    req.end();
  });
}

const pem = (dir: string, name: string): Buffer => fs.readFileSync(path.join(dir, name));

/** Envoy's counter `name`, 0 when absent. */
async function envoyStat(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${encodeURIComponent(`^${name}$`)}`)).text();
  return Number(/: (\d+)/.exec(text)?.[1] ?? 0);
}

describe('mutual TLS between Envoy and the extensions', () => {
  it('serves an extauth-protected route and a rate-limited route over mTLS', async () => {
    // unreachable, ext_authz would answer 403 and the rate limit let all through: 401 and 429 are the services'
    const denied = await gw.until('/guarded', (r) => r.status === 401, {}, 30_000);
    expect(denied.status).toBe(401);
    expect((await gw.request('/guarded', { headers: { 'api-key': 'key-a' } })).status).toBe(200);
    expect((await gw.request('/guarded', { headers: { 'api-key': 'wrong' } })).status).toBe(401);
    // the service allows what it has no config for yet: once it has, two a minute pass, the next is refused
    const limited = await gw.until('/limited', (r) => r.status === 429, {}, 30_000);
    expect(limited.status).toBe(429);
    expect((await gw.request('/open')).status).toBe(200);
    // over TLS: the handshakes of the extension clusters, and none failed
    expect(await envoyStat('cluster.legate-extauth.ssl.handshake')).toBeGreaterThan(0);
    expect(await envoyStat('cluster.legate-ratelimit.ssl.handshake')).toBeGreaterThan(0);
    expect(await envoyStat('cluster.legate-extauth.ssl.connection_error')).toBe(0);
    expect(gw.log('extauth')).toContain('extauth server running in mutual TLS gRPC mode');
  });

  it('refuses cleartext, no certificate and a certificate of another CA on the extension ports', async () => {
    const client = path.join(gw.stateDir, 'extensions-tls', 'client');
    const ca = pem(client, 'ca.crt');
    for (const port of [gw.ports.extauth, gw.ports.ratelimit, gw.ports.graphql]) {
      const url = `https://127.0.0.1:${port}`;
      // the certificate legate run gave Envoy is served (an empty gRPC message: an answer, not a refusal), once the
      // service listens (graphql, which no route uses here, may still be loading)
      const envoys = { ca, cert: pem(client, 'tls.crt'), key: pem(client, 'tls.key') };
      await eventually(`port ${port} answering`, async () => ((await call(url, envoys)) === '200' ? true : undefined), 30_000);
      expect(await call(`http://127.0.0.1:${port}`)).toMatch(/^refused/);
      expect(await call(url, { ca })).toMatch(/^refused/);
      const stranger = path.join(other, 'extensions-tls', 'client');
      expect(await call(url, { ca, cert: pem(stranger, 'tls.crt'), key: pem(stranger, 'tls.key') })).toMatch(/^refused/);
    }
  });

  it('Envoy reads its client certificate again when the files are replaced', async () => {
    const dir = path.join(gw.stateDir, 'extensions-tls');
    const client = path.join(dir, 'client');
    // the serial numbers of the client certificates Envoy holds (SDS reads the files' contents: no path shown)
    const serials = async (): Promise<string[]> => {
      const body = (await (await fetch(`http://127.0.0.1:${gw.ports.admin}/certs`)).json()) as {
        certificates: { cert_chain?: { serial_number?: string; subject_alt_names?: { dns?: string }[] }[] }[];
      };
      const chains = body.certificates.flatMap((c) => c.cert_chain ?? []);
      return chains.filter((c) => c.subject_alt_names?.some((n) => n.dns === 'legate-extensions-client')).map((c) => c.serial_number ?? '');
    };
    expect((await serials()).length).toBeGreaterThan(0);
    // a new certificate from the same CA, moved into place (as the kubelet swaps a Secret's files)
    const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
    execFileSync('openssl', ['req', ...ec, '-keyout', 'next.key', '-out', 'next.csr', '-subj', '/CN=legate-extensions-client-next'], {
      cwd: dir,
      stdio: 'ignore',
    });
    const sign = ['x509', '-req', '-in', 'next.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1'];
    execFileSync('openssl', [...sign, '-extfile', 'client.ext', '-out', 'next.crt'], { cwd: dir, stdio: 'ignore' });
    const next = new X509Certificate(fs.readFileSync(path.join(dir, 'next.crt'))).serialNumber.toLowerCase();
    fs.renameSync(path.join(dir, 'next.crt'), path.join(client, 'tls.crt'));
    fs.renameSync(path.join(dir, 'next.key'), path.join(client, 'tls.key'));
    // each cluster's (extauth's, ratelimit's) certificate is the new one
    const now = await eventually('Envoy holding the new certificate', async () => {
      const s = await serials();
      return s.length && s.every((x) => x.toLowerCase() === next) ? s : undefined;
    });
    expect(now.length).toBe(2);
    // and calls go on (new connections present the new certificate)
    expect((await gw.request('/guarded', { headers: { 'api-key': 'key-a' } })).status).toBe(200);
  });
});
