// `legate ratelimit`: the rate-limit extension (Envoy's RateLimitService), its own process (a Deployment
// on Kubernetes), fed over xDS by the controller. Counters in memory by default, or in Redis
// (`--redis host:port`) so that replicas share them.
import { VERSION } from '../../common/version.js';
import type { CounterStore } from '../../extensions/ratelimit/limiter.js';
import { UsageError, command, type FlagValues } from '../flags.js';
import { DEFAULTS, LOG_LEVEL_FLAG, componentAdmin, componentLogger, waitForSignal } from './common.js';

const flags = {
  host: { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address the gRPC service binds' },
  port: { type: 'port', default: DEFAULTS.ratelimitPort, description: 'port of the gRPC service Envoy calls' },
  'xds-address': { type: 'hostPort', default: `127.0.0.1:${DEFAULTS.xdsPort}`, description: "the controller's xDS server" },
  'stats-port': { type: 'port', default: DEFAULTS.stats.ratelimit, description: 'admin interface port (with START_STATS_SERVER=1)' },
  'admin-host': {
    type: 'string',
    default: '127.0.0.1',
    placeholder: 'HOST',
    description: 'address of the admin interface (beyond loopback its writes need LEGATE_ADMIN_TOKEN; the chart: the pod IP)',
  },
  redis: { type: 'string', placeholder: 'HOST:PORT', description: 'keep counters in this Redis (default: in memory, this process only)' },
  'redis-timeout-ms': { type: 'string', default: '50', placeholder: 'MS', description: 'per Redis call; slower counts as a failure' },
  'log-level': LOG_LEVEL_FLAG,
} as const;

export const ratelimitCommand = command({
  name: 'ratelimit',
  summary: 'run the rate-limit extension (Envoy RateLimitService)',
  flags,
  async run(f: FlagValues<typeof flags>) {
    // loaded here, not at the top: each process loads only its own service (see cli/commands/index.ts)
    const { MemoryStore } = await import('../../extensions/ratelimit/limiter.js');
    const { ratelimitMetrics } = await import('../../extensions/ratelimit/metrics.js');
    const { RedisStore } = await import('../../extensions/ratelimit/redis-store.js');
    const { startRatelimitService } = await import('../../extensions/ratelimit/service.js');
    const logger = componentLogger('ratelimit', f['log-level']);
    const admin = componentAdmin('ratelimit', f['stats-port'], f['admin-host']);
    let store: CounterStore;
    let storeState: () => { errors: number; connected: boolean };
    if (f.redis) {
      const m = /^(.+):(\d+)$/.exec(f.redis);
      if (!m) throw new UsageError(`--redis: expected HOST:PORT, got ${JSON.stringify(f.redis)}`);
      const timeoutMs = Number(f['redis-timeout-ms']);
      const redis = new RedisStore({
        host: m[1]!,
        port: Number(m[2]),
        logger: logger.child('redis'),
        timeoutMs: timeoutMs > 0 ? timeoutMs : 50,
      });
      await redis.connect();
      store = redis;
      storeState = () => ({ errors: redis.errors, connected: redis.connected });
    } else {
      store = new MemoryStore();
      storeState = () => ({ errors: 0, connected: true });
    }
    const metrics = ratelimitMetrics(admin.registry, admin.spans, storeState);
    const xdsAddress = `${f['xds-address'].host}:${f['xds-address'].port}`;
    const svc = await startRatelimitService({ host: f.host, port: f.port, xdsAddress, logger, store, observe: metrics.observe });
    const adminServer = await admin.start(logger, {
      '/configs': () => svc.configs(),
      '/store': () => ({ store: store.name, ...storeState() }),
    });
    logger.info('ratelimit extension started', { version: VERSION, store: store.name });
    await waitForSignal();
    await adminServer?.stop();
    await svc.stop();
    return 0;
  },
});
