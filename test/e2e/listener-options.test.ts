// A Gateway's listener options end to end through the real Envoy: access logs as Gloo's access-logging guide writes
// them (a JSON line and a string line per request, a statusCodeFilter that logs only 4xx), and useProxyProto with a
// PROXY protocol v1 and a v2 client, whose header's source address is what Envoy logs as the downstream address; a gRPC
// access log service (Envoy's AccessLogService, served here with grpc-js) gets each request with the headers asked for.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { protoLoaderOptions } from '../../envoy/protos.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

let gw: Gateway;
let echo: EchoUpstream;
let logs: string;
let plainPort: number;
let proxyPort: number;
let als: grpc.Server;
let alsPort: number;
/** what the gRPC access log service received: log name and each HTTP entry */
const received: { logName: string; entry: HttpLogEntry }[] = [];

interface HttpLogEntry {
  request?: { path?: string; request_headers?: Record<string, string> };
  response?: { response_code?: { value?: number } };
}
interface StreamMessage {
  identifier?: { log_name?: string };
  http_logs?: { log_entry?: HttpLogEntry[] };
}

/** Envoy's envoy.service.accesslog.v3.AccessLogService: a client stream of log entries. */
async function startAccessLogService(): Promise<number> {
  const pkg = grpc.loadPackageDefinition(protoLoader.loadSync(['envoy/service/accesslog/v3/als.proto'], protoLoaderOptions()));
  let service: unknown = pkg;
  for (const p of 'envoy.service.accesslog.v3.AccessLogService'.split('.')) service = (service as Record<string, unknown>)[p];
  als = new grpc.Server();
  als.addService((service as { service: grpc.ServiceDefinition }).service, {
    StreamAccessLogs: (call: grpc.ServerReadableStream<StreamMessage, unknown>, done: grpc.sendUnaryData<unknown>) => {
      // the identifier comes with the stream's first message only
      let logName = '';
      call.on('data', (m: StreamMessage) => {
        logName = m.identifier?.log_name ?? logName;
        for (const entry of m.http_logs?.log_entry ?? []) received.push({ logName, entry });
      });
      call.on('end', () => done(null, {}));
    },
  });
  return new Promise((resolve, reject) =>
    als.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, port) => (err ? reject(err) : resolve(port))),
  );
}

const file = (name: string): string => path.join(logs, name);
const lines = (name: string): string[] => {
  try {
    return fs.readFileSync(file(name), 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
};

/** One HTTP/1.1 request on a fresh connection, after `preface` (a PROXY protocol header); resolves with the raw response. */
function raw(port: number, pathname: string, preface: Buffer = Buffer.alloc(0)): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.setTimeout(10_000, () => socket.destroy(new Error('timed out')));
    socket.on('connect', () => {
      socket.write(
        Buffer.concat([preface, Buffer.from(`GET ${pathname} HTTP/1.1\r\nHost: shop.example.com\r\nConnection: close\r\n\r\n`)]),
      );
    });
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('utf8')));
    socket.on('error', (err) => (chunks.length ? resolve(Buffer.concat(chunks).toString('utf8')) : reject(err)));
  });
}

const status = (response: string): number => Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);

/** PROXY protocol v1: a text line. */
const proxyV1 = (src: string, srcPort: number, dstPort: number): Buffer =>
  Buffer.from(`PROXY TCP4 ${src} 127.0.0.1 ${srcPort} ${dstPort}\r\n`, 'ascii');

/** PROXY protocol v2: the 12-byte signature, PROXY command, TCP over IPv4, then the addresses and ports. */
function proxyV2(src: string, srcPort: number, dstPort: number): Buffer {
  const signature = Buffer.from([0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d, 0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a]);
  const header = Buffer.from([0x21, 0x11, 0x00, 12]);
  const addresses = Buffer.alloc(12);
  src.split('.').forEach((octet, i) => addresses.writeUInt8(Number(octet), i));
  [127, 0, 0, 1].forEach((octet, i) => addresses.writeUInt8(octet, 4 + i));
  addresses.writeUInt16BE(srcPort, 8);
  addresses.writeUInt16BE(dstPort, 10);
  return Buffer.concat([signature, header, addresses]);
}

beforeAll(async () => {
  logs = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-access-logs-'));
  [echo, plainPort, proxyPort, alsPort] = await Promise.all([startEcho('app'), freePort(), freePort(), startAccessLogService()]);
  gw = await startGateway({
    'app.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echo.port} }] }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: access-logger, namespace: gloo-system }
spec:
  useHttp2: true
  static: { hosts: [{ addr: 127.0.0.1, port: ${alsPort} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /missing }]
        directResponseAction: { status: 404, body: missing }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }
`,
    'gateways.yaml': `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${plainPort}
  proxyNames:
    - gateway-proxy
  httpGateway: {}
  useProxyProto: false
  options:
    accessLoggingService:
      accessLog:
        - fileSink:
            path: ${file('access.json')}
            jsonFormat:
              protocol: "%PROTOCOL%"
              duration: "%DURATION%"
              upstreamCluster: "%UPSTREAM_CLUSTER%"
              upstreamHost: "%UPSTREAM_HOST%"
              method: "%REQ(:METHOD)%"
              path: "%REQ(X-ENVOY-ORIGINAL-PATH?:PATH)%"
              status: "%RESPONSE_CODE%"
        - fileSink:
            path: ${file('access.log')}
            stringFormat: >
              [%START_TIME%] "%REQ(X-ENVOY-ORIGINAL-METHOD?:METHOD)% %REQ(X-ENVOY-ORIGINAL-PATH?:PATH)% %PROTOCOL%"
              %RESPONSE_CODE% %RESPONSE_FLAGS% "%REQ(USER-AGENT)%" "%UPSTREAM_HOST%"
        - fileSink:
            path: ${file('client-errors.log')}
            stringFormat: "%RESPONSE_CODE% %REQ(:PATH)%\\n"
          filter:
            andFilter:
              filters:
                - statusCodeFilter: { comparison: { op: GE, value: { defaultValue: 400, runtimeKey: access_log.min_status } } }
                - statusCodeFilter: { comparison: { op: LE, value: { defaultValue: 499, runtimeKey: access_log.max_status } } }
        - grpcService:
            logName: example
            staticClusterName: access-logger_gloo-system
            additionalRequestHeadersToLog: [x-user]
  routeOptions:
    maxDirectResponseBodySizeBytes: 8192
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: behind-nlb, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${proxyPort}
  proxyNames:
    - gateway-proxy
  httpGateway: {}
  useProxyProto: true
  options:
    perConnectionBufferLimitBytes: 32768
    socketOptions:
      - { description: SO_KEEPALIVE, level: 1, name: 9, intValue: 1, state: STATE_PREBIND }
    connectionBalanceConfig: { exactBalance: {} }
    accessLoggingService:
      accessLog:
        - fileSink:
            path: ${file('proxied.json')}
            jsonFormat:
              client: "%DOWNSTREAM_REMOTE_ADDRESS%"
              peer: "%DOWNSTREAM_DIRECT_REMOTE_ADDRESS_WITHOUT_PORT%"
              path: "%REQ(:PATH)%"
              status: "%RESPONSE_CODE%"
    listenerAccessLoggingService:
      accessLog:
        - fileSink: { path: "${file('connections.log')}", stringFormat: "%DOWNSTREAM_REMOTE_ADDRESS%\\n" }
`,
  });
  await eventually('both listeners to serve', async () => {
    const plain = status(await raw(plainPort, '/ready'));
    const proxied = status(await raw(proxyPort, '/ready', proxyV1('192.0.2.1', 1000, proxyPort)));
    return plain === 200 && proxied === 200 ? true : undefined;
  });
}, 90_000);

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
  als?.forceShutdown();
  if (logs) fs.rmSync(logs, { recursive: true, force: true });
});

describe('access logs (options.accessLoggingService)', () => {
  it('accepts the Gateways', () => {
    const out = gw.ctl('get', 'gateways', '-o', 'yaml');
    expect(out.stdout).not.toMatch(/Rejected|Warning/);
  });

  it('writes a JSON line per request with the fields asked for', async () => {
    expect(status(await raw(plainPort, '/json-check?x=1'))).toBe(200);
    const entry = await eventually('the JSON access log line', () =>
      lines('access.json')
        .map((l) => JSON.parse(l) as Record<string, string>)
        .find((e) => e.path === '/json-check?x=1'),
    );
    expect(entry).toMatchObject({
      protocol: 'HTTP/1.1',
      upstreamCluster: 'app_gloo-system',
      upstreamHost: `127.0.0.1:${echo.port}`,
      method: 'GET',
      status: 200,
    });
    expect(Number(entry.duration)).toBeGreaterThanOrEqual(0);
  });

  it('writes a string-format line per request', async () => {
    expect(status(await raw(plainPort, '/string-check'))).toBe(200);
    const line = await eventually('the string access log line', () => lines('access.log').find((l) => l.includes('/string-check')));
    expect(line).toMatch(
      new RegExp(`^\\[\\d{4}-\\d\\d-\\d\\dT[^\\]]+\\] "GET /string-check HTTP/1.1" 200 - "-" "127.0.0.1:${echo.port}"$`),
    );
  });

  it('logs only 4xx answers where a statusCodeFilter says so', async () => {
    expect(status(await raw(plainPort, '/missing/one'))).toBe(404);
    expect(status(await raw(plainPort, '/fine'))).toBe(200);
    await eventually('the 404 in the filtered log', () => (lines('client-errors.log').includes('404 /missing/one') ? true : undefined));
    // the 200 was written to the unfiltered log by the same flush, and not to this one
    await eventually('the 200 in the unfiltered log', () => (lines('access.log').some((l) => l.includes('/fine')) ? true : undefined));
    expect(lines('client-errors.log')).toEqual(['404 /missing/one']);
  });
});

describe('gRPC access log service (grpcService)', () => {
  it('streams each request to the Upstream named by staticClusterName, with the headers asked for', async () => {
    const socket = net.connect(plainPort, '127.0.0.1');
    socket.write('GET /grpc-logged HTTP/1.1\r\nHost: shop.example.com\r\nx-user: alice\r\nConnection: close\r\n\r\n');
    socket.resume();
    const got = await eventually('the entry at the access log service', () =>
      received.find((r) => r.entry.request?.path === '/grpc-logged'),
    );
    expect(got.logName).toBe('example');
    expect(got.entry.request?.request_headers).toEqual({ 'x-user': 'alice' });
    expect(got.entry.response?.response_code?.value).toBe(200);
  });
});

describe('useProxyProto', () => {
  it('takes the client address from a PROXY protocol v1 header', async () => {
    expect(status(await raw(proxyPort, '/v1', proxyV1('203.0.113.7', 51234, proxyPort)))).toBe(200);
    const entry = await eventually('the v1 request in the access log', () =>
      lines('proxied.json')
        .map((l) => JSON.parse(l) as Record<string, string>)
        .find((e) => e.path === '/v1'),
    );
    expect(entry).toMatchObject({ client: '203.0.113.7:51234', peer: '127.0.0.1', status: 200 });
  });

  it('takes the client address from a PROXY protocol v2 header', async () => {
    expect(status(await raw(proxyPort, '/v2', proxyV2('198.51.100.23', 40000, proxyPort)))).toBe(200);
    const entry = await eventually('the v2 request in the access log', () =>
      lines('proxied.json')
        .map((l) => JSON.parse(l) as Record<string, string>)
        .find((e) => e.path === '/v2'),
    );
    expect(entry).toMatchObject({ client: '198.51.100.23:40000', peer: '127.0.0.1', status: 200 });
    await eventually('the connection in the listener access log', () =>
      lines('connections.log').includes('198.51.100.23:40000') ? true : undefined,
    );
  });

  it('refuses a connection without a PROXY header', async () => {
    // Envoy resets the connection: the request line is not a PROXY header
    const response = await raw(proxyPort, '/no-header').catch((err: Error) => err.message);
    expect(response).not.toMatch(/^HTTP/);
    expect(lines('proxied.json').some((l) => l.includes('/no-header'))).toBe(false);
  });
});
