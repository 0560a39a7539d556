// passThroughAuth end to end: the user's own auth servers decide. gRPC: an Envoy ext_authz v3 server as
// Gloo's example (`authorization: authorize me` passes), which also sees the step's `config` under the
// filter metadata `solo.auth.passthrough.config` and adds a header for the upstream. HTTP: a server that
// allows `x-token: good`, returns headers for the upstream and for the client on denial. Both servers going
// away deny; `failureModeAllow` lets requests through then, as Gloo documents.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindServer, loadEnvoyService, lookupService, type BoundServer } from '../../extensions/common/grpc.js';
import { startGateway, type Gateway } from './harness/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from './harness/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
let grpcServer: BoundServer;
let httpServer: http.Server;
let httpPort = 0;
/** what the HTTP server was sent, newest last */
const httpSeen: { headers: http.IncomingHttpHeaders; body: string }[] = [];
/** the config the gRPC server saw */
let grpcConfig: unknown;

interface CheckCall {
  attributes?: {
    request?: { http?: { headers?: Record<string, string>; path?: string } };
    metadata_context?: { filter_metadata?: Record<string, { fields?: Record<string, { stringValue?: string }> }> };
  };
}

async function startGrpcAuth(): Promise<BoundServer> {
  const pkg = loadEnvoyService('envoy/service/auth/v3/external_auth.proto');
  const server = new grpc.Server();
  server.addService(lookupService(pkg, 'envoy.service.auth.v3.Authorization').service, {
    Check(call: grpc.ServerUnaryCall<CheckCall, unknown>, cb: grpc.sendUnaryData<unknown>) {
      const attrs = call.request.attributes;
      grpcConfig = attrs?.metadata_context?.filter_metadata?.['solo.auth.passthrough.config']?.fields?.['customKey1']?.stringValue;
      if (attrs?.request?.http?.headers?.['authorization'] === 'authorize me')
        cb(null, { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-grpc-user', value: 'me' } }] } });
      else cb(null, { status: { code: 7 }, denied_response: { status: { code: 'Unauthorized' }, body: 'not you' } });
    },
  });
  return bindServer(server, '127.0.0.1', 0);
}

describe('passThroughAuth', () => {
  beforeAll(async () => {
    grpcServer = await startGrpcAuth();
    httpServer = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d: Buffer) => (body += d.toString()));
      req.on('end', () => {
        httpSeen.push({ headers: req.headers, body });
        if (req.headers['x-token'] === 'good') {
          res.writeHead(200, { 'x-user-id': 'u-1', 'x-not-allowed': 'secret' });
          res.end();
        } else {
          res.writeHead(403, { 'x-auth-reason': 'bad token' });
          res.end();
        }
      });
    });
    await new Promise<void>((r) => httpServer.listen(0, '127.0.0.1', () => r()));
    httpPort = (httpServer.address() as AddressInfo).port;
    app = await startEcho('app');
    gw = await startGateway({
      'auth.yaml': `
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: passthrough-auth, namespace: legate-system }
spec:
  configs:
  - passThroughAuth:
      grpc:
        # Address of the grpc auth server to query
        address: 127.0.0.1:${grpcServer.port}
        # Set a connection timeout to external service, default is 5 seconds
        connectionTimeout: 3s
      config:
        customKey1: "customConfigStringValue"
        customKey2: false
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: passthrough-http, namespace: legate-system }
spec:
  configs:
  - passThroughAuth:
      http:
        url: http://127.0.0.1:${httpPort}/auth
        request:
          allowedHeaders: [x-token]
          headersToAdd: { x-from: legate }
        response:
          allowedUpstreamHeaders: [x-user-id]
          allowedClientHeadersOnDenied: [x-auth-reason]
        connectionTimeout: 2s
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: passthrough-open, namespace: legate-system }
spec:
  configs:
  - passThroughAuth:
      http: { url: "http://127.0.0.1:1/nothing-listens" }
      failureModeAllow: true
---
${appBehindAuth(app.port, [
  ['/http', 'passthrough-http'],
  ['/open', 'passthrough-open'],
  ['/', 'passthrough-auth'],
])}
`,
    });
    await gw.until('/public', (r) => r.status === 200, {}, 30_000);
    await gw.until('/posts/1', (r) => r.status === 200, { headers: { authorization: 'authorize me' } });
  }, 90_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
    await grpcServer?.stop();
    await new Promise<void>((r) => (httpServer ? httpServer.close(() => r()) : r()));
  });

  it("gRPC: Gloo's example server decides, sees the step's config, adds headers upstream", async () => {
    expect((await gw.request('/posts/1')).status).toBe(401);
    const ok = await gw.request('/posts/1', { headers: { authorization: 'authorize me' } });
    expect(ok.status).toBe(200);
    expect(ok.json<{ headers: Record<string, string> }>().headers['x-grpc-user']).toBe('me');
    expect(grpcConfig).toBe('customConfigStringValue');
  });

  it('HTTP: allowed headers only go to the server; its verdict, upstream and client headers apply', async () => {
    const ok = await gw.request('/http/a', { headers: { 'x-token': 'good', 'x-private': 'p' } });
    expect(ok.status).toBe(200);
    const upstream = ok.json<{ headers: Record<string, string> }>().headers;
    expect(upstream['x-user-id']).toBe('u-1');
    expect(upstream['x-not-allowed']).toBeUndefined();
    const seen = httpSeen.at(-1)!;
    expect(seen.headers['x-token']).toBe('good');
    expect(seen.headers['x-from']).toBe('legate');
    expect(seen.headers['x-private']).toBeUndefined();
    const denied = await gw.request('/http/a', { headers: { 'x-token': 'bad' } });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('x-auth-reason')).toBe('bad token');
  });

  it('a server that is down denies, unless failureModeAllow', async () => {
    expect((await gw.request('/open/x')).status).toBe(200);
    await grpcServer.stop();
    const down = await gw.request('/posts/1', { headers: { authorization: 'authorize me' } });
    expect(down.status).toBe(403);
  });
});
