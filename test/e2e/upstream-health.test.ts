// Upstream health and resilience end to end, as a Gloo user writes it: an HTTP active health check takes a
// host whose /healthz turns 503 out of rotation and brings it back, a TCP health check marks a closed port
// unhealthy, outlier detection ejects a host answering 5xx, and circuit breakers (an Upstream's own, and
// Settings gloo.circuitBreakers for the others) turn concurrent requests away with 503s Envoy counts.
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { eventually, freePort, sleep } from '../support/util.js';

/** A backend whose health, failures and delay the test turns on and off. */
interface Backend {
  name: string;
  port: number;
  healthy: boolean;
  failing: boolean;
  delayMs: number;
  /** the headers of each health check */
  healthChecks: http.IncomingHttpHeaders[];
  close(): Promise<void>;
}

async function startBackend(name: string): Promise<Backend> {
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz') {
      backend.healthChecks.push(req.headers);
      res.writeHead(backend.healthy ? 200 : 503).end();
      return;
    }
    const answer = (): void => {
      res.writeHead(backend.failing ? 500 : 200, { 'content-type': 'application/json' }).end(JSON.stringify({ upstream: name }));
    };
    if (backend.delayMs) setTimeout(answer, backend.delayMs);
    else answer();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const backend: Backend = {
    name,
    port: (server.address() as AddressInfo).port,
    healthy: true,
    failing: false,
    delayMs: 0,
    healthChecks: [],
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  return backend;
}

/** A gRPC server with only grpc.health.v1.Health/Check, answering SERVING or NOT_SERVING. */
interface GrpcHealth {
  port: number;
  serving: boolean;
  /** `service` and `:authority` of each check */
  checks: { service: string; authority: string }[];
  stop(): Promise<void>;
}

async function startGrpcHealth(): Promise<GrpcHealth> {
  const server = new grpc.Server();
  const bytes = (b: Buffer): Buffer => b;
  server.addService(
    {
      Check: {
        path: '/grpc.health.v1.Health/Check',
        requestStream: false,
        responseStream: false,
        requestSerialize: bytes,
        requestDeserialize: bytes,
        responseSerialize: bytes,
        responseDeserialize: bytes,
      },
    },
    {
      Check: (call: grpc.ServerUnaryCall<Buffer, Buffer>, cb: grpc.sendUnaryData<Buffer>) => {
        // HealthCheckRequest{service = 1}; HealthCheckResponse{status = 1}: SERVING 1, NOT_SERVING 2
        const req = call.request;
        const service = req[0] === 0x0a ? req.subarray(2, 2 + (req[1] ?? 0)).toString() : '';
        health.checks.push({ service, authority: call.getHost() });
        cb(null, Buffer.from([0x08, health.serving ? 1 : 2]));
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  const health: GrpcHealth = { port, serving: true, checks: [], stop: () => new Promise<void>((r) => server.tryShutdown(() => r())) };
  return health;
}

let gw: Gateway;
let grpcHealth: GrpcHealth;
let backends: Record<'a' | 'b' | 'c' | 'd' | 'slow' | 'open', Backend>;
let closedPort: number;
const HOST = { host: 'health.example.com' };
const to = (name: string): string => `{ single: { upstream: { name: ${name}, namespace: legate-system } } }`;

beforeAll(async () => {
  const names = ['a', 'b', 'c', 'd', 'slow', 'open'] as const;
  const started = await Promise.all(names.map((n) => startBackend(n)));
  backends = Object.fromEntries(names.map((n, i) => [n, started[i]])) as typeof backends;
  backends.slow.delayMs = 1500;
  closedPort = await freePort();
  grpcHealth = await startGrpcHealth();
  const { a, b, c, d, slow, open } = backends;
  gw = await startGateway({
    'settings.yaml': `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  gloo:
    circuitBreakers: { maxConnections: 77, maxRequests: 66 }
`,
    'upstreams.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: checked, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${a.port} }, { addr: 127.0.0.1, port: ${b.port} }] }
  healthChecks:
    - timeout: 1s
      interval: 500ms
      noTrafficInterval: 500ms
      unhealthyThreshold: 2
      healthyThreshold: 1
      httpHealthCheck:
        path: /healthz
        requestHeadersToAdd: [{ header: { key: x-load, value: "100%%" } }]
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: tcp-checked, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${open.port} }, { addr: 127.0.0.1, port: ${closedPort} }] }
  healthChecks:
    - timeout: 1s
      interval: 500ms
      noTrafficInterval: 500ms
      unhealthyThreshold: 1
      healthyThreshold: 1
      eventLogPath: ${gwEventLog()}
      tcpHealthCheck: {}
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: grpc-checked, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${grpcHealth.port} }] }
  useHttp2: true
  healthChecks:
    - timeout: 1s
      interval: 500ms
      noTrafficInterval: 500ms
      unhealthyThreshold: 1
      healthyThreshold: 1
      grpcHealthCheck: { serviceName: books, authority: books.internal }
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: flaky, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${c.port} }, { addr: 127.0.0.1, port: ${d.port} }] }
  outlierDetection:
    consecutive5xx: 3
    interval: 1s
    baseEjectionTime: 60s
    maxEjectionPercent: 50
---
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: narrow, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${slow.port} }] }
  circuitBreakers:
    maxConnections: 1
    maxPendingRequests: 1
    maxRequests: 1
`,
    'vs.yaml': `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: health, namespace: default }
spec:
  virtualHost:
    domains: [health.example.com]
    routes:
      - matchers: [{ prefix: /checked }]
        routeAction: ${to('checked')}
      - matchers: [{ prefix: /flaky }]
        routeAction: ${to('flaky')}
      - matchers: [{ prefix: /narrow }]
        routeAction: ${to('narrow')}
      - matchers: [{ prefix: /tcp }]
        routeAction: ${to('tcp-checked')}
`,
  });
  await gw.until('/checked', (r) => r.status === 200, HOST, 30_000);
}, 60_000);

afterAll(async () => {
  await gw?.stop();
  await Promise.all([...Object.values(backends ?? {}).map((b) => b.close()), grpcHealth?.stop()]);
  fs.rmSync(gwEventLog(), { force: true });
});

function gwEventLog(): string {
  return `/tmp/legate-e2e-hc-events-${process.pid}.log`;
}

/** Envoy admin /clusters lines of one cluster (`<cluster>::<host>::<stat>::<value>`). */
async function clusterLines(cluster: string): Promise<string[]> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/clusters`)).text();
  return text.split('\n').filter((l) => l.startsWith(`${cluster}::`));
}

async function healthFlags(cluster: string, port: number): Promise<string | undefined> {
  const line = (await clusterLines(cluster)).find((l) => l.startsWith(`${cluster}::127.0.0.1:${port}::health_flags::`));
  return line?.split('::').pop();
}

async function stat(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.admin}/stats?filter=${encodeURIComponent(`^${name}$`)}`)).text();
  const m = /: (\d+)/.exec(text);
  return m ? Number(m[1]) : 0;
}

/** Which backend answered each of `n` requests. */
async function served(path: string, n: number): Promise<string[]> {
  const names: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = await gw.request(path, HOST);
    names.push(r.status === 200 ? String(r.json()['upstream']) : `status ${r.status}`);
  }
  return names;
}

describe('upstream health checks', () => {
  it('an HTTP health check takes a host whose /healthz answers 503 out of rotation, and brings it back when healthy', async () => {
    await eventually('both hosts serve', async () => {
      const names = new Set(await served('/checked', 10));
      return names.has('a') && names.has('b') ? true : undefined;
    });
    expect(await healthFlags('checked_legate-system', backends.a.port)).toBe('healthy');
    // as Gloo's static hosts: each host is checked with its own address as Host
    expect(backends.a.healthChecks[0]?.host).toBe('127.0.0.1');
    expect(backends.a.healthChecks[0]?.['x-load']).toBe('100%');

    backends.a.healthy = false;
    const started = Date.now();
    await eventually('a is marked failed_active_hc', async () =>
      (await healthFlags('checked_legate-system', backends.a.port))?.includes('/failed_active_hc') ? true : undefined,
    );
    // a 503 marks the host unhealthy at once: within about two 500ms intervals
    expect(Date.now() - started).toBeLessThan(3000);
    expect(new Set(await served('/checked', 20))).toEqual(new Set(['b']));

    backends.a.healthy = true;
    await eventually('a is healthy again', async () =>
      (await healthFlags('checked_legate-system', backends.a.port)) === 'healthy' ? true : undefined,
    );
    await eventually('a serves again', async () => ((await served('/checked', 10)).includes('a') ? true : undefined));
  });

  it('a TCP health check marks a host on a closed port unhealthy; the open one keeps serving', async () => {
    await eventually('the closed port fails its TCP check', async () =>
      (await healthFlags('tcp-checked_legate-system', closedPort))?.includes('/failed_active_hc') ? true : undefined,
    );
    expect(await healthFlags('tcp-checked_legate-system', backends.open.port)).toBe('healthy');
    expect(new Set(await served('/tcp', 10))).toEqual(new Set(['open']));
    // eventLogPath: Envoy writes its health check events there
    await eventually('a failure event of the closed port in the event log', () =>
      fs.existsSync(gwEventLog()) && fs.readFileSync(gwEventLog(), 'utf8').includes(`"port_value":${closedPort}`) ? true : undefined,
    );
  });
});

describe('gRPC health checks', () => {
  it('a gRPC health check asks grpc.health.v1 for the service: NOT_SERVING takes the host out, SERVING brings it back', async () => {
    const flags = () => healthFlags('grpc-checked_legate-system', grpcHealth.port);
    await eventually('the gRPC host is healthy', async () => ((await flags()) === 'healthy' ? true : undefined));
    expect(grpcHealth.checks[0]).toEqual({ service: 'books', authority: 'books.internal' });
    grpcHealth.serving = false;
    await eventually('NOT_SERVING fails the check', async () => ((await flags())?.includes('/failed_active_hc') ? true : undefined));
    grpcHealth.serving = true;
    await eventually('SERVING again', async () => ((await flags()) === 'healthy' ? true : undefined));
  });
});

describe('outlier detection', () => {
  it('ejects a host after consecutive5xx 5xx answers: then every request goes to the other host', async () => {
    backends.c.failing = true;
    const before = await served('/flaky', 10);
    expect(before).toContain('status 500');
    await eventually('c is ejected', async () =>
      (await healthFlags('flaky_legate-system', backends.c.port))?.includes('/failed_outlier_check') ? true : undefined,
    );
    expect(await served('/flaky', 20)).toEqual(Array.from({ length: 20 }, () => 'd'));
    expect(await stat('cluster.flaky_legate-system.outlier_detection.ejections_enforced_consecutive_5xx')).toBeGreaterThan(0);
  });
});

describe('circuit breakers', () => {
  it('with maxPendingRequests 1 and maxRequests 1, concurrent slow requests overflow: 503s and upstream_rq_pending_overflow', async () => {
    const overflowBefore = await stat('cluster.narrow_legate-system.upstream_rq_pending_overflow');
    // over one HTTP/2 connection (one Envoy worker, one connection pool): one slow request holds the only
    // upstream connection, the next one waits in the one pending slot, the other four overflow
    const client = http2.connect(`http://127.0.0.1:${gw.ports.http}`);
    const ask = (): Promise<{ status: number; overloaded: string | undefined }> =>
      new Promise((resolve, reject) => {
        const stream = client.request({ ':path': '/narrow', ':authority': HOST.host });
        stream.on('response', (headers) => {
          const overloaded = headers['x-envoy-overloaded'];
          resolve({ status: Number(headers[':status']), overloaded: typeof overloaded === 'string' ? overloaded : undefined });
        });
        stream.on('error', reject);
        stream.resume();
      });
    let answers: { status: number; overloaded: string | undefined }[];
    try {
      const first = ask();
      await sleep(300);
      answers = await Promise.all([first, ...Array.from({ length: 5 }, () => ask())]);
    } finally {
      client.close();
    }
    expect(answers.map((r) => r.status).sort()).toEqual([200, 200, 503, 503, 503, 503]);
    expect(answers.find((r) => r.status === 503)?.overloaded).toBe('true');
    expect(await stat('cluster.narrow_legate-system.upstream_rq_pending_overflow')).toBeGreaterThan(overflowBefore);
    const lines = await clusterLines('narrow_legate-system');
    expect(lines).toContain('narrow_legate-system::default_priority::max_pending_requests::1');
    expect(lines).toContain('narrow_legate-system::default_priority::max_requests::1');
  });

  it('Settings gloo.circuitBreakers apply to an Upstream without its own', async () => {
    const lines = await clusterLines('flaky_legate-system');
    expect(lines).toContain('flaky_legate-system::default_priority::max_connections::77');
    expect(lines).toContain('flaky_legate-system::default_priority::max_requests::66');
    // Envoy's default where neither set one
    expect(lines).toContain('flaky_legate-system::default_priority::max_pending_requests::1024');
  });
});
