// passThroughAuth.grpc's connection options against real gRPC servers: tlsConfig (TLS, the server's certificate
// verified against the trusted CAs: here a test CA given to gRPC by GRPC_DEFAULT_SSL_ROOTS_FILE_PATH) and
// retryPolicy (a call that got no answer retried with backoff; a denial is an answer, never retried).
import { readFileSync, rmSync } from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PassThroughGrpcStepSchema, type PassThroughGrpcStepConfig } from '../../common/auth-config.js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { askGrpcPassThrough, type PassThroughRequest } from '../../extensions/extauth/passthrough.js';

// a test CA (a self-signed localhost certificate), trusted by gRPC before @grpc/grpc-js loads (it reads the path once)
const certs = await vi.hoisted(async () => {
  const { mkdtempSync } = await import('node:fs');
  const { execFileSync } = await import('node:child_process');
  const { tmpdir } = await import('node:os');
  const dir = mkdtempSync(`${tmpdir()}/legate-pt-tls-`);
  const subject = ['-subj', '/CN=localhost', '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'];
  const key = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${dir}/key.pem`];
  execFileSync('openssl', ['req', '-x509', ...key, '-days', '1', ...subject, '-out', `${dir}/cert.pem`], { stdio: 'ignore' });
  process.env['GRPC_DEFAULT_SSL_ROOTS_FILE_PATH'] = `${dir}/cert.pem`;
  return { dir };
});

const REQ: PassThroughRequest = { method: 'GET', path: '/x', host: 'app', scheme: 'http', headers: { authorization: 'authorize me' } };

interface Server {
  server: grpc.Server;
  port: number;
  calls: number;
  /** the calls answered with a transport error (UNAVAILABLE) before the server answers */
  failFirst: number;
}

async function startServer(tls: boolean): Promise<Server> {
  const s: Server = { server: new grpc.Server(), port: 0, calls: 0, failFirst: 0 };
  const pkg = loadEnvoyService('envoy/service/auth/v3/external_auth.proto');
  s.server.addService(lookupService(pkg, 'envoy.service.auth.v3.Authorization').service, {
    Check(
      call: grpc.ServerUnaryCall<{ attributes?: { request?: { http?: { headers?: Record<string, string> } } } }, unknown>,
      cb: grpc.sendUnaryData<unknown>,
    ) {
      s.calls++;
      if (s.calls <= s.failFirst) return cb({ code: grpc.status.UNAVAILABLE, details: 'warming up' });
      if (call.request.attributes?.request?.http?.headers?.['authorization'] === 'authorize me')
        cb(null, { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-user', value: 'me' } }] } });
      else cb(null, { status: { code: 7 }, denied_response: { status: { code: 'Forbidden' }, body: 'no' } });
    },
  });
  const creds = tls
    ? grpc.ServerCredentials.createSsl(null, [
        { cert_chain: readFileSync(`${certs.dir}/cert.pem`), private_key: readFileSync(`${certs.dir}/key.pem`) },
      ])
    : grpc.ServerCredentials.createInsecure();
  s.port = await new Promise<number>((resolve, reject) =>
    s.server.bindAsync('127.0.0.1:0', creds, (err, p) => (err ? reject(err) : resolve(p))),
  );
  return s;
}

const step = (port: number, extra: Partial<PassThroughGrpcStepConfig> = {}): PassThroughGrpcStepConfig =>
  PassThroughGrpcStepSchema.parse({ type: 'passthrough-grpc', address: `localhost:${port}`, timeoutMs: 2000, ...extra });

let tlsServer: Server;
let plainServer: Server;

beforeAll(async () => {
  tlsServer = await startServer(true);
  plainServer = await startServer(false);
});

afterAll(() => {
  tlsServer?.server.forceShutdown();
  plainServer?.server.forceShutdown();
  rmSync(certs.dir, { recursive: true, force: true });
});

describe('passThroughAuth.grpc.tlsConfig', () => {
  it('talks TLS to the server, verifying its certificate', async () => {
    const answer = await askGrpcPassThrough(step(tlsServer.port, { tls: true }), REQ, {}, {});
    expect(answer).toMatchObject({ allow: true, set: { 'x-user': 'me' } });
  });

  it('without tlsConfig the connection is plaintext: a TLS server does not answer it', async () => {
    const answer = await askGrpcPassThrough(step(tlsServer.port, { timeoutMs: 500 }), REQ, {}, {});
    expect(answer).toHaveProperty('error');
  });

  it('with tlsConfig a plaintext server is not trusted', async () => {
    const answer = await askGrpcPassThrough(step(plainServer.port, { tls: true, timeoutMs: 500 }), REQ, {}, {});
    expect(answer).toHaveProperty('error');
  });
});

describe('passThroughAuth.grpc.retryPolicy', () => {
  it('retries a call that got no answer, with backoff, up to numRetries', async () => {
    plainServer.calls = 0;
    plainServer.failFirst = 2;
    const retry = { numRetries: 2, baseIntervalMs: 20, maxIntervalMs: 100 };
    expect(await askGrpcPassThrough(step(plainServer.port, { retry }), REQ, {}, {})).toMatchObject({ allow: true });
    expect(plainServer.calls).toBe(3);
  });

  it('gives up after numRetries, and without a policy does not retry', async () => {
    plainServer.calls = 0;
    plainServer.failFirst = 5;
    const retry = { numRetries: 1, baseIntervalMs: 10, maxIntervalMs: 10 };
    expect(await askGrpcPassThrough(step(plainServer.port, { retry }), REQ, {}, {})).toHaveProperty('error');
    expect(plainServer.calls).toBe(2);
    plainServer.calls = 0;
    expect(await askGrpcPassThrough(step(plainServer.port), REQ, {}, {})).toHaveProperty('error');
    expect(plainServer.calls).toBe(1);
  });

  it('does not retry a denial', async () => {
    plainServer.calls = 0;
    plainServer.failFirst = 0;
    const retry = { numRetries: 3, baseIntervalMs: 10, maxIntervalMs: 10 };
    const answer = await askGrpcPassThrough(step(plainServer.port, { retry }), { ...REQ, headers: {} }, {}, {});
    expect(answer).toMatchObject({ allow: false, status: 403 });
    expect(plainServer.calls).toBe(1);
  });
});
