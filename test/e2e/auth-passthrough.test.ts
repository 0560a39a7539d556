// passThroughAuth end to end: the user's own auth servers decide. gRPC: an Envoy ext_authz v3 server as
// Gloo's example (`authorization: authorize me` passes), which also sees the step's `config` under the
// filter metadata `solo.auth.passthrough.config` and adds a header for the upstream. HTTP: a server that
// allows `x-token: good`, returns headers for the upstream and for the client on denial. Both servers going
// away deny; `failureModeAllow` lets requests through then, as Gloo documents. The state Gloo shares between
// steps: a JWT step's claims sent with passThroughState, a server's readStateFromResponse state handed on.
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindServer, loadEnvoyService, lookupService, type BoundServer } from '../../extensions/common/grpc.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { appBehindAuth, startEcho, type EchoUpstream } from '../support/upstreams.js';

let gw: Gateway;
let app: EchoUpstream;
let grpcServer: BoundServer;
let httpServer: http.Server;
let httpPort = 0;
/** what the HTTP server was sent, newest last */
const httpSeen: { headers: http.IncomingHttpHeaders; body: string }[] = [];
/** the config the gRPC server saw */
let grpcConfig: unknown;
const keys = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
const pem = keys.publicKey.export({ format: 'pem', type: 'spki' }).toString();
const jwtFor = (sub: string): Promise<string> =>
  new SignJWT({ sub }).setProtectedHeader({ alg: 'ES256' }).setExpirationTime('5m').sign(keys.privateKey);

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
        if (req.url === '/state/team') {
          // allows the JWT step's user alice, and tells the next step her team
          const state = (JSON.parse(body || '{}') as { state?: { jwtAccessToken?: { sub?: string } } }).state;
          const alice = state?.jwtAccessToken?.sub === 'alice';
          res.writeHead(alice ? 200 : 403, { 'content-type': 'application/json' });
          res.end(alice ? JSON.stringify({ state: { team: 'shop' } }) : '');
        } else if (req.url === '/state/shop') {
          const state = (JSON.parse(body || '{}') as { state?: { team?: string } }).state;
          res.writeHead(state?.team === 'shop' ? 200 : 403);
          res.end();
        } else if (req.headers['x-token'] === 'good') {
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
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: passthrough-state, namespace: legate-system }
spec:
  configs:
  - oauth2:
      accessTokenValidation:
        jwt:
          localJwks:
            inlineString: ${JSON.stringify(pem)}
  - passThroughAuth:
      http:
        url: http://127.0.0.1:${httpPort}/state/team
        request: { passThroughState: true }
        response: { readStateFromResponse: true }
  - passThroughAuth:
      http:
        url: http://127.0.0.1:${httpPort}/state/shop
        request: { passThroughState: true }
---
${appBehindAuth(app.port, [
  ['/state', 'passthrough-state'],
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

  it("HTTP: passThroughState sends the JWT step's claims; readStateFromResponse hands the server's state to the next step", async () => {
    const ok = await gw.request('/state/x', { headers: { authorization: `Bearer ${await jwtFor('alice')}` } });
    expect(ok.status).toBe(200);
    const sent = JSON.parse(httpSeen.find((s) => s.body.includes('jwtAccessToken'))!.body) as { state: Record<string, unknown> };
    expect((sent.state['jwtAccessToken'] as Record<string, unknown>)['sub']).toBe('alice');
    // bob passes the JWT step; the first server refuses him, so the second is not asked
    expect((await gw.request('/state/x', { headers: { authorization: `Bearer ${await jwtFor('bob')}` } })).status).toBe(403);
    const none = await gw.request('/state/x');
    expect(none.status).not.toBe(200);
    expect(none.text).toContain('missing_token');
  });

  it('a server that is down denies, unless failureModeAllow', async () => {
    expect((await gw.request('/open/x')).status).toBe(200);
    await grpcServer.stop();
    const down = await gw.request('/posts/1', { headers: { authorization: 'authorize me' } });
    expect(down.status).toBe(403);
  });
});
