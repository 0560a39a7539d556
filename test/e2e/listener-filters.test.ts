// httpGateway.options that Gloo renders as listener filters, through a real Envoy: the gRPC-JSON transcoder's
// descriptor read from a ConfigMap, a stateful session (cookie), the router's suppressEnvoyHeaders, early header
// manipulation (a header, a Secret's keys, a removal), preserveCaseHeaderKeyFormat, tracing metadataForTags, and the
// connectionLimit and networkLocalRatelimit network filters in front of the HCM (on Gateways of their own), the
// dynamic forward proxy's DNS cache (dynamicForwardProxy); and an Upstream health check whose headers come from a Secret.
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { BOOKS_DESCRIPTOR_BIN, startGrpcBooks, type GrpcBooks } from '../support/grpc-books.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort } from '../support/util.js';

let gw: Gateway;
let a: EchoUpstream;
let b: EchoUpstream;
let books: GrpcBooks;
let raw: http.Server;
let rawPort: number;
let limitedPort: number;
let rateLimitedPort: number;

/** An upstream that answers with the header names exactly as they arrived, and one mixed-case header of its own. */
async function startRawHeaders(): Promise<void> {
  raw = http.createServer((req, res) => {
    const names = req.rawHeaders.filter((_, i) => i % 2 === 0);
    res.writeHead(200, ['content-type', 'application/json', 'X-MiXeD-Answer', '1']);
    res.end(JSON.stringify({ names }));
  });
  await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', () => resolve()));
  rawPort = (raw.address() as AddressInfo).port;
}

/** A request whose header names (sent and received) keep their case: node's client and rawHeaders. */
function rawRequest(port: number, path: string, headers: Record<string, string>): Promise<{ names: string[]; answered: string[] }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        const answered = res.rawHeaders.filter((_, i) => i % 2 === 0);
        resolve({ names: (JSON.parse(body) as { names: string[] }).names, answered });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Whether a new connection to `port` gets an HTTP answer (a limited one is closed without a byte). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.write('GET /limit HTTP/1.1\r\nhost: x\r\n\r\n'));
    let data = '';
    s.on('data', (d) => {
      data += d.toString();
      if (data.includes('\r\n\r\n')) {
        s.destroy();
        resolve(true);
      }
    });
    s.on('close', () => resolve(data.startsWith('HTTP/1.1')));
    s.on('error', () => resolve(false));
    s.setTimeout(5000, () => s.destroy());
  });
}

const gateways = (): string => `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: "::"
  bindPort: ${gw.ports.http}
  httpGateway:
    options:
      grpcJsonTranscoder:
        protoDescriptorConfigMap:
          configMapRef: { name: books-descriptor, namespace: gloo-system }
        services: [shop.v1.Books]
        autoMapping: true
      statefulSession:
        cookieBased: { cookie: { name: legate-session, ttl: 60s } }
      router: { suppressEnvoyHeaders: true }
      dynamicForwardProxy:
        saveUpstreamAddress: true
        dnsCacheConfig: { dnsLookupFamily: V4_ONLY, dnsRefreshRate: 30s, hostTtl: 120s, maxHosts: 64 }
      httpConnectionManagerSettings:
        preserveCaseHeaderKeyFormat: true
        earlyHeaderManipulation:
          headersToAdd:
            - header: { key: x-early, value: "yes" }
              append: false
            - headerSecretRef: { name: early-headers, namespace: gloo-system }
          headersToRemove: [x-internal]
        tracing:
          metadataForTags:
            - tag: zone
              kind: ENDPOINT
              value: { namespace: envoy.lb, key: zone }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: limited, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${limitedPort}
  httpGateway:
    options:
      connectionLimit: { maxActiveConnections: 1 }
---
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: rate-limited, namespace: gloo-system }
spec:
  bindAddress: 127.0.0.1
  bindPort: ${rateLimitedPort}
  httpGateway:
    options:
      networkLocalRatelimit: { maxTokens: 1, tokensPerFill: 1, fillInterval: 100s }
`;

beforeAll(async () => {
  [a, b, books] = await Promise.all([startEcho('a'), startEcho('b'), startGrpcBooks(), startRawHeaders()]);
  limitedPort = await freePort();
  rateLimitedPort = await freePort();
  gw = await startGateway({
    'resources.yaml': `
apiVersion: v1
kind: ConfigMap
metadata: { name: books-descriptor, namespace: gloo-system }
data:
  books.pb: ${BOOKS_DESCRIPTOR_BIN}
---
apiVersion: v1
kind: Secret
metadata: { name: early-headers, namespace: gloo-system }
type: gloo.solo.io/header
stringData:
  x-api-key: k3y-50%-off
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: sticky, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${a.port} }, { addr: 127.0.0.1, port: ${b.port} }] }
  healthChecks:
    - timeout: 1s
      interval: 1s
      noTrafficInterval: 1s
      unhealthyThreshold: 3
      healthyThreshold: 1
      httpHealthCheck:
        path: /healthz
        requestHeadersToAdd: [{ headerSecretRef: { name: early-headers, namespace: gloo-system } }]
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: books, namespace: gloo-system }
spec:
  useHttp2: true
  static: { hosts: [{ addr: 127.0.0.1, port: ${books.port} }] }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: raw, namespace: gloo-system }
spec:
  connectionConfig: { http1ProtocolOptions: { preserveCaseHeaderKeyFormat: true } }
  static: { hosts: [{ addr: 127.0.0.1, port: ${rawPort} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: default, namespace: gloo-system }
spec:
  virtualHost:
    domains: ["*"]
    routes:
      - matchers: [{ prefix: /shop.v1.Books/ }]
        routeAction: { single: { upstream: { name: books, namespace: gloo-system } } }
      - matchers: [{ prefix: /dfp }]
        routeAction: { dynamicForwardProxy: { autoHostRewriteHeader: x-dfp-host } }
      - matchers: [{ prefix: /raw }]
        routeAction: { single: { upstream: { name: raw, namespace: gloo-system } } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: sticky, namespace: gloo-system } } }
`,
  });
  gw.write('gateway.yaml', gateways());
  await gw.until('/ready', (r) => r.status === 200 && r.headers.get('set-cookie') !== null);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await a?.close();
  await b?.close();
  await books?.stop();
  await new Promise<void>((resolve) => (raw ? raw.close(() => resolve()) : resolve()));
});

describe('listener filters from httpGateway.options through Envoy', () => {
  it('transcodes JSON with the descriptor read from the ConfigMap (protoDescriptorConfigMap)', async () => {
    const r = await gw.request('/shop.v1.Books/GetBook', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ id: 2 }),
    });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ id: '2', title: 'Sonnets', kind: 'POEMS' });
    expect(books.calls.at(-1)?.method).toBe('GetBook');
  });

  it('keeps a session on one host with the statefulSession cookie', async () => {
    const first = await gw.request('/session');
    const cookie = first.headers.get('set-cookie') ?? '';
    expect(cookie).toMatch(/^legate-session=/);
    const host = first.json<{ upstream: string }>().upstream;
    const pair = cookie.split(';')[0]!;
    for (let i = 0; i < 6; i++) {
      const r = await gw.request('/session', { headers: { cookie: pair } });
      expect(r.json<{ upstream: string }>().upstream).toBe(host);
    }
    // without the cookie the two hosts take turns
    const seen = new Set<string>();
    for (let i = 0; i < 6; i++) seen.add((await gw.request('/session')).json<{ upstream: string }>().upstream);
    expect(seen.size).toBe(2);
  });

  it('suppresses the x-envoy-* response headers (router.suppressEnvoyHeaders)', async () => {
    const r = await gw.request('/router');
    expect(r.status).toBe(200);
    expect(r.headers.get('x-envoy-upstream-service-time')).toBeNull();
  });

  it('sets and removes request headers before routing (earlyHeaderManipulation), a Secret value taken as written', async () => {
    const r = await gw.request('/early', { headers: { 'x-early': 'client', 'x-internal': 'drop me' } });
    const headers = r.json<{ headers: Record<string, string> }>().headers;
    expect(headers['x-early']).toBe('yes');
    expect(headers['x-api-key']).toBe('k3y-50%-off');
    expect(headers['x-internal']).toBeUndefined();
  });

  it('keeps the case of header names both ways (preserveCaseHeaderKeyFormat with the Upstream option)', async () => {
    const r = await rawRequest(gw.ports.http, '/raw', { 'X-CamelCase-Header': '1' });
    expect(r.names).toContain('X-CamelCase-Header');
    expect(r.answered).toContain('X-MiXeD-Answer');
  });

  it("forwards by the DNS cache the Gateway's dynamicForwardProxy configures", async () => {
    const r = await gw.request('/dfp/hello', { headers: { 'x-dfp-host': `127.0.0.1:${b.port}` } });
    expect(r.status).toBe(200);
    expect(r.json()).toMatchObject({ upstream: 'b', path: '/dfp/hello' });
    const clusters = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_active_clusters`)).text();
    expect(clusters).toContain('"dns_lookup_family": "V4_ONLY"');
    expect(clusters).toContain('"max_hosts": 64');
  });

  it('tags spans from endpoint metadata (metadataForTags): Envoy took the listener', async () => {
    const dump = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_listeners`)).text();
    expect(dump).toContain('"tag": "zone"');
    expect(dump).toContain('envoy.filters.network.connection_limit');
  });

  it("health checks the Upstream's hosts with the Secret's headers (requestHeadersToAdd[].headerSecretRef)", async () => {
    const probe = await eventually('a health check', () => a.seen.find((s) => s.path === '/healthz'));
    expect(probe.headers['x-api-key']).toBe('k3y-50%-off');
  });

  it('closes connections over connectionLimit, and over the networkLocalRatelimit bucket', async () => {
    await eventually('the limited listener', async () => ((await answers(limitedPort)) ? true : undefined));
    // one connection held open: the next is closed by connection_limit. The probe's own connection may not be
    // counted out yet when the held one arrives (then the held one is the one closed): hold until one stays open.
    const hold = async (): Promise<net.Socket> => {
      const socket = net.connect(limitedPort, '127.0.0.1');
      let closed = false;
      socket.on('close', () => (closed = true));
      socket.on('error', () => undefined);
      await new Promise<void>((resolve) => socket.on('connect', () => resolve()));
      await new Promise((r) => setTimeout(r, 300));
      if (!closed) return socket;
      socket.destroy();
      throw new Error('closed');
    };
    const held = await eventually('a connection held open', async () => hold().catch(() => undefined));
    try {
      await eventually('a refused second connection', async () => ((await answers(limitedPort)) ? undefined : true));
    } finally {
      held.destroy();
    }
    // a bucket of one token, refilled every 100s: the first connection is served, the next is closed
    const served = await eventually('the rate limited listener', async () => ((await answers(rateLimitedPort)) ? true : undefined));
    expect(served).toBe(true);
    expect(await answers(rateLimitedPort)).toBe(false);
  });
});
