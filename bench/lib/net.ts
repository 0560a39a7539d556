// Loopback helpers: free ports, a small keep-alive HTTP client that can set Host, and polling.
import http from 'node:http';
import net from 'node:net';
import { sleep } from './procs.js';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

export interface Reply {
  status: number;
  text: string;
}

const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });

/** GET http://127.0.0.1:PORT/PATH with an optional Host header. */
export function get(port: number, pathAndQuery: string, host?: string, timeoutMs = 5000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path: pathAndQuery, method: 'GET', headers: host ? { host } : {}, agent, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`GET ${pathAndQuery} timed out`)));
    req.on('error', reject);
    req.end();
  });
}

/** Any request to http://127.0.0.1:PORT/PATH (keep-alive), with the answer's text. */
export function send(
  port: number,
  o: { method?: string; path: string; headers?: Record<string, string>; body?: string },
  timeoutMs = 5000,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const headers = { ...o.headers };
    if (o.body !== undefined) headers['content-length'] = String(Buffer.byteLength(o.body));
    const req = http.request(
      { host: '127.0.0.1', port, path: o.path, method: o.method ?? 'GET', headers, agent, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${o.method ?? 'GET'} ${o.path} timed out`)));
    req.on('error', reject);
    req.end(o.body);
  });
}

/** GET a JSON document. */
export async function getJson<T>(port: number, pathAndQuery: string): Promise<T> {
  const r = await get(port, pathAndQuery);
  if (r.status !== 200) throw new Error(`GET ${pathAndQuery} answered ${r.status}: ${r.text.slice(0, 200)}`);
  return JSON.parse(r.text) as T;
}

export function closeClient(): void {
  agent.destroy();
}

/**
 * Polls `fn` every `intervalMs` until it returns something other than undefined; throws after
 * `timeoutMs` (with the last error), or at once when `abortIf` says the thing waited for died.
 */
export async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  opts: { timeoutMs: number; intervalMs?: number; abortIf?: () => string | undefined },
): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    const dead = opts.abortIf?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    if (Date.now() > deadline) {
      throw new Error(
        `timed out after ${opts.timeoutMs} ms waiting for ` +
          `${what}${last ? ` (last error: ${last instanceof Error ? last.message : String(last)})` : ''}`,
      );
    }
    await sleep(opts.intervalMs ?? 100);
  }
}
