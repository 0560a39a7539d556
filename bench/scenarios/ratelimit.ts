// Rate limiting. Load: one `legate run` with three routes to the shared upstream: /plain (no
// limit), /limited (a RateLimitConfig whose limit is never reached: every request asks Legate's ratelimit
// service, in-memory counters) and /local (a localRatelimit bucket that never runs dry: Envoy alone).
// Figures: ShouldRateLimit decisions per second straight at the service (no Envoy) with in-memory and
// Redis counters, and the count error at window boundaries under load with two service replicas sharing
// one Redis (admitted requests per 1-second window beyond the limit: the aim is 0).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { legateProcesses, startLegate, untilServed, type Legate } from '../lib/legate.js';
import { freePort, waitFor } from '../lib/net.js';
import { cpuSeconds, startProcess, type Started } from '../lib/procs.js';
import { upstreamYaml, vsWithRoutesYaml } from '../lib/resources.js';
import { acquire } from '../lib/servers.js';
import { ScenarioSkipped, type BenchContext, type Figure, type FiguresScenario, type LoadScenario } from '../lib/types.js';

const ROUTES = `      - matchers: [{ prefix: /limited }]
        routeAction: { single: { upstream: { name: bench-upstream, namespace: legate-system } } }
        options: { rateLimitConfigs: { refs: [{ name: bench, namespace: legate-system }] } }
      - matchers: [{ prefix: /local }]
        routeAction: { single: { upstream: { name: bench-upstream, namespace: legate-system } } }
        options: { localRatelimit: { maxTokens: 1000000000, tokensPerFill: 1000000000, fillInterval: 1s } }
      - matchers: [{ prefix: /plain }]
        routeAction: { single: { upstream: { name: bench-upstream, namespace: legate-system } } }`;

const RLC = `apiVersion: ratelimit.legate.dev/v1alpha1
kind: RateLimitConfig
metadata: { name: bench, namespace: legate-system }
spec:
  raw:
    descriptors: [{ key: generic_key, value: bench, rateLimit: { requestsPerUnit: 1000000000, unit: SECOND } }]
    rateLimits: [{ actions: [{ genericKey: { descriptorValue: bench } }] }]
`;

function gateway(ctx: BenchContext): Promise<{ value: Legate; release(): Promise<void> }> {
  return acquire(ctx, 'ratelimit-gateway', async () => {
    const up = await ctx.upstream();
    const files = { 'upstream.yaml': upstreamYaml(up.port), 'rlc.yaml': RLC, 'vs.yaml': vsWithRoutesYaml('bench-rl', [ROUTES]) };
    const gw = await startLegate(ctx, 'ratelimit', files, ctx.settings.serverCpus);
    try {
      for (const p of ['/plain', '/local', '/limited'])
        await untilServed(gw.ports.http, p, undefined, up.body, 30_000, 100, () => (gw.proc.alive() ? undefined : 'legate run exited'));
      return gw;
    } catch (err) {
      await gw.stop();
      throw err;
    }
  });
}

function loadScenario(name: string, routePath: string, description: string, aim?: number): LoadScenario {
  return {
    kind: 'load',
    name,
    description,
    ...(aim !== undefined ? { compareTo: ['ratelimit-plain'], aims: { 'ratelimit-plain': aim } } : {}),
    async setup(ctx) {
      const up = await ctx.upstream();
      const gw = await gateway(ctx);
      return {
        port: gw.value.ports.http,
        path: routePath,
        processes: [...legateProcesses(gw.value), { label: 'upstream', role: 'upstream', pid: up.pid }],
        stop: () => gw.release(),
      };
    },
  };
}

export const ratelimitPlain = loadScenario(
  'ratelimit-plain',
  '/plain',
  'a route without limits, on the gateway of the ratelimit scenarios',
);
export const ratelimitRemote = loadScenario(
  'ratelimit-remote',
  '/limited',
  'a route with a RateLimitConfig never reached: one ShouldRateLimit call per request to the ratelimit service (in-memory counters)',
  0.5,
);
export const ratelimitLocal = loadScenario(
  'ratelimit-local',
  '/local',
  'a route with a localRatelimit token bucket never empty: Envoy alone (local_ratelimit)',
  0.95,
);

// ---- the service alone

const DESCRIPTOR_SECONDS = 'bench|{n}/SECOND';

interface RlClient {
  call(entries: { key: string; value: string }[]): Promise<{ overall_code: string }>;
  close(): void;
}

function client(port: number): RlClient {
  const pkg = loadEnvoyService('envoy/service/ratelimit/v3/rls.proto');
  const Ctor = lookupService(pkg, 'envoy.service.ratelimit.v3.RateLimitService');
  const c = new Ctor(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  return {
    call: (entries) =>
      new Promise((resolve, reject) =>
        (c as unknown as Record<string, (req: object, cb: (err: Error | null, res: { overall_code: string }) => void) => void>)[
          'ShouldRateLimit'
        ]!.call(c, { domain: 'legate', descriptors: [{ entries }], hits_addend: 1 }, (err, res) => (err ? reject(err) : resolve(res))),
      ),
    close: () => c.close(),
  };
}

async function startService(ctx: BenchContext, label: string, redis?: number): Promise<{ proc: Started; port: number }> {
  const port = await freePort();
  const xds = await freePort(); // nothing listens: basic descriptors need no config
  const proc = startProcess(label, process.execPath, {
    args: [
      path.join(ctx.root, 'bin', 'legate.js'),
      'ratelimit',
      '--port',
      String(port),
      '--xds-address',
      `127.0.0.1:${xds}`,
      '--stats-port',
      String(await freePort()),
      ...(redis ? ['--redis', `127.0.0.1:${redis}`, '--redis-timeout-ms', '1000'] : []),
    ],
    env: { LOG_LEVEL: 'warn' },
    cpus: ctx.settings.serverCpus,
  });
  ctx.defer(() => proc.stop());
  const c = client(port);
  try {
    await waitFor(
      `${label} to answer`,
      async () => {
        try {
          return (await c.call([
            { key: 'legate_basic', value: 'probe|1000/SECOND' },
            { key: 'k', value: 'v' },
          ]))
            ? true
            : undefined;
        } catch {
          return undefined;
        }
      },
      { timeoutMs: 20_000 },
    );
  } finally {
    c.close();
  }
  return { proc, port };
}

async function startRedis(ctx: BenchContext): Promise<{ port: number; pid: number; stop(): Promise<void> }> {
  const bin = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  if (!bin) throw new ScenarioSkipped('redis-server is not installed (make setup installs it)');
  const port = await freePort();
  const dir = fs.mkdtempSync(path.join(ctx.workDir, 'redis-'));
  const proc = startProcess('redis-server', bin, {
    args: ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir],
    cpus: ctx.settings.serverCpus,
  });
  ctx.defer(() => proc.stop());
  await waitFor(
    'redis-server',
    () => (spawnSync('redis-cli', ['-p', String(port), 'PING'], { encoding: 'utf8' }).stdout.trim() === 'PONG' ? true : undefined),
    { timeoutMs: 10_000 },
  );
  return { port, pid: proc.pid, stop: () => proc.stop() };
}

/** Decisions per second with `concurrency` calls in flight for `seconds`, over the given clients in turn. */
async function decisionsPerSecond(
  clients: RlClient[],
  seconds: number,
  concurrency: number,
  value: string,
): Promise<{ rate: number; ok: number; done: number }> {
  const end = Date.now() + seconds * 1000;
  let done = 0;
  let ok = 0;
  let i = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < end) {
      const c = clients[i++ % clients.length]!;
      const r = await c.call([
        { key: 'legate_basic', value },
        { key: 'client', value: 'bench' },
      ]);
      done++;
      if (r.overall_code === 'OK') ok++;
    }
  };
  const t0 = Date.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { rate: done / ((Date.now() - t0) / 1000), ok, done };
}

/** Admitted per 1-second window (by the second in which the answer arrived, ±1 window at the edges). */
async function boundaryError(
  clients: RlClient[],
  seconds: number,
  limit: number,
  concurrency: number,
): Promise<{ maxOver: number; windows: number }> {
  const admitted = new Map<number, number>();
  const end = Date.now() + seconds * 1000;
  let i = 0;
  const value = DESCRIPTOR_SECONDS.replace('{n}', String(limit)).replace('bench', `boundary-${Date.now()}`);
  const worker = async (): Promise<void> => {
    while (Date.now() < end) {
      const sent = Date.now();
      const r = await clients[i++ % clients.length]!.call([
        { key: 'legate_basic', value },
        { key: 'client', value: 'bench' },
      ]);
      const got = Date.now();
      // the service decided between `sent` and `got`: count it only when both fall in one second
      if (r.overall_code === 'OK' && Math.floor(sent / 1000) === Math.floor(got / 1000)) {
        const w = Math.floor(got / 1000);
        admitted.set(w, (admitted.get(w) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  let maxOver = 0;
  for (const n of admitted.values()) maxOver = Math.max(maxOver, n - limit);
  return { maxOver, windows: admitted.size };
}

export const ratelimitDecisions: FiguresScenario = {
  kind: 'figures',
  name: 'ratelimit-decisions',
  description:
    'ShouldRateLimit straight at `legate ratelimit` (grpc-js client, 32 in flight): decisions/s with in-memory and Redis counters; ' +
    'count error at 1-second window boundaries with two replicas sharing one Redis (limit 200/s, aim 0 over-admits)',
  async run(ctx) {
    const seconds = Math.max(2, ctx.settings.durationS);
    const figures: Figure[] = [];
    // The grpc-js client in this process limits decisions/s; the servers' CPU per decision says what
    // one core of them would serve.
    const perDecision = async (pids: number[], run: () => Promise<{ done: number }>): Promise<number> => {
      const before = pids.map(cpuSeconds);
      const { done } = await run();
      return (pids.reduce((a, pid, i) => a + cpuSeconds(pid) - before[i]!, 0) / done) * 1e6;
    };
    const capacity = (us: number): string => `~${Math.round(1e6 / us).toLocaleString('en-US')} decisions/s per core`;
    const mem = await startService(ctx, 'ratelimit (memory)');
    const memClient = client(mem.port);
    let m = { rate: 0, ok: 0, done: 0 };
    const memUs = await perDecision(
      [mem.proc.pid],
      async () => (m = await decisionsPerSecond([memClient], seconds, 32, 'bench|1000000000/SECOND')),
    );
    memClient.close();
    await mem.proc.stop();
    figures.push({ name: 'decisions/s, in-memory counters', value: Math.round(m.rate), unit: '/s' });
    figures.push({
      name: 'service CPU per decision, in-memory counters',
      value: Number(memUs.toFixed(1)),
      unit: 'µs',
      note: capacity(memUs),
    });

    const redis = await startRedis(ctx);
    const a = await startService(ctx, 'ratelimit (redis, a)', redis.port);
    const b = await startService(ctx, 'ratelimit (redis, b)', redis.port);
    const ca = client(a.port);
    const cb = client(b.port);
    let r = { rate: 0, ok: 0, done: 0 };
    const redisUs = await perDecision(
      [a.proc.pid, redis.pid],
      async () => (r = await decisionsPerSecond([ca], seconds, 32, 'bench|1000000000/SECOND')),
    );
    figures.push({ name: 'decisions/s, Redis counters (one replica)', value: Math.round(r.rate), unit: '/s' });
    figures.push({
      name: 'service + redis-server CPU per decision, Redis counters',
      value: Number(redisUs.toFixed(1)),
      unit: 'µs',
      note: capacity(redisUs),
    });
    const two = await decisionsPerSecond([ca, cb], seconds, 32, 'bench2|1000000000/SECOND');
    figures.push({ name: 'decisions/s, Redis counters (two replicas, one Redis)', value: Math.round(two.rate), unit: '/s' });
    const boundary = await boundaryError([ca, cb], Math.max(3, seconds), 200, 32);
    figures.push({
      name: 'over-admits per 1-second window, limit 200/s, two replicas on one Redis',
      value: boundary.maxOver,
      note: `worst of ${boundary.windows} windows (answers straddling a second are not counted)`,
    });
    ca.close();
    cb.close();
    await a.proc.stop();
    await b.proc.stop();
    await redis.stop();
    return {
      kind: 'figures',
      figures,
      notes: ['the service runs pinned to the server CPUs; the client runs in the bench process'],
    };
  },
};
