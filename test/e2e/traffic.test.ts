// Traffic-shaping route and virtual-host options end to end, written as a Gloo user would (Gloo API
// groups, Gloo's field names): retries, faults, shadowing, regex rewrites and redirects, idle and stream
// timeouts, tracing decorators and virtual-cluster stats, through `legate run` and a real Envoy.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

/** Answers 503 to the first attempt of each `x-attempt-key` and 200 (with the attempt count) after that. */
interface FlakyUpstream {
  port: number;
  attempts: Map<string, number>;
  close(): Promise<void>;
}

async function startFlaky(): Promise<FlakyUpstream> {
  const attempts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    const key = String(req.headers['x-attempt-key'] ?? '');
    const n = (attempts.get(key) ?? 0) + 1;
    attempts.set(key, n);
    res.writeHead(n === 1 ? 503 : 200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ attempts: n }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    attempts,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

let gw: Gateway;
let flaky: FlakyUpstream;
let app: EchoUpstream;
let mirror: EchoUpstream;
let slow: EchoUpstream;

const upstream = (name: string, port: number): string => `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata:
  name: ${name}
  namespace: gloo-system
spec:
  static:
    hosts:
      - addr: 127.0.0.1
        port: ${port}
`;

const to = (name: string): string => `routeAction:
          single:
            upstream:
              name: ${name}
              namespace: gloo-system`;

beforeAll(async () => {
  [flaky, app, mirror, slow] = await Promise.all([
    startFlaky(),
    startEcho('app'),
    startEcho('mirror'),
    startEcho('slow', { delayMs: 1500 }),
  ]);
  gw = await startGateway({
    'upstreams.yaml': [
      upstream('flaky', flaky.port),
      upstream('app', app.port),
      upstream('mirror', mirror.port),
      upstream('slow', slow.port),
    ].join('---\n'),
    'traffic.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: traffic
  namespace: gloo-system
spec:
  virtualHost:
    domains:
      - 'traffic.example.com'
    options:
      stats:
        virtualClusters:
          - name: rides
            pattern: '/rides/\\d+'
            method: GET
    routes:
      - matchers:
          - prefix: /retry
        ${to('flaky')}
        options:
          retries:
            retryOn: 5xx
            numRetries: 2
            perTryTimeout: 2s
            retryBackOff:
              baseInterval: 10ms
              maxInterval: 50ms
            previousPriorities:
              updateFrequency: 1
      - matchers:
          - prefix: /no-retry
        ${to('flaky')}
      - matchers:
          - prefix: /abort
        ${to('app')}
        options:
          faults:
            abort:
              percentage: 100
              httpStatus: 418
      - matchers:
          - prefix: /delay
        ${to('app')}
        options:
          faults:
            delay:
              percentage: 100
              fixedDelay: 600ms
      - matchers:
          - prefix: /shadow
        ${to('app')}
        options:
          shadowing:
            upstream:
              name: mirror
              namespace: gloo-system
            percentage: 100
      - matchers:
          - regex: '/items/[a-z]+/[0-9]+'
        ${to('app')}
        options:
          regexRewrite:
            pattern:
              regex: '^/items/([a-z]+)/([0-9]+)$'
            substitution: '/v2/\\2/\\1'
      - matchers:
          - prefix: /legacy/
        redirectAction:
          hostRedirect: new.example.com
          regexRewrite:
            pattern:
              regex: '^/legacy/(.*)$'
            substitution: '/new/\\1'
      - matchers:
          - prefix: /idle
        ${to('slow')}
        options:
          idleTimeout: 300ms
      - matchers:
          - prefix: /max-stream
        ${to('slow')}
        options:
          maxStreamDuration:
            maxStreamDuration: 300ms
      - matchers:
          - prefix: /traced-quiet
        ${to('app')}
        options:
          tracing:
            routeDescriptor: quiet-route
            propagate: false
      - matchers:
          - prefix: /traced
        ${to('app')}
        options:
          tracing:
            routeDescriptor: traced-route
      - matchers:
          - prefix: /
        ${to('app')}
`,
    'vh-retries.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata:
  name: vh-retries
  namespace: gloo-system
spec:
  virtualHost:
    domains:
      - 'retries.example.com'
    options:
      retries:
        retryOn: 5xx
        numRetries: 2
    routes:
      - matchers:
          - prefix: /own
        ${to('flaky')}
        options:
          retries:
            retryOn: connect-failure
      - matchers:
          - prefix: /
        ${to('flaky')}
`,
  });
  await gw.until('/', (r) => r.status === 200, { host: 'traffic.example.com' }, 30_000);
  await gw.until('/ready', (r) => r.status === 200 || r.status === 503, { host: 'retries.example.com' }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await Promise.all([flaky?.close(), app?.close(), mirror?.close(), slow?.close()]);
});

const on = (host: string, headers: Record<string, string> = {}) => ({ host, headers });
const traffic = (headers: Record<string, string> = {}) => on('traffic.example.com', headers);

async function timed<T>(fn: () => Promise<T>): Promise<{ result: T; ms: number }> {
  const start = performance.now();
  const result = await fn();
  return { result, ms: performance.now() - start };
}

describe('retries', () => {
  it("retries a route's failed attempt and answers with the retry's response", async () => {
    const r = await gw.request('/retry', traffic({ 'x-attempt-key': 'route-1' }));
    expect(r.status).toBe(200);
    expect(r.json()['attempts']).toBe(2);
    // a route without retries passes the first failure on
    const once = await gw.request('/no-retry', traffic({ 'x-attempt-key': 'route-2' }));
    expect(once.status).toBe(503);
    expect(flaky.attempts.get('route-2')).toBe(1);
  });

  it("uses the virtual host's retry policy for routes without their own, and a route's own policy wins", async () => {
    const r = await gw.request('/any', on('retries.example.com', { 'x-attempt-key': 'vh-1' }));
    expect(r.status).toBe(200);
    expect(r.json()['attempts']).toBe(2);
    // /own retries on connect-failure only: the 503 is not retried
    const own = await gw.request('/own', on('retries.example.com', { 'x-attempt-key': 'vh-2' }));
    expect(own.status).toBe(503);
    expect(flaky.attempts.get('vh-2')).toBe(1);
  });
});

describe('faults', () => {
  it('aborts with the configured status without reaching the upstream', async () => {
    const before = app.seen.length;
    const r = await gw.request('/abort/x', traffic());
    expect(r.status).toBe(418);
    expect(app.seen.slice(before).some((s) => s.path.startsWith('/abort'))).toBe(false);
  });

  it('delays by fixedDelay, and routes without faults are not delayed', async () => {
    const delayed = await timed(() => gw.request('/delay', traffic()));
    expect(delayed.result.status).toBe(200);
    expect(delayed.ms).toBeGreaterThanOrEqual(590);
    const plain = await timed(() => gw.request('/plain', traffic()));
    expect(plain.result.status).toBe(200);
    expect(plain.ms).toBeLessThan(400);
  });
});

describe('shadowing', () => {
  it('sends a copy of each request to the shadow upstream; the client gets the primary answer', async () => {
    const r = await gw.request('/shadow/item?q=1', traffic());
    expect(r.json()['upstream']).toBe('app');
    const copy = await eventually('the mirror to see the request', () => mirror.seen.find((s) => s.path === '/shadow/item?q=1'));
    // Envoy marks the shadow's Host
    expect(copy.headers['host']).toBe('traffic.example.com-shadow');
  });
});

describe('regex rewrites', () => {
  it('rewrites the path the upstream sees', async () => {
    const r = await gw.request('/items/shoes/42', traffic());
    expect(r.json()['path']).toBe('/v2/42/shoes');
  });

  it("rewrites a redirect's Location", async () => {
    const r = await gw.request('/legacy/a/b', traffic());
    expect(r.status).toBe(301);
    expect(r.headers.get('location')).toBe('http://new.example.com/new/a/b');
  });
});

describe('stream timeouts', () => {
  it('idleTimeout cuts an upstream that sends nothing for longer', async () => {
    const { result, ms } = await timed(() => gw.request('/idle', traffic()));
    expect(result.status).toBe(504);
    expect(ms).toBeLessThan(1200);
  });

  it('maxStreamDuration cuts a stream that lasts longer', async () => {
    // before any response header, Envoy answers as for an upstream timeout
    const { result, ms } = await timed(() => gw.request('/max-stream', traffic()));
    expect(result.status).toBe(504);
    expect(ms).toBeLessThan(1200);
  });
});

describe('tracing', () => {
  it("names the route's span and tells the client, unless propagate is false", async () => {
    const traced = await gw.request('/traced', traffic());
    expect(traced.status).toBe(200);
    expect(traced.headers.get('x-envoy-decorator-operation')).toBe('traced-route');
    const quiet = await gw.request('/traced-quiet', traffic());
    expect(quiet.status).toBe(200);
    expect(quiet.headers.get('x-envoy-decorator-operation')).toBeNull();
  });
});

describe('virtual clusters', () => {
  it("counts matching requests under the virtual cluster's stats", async () => {
    for (const p of ['/rides/1', '/rides/2', '/rides/3']) expect((await gw.request(p, traffic())).status).toBe(200);
    await gw.request('/rides/1/more', traffic());
    const stat = 'vhost.gloo-system_traffic.vcluster.rides.upstream_rq_total';
    const value = await eventually(`${stat} in Envoy's admin`, async () => {
      const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=vcluster`)).text();
      const m = new RegExp(`^${stat.replaceAll('.', '\\.')}: (\\d+)$`, 'm').exec(text);
      return m && Number(m[1]) >= 3 ? Number(m[1]) : undefined;
    });
    expect(value).toBe(3);
  });
});
