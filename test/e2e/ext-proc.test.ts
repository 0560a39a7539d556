// A user's ext_proc server (Gloo's Settings extProc) end to end: a gRPC ExternalProcessor in the test
// adds a request header the upstream sees and a response header the client sees; routes turn it off or
// override its processing mode; a GraphQL route (Legate's own ext_proc) still answers.
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bindServer, loadEnvoyService, lookupService, type BoundServer } from '../../extensions/common/grpc.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';

const Processor = lookupService(
  loadEnvoyService('envoy/service/ext_proc/v3/external_processor.proto'),
  'envoy.service.ext_proc.v3.ExternalProcessor',
);

interface ProcessingRequest {
  request?: string;
  request_headers?: { headers?: { headers?: { key: string; raw_value?: Buffer }[] } };
}

const setHeader = (key: string, value: string) => ({ header: { key, raw_value: Buffer.from(value) } });

/** Paths whose request headers the server was sent, and the tenant metadata of each stream. */
const seenPaths: string[] = [];
const seenMetadata: string[] = [];

function startProcessor(): Promise<BoundServer> {
  const server = new grpc.Server();
  server.addService(Processor.service, {
    Process(call: grpc.ServerDuplexStream<ProcessingRequest, unknown>) {
      seenMetadata.push(String(call.metadata.get('x-tenant')[0] ?? ''));
      call.on('data', (msg: ProcessingRequest) => {
        if (msg.request === 'request_headers') {
          const path = msg.request_headers?.headers?.headers?.find((h) => h.key === ':path')?.raw_value?.toString() ?? '';
          seenPaths.push(path);
          call.write({ request_headers: { response: { header_mutation: { set_headers: [setHeader('x-ext-proc', 'request')] } } } });
        } else if (msg.request === 'response_headers') {
          call.write({ response_headers: { response: { header_mutation: { set_headers: [setHeader('x-ext-proc', 'response')] } } } });
        } else {
          // bodies and trailers are not asked for in these tests
          call.write({});
        }
      });
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    },
  });
  return bindServer(server, '127.0.0.1', 0);
}

let gw: Gateway;
let app: EchoUpstream;
let processor: BoundServer;

const upstream = (name: string, port: number, http2 = false): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
${http2 ? '  useHttp2: true\n' : ''}`;

const to = 'routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }';

beforeAll(async () => {
  [app, processor] = await Promise.all([startEcho('app'), startProcessor()]);
  gw = await startGateway({
    'settings.yaml': `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec:
  extProc:
    grpcService:
      extProcServerRef: { name: default-ext-proc-grpc-4444, namespace: gloo-system }
      initialMetadata: [{ key: x-tenant, value: acme }]
    filterStage: { stage: AuthZStage, predicate: After }
    failureModeAllow: false
    allowModeOverride: false
    processingMode: { requestHeaderMode: SEND, responseHeaderMode: SEND }
`,
    'upstreams.yaml': [upstream('default-ext-proc-grpc-4444', processor.port, true), upstream('app', app.port)].join('---\n'),
    'app.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: app, namespace: gloo-system }
spec:
  virtualHost:
    domains: [app.example.com]
    routes:
      - matchers: [{ prefix: /off }]
        options: { extProc: { disabled: true } }
        ${to}
      - matchers: [{ prefix: /responses-only }]
        options: { extProc: { overrides: { processingMode: { requestHeaderMode: SKIP, responseHeaderMode: SEND } } } }
        ${to}
      - matchers: [{ prefix: /graphql }]
        graphqlApiRef: { name: mocked, namespace: gloo-system }
      - matchers: [{ prefix: / }]
        ${to}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: quiet, namespace: gloo-system }
spec:
  virtualHost:
    domains: [quiet.example.com]
    options: { extProc: { disabled: true } }
    routes:
      - matchers: [{ prefix: /on }]
        options: { extProc: { overrides: { processingMode: { requestHeaderMode: SEND, responseHeaderMode: SKIP } } } }
        ${to}
      - matchers: [{ prefix: / }]
        ${to}
---
apiVersion: graphql.gloo.solo.io/v1beta1
kind: GraphQLApi
metadata: { name: mocked, namespace: gloo-system }
spec:
  executableSchema:
    executor:
      local:
        resolutions:
          Query|hello:
            mockResolver: { syncResponse: world }
    schemaDefinition: |
      type Query {
        hello: String @resolve(name: "Query|hello")
      }
`,
  });
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await processor?.stop();
  await app?.close();
});

const lastSeen = () => app.seen[app.seen.length - 1]!;

describe('a user ext_proc server (Settings extProc)', () => {
  it('adds a request header the upstream sees and a response header the client sees, on every route', async () => {
    const r = await gw.until('/hello', (x) => x.headers.get('x-ext-proc') === 'response', { host: 'app.example.com' }, 20_000);
    expect(r.status).toBe(200);
    expect(lastSeen().headers['x-ext-proc']).toBe('request');
    expect(seenPaths).toContain('/hello');
    // the gRPC service's initialMetadata reaches the server
    expect(seenMetadata).toContain('acme');
  });

  it('does not process a route with extProc disabled', async () => {
    const before = seenPaths.length;
    const r = await gw.request('/off', { host: 'app.example.com' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ext-proc')).toBeNull();
    expect(lastSeen().headers['x-ext-proc']).toBeUndefined();
    expect(seenPaths.length).toBe(before);
  });

  it('overrides the processing mode per route (responses only)', async () => {
    const r = await gw.request('/responses-only', { host: 'app.example.com' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-ext-proc')).toBe('response');
    expect(lastSeen().headers['x-ext-proc']).toBeUndefined();
    expect(seenPaths).not.toContain('/responses-only');
  });

  it('a virtual host turns it off; its route with overrides turns it back on', async () => {
    const off = await gw.request('/other', { host: 'quiet.example.com' });
    expect(off.status).toBe(200);
    expect(off.headers.get('x-ext-proc')).toBeNull();
    expect(lastSeen().headers['x-ext-proc']).toBeUndefined();
    const on = await gw.request('/on', { host: 'quiet.example.com' });
    expect(on.status).toBe(200);
    expect(lastSeen().headers['x-ext-proc']).toBe('request');
    expect(on.headers.get('x-ext-proc')).toBeNull();
  });

  it("still serves GraphQL routes (Legate's own ext_proc), processed by the user's server first", async () => {
    const body = JSON.stringify({ query: '{ hello }' });
    const r = await gw.until(
      '/graphql',
      (x) => x.status === 200,
      { host: 'app.example.com', method: 'POST', headers: { 'content-type': 'application/json' }, body },
      20_000,
    );
    expect(r.json()).toEqual({ data: { hello: 'world' } });
    expect(seenPaths).toContain('/graphql');
  });

  it('reports the virtual service accepted', () => {
    const r = gw.ctl('get', 'virtualservice', 'app', '-n', 'gloo-system');
    expect(r.stdout).toContain('Accepted');
  });
});
