// Protocol upgrades and the options Envoy takes as they are, end to end through a real Envoy: a WebSocket
// through the gateway with no option set (Gloo's default), a route that turns it off, a CONNECT tunnel
// (connectMatcher + upgrades.connect), x-envoy-attempt-count both ways, bufferPerRoute limits (413) on a
// virtual host, a route and weighted destinations, a route's envoyMetadata in Envoy's config dump, and
// dynamicForwardProxy routes (the host a header names, or a fixed one, resolved by Envoy's DNS cache).
import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startUpgradeUpstream, type UpgradeUpstream } from '../support/upgrade-upstream.js';

let gw: Gateway;
let app: UpgradeUpstream;

const upstream = (name: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: ${name}, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
`;

const toApp = 'routeAction: { single: { upstream: { name: app, namespace: gloo-system } } }';

beforeAll(async () => {
  app = await startUpgradeUpstream();
  gw = await startGateway({
    'upstreams.yaml': [upstream('app', app.port), upstream('app-b', app.port)].join('---\n'),
    'chat.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: chat, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /ws-short }]
        ${toApp}
        options: { timeout: 1s }
      - matchers: [{ prefix: /ws }]
        ${toApp}
      - matchers: [{ prefix: /no-ws }]
        ${toApp}
        options:
          upgrades:
            - websocket:
                enabled: false
      - matchers: [{ connectMatcher: {} }]
        ${toApp}
        options:
          upgrades:
            - connect:
                enabled: true
      - matchers: [{ prefix: /upload }]
        ${toApp}
        options:
          bufferPerRoute:
            buffer:
              maxRequestBytes: 1024
      - matchers: [{ prefix: /split }]
        routeAction:
          multi:
            destinations:
              - destination: { upstream: { name: app, namespace: gloo-system } }
                weight: 1
                options: { bufferPerRoute: { buffer: { maxRequestBytes: 1024 } } }
              - destination: { upstream: { name: app-b, namespace: gloo-system } }
                weight: 1
                options: { bufferPerRoute: { buffer: { maxRequestBytes: 1024 } } }
      - name: meta
        matchers: [{ prefix: /meta }]
        ${toApp}
        options:
          envoyMetadata:
            io.example.audit: { log: full, level: 3 }
      - matchers: [{ prefix: / }]
        ${toApp}
`,
    'counted.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: counted, namespace: gloo-system }
spec:
  virtualHost:
    domains: [counted.example.com]
    options:
      includeRequestAttemptCount: true
      includeAttemptCountInResponse: true
      bufferPerRoute:
        buffer:
          maxRequestBytes: 1024
    routes:
      - matchers: [{ prefix: /stream }]
        ${toApp}
        options:
          bufferPerRoute:
            disabled: true
      - matchers: [{ prefix: / }]
        ${toApp}
`,
    'egress.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: egress, namespace: gloo-system }
spec:
  virtualHost:
    domains: [egress.example.com]
    routes:
      - matchers: [{ prefix: /fixed }]
        routeAction:
          dynamicForwardProxy:
            hostRewrite: 127.0.0.1:${app.port}
      - matchers: [{ prefix: / }]
        routeAction:
          dynamicForwardProxy:
            autoHostRewriteHeader: x-rewrite-me
`,
  });
  await gw.until('/', (r) => r.status === 200);
  await gw.until('/', (r) => r.status === 200, { host: 'counted.example.com' });
}, 90_000);

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

/** A raw HTTP/1.1 WebSocket handshake: the status Envoy answers with (101 when upgraded). */
function upgradeStatus(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: '127.0.0.1',
      port: gw.ports.http,
      path,
      headers: {
        connection: 'Upgrade',
        upgrade: 'websocket',
        'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
        'sec-websocket-version': '13',
      },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve(res.statusCode ?? 0);
    });
    req.on('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('WebSocket', () => {
  it('is upgraded by default and echoes messages both ways (Node’s WebSocket client through Envoy)', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.ports.http}/ws`);
    const received: string[] = [];
    const opened = new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error('WebSocket failed to open')));
    });
    ws.addEventListener('message', (e: MessageEvent) => received.push(String(e.data)));
    await opened;
    const big = 'x'.repeat(70_000);
    ws.send('hello');
    ws.send('through envoy');
    ws.send(big);
    await expect.poll(() => received.length, { timeout: 5000 }).toBe(3);
    expect(received.slice(0, 2)).toEqual(['hello', 'through envoy']);
    expect(received[2]).toBe(big);
    const closed = new Promise<number>((resolve) => ws.addEventListener('close', (e: CloseEvent) => resolve(e.code)));
    ws.close(1000);
    expect(await closed).toBe(1000);
  });

  it('outlives the route timeout (it bounds the wait for the upgrade response, not the connection)', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${gw.ports.http}/ws-short`);
    const received: string[] = [];
    ws.addEventListener('message', (e: MessageEvent) => received.push(String(e.data)));
    await new Promise<void>((resolve, reject) => {
      ws.addEventListener('open', () => resolve());
      ws.addEventListener('error', () => reject(new Error('WebSocket failed to open')));
    });
    await new Promise((r) => setTimeout(r, 1500));
    ws.send('still here');
    await expect.poll(() => received, { timeout: 5000 }).toEqual(['still here']);
    ws.close(1000);
  });

  it('answers 101 on a route without options and 403 on a route with upgrades websocket enabled: false', async () => {
    expect(await upgradeStatus('/ws')).toBe(101);
    expect(await upgradeStatus('/no-ws')).toBe(403);
    const ws = new WebSocket(`ws://127.0.0.1:${gw.ports.http}/no-ws`);
    const outcome = await new Promise<string>((resolve) => {
      ws.addEventListener('open', () => resolve('open'));
      ws.addEventListener('error', () => resolve('error'));
    });
    expect(outcome).toBe('error');
  });
});

describe('CONNECT', () => {
  it('is proxied to the upstream on a connectMatcher route with upgrades connect enabled, and the tunnel carries bytes', async () => {
    const socket = net.connect(gw.ports.http, '127.0.0.1');
    let data = Buffer.alloc(0);
    socket.on('data', (d: Buffer) => (data = Buffer.concat([data, d])));
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => resolve());
      socket.once('error', reject);
    });
    socket.write('CONNECT tunnel.example.com:443 HTTP/1.1\r\nhost: tunnel.example.com:443\r\n\r\n');
    await expect.poll(() => data.includes('\r\n\r\n'), { timeout: 5000 }).toBe(true);
    const head = data.toString('latin1');
    expect(head).toMatch(/^HTTP\/1\.1 200 /);
    data = data.subarray(data.indexOf('\r\n\r\n') + 4);
    socket.write('ping through the tunnel');
    await expect.poll(() => data.toString('utf8'), { timeout: 5000 }).toBe('ping through the tunnel');
    socket.destroy();
    expect(app.connects).toContain('tunnel.example.com:443');
  });
});

describe('attempt counts', () => {
  it('includeRequestAttemptCount and includeAttemptCountInResponse send x-envoy-attempt-count both ways', async () => {
    const counted = await gw.request('/', { host: 'counted.example.com' });
    expect(counted.status).toBe(200);
    expect(counted.json<{ headers: Record<string, string> }>().headers['x-envoy-attempt-count']).toBe('1');
    expect(counted.headers.get('x-envoy-attempt-count')).toBe('1');
    const plain = await gw.request('/');
    expect(plain.json<{ headers: Record<string, string> }>().headers['x-envoy-attempt-count']).toBeUndefined();
    expect(plain.headers.get('x-envoy-attempt-count')).toBeNull();
  });
});

describe('bufferPerRoute', () => {
  const post = (path: string, bytes: number, host?: string) =>
    gw.request(path, { method: 'POST', body: 'b'.repeat(bytes), ...(host ? { host } : {}) });

  it('a route limit: a small body reaches the upstream whole, a larger one is answered 413', async () => {
    const small = await post('/upload', 200);
    expect(small.status).toBe(200);
    expect(small.json<{ bodyLength: number }>().bodyLength).toBe(200);
    expect((await post('/upload', 4096)).status).toBe(413);
    // no limit elsewhere on the virtual host
    expect((await post('/', 4096)).json<{ bodyLength: number }>().bodyLength).toBe(4096);
  });

  it('weighted destinations with their own limit', async () => {
    for (let i = 0; i < 4; i++) {
      expect((await post('/split', 4096)).status).toBe(413);
      expect((await post('/split', 100)).status).toBe(200);
    }
  });

  it('a virtual host limit, and a route that turns it off', async () => {
    expect((await post('/', 4096, 'counted.example.com')).status).toBe(413);
    expect((await post('/', 512, 'counted.example.com')).status).toBe(200);
    const streamed = await post('/stream', 4096, 'counted.example.com');
    expect(streamed.status).toBe(200);
    expect(streamed.json<{ bodyLength: number }>().bodyLength).toBe(4096);
  });
});

describe('envoyMetadata', () => {
  it("is the Envoy route's filter_metadata (Envoy's config dump)", async () => {
    interface Dump {
      configs: { route_config: { virtual_hosts: { routes: { name: string; metadata?: { filter_metadata?: unknown } }[] }[] } }[];
    }
    const dump = (await (await fetch(`http://127.0.0.1:${gw.ports.admin}/config_dump?resource=dynamic_route_configs`)).json()) as Dump;
    const routes = dump.configs.flatMap((c) => c.route_config.virtual_hosts.flatMap((vh) => vh.routes));
    const meta = routes.find((r) => r.name.endsWith('route:meta'));
    expect(meta?.metadata?.filter_metadata).toEqual({ 'io.example.audit': { log: 'full', level: 3 } });
  });
});

describe('dynamicForwardProxy', () => {
  it('forwards to the host a header names (autoHostRewriteHeader), resolved by Envoy', async () => {
    const r = await gw.until('/by-header?x=1', (res) => res.status === 200, {
      host: 'egress.example.com',
      headers: { 'x-rewrite-me': `127.0.0.1:${app.port}` },
    });
    const seen = r.json<{ path: string; headers: Record<string, string> }>();
    expect(seen.path).toBe('/by-header?x=1');
    expect(seen.headers['host']).toBe(`127.0.0.1:${app.port}`);
  });

  it('forwards to a fixed host (hostRewrite)', async () => {
    const r = await gw.request('/fixed', { host: 'egress.example.com' });
    expect(r.status).toBe(200);
    expect(r.json<{ headers: Record<string, string> }>().headers['host']).toBe(`127.0.0.1:${app.port}`);
  });
});

describe('status', () => {
  it('accepts every virtual service', () => {
    for (const name of ['chat', 'counted', 'egress']) {
      const vs = JSON.parse(gw.ctl('get', 'vs', name, '-n', 'gloo-system', '-o', 'json').stdout) as {
        status: { statuses: Record<string, { state: string }> };
      };
      expect(vs.status.statuses['legate-system']?.state).toBe('Accepted');
    }
  });
});
