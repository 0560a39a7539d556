// Steady load for the fault suite: N keep-alive connections, each sending one request after the
// other (a short pause between them), every answer recorded with its time. Loopback only, and it
// stops by itself after `maxMs` at the latest.
import http from 'node:http';

export interface LoadTarget {
  port: number;
  path: string;
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Host header */
  host?: string;
}

export interface Sample {
  /** ms since the load started, when the answer (or the error) arrived */
  at: number;
  /** HTTP status, 0 for a connection error or timeout */
  status: number;
  ms: number;
  body?: string;
  /**
   * with `retryReusedReset`: the first try went out on a kept-alive connection that the server closed before
   * answering anything, and this is the answer of the one retry on a new connection
   */
  retried?: boolean;
}

export interface Load {
  samples: Sample[];
  /** ms since the load started (the clock of Sample.at) */
  now(): number;
  stop(): Promise<Sample[]>;
}

export interface LoadOptions {
  connections?: number;
  /** pause between two requests on one connection */
  pauseMs?: number;
  maxMs?: number;
  timeoutMs?: number;
  /** keep the bodies of answers whose status is not 200 (for checking error bodies) */
  keepBodies?: boolean;
  /**
   * Retry once, on a new connection, a request whose kept-alive connection the server closed before answering
   * anything (ECONNRESET on a reused socket), as curl, Go's client and browsers do and Node's docs advise: a
   * server may close an idle connection at any time (Envoy does when it drains a listener), racing the next request.
   */
  retryReusedReset?: boolean;
}

export function startLoad(target: LoadTarget | (() => LoadTarget), options: LoadOptions = {}): Load {
  const { connections = 2, pauseMs = 5, maxMs = 120_000, timeoutMs = 5_000 } = options;
  const t0 = performance.now();
  const samples: Sample[] = [];
  let stopped = false;
  const stopAt = setTimeout(() => (stopped = true), maxMs);
  const one = (agent: http.Agent, retry = false): Promise<void> =>
    new Promise((resolve) => {
      const t = typeof target === 'function' ? target() : target;
      const started = performance.now();
      const headers: Record<string, string> = { ...t.headers };
      if (t.host) headers['host'] = t.host;
      if (t.body !== undefined) headers['content-length'] = String(Buffer.byteLength(t.body));
      const done = (status: number, body?: string): void => {
        const now = performance.now();
        samples.push({
          at: now - t0,
          status,
          ms: now - started,
          ...(body !== undefined ? { body } : {}),
          ...(retry ? { retried: true } : {}),
        });
        resolve();
      };
      const req = http.request(
        { host: '127.0.0.1', port: t.port, path: t.path, method: t.method ?? 'GET', headers, agent, timeout: timeoutMs },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () =>
            done(res.statusCode ?? 0, options.keepBodies && res.statusCode !== 200 ? Buffer.concat(chunks).toString('utf8') : undefined),
          );
          res.on('error', () => done(0));
        },
      );
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (e: NodeJS.ErrnoException) => {
        if (options.retryReusedReset && !retry && req.reusedSocket && e.code === 'ECONNRESET') void one(agent, true).then(resolve);
        else done(0, options.keepBodies ? (e.code ?? e.message) : undefined);
      });
      if (t.body !== undefined) req.write(t.body);
      req.end();
    });
  const loops = Array.from({ length: connections }, async () => {
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    while (!stopped) {
      await one(agent);
      if (pauseMs) await new Promise((r) => setTimeout(r, pauseMs));
    }
    agent.destroy();
  });
  return {
    samples,
    now: () => performance.now() - t0,
    stop: async () => {
      stopped = true;
      clearTimeout(stopAt);
      await Promise.all(loops);
      return samples;
    },
  };
}

/** Counts by status, e.g. {200: 1200, 503: 12}. */
export function byStatus(samples: readonly Sample[]): Record<number, number> {
  const out: Record<number, number> = {};
  for (const s of samples) out[s.status] = (out[s.status] ?? 0) + 1;
  return out;
}

export function p99(values: readonly number[]): number {
  const sorted = [...values].sort((x, y) => x - y);
  return Math.round(sorted[Math.floor(sorted.length * 0.99)] ?? 0);
}

/**
 * After a fault at `faultAt`: the failures (answers that are not 200), and the time from the fault to
 * the first 200 after the last failure (0 when nothing failed).
 */
export function recovery(samples: readonly Sample[], faultAt: number): { failures: Sample[]; recoveredMs: number } {
  const after = samples.filter((s) => s.at >= faultAt).sort((a, b) => a.at - b.at);
  const failures = after.filter((s) => s.status !== 200);
  const last = failures.at(-1);
  if (!last) return { failures, recoveredMs: 0 };
  const back = after.find((s) => s.at > last.at && s.status === 200);
  return { failures, recoveredMs: back ? Math.round(back.at - faultAt) : NaN };
}

/** Whether the last `n` answers are all 200 and at least one failure came before them since `since`. */
export function recovered(samples: readonly Sample[], since: number, n = 20): boolean {
  const after = samples.filter((s) => s.at >= since);
  if (!after.some((s) => s.status !== 200) || after.length < n) return false;
  return after.slice(-n).every((s) => s.status === 200);
}
