// Legate's rate-limit extension: envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit, called by
// Envoy's ratelimit filter with the descriptors of the route's actions. RateLimitConfigs arrive from the
// controller over xDS (role `ratelimit`) and are swapped atomically. Counters live in memory (one
// process: the embedded default) or in Redis (shared by replicas). Over a limit: OVER_LIMIT with each
// descriptor's status (Envoy turns them into x-ratelimit-* headers) and `retry-after`. When the store
// fails (Redis down or slow), the call fails with UNAVAILABLE: Envoy's failure_mode_deny (Settings
// denyOnFail) decides, and the reason is logged (at most once a second) and counted.
import { ExtensionRoles, ExtensionTypeUrls, decodeExtensionConfig } from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { loadEnvoyService, lookupService } from '../common/grpc.js';
import type { H2Config } from '../common/h2/transport.js';
import { throttledLogger } from '../common/log-throttle.js';
import { GrpcStatus, frameMessage, startUnaryServer } from '../common/unary-server.js';
import { XdsClient } from '../common/xds-client.js';
import { RateLimiter, overrideLimit, type CounterStore, type Decision, type Entry } from './limiter.js';

const SERVICE = 'envoy.service.ratelimit.v3.RateLimitService';
const SHOULD_RATE_LIMIT_PATH = `/${SERVICE}/ShouldRateLimit`;

export type Outcome = 'ok' | 'over_limit' | 'error';

export interface RatelimitServiceOptions {
  host: string;
  port: number;
  /** host:port of the controller's xDS server */
  xdsAddress: string;
  nodeId?: string;
  logger: Logger;
  store: CounterStore;
  /** Called once per call with its outcome, duration and the number of shadow-mode descriptors over their limit. */
  observe?: (outcome: Outcome, seconds: number, shadowed: number) => void;
  now?: () => number;
  /** the HTTP/2 transport and its limits (--http2-transport, --http2-*) */
  http2?: H2Config;
}

export interface RatelimitStats {
  calls: number;
  overLimit: number;
  errors: number;
  shadowed: number;
}

export interface RunningRatelimitService {
  port: number;
  configs(): Record<string, number>;
  ready(): boolean;
  stats(): RatelimitStats;
  stop(): Promise<void>;
}

interface RateLimitRequest {
  domain?: string;
  descriptors?: { entries?: { key?: string; value?: string }[]; limit?: { requests_per_unit?: number; unit?: string } }[];
  hits_addend?: number;
}

export function toResponse(d: Decision): object {
  return {
    overall_code: d.overall,
    statuses: d.statuses,
    ...(d.overall === 'OVER_LIMIT' ? { response_headers_to_add: [{ key: 'retry-after', value: String(d.retryAfterSeconds) }] } : {}),
  };
}

export async function startRatelimitService(options: RatelimitServiceOptions): Promise<RunningRatelimitService> {
  const log = options.logger;
  /** what a client can cause once per call: one line per message text per LOG_THROTTLE_MS */
  const perCall = throttledLogger(log);
  const limiter = new RateLimiter(options.store);
  const now = options.now ?? Date.now;
  const stats: RatelimitStats = { calls: 0, overLimit: 0, errors: 0, shadowed: 0 };

  const xds = new XdsClient({
    address: options.xdsAddress,
    role: ExtensionRoles.ratelimit,
    nodeId: options.nodeId ?? `ratelimit-${process.pid}`,
    typeUrl: ExtensionTypeUrls.rateLimitConfig,
    logger: log.child('xds'),
    apply(resources, version) {
      const decoded = resources.map((bytes) => decodeExtensionConfig<unknown>(bytes));
      limiter.apply(decoded);
      log.info('got new config', { version, configs: limiter.configNames() });
    },
  });

  const pkg = loadEnvoyService('envoy/service/ratelimit/v3/rls.proto');
  // proto-loader's codec for the one method; the calls are served by the minimal unary server
  // (extensions/common/unary-server.ts: grpc-js's per-call work was most of a decision's CPU)
  const method = lookupService(pkg, SERVICE).service['ShouldRateLimit']!;
  const observe = options.observe;
  let lastErrorLogAt = 0;

  const onCall = (request: Buffer, reply: (framed: Buffer) => void, failCall: (code: number, message: string) => void): void => {
    const t0 = performance.now();
    stats.calls++;
    const req = method.requestDeserialize(request) as RateLimitRequest;
    const descriptors: Entry[][] = (req.descriptors ?? []).map((d) =>
      (d.entries ?? []).map((e) => ({ key: e.key ?? '', value: e.value ?? '' })),
    );
    const fail = (err: unknown): void => {
      stats.errors++;
      const t = Date.now();
      if (t - lastErrorLogAt >= 1000) {
        lastErrorLogAt = t;
        log.error('rate-limit decision failed; Envoy applies denyOnFail', { error: err instanceof Error ? err.message : String(err) });
      }
      observe?.('error', (performance.now() - t0) / 1000, 0);
      failCall(GrpcStatus.UNAVAILABLE, 'rate-limit store unavailable');
    };
    const done = (d: Decision): void => {
      if (d.overall === 'OVER_LIMIT') stats.overLimit++;
      stats.shadowed += d.shadowed;
      observe?.(d.overall === 'OVER_LIMIT' ? 'over_limit' : 'ok', (performance.now() - t0) / 1000, d.shadowed);
      reply(frameMessage(method.responseSerialize(toResponse(d))));
    };
    let decision: Decision | Promise<Decision>;
    try {
      const overrides = (req.descriptors ?? []).map((d) => overrideLimit(d.limit));
      decision = limiter.decide(req.domain ?? '', descriptors, req.hits_addend || 1, now(), overrides);
    } catch (err) {
      fail(err);
      return;
    }
    if (decision instanceof Promise) decision.then(done, fail);
    else done(decision);
  };

  const bound = await startUnaryServer(options.host, options.port, {
    path: SHOULD_RATE_LIMIT_PATH,
    name: 'ShouldRateLimit',
    handle: onCall,
    ...(options.http2 ? { http2: options.http2 } : {}),
    onError: (what, err) => perCall.error(`${what} failed`, { error: err instanceof Error ? err.message : String(err) }),
  });
  const mode = options.http2?.tls ? 'mutual TLS' : 'insecure';
  log.info(`ratelimit server running in ${mode} gRPC mode, listening at ${options.host}:${bound.port}`, {
    address: `${options.host}:${bound.port}`,
    store: options.store.name,
    http2: options.http2?.transport ?? 'legate',
  });
  xds.start();

  return {
    port: bound.port,
    configs: () => limiter.configNames(),
    ready: () => xds.applied > 0,
    stats: () => ({ ...stats }),
    stop: async () => {
      xds.stop();
      await bound.stop();
      await limiter.close();
    },
  };
}
