// Counters in Redis (node-redis): one Lua script per decision increments every matched window key and
// sets its expiry when it creates it, atomically, so replicas of the service and every Envoy worker
// share exact counts. Redis down or slow: the call fails within `timeoutMs` (no offline queue, so no
// backlog), the service answers with an error and Envoy's failure_mode_deny (Settings denyOnFail)
// decides; the client reconnects on its own, so counting resumes without a restart.
import { createClient } from '@redis/client';
import type { Logger } from '../../common/log.js';
import type { CounterStore } from './limiter.js';

/** KEYS: window keys; ARGV[1]: addend; ARGV[1 + i]: expiry in ms of KEYS[i]. Returns the new counts. */
export const INCREMENT_SCRIPT = `
local addend = tonumber(ARGV[1])
local out = {}
for i, key in ipairs(KEYS) do
  local n = redis.call('INCRBY', key, addend)
  if n == addend then redis.call('PEXPIRE', key, ARGV[i + 1]) end
  out[i] = n
end
return out
`;

export interface RedisStoreOptions {
  host: string;
  port: number;
  /** per call; default 50 ms */
  timeoutMs?: number;
  logger: Logger;
}

export class RedisStore implements CounterStore {
  readonly name = 'redis';
  private readonly client;
  private readonly timeoutMs: number;
  private sha: string | undefined;
  private lastErrorLogAt = 0;
  /** calls that failed (down, slow, script error) */
  errors = 0;
  connected = false;

  constructor(private readonly options: RedisStoreOptions) {
    this.timeoutMs = options.timeoutMs ?? 50;
    this.client = createClient({
      socket: {
        host: options.host,
        port: options.port,
        connectTimeout: 1000,
        // reconnect forever, backing off to 1 s: recovery needs no restart
        reconnectStrategy: (retries: number) => Math.min(50 * 2 ** Math.min(retries, 5), 1000),
      },
      disableOfflineQueue: true,
    });
    this.client.on('error', (err: unknown) => this.logError('redis connection error', err));
    this.client.on('ready', () => {
      this.connected = true;
      this.sha = undefined;
      options.logger.info('redis connected', { address: `${options.host}:${options.port}` });
    });
    this.client.on('end', () => (this.connected = false));
    this.client.on('reconnecting', () => (this.connected = false));
  }

  /** Connects (failing fast if Redis is down now; the client keeps trying in the background). */
  async connect(): Promise<void> {
    try {
      await this.client.connect();
    } catch (err) {
      this.logError('redis not reachable yet; retrying in the background', err);
    }
  }

  private logError(msg: string, err: unknown): void {
    const now = Date.now();
    if (now - this.lastErrorLogAt < 1000) return;
    this.lastErrorLogAt = now;
    this.options.logger.error(msg, {
      address: `${this.options.host}:${this.options.port}`,
      error: err instanceof Error ? err.message : String(err),
    });
  }

  increment(keys: readonly string[], ttlMs: readonly number[], addend: number): Promise<number[]> {
    const args = [String(addend), ...ttlMs.map((t) => String(Math.max(1, Math.ceil(t))))];
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`redis did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([this.run(keys as string[], args), timeout]).then(
      (counts) => {
        clearTimeout(timer);
        return counts;
      },
      (err: unknown) => {
        clearTimeout(timer);
        this.errors++;
        this.logError('rate-limit store call failed', err);
        throw err;
      },
    );
  }

  private async run(keys: string[], args: string[]): Promise<number[]> {
    if (!this.client.isReady) throw new Error('redis is not connected');
    if (this.sha) {
      try {
        return (await this.client.evalSha(this.sha, { keys, arguments: args })) as number[];
      } catch (err) {
        if (!(err instanceof Error) || !err.message.includes('NOSCRIPT')) throw err;
      }
    }
    this.sha = await this.client.scriptLoad(INCREMENT_SCRIPT);
    return (await this.client.evalSha(this.sha, { keys, arguments: args })) as number[];
  }

  async close(): Promise<void> {
    try {
      this.client.destroy();
    } catch {
      // already closed
    }
  }
}
