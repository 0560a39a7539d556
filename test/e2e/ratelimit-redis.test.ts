// Rate limiting with counters in a real redis-server (Debian's, installed by `make setup`; skipped where
// it is missing): the limit holds with Redis, Redis killed -> Settings denyOnFail decides (allow by
// default, 500 when true), the failure is logged and counted in the service's metrics, Redis slow ->
// the same within Envoy's timeout, Redis back on the same address -> counting resumes, no restart.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { RateLimiter } from '../../extensions/ratelimit/limiter.js';
import { RedisStore } from '../../extensions/ratelimit/redis-store.js';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, freePort, sleep, stopProcess } from '../support/util.js';
import { freshMinute } from '../support/ratelimit.js';

const REDIS = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();

let gw: Gateway;
let app: EchoUpstream;
let redis: ChildProcess | undefined;
let redisPort = 0;
let redisDir = '';

async function startRedis(): Promise<void> {
  redis = spawn(
    REDIS,
    [
      '--port',
      String(redisPort),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      redisDir,
      '--enable-debug-command',
      'yes',
    ],
    { stdio: 'ignore' },
  );
  await eventually('redis-server to answer', () => (redisCli('PING').stdout.trim() === 'PONG' ? true : undefined), 10_000);
}

function redisCli(...args: string[]) {
  return spawnSync('redis-cli', ['-p', String(redisPort), ...args], { encoding: 'utf8', timeout: 5000 });
}

const settings = (denyOnFail: boolean): string => `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec:
  ratelimitServer: { denyOnFail: ${denyOnFail}, requestTimeout: 200ms, enableXRatelimitHeaders: true }
`;

function resources(port: number): string {
  return `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: limits, namespace: default }
spec:
  raw:
    descriptors:
      - { key: generic_key, value: limited, rateLimit: { requestsPerUnit: 3, unit: MINUTE } }
      - { key: generic_key, value: probe, rateLimit: { requestsPerUnit: 1000000, unit: MINUTE } }
    rateLimits:
      - actions: [{ genericKey: { descriptorValue: limited } }]
---
apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: probe, namespace: default }
spec:
  raw:
    descriptors: [{ key: generic_key, value: probe, rateLimit: { requestsPerUnit: 1000000, unit: MINUTE } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: probe } }] }]
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: /probe }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
        options: { rateLimitConfigs: { refs: [{ name: probe }] } }
      - matchers: [{ prefix: /limited }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
        options: { rateLimitConfigs: { refs: [{ name: limits }] } }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`;
}

async function statuses(p: string, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push((await gw.request(p)).status);
  return out;
}

async function metric(name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.ratelimitStats}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(name));
  return line ? Number(line.split(' ').pop()) : 0;
}

describe.skipIf(!REDIS)('rate limiting with Redis', () => {
  beforeAll(async () => {
    redisPort = await freePort();
    redisDir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-redis-'));
    await startRedis();
    app = await startEcho('app');
    gw = await startGateway(
      { 'shop.yaml': resources(app.port), 'settings.yaml': settings(false) },
      { args: ['--ratelimit-redis', `127.0.0.1:${redisPort}`], env: { START_STATS_SERVER: '1' } },
    );
    await gw.until('/probe', (r) => r.status === 200 && r.headers.get('x-ratelimit-limit') !== null, undefined, 30_000);
    await freshMinute();
  }, 150_000);

  afterAll(async () => {
    await gw?.stop();
    await app?.close();
    if (redis) await stopProcess(redis, 'SIGTERM', 5000);
    if (redisDir) fs.rmSync(redisDir, { recursive: true, force: true });
  });

  it('counts in Redis: N pass in the window, then 429; the window key expires with the window', async () => {
    expect(await statuses('/limited', 4)).toEqual([200, 200, 200, 429]);
    const keys = redisCli('--scan', '--pattern', '*generic_key=limited*').stdout.trim().split('\n').filter(Boolean);
    expect(keys).toHaveLength(1);
    expect(redisCli('GET', keys[0]!).stdout.trim()).toBe('4');
    const ttl = Number(redisCli('PTTL', keys[0]!).stdout.trim());
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(61_000);
  });

  it('two service replicas on one Redis admit exactly the limit under concurrent load', async () => {
    const logger = createLogger('test', { level: 'error' });
    const stores = [0, 1].map(() => new RedisStore({ host: '127.0.0.1', port: redisPort, logger, timeoutMs: 2000 }));
    await Promise.all(stores.map((s) => s.connect()));
    const replicas = stores.map((s) => new RateLimiter(s));
    const entries = [
      { key: 'legate_basic', value: `replicas-${Date.now()}|100/HOUR` },
      { key: 'client', value: 'c' },
    ];
    const now = Date.now();
    const answers = await Promise.all(Array.from({ length: 400 }, (_, i) => replicas[i % 2]!.decide('legate', [entries], 1, now)));
    expect(answers.filter((a) => a.overall === 'OK')).toHaveLength(100);
    await Promise.all(replicas.map((r) => r.close()));
  });

  it('Redis slow: denyOnFail false allows within the timeout', async () => {
    const sleeper = spawn('redis-cli', ['-p', String(redisPort), 'DEBUG', 'SLEEP', '1.5'], { stdio: 'ignore' });
    await sleep(100);
    const t0 = Date.now();
    const r = await gw.request('/limited');
    expect(r.status).toBe(200);
    expect(Date.now() - t0).toBeLessThan(1000);
    await new Promise((resolve) => sleeper.once('exit', resolve));
  });

  it('Redis down: allowed by default (counted and logged), denied with denyOnFail, recovered when it is back', async () => {
    const errorsBefore = await metric('legate_ratelimit_decisions_total{outcome="error"}');
    await stopProcess(redis!, 'SIGKILL', 2000);
    redis = undefined;
    // the limit was exhausted above; with Redis gone and denyOnFail false, requests pass
    expect(await statuses('/limited', 3)).toEqual([200, 200, 200]);
    expect(await metric('legate_ratelimit_decisions_total{outcome="error"}')).toBeGreaterThan(errorsBefore);
    expect(gw.log('ratelimit')).toMatch(/rate-limit decision failed|rate-limit store call failed/);

    gw.write('settings.yaml', settings(true));
    await gw.until('/limited', (r) => r.status === 500, undefined, 20_000);
    // routes without limits never ask the service
    expect((await gw.request('/other')).status).toBe(200);

    await startRedis();
    await freshMinute();
    // a fresh Redis holds no counts: the window starts over, then the limit holds again
    await gw.until('/limited', (r) => r.status === 200, undefined, 20_000);
    const after = await statuses('/limited', 4);
    expect(after.filter((s) => s === 429).length).toBeGreaterThanOrEqual(2);
    expect(after.every((s) => s === 200 || s === 429)).toBe(true);
  });
});
