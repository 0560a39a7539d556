// xDS over mutual TLS (`legate run --xds-tls`): Envoy and the extension services get their config
// from the controller over TLS with client certificates, and a client without one is turned away.
import fs from 'node:fs';
import path from 'node:path';
import tls from 'node:tls';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { figure } from './figures.js';
import { GRAPHQL_ANSWER, GRAPHQL_QUERY, bearer, gatewayConfig, startFakeProvider, type FakeProvider } from './fixtures.js';

const ITEM = 'xds-tls';
let gw: Gateway;
let app: EchoUpstream;
let provider: FakeProvider;

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startFakeProvider();
  gw = await startGateway({ 'faults.yaml': gatewayConfig(app.port, provider.url) }, { args: ['--xds-tls'] });
});

afterAll(async () => {
  await gw?.stop();
  await provider?.close();
  await app?.close();
});

/** Whether a TLS handshake with the xDS port completes (and the server keeps the connection). */
function handshake(options: tls.ConnectionOptions): Promise<string> {
  return new Promise((resolve) => {
    const socket = tls.connect({ host: '127.0.0.1', port: gw.ports.xds, servername: 'localhost', ALPNProtocols: ['h2'], ...options });
    const done = (outcome: string) => {
      socket.destroy();
      resolve(outcome);
    };
    socket.once('secureConnect', () => {
      // TLS 1.3 clients learn of a refused certificate only after the handshake: give the server a moment
      socket.once('data', () => done('accepted'));
      socket.once('close', () => done('closed by the server'));
      setTimeout(() => done('accepted'), 500);
    });
    socket.once('error', (err) => done(`refused (${(err as NodeJS.ErrnoException).code ?? err.message})`));
  });
}

describe('xDS over mutual TLS', () => {
  it('Envoy, extauth and graphql are served over mTLS; a client without a certificate is refused', async () => {
    await gw.until('/plain', (r) => r.status === 200, {}, 30_000);
    await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 30_000);
    const gql = await gw.until(
      '/graphql',
      (r) => r.text === GRAPHQL_ANSWER,
      { method: 'POST', headers: { 'content-type': 'application/json' }, body: GRAPHQL_QUERY },
      30_000,
    );
    expect(gql.status).toBe(200);
    const roles = await eventually('three xDS clients', async () => {
      const res = await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/connections`);
      const list = ((await res.json()) as { data: { role?: string }[] }).data.map((c) => c.role ?? '?');
      return list.length >= 3 ? list.sort() : undefined;
    });
    const dir = path.join(gw.stateDir, 'xds-tls', 'client');
    const ca = fs.readFileSync(path.join(dir, 'ca.crt'));
    const withCert = await handshake({
      ca,
      cert: fs.readFileSync(path.join(dir, 'tls.crt')),
      key: fs.readFileSync(path.join(dir, 'tls.key')),
    });
    const withoutCert = await handshake({ ca });
    const untrusted = await new Promise<string>((resolve) => {
      const socket = tls.connect({ host: '127.0.0.1', port: gw.ports.xds, rejectUnauthorized: true });
      socket.once('secureConnect', () => resolve('accepted'));
      socket.once('error', (err) => resolve(`refused (${(err as NodeJS.ErrnoException).code ?? err.message})`));
    });
    figure(ITEM, 'xDS clients connected', roles.join(', '));
    figure(ITEM, 'handshake with the client certificate', withCert);
    figure(ITEM, 'handshake without a client certificate', withoutCert);
    figure(ITEM, 'handshake not trusting the CA', untrusted);
    expect(withCert).toBe('accepted');
    expect(withoutCert).not.toBe('accepted');
    expect(untrusted).not.toBe('accepted');
    expect(fs.statSync(path.join(dir, 'tls.key')).mode & 0o777).toBe(0o600);
  });
});
