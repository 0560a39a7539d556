// Micro-benchmark of the extauth service (not a test): Check calls per second and the service's own
// CPU time per call, through a grpc-js client on loopback.
//
//   npx tsx bench/micro/extauth.ts [--seconds 5] [--concurrency 32] [--oidc]
//
// Two processes, so the CPU figure is the service's alone: this one runs the extauth service (fed by
// a minimal in-process ADS server); a forked child runs the load generator (requests pre-encoded,
// responses not decoded) and the introspection endpoint (a fake one answering `active: true`, or
// with --oidc the real oidc-provider of examples/apps). Scenarios:
//   cached      every Check carries the same token, answered from the cache (the hot path)
//   uncached    cacheTimeoutMs 0: every Check introspects over HTTP (keep-alive)
//   denied      no Authorization header (the floor: gRPC + parse + a constant answer)
// Plus in-process figures for the parts: request parsing (fast parser vs proto-loader) and
// Authorizer.check on a cached token.
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as grpc from '@grpc/grpc-js';
import { ExtensionTypeUrls, encodeExtensionConfig, type AuthConfigConfig } from '../../common/contract.js';
import { createLogger } from '../../common/log.js';
import { bindServer, loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { Authorizer } from '../../extensions/extauth/authorizer.js';
import { tokenHash } from '../../extensions/extauth/introspect.js';
import { startExtauthService } from '../../extensions/extauth/service.js';
import { parseCheckRequest } from '../../extensions/extauth/wire.js';

const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

interface LoadRequest {
  kind: 'load';
  target: string;
  /** pre-encoded CheckRequests, sent round-robin */
  requestsB64: string[];
  seconds: number;
  concurrency: number;
}
interface LoadResult {
  kind: 'result';
  calls: number;
  errors: number;
  seconds: number;
  p50us: number;
  p99us: number;
  clientCpuUs: number;
}
interface ProviderReady {
  kind: 'provider';
  introspectionUrl: string;
  /** distinct valid tokens (the uncached scenario rotates through them, so single-flight never merges calls) */
  tokens: string[];
  clientId?: string;
  clientSecret?: string;
}

function checkRequestObject(configId: string, authorization: string | undefined): object {
  const headers: Record<string, string> = {
    ':authority': 'api.example.com',
    ':path': '/api/v1/products',
    ':method': 'GET',
    ':scheme': 'http',
    'user-agent': 'wrk',
    accept: '*/*',
    'x-forwarded-proto': 'http',
    'x-request-id': '2c6a3e5e-0f0b-4d9c-9a57-3c8a9f2d6a10',
  };
  if (authorization) headers['authorization'] = authorization;
  return {
    attributes: {
      source: { address: { socket_address: { address: '127.0.0.1', port_value: 51000 } } },
      destination: { address: { socket_address: { address: '127.0.0.1', port_value: 8080 } } },
      request: {
        time: { seconds: '1795311444', nanos: 123 },
        http: {
          id: '11400000000000000',
          method: 'GET',
          headers,
          path: '/api/v1/products',
          host: 'api.example.com',
          scheme: 'http',
          protocol: 'HTTP/1.1',
          size: '0',
        },
      },
      context_extensions: { config_id: configId, source_type: 'route', source_name: 'legate-system_products-route-0' },
    },
  };
}

// ---------------------------------------------------------------- child: load generator + provider

async function child(useOidc: boolean): Promise<void> {
  const send = (m: object): void => void process.send!(m);
  if (useOidc) {
    const path = '../../examples/apps/oauth-provider.mjs';
    const mod = (await import(path)) as typeof import('../../examples/apps/oauth-provider.mjs');
    const p = await mod.startProvider({ port: 0, quiet: true, ttlSeconds: 3600 });
    const tokens: string[] = [];
    for (let i = 0; i < 256; i++) {
      const res = await fetch(p.urls.token, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from('legate-demo:legate-demo-secret').toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'products:read' }),
      });
      tokens.push(((await res.json()) as { access_token: string }).access_token);
    }
    send({
      kind: 'provider',
      introspectionUrl: p.urls.introspection,
      tokens,
      clientId: 'legate-extauth',
      clientSecret: 'legate-extauth-secret',
    } satisfies ProviderReady);
  } else {
    const body = JSON.stringify({
      active: true,
      scope: 'products:read products:write',
      client_id: 'legate-demo',
      exp: Math.floor(Date.now() / 1000) + 3600,
    });
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      });
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    send({
      kind: 'provider',
      introspectionUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/introspect`,
      tokens: Array.from({ length: 256 }, (_, i) => `bench-token-${i}-0123456789abcdefghijklmnopqrstuvwxyz`),
    } satisfies ProviderReady);
  }
  process.on('message', (m: LoadRequest) => {
    if (m.kind === 'load') void load(m).then(send);
  });
}

async function load(req: LoadRequest): Promise<LoadResult> {
  const client = new grpc.Client(req.target, grpc.credentials.createInsecure());
  const requests = req.requestsB64.map((b) => Buffer.from(b, 'base64'));
  let next = 0;
  const id = (b: Buffer): Buffer => b;
  const call = (): Promise<boolean> =>
    new Promise((resolve) => client.makeUnaryRequest(CHECK_PATH, id, id, requests[next++ % requests.length]!, (err) => resolve(!err)));
  // warm-up
  for (let i = 0; i < 200; i++) await call();
  const latencies: number[] = [];
  let calls = 0;
  let errors = 0;
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  const end = t0 + req.seconds * 1000;
  await Promise.all(
    Array.from({ length: req.concurrency }, async () => {
      while (performance.now() < end) {
        const s = performance.now();
        const ok = await call();
        latencies.push(performance.now() - s);
        if (ok) calls++;
        else errors++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  client.close();
  latencies.sort((a, b) => a - b);
  const q = (p: number): number => Math.round((latencies[Math.min(latencies.length - 1, Math.floor(latencies.length * p))] ?? 0) * 1000);
  return { kind: 'result', calls, errors, seconds, p50us: q(0.5), p99us: q(0.99), clientCpuUs: cpu.user + cpu.system };
}

// ---------------------------------------------------------------- parent: the service under test

/** A minimal ADS server: answers every extauth subscription with one fixed set of AuthConfigs. */
async function fakeAds(configs: AuthConfigConfig[]): Promise<{ address: string; stop(): Promise<void> }> {
  const Ads = lookupService(
    loadEnvoyService('envoy/service/discovery/v3/ads.proto'),
    'envoy.service.discovery.v3.AggregatedDiscoveryService',
  );
  const server = new grpc.Server();
  server.addService(Ads.service, {
    StreamAggregatedResources: (call: grpc.ServerDuplexStream<{ type_url: string; response_nonce?: string }, object>) => {
      call.on('data', (req) => {
        if (req.response_nonce) return; // ACK/NACK
        call.write({
          version_info: '1',
          type_url: req.type_url,
          nonce: '1',
          resources: configs.map((c) => ({
            type_url: ExtensionTypeUrls.authConfig,
            value: Buffer.from(encodeExtensionConfig(c as unknown as Record<string, unknown>)),
          })),
        });
      });
      call.on('end', () => call.end());
      call.on('error', () => undefined);
    },
  });
  const bound = await bindServer(server, '127.0.0.1', 0);
  return { address: `127.0.0.1:${bound.port}`, stop: () => bound.stop(200) };
}

function runLoad(worker: ChildProcess, req: LoadRequest): Promise<LoadResult> {
  return new Promise((resolve) => {
    const on = (m: LoadResult): void => {
      if (m.kind !== 'result') return;
      worker.off('message', on);
      resolve(m);
    };
    worker.on('message', on);
    worker.send(req);
  });
}

function micro(label: string, n: number, fn: () => unknown): string {
  for (let i = 0; i < Math.min(n, 20_000); i++) fn();
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn();
  const us = ((performance.now() - t0) * 1000) / n;
  return `${label.padEnd(44)} ${us.toFixed(2).padStart(8)} µs/op`;
}

async function parent(seconds: number, concurrency: number, useOidc: boolean, only: string | undefined): Promise<void> {
  const worker = fork(fileURLToPath(import.meta.url), ['--child', ...(useOidc ? ['--oidc'] : [])], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const provider = await new Promise<ProviderReady>((resolve) => worker.once('message', (m: ProviderReady) => resolve(m)));
  const step = (cacheTimeoutMs: number): AuthConfigConfig['steps'][number] => ({
    type: 'oauth2-introspection',
    introspectionUrl: provider.introspectionUrl,
    ...(provider.clientId
      ? { clientId: provider.clientId, clientSecret: provider.clientSecret! }
      : { clientId: 'legate-extauth', clientSecret: 'bench' }),
    cacheTimeoutMs,
    requiredScopes: ['products:read'],
  });
  const configs: AuthConfigConfig[] = [
    { name: 'bench.cached', steps: [step(600_000)] },
    { name: 'bench.uncached', steps: [step(0)] },
  ];
  const ads = await fakeAds(configs);
  const svc = await startExtauthService({
    host: '127.0.0.1',
    port: 0,
    xdsAddress: ads.address,
    logger: createLogger('extauth', { level: 'warn' }),
  });
  while (!svc.ready()) await new Promise((r) => setTimeout(r, 20));

  const check = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization').service[
    'Check'
  ]!;
  const encode = (configId: string, auth: string | undefined): Buffer => check.requestSerialize(checkRequestObject(configId, auth));
  const token = provider.tokens[0]!;
  const scenarios: Array<[string, Buffer[]]> = [
    ['cached', [encode('bench.cached', `Bearer ${token}`)]],
    ['uncached', provider.tokens.map((t) => encode('bench.uncached', `Bearer ${t}`))],
    ['denied (no header)', [encode('bench.cached', undefined)]],
  ];
  console.log(
    `extauth bench: ${seconds}s per scenario, ${concurrency} calls in flight, introspection: ` +
      `${useOidc ? 'oidc-provider' : 'fake endpoint'}, Node ${process.version}, service pid ${process.pid}`,
  );
  // warm-up (JIT, connections), not reported
  await runLoad(worker, {
    kind: 'load',
    target: `127.0.0.1:${svc.port}`,
    requestsB64: scenarios[0]![1].map((b) => b.toString('base64')),
    seconds: 2,
    concurrency,
  });
  await runLoad(worker, {
    kind: 'load',
    target: `127.0.0.1:${svc.port}`,
    requestsB64: scenarios[1]![1].map((b) => b.toString('base64')),
    seconds: 1,
    concurrency,
  });
  console.log(
    `${'scenario'.padEnd(22)} ${'checks/s'.padStart(9)} ${'p50 µs'.padStart(8)} ${'p99 µs'.padStart(8)} ` +
      `${'svc CPU µs/check'.padStart(17)} ${'errors'.padStart(7)}`,
  );
  const measure = async (name: string, port: number, bytes: Buffer[], served: () => number, note: () => string): Promise<void> => {
    const cpu0 = process.cpuUsage();
    const before = served();
    const r = await runLoad(worker, {
      kind: 'load',
      target: `127.0.0.1:${port}`,
      requestsB64: bytes.map((b) => b.toString('base64')),
      seconds,
      concurrency,
    });
    const cpu = process.cpuUsage(cpu0);
    // (the CPU window includes the child's 200 warm-up calls; they are counted in `served` too)
    const perCall = (cpu.user + cpu.system) / Math.max(1, served() - before);
    console.log(
      [
        name.padEnd(22),
        String(Math.round(r.calls / r.seconds)).padStart(9),
        String(r.p50us).padStart(8),
        String(r.p99us).padStart(8),
        perCall.toFixed(1).padStart(17),
        String(r.errors).padStart(7),
        `  ${note()}`,
      ].join(' '),
    );
  };
  for (const [name, bytes] of scenarios) {
    if (only !== undefined && !name.startsWith(only)) continue;
    const before = svc.stats();
    await measure(
      name,
      svc.port,
      bytes,
      () => svc.stats().checks,
      () => {
        const after = svc.stats();
        const served = after.checks - before.checks;
        const allowed = after.allowed - before.allowed;
        return (
          `${allowed === served ? 'all allowed' : allowed === 0 ? 'all denied' : `allowed ${allowed}/${served}`}, introspections ` +
          `${after.introspections - before.introspections}`
        );
      },
    );
  }
  if (only !== undefined) {
    worker.kill();
    await svc.stop();
    await ads.stop();
    return;
  }
  // reference: the same Check answered by a plain grpc-js + proto-loader handler (full decode, encode
  // per call, no logic): what the fast parser and the pre-encoded responses save
  const plain = new grpc.Server();
  let plainServed = 0;
  plain.addService(
    lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization').service,
    {
      Check: (
        call: grpc.ServerUnaryCall<{ attributes?: { request?: { http?: { headers?: Record<string, string> } } } }, object>,
        cb: grpc.sendUnaryData<object>,
      ) => {
        plainServed++;
        const ok = call.request.attributes?.request?.http?.headers?.['authorization'] !== undefined;
        cb(
          null,
          ok ? { status: { code: 0 }, ok_response: {} } : { status: { code: 7 }, denied_response: { status: { code: 'Forbidden' } } },
        );
      },
    },
  );
  const plainBound = await bindServer(plain, '127.0.0.1', 0);
  await runLoad(worker, {
    kind: 'load',
    target: `127.0.0.1:${plainBound.port}`,
    requestsB64: scenarios[0]![1].map((b) => b.toString('base64')),
    seconds: 1,
    concurrency,
  });
  await measure(
    'reference: plain grpc',
    plainBound.port,
    scenarios[0]![1],
    () => plainServed,
    () => 'proto-loader decode/encode, constant allow',
  );
  await plainBound.stop(200);
  await svc.stop();
  await ads.stop();

  // the parts, in process
  const authz = new Authorizer({ logger: createLogger('bench', { level: 'warn' }) });
  authz.apply(configs);
  const header = `Bearer ${token}`;
  await authz.check('bench.cached', header);
  worker.kill();
  const sample = scenarios[0]![1][0]!;
  const allow = { status: { code: 0 }, ok_response: {} };
  console.log('\nparts (in process, no gRPC):');
  console.log(micro('parse CheckRequest: wire.ts fast parser', 200_000, () => parseCheckRequest(sample)));
  console.log(micro('parse CheckRequest: proto-loader deserialize', 50_000, () => check.requestDeserialize(sample)));
  console.log(micro('encode allow CheckResponse: proto-loader', 50_000, () => check.responseSerialize(allow)));
  console.log(micro('Authorizer.check, cached token', 200_000, () => authz.check('bench.cached', header)));
  console.log(micro('  of which sha256 of the token', 200_000, () => tokenHash(token)));
  authz.stop();
}

const { values } = parseArgs({
  options: {
    child: { type: 'boolean', default: false },
    oidc: { type: 'boolean', default: false },
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '32' },
    /** run only the scenarios whose name starts with this (and skip the reference and the parts), e.g. for --cpu-prof */
    only: { type: 'string' },
  },
});
if (values.child) await child(values.oidc);
else await parent(Number(values.seconds), Number(values.concurrency), values.oidc, values.only);
