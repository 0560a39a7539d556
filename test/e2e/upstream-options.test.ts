// Upstream options end to end, written as a Gloo user would (gloo.solo.io Upstreams, Gloo's field names), through
// `legate run` and a real Envoy: maxRequestsPerConnection (connections counted at the backend), the PROXY protocol
// header read by the backend, failover to priority 1, protocolSelection USE_DOWNSTREAM_PROTOCOL with an h2c
// backend, and the rest as Envoy runs them (config_dump).
import http from 'node:http';
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { freePort } from '../support/util.js';

interface Backend {
  port: number;
  /** TCP connections accepted */
  connections: number;
  /** first line of each connection when it is a PROXY protocol header */
  proxyLines: string[];
  /** HTTP versions of the requests seen */
  versions: string[];
  close(): Promise<void>;
}

/** An HTTP/1.1 backend that counts its connections. */
async function startCounting(): Promise<Backend> {
  const b = { connections: 0, proxyLines: [] as string[], versions: [] as string[] };
  const server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('counted');
  });
  server.on('connection', () => b.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return Object.assign(b, {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  });
}

/** A raw TCP backend: reads the PROXY v1 line, then answers the HTTP request with that line. */
async function startProxyProtocolReader(): Promise<Backend> {
  const b = { connections: 0, proxyLines: [] as string[], versions: [] as string[] };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    b.connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let data = '';
    socket.on('data', (chunk) => {
      data += chunk.toString('latin1');
      const end = data.indexOf('\r\n\r\n');
      if (end < 0) return;
      const first = data.slice(0, data.indexOf('\r\n'));
      if (first.startsWith('PROXY ')) b.proxyLines.push(first);
      data = data.slice(end + 4);
      socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(first)}\r\n\r\n${first}`);
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return Object.assign(b, {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  });
}

/** A cleartext HTTP/2-only backend (prior knowledge): answers with the HTTP version it saw. */
async function startH2c(): Promise<Backend> {
  const b = { connections: 0, proxyLines: [] as string[], versions: [] as string[] };
  const server = http2.createServer((req, res) => {
    b.versions.push(req.httpVersion);
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end(`h${req.httpVersion}`);
  });
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => {
    sessions.add(s);
    s.on('close', () => sessions.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return Object.assign(b, {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sessions) s.destroy();
        server.close(() => resolve());
      }),
  });
}

/** One request over HTTP/2 (prior knowledge) to Envoy's plain HTTP listener. */
function h2Request(port: number, host: string, path: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const client = http2.connect(`http://127.0.0.1:${port}`);
    client.on('error', reject);
    const req = client.request({ ':path': path, ':authority': host });
    let body = '';
    let status = 0;
    req.on('response', (h) => (status = Number(h[':status'])));
    req.on('data', (d: Buffer) => (body += d.toString()));
    req.on('end', () => {
      client.close();
      resolve({ status, body });
    });
    req.on('error', reject);
  });
}

let gw: Gateway;
let counting: Backend;
let proxied: Backend;
let h2c: Backend;
let backup: EchoUpstream;
let closedPort: number;

const HOST = { host: 'up.example.com' };

beforeAll(async () => {
  [counting, proxied, h2c, backup, closedPort] = await Promise.all([
    startCounting(),
    startProxyProtocolReader(),
    startH2c(),
    startEcho('backup'),
    freePort(),
  ]);
  const route = (prefix: string, upstream: string, options = ''): string => `
      - matchers: [{ prefix: ${prefix} }]
        routeAction: { single: { upstream: { name: ${upstream}, namespace: default } } }${options}`;
  gw = await startGateway({
    'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: one-per-conn, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${counting.port} }] }
  connectionConfig:
    maxRequestsPerConnection: 1
    tcpKeepalive: { keepaliveProbes: 3, keepaliveTime: 60s, keepaliveInterval: 10s }
    perConnectionBufferLimitBytes: 65536
    commonHttpProtocolOptions: { idleTimeout: 30s, maxHeadersCount: 60, headersWithUnderscoresAction: DROP_HEADER }
    http1ProtocolOptions: { enableTrailers: true, preserveCaseHeaderKeyFormat: true }
  preconnectPolicy: { perUpstreamPreconnectRatio: 1.5 }
  disableIstioAutoMtls: true
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: proxied, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${proxied.port} }] }
  proxyProtocolVersion: V1
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: primary, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${closedPort} }] }
  connectionConfig: { connectTimeout: 1s }
  failover:
    prioritizedLocalities:
      - localityEndpoints:
          - locality: { region: us-west-2, zone: us-west-2a }
            lbEndpoints: [{ address: 127.0.0.1, port: ${backup.port} }]
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: h2c, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${h2c.port} }] }
  protocolSelection: USE_DOWNSTREAM_PROTOCOL
  initialStreamWindowSize: 131072
  maxConcurrentStreams: 50
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: by-name, namespace: default }
spec:
  static: { hosts: [{ addr: localhost, port: ${counting.port} }] }
  dnsRefreshRate: 10s
  respectDnsTtl: true
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: tls-v2, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${closedPort} }] }
  sslConfig:
    sni: api.example.com
    parameters: { minimumProtocolVersion: TLSv1_2, maximumProtocolVersion: TLSv1_3, cipherSuites: [ECDHE-RSA-AES128-GCM-SHA256] }
    allowRenegotiation: true
  proxyProtocolVersion: V2
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ec2, namespace: default }
spec:
  awsEc2: { region: us-east-1, secretRef: { name: aws-creds, namespace: default } }
`,
    'vs.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: up, namespace: default }
spec:
  virtualHost:
    domains: [up.example.com]
    routes:${route('/count', 'one-per-conn')}${route('/proxied', 'proxied')}${route(
      '/failover-retried',
      'primary',
      `
        options:
          retries: { retryOn: connect-failure, numRetries: 2, previousPriorities: { updateFrequency: 1 } }`,
    )}${route('/failover', 'primary')}${route('/h2c', 'h2c')}${route('/by-name', 'by-name')}
`,
  });
  await gw.until('/count', (r) => r.status === 200, HOST, 30_000);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all([counting, proxied, h2c, backup].map((b) => b?.close()));
});

describe('upstream options through Envoy', () => {
  it('maxRequestsPerConnection: 1 opens a connection to the backend per request', async () => {
    const before = counting.connections;
    for (let i = 0; i < 4; i++) expect((await gw.request('/count', HOST)).text).toBe('counted');
    expect(counting.connections - before).toBeGreaterThanOrEqual(4);
  });

  it('proxyProtocolVersion V1: the backend reads a PROXY header before the request', async () => {
    const r = await gw.until('/proxied', (x) => x.status === 200, HOST);
    expect(r.text).toMatch(/^PROXY TCP4 127\.0\.0\.1 127\.0\.0\.1 \d+ \d+$/);
    // the client's connection to Envoy, as the header conveys it: its destination is Envoy's listener
    expect(r.text.endsWith(` ${gw.ports.http}`)).toBe(true);
    expect(proxied.proxyLines.length).toBeGreaterThanOrEqual(1);
  });

  it('failover: with the primary down, a retry over previous priorities is served by priority 1', async () => {
    const r = await gw.until('/failover-retried', (x) => x.status === 200, HOST);
    expect(r.json()['upstream']).toBe('backup');
    // without the retry, the request goes to priority 0 (no health checks mark it down) and fails to connect
    expect((await gw.request('/failover', HOST)).status).toBe(503);
  });

  it('protocolSelection USE_DOWNSTREAM_PROTOCOL: an HTTP/2 client reaches an h2c backend over HTTP/2', async () => {
    const r = await h2Request(gw.ports.http, 'up.example.com', '/h2c');
    expect(r).toEqual({ status: 200, body: 'h2.0' });
    expect(h2c.versions).toContain('2.0');
    // an HTTP/1.1 client makes Envoy speak HTTP/1.1, which the HTTP/2-only backend does not answer
    expect([502, 503]).toContain((await gw.request('/h2c', HOST)).status);
  });

  it('Envoy runs the other options as rendered', async () => {
    const res = await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_active_clusters`);
    const dump = (await res.json()) as { configs: { cluster: Record<string, unknown> }[] };
    const cluster = (name: string): Record<string, unknown> | undefined => dump.configs.find((c) => c.cluster['name'] === name)?.cluster;
    const httpOptions = (name: string): unknown =>
      (cluster(name)?.['typed_extension_protocol_options'] as Record<string, unknown>)[
        'envoy.extensions.upstreams.http.v3.HttpProtocolOptions'
      ];
    expect(cluster('one-per-conn_default')).toMatchObject({
      per_connection_buffer_limit_bytes: 65536,
      upstream_connection_options: { tcp_keepalive: { keepalive_probes: 3, keepalive_time: 60, keepalive_interval: 10 } },
      preconnect_policy: { per_upstream_preconnect_ratio: 1.5 },
    });
    expect(httpOptions('one-per-conn_default')).toMatchObject({
      common_http_protocol_options: {
        idle_timeout: '30s',
        max_headers_count: 60,
        headers_with_underscores_action: 'DROP_HEADER',
        max_requests_per_connection: 1,
      },
      explicit_http_config: {
        http_protocol_options: { enable_trailers: true, header_key_format: { stateful_formatter: { name: 'preserve_case' } } },
      },
    });
    expect(httpOptions('h2c_default')).toMatchObject({
      use_downstream_protocol_config: { http2_protocol_options: { initial_stream_window_size: 131072, max_concurrent_streams: 50 } },
    });
    expect(cluster('by-name_default')).toMatchObject({ type: 'STRICT_DNS', dns_refresh_rate: '10s', respect_dns_ttl: true });
    expect(cluster('tls-v2_default')).toMatchObject({
      transport_socket: {
        name: 'envoy.transport_sockets.upstream_proxy_protocol',
        typed_config: {
          config: { version: 'V2' },
          transport_socket: {
            name: 'envoy.transport_sockets.tls',
            typed_config: {
              allow_renegotiation: true,
              common_tls_context: {
                tls_params: {
                  tls_minimum_protocol_version: 'TLSv1_2',
                  tls_maximum_protocol_version: 'TLSv1_3',
                  cipher_suites: ['ECDHE-RSA-AES128-GCM-SHA256'],
                },
              },
            },
          },
        },
      },
    });
    expect(cluster('primary_default')).toBeDefined();
    expect((await gw.request('/by-name', HOST)).text).toBe('counted');
  });

  it('refuses an upstream type Legate does not have, with the reason', () => {
    const us = JSON.parse(gw.ctl('get', 'upstream', 'ec2', '-n', 'default', '-o', 'json').stdout);
    const status = Object.values(us.status.statuses as Record<string, { state: string; reason: string }>)[0]!;
    expect(status.state).toBe('Rejected');
    expect(status.reason).toContain('NotSupported: spec.awsEc2 is not supported by Legate (EC2 upstreams');
  });
});
