// The control-plane admin interface every Legate component serves when START_STATS_SERVER is set
// (spec 4.3): an index page, GET/PUT /logging, Prometheus /metrics, CPU and heap profiles on demand,
// recent trace spans. JSON answers use the envelope {status, data, error}.
import { createHash, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import { Session } from 'node:inspector';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { sendError, sendOk } from './envelope.js';
import { isLogLevel, type Logger } from './log.js';
import type { SpanRecorder } from './trace.js';

export const DEFAULT_ADMIN_PORTS = { controller: 9091, extauth: 9092, graphql: 9093, ratelimit: 9094 } as const;

export interface AdminOptions {
  component: string;
  host: string;
  port: number;
  logger: Logger;
  registry: Registry;
  spans: SpanRecorder;
  /** extra JSON endpoints: path -> data */
  extra?: Record<string, () => unknown>;
  /**
   * What a write (PUT /logging) must carry as `Authorization: Bearer <token>` when `host` is not a
   * loopback address (default: LEGATE_ADMIN_TOKEN). Beyond loopback without a token, writes are refused.
   */
  writeToken?: string;
}

/** Whether binding `host` keeps a server reachable from this machine only. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Why a write is refused (status and message), or undefined when it may go ahead. */
export function adminWriteRefusal(
  host: string,
  token: string | undefined,
  authorization: string | undefined,
): [number, string] | undefined {
  if (isLoopbackHost(host)) return undefined;
  if (!token) return [403, 'writes are refused: this admin interface is bound beyond loopback and no LEGATE_ADMIN_TOKEN is set'];
  const given = /^Bearer\s+(\S+)$/i.exec(authorization ?? '')?.[1];
  const digest = (v: string) => createHash('sha256').update(v).digest();
  if (!given || !timingSafeEqual(digest(given), digest(token))) return [401, 'writes need Authorization: Bearer <LEGATE_ADMIN_TOKEN>'];
  return undefined;
}

export interface RunningAdmin {
  port: number;
  stop(): Promise<void>;
}

/** Whether the admin interface is on: START_STATS_SERVER set to anything but empty/false/0. */
export function statsServerEnabled(env: NodeJS.ProcessEnv = process.env): boolean {
  const v = env['START_STATS_SERVER'];
  return v !== undefined && v !== '' && v !== 'false' && v !== '0';
}

const MAX_PROFILE_SECONDS = 60;

function readBody(req: http.IncomingMessage, limit = 64 * 1024): Promise<string> {
  return new Promise((resolve, reject) => {
    let size = 0;
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > limit) {
        reject(new Error('body too large'));
        req.destroy();
      } else chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function inspectorPost<T>(session: Session, method: string, params?: object): Promise<T> {
  return new Promise((resolve, reject) => session.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result as T))));
}

async function cpuProfile(seconds: number): Promise<unknown> {
  const session = new Session();
  session.connect();
  try {
    await inspectorPost(session, 'Profiler.enable');
    await inspectorPost(session, 'Profiler.start');
    await new Promise((r) => setTimeout(r, seconds * 1000));
    const { profile } = await inspectorPost<{ profile: unknown }>(session, 'Profiler.stop');
    return profile;
  } finally {
    session.disconnect();
  }
}

async function heapSnapshot(res: http.ServerResponse, component: string): Promise<void> {
  const session = new Session();
  session.connect();
  res.writeHead(200, { 'content-type': 'application/json', 'content-disposition': `attachment; filename="${component}.heapsnapshot"` });
  session.on('HeapProfiler.addHeapSnapshotChunk', (m) => res.write((m.params as { chunk: string }).chunk));
  try {
    await inspectorPost(session, 'HeapProfiler.takeHeapSnapshot', { reportProgress: false });
  } finally {
    session.disconnect();
    res.end();
  }
}

/** Memory in use after a full collection (twice: what the first frees can release more). */
function collectAndMeasure(gc: () => void): NodeJS.MemoryUsage {
  gc();
  gc();
  return process.memoryUsage();
}

export function indexPage(component: string, extra: string[]): string {
  const links = [
    ['/logging', 'GET the log level; PUT {"level": "debug"} (Content-Type: application/json) to change it'],
    ['/metrics', 'Prometheus metrics'],
    ['/debug/pprof/profile?seconds=10', 'CPU profile (.cpuprofile, open in Chrome DevTools)'],
    ['/debug/pprof/heap', 'heap snapshot (.heapsnapshot)'],
    ['/zpages/tracez', 'recent trace spans'],
    ...(typeof globalThis.gc === 'function' ? [['/debug/gc', 'full GC, then memory in use (only with node --expose-gc)']] : []),
    ...extra.map((p) => [p, '']),
  ];
  const items = links.map(([href, what]) => `<li><a href="${href}">${href}</a> ${what}</li>`).join('\n');
  return (
    `<!doctype html><html><head><title>legate ${component} admin</title></head><body><h1>legate ` +
    `${component}</h1><ul>\n${items}\n</ul></body></html>\n`
  );
}

export async function startAdminServer(o: AdminOptions): Promise<RunningAdmin> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const method = req.method ?? 'GET';
    const handle = async (): Promise<void> => {
      if (url.pathname === '/' && method === 'GET') {
        const html = indexPage(o.component, Object.keys(o.extra ?? {}));
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end(html);
        return;
      }
      if (url.pathname === '/logging') {
        if (method === 'GET') return sendOk(res, { level: o.logger.level });
        if (method !== 'PUT' && method !== 'POST') return sendError(res, 405, `method ${method} not allowed on /logging (use GET or PUT)`);
        const refused = adminWriteRefusal(o.host, o.writeToken ?? process.env['LEGATE_ADMIN_TOKEN'], req.headers.authorization);
        if (refused) return sendError(res, ...refused);
        const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
        if (type !== 'application/json') return sendError(res, 415, 'Content-Type must be application/json');
        let body: unknown;
        try {
          body = JSON.parse(await readBody(req));
        } catch {
          return sendError(res, 400, 'body is not valid JSON; expected {"level": "debug|info|warn|error"}');
        }
        const level = (body as { level?: unknown } | null)?.level;
        if (!isLogLevel(level))
          return sendError(res, 400, `invalid level ${JSON.stringify(level)}; expected one of debug, info, warn, error`);
        const previous = o.logger.level;
        o.logger.level = level;
        o.logger.info('log level changed', { from: previous, to: level });
        return sendOk(res, { level });
      }
      if (method !== 'GET') return sendError(res, 405, `method ${method} not allowed`);
      if (url.pathname === '/metrics') {
        const text = await o.registry.metrics();
        res.writeHead(200, { 'content-type': o.registry.contentType });
        res.end(text);
        return;
      }
      if (url.pathname === '/debug/pprof/profile') {
        const seconds = Number(url.searchParams.get('seconds') ?? '10');
        if (!Number.isFinite(seconds) || seconds <= 0 || seconds > MAX_PROFILE_SECONDS) {
          return sendError(res, 400, `seconds must be between 0 and ${MAX_PROFILE_SECONDS}`);
        }
        const profile = await cpuProfile(seconds);
        const text = JSON.stringify(profile);
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-disposition': `attachment; filename="${o.component}.cpuprofile"`,
        });
        res.end(text);
        return;
      }
      if (url.pathname === '/debug/pprof/heap') return heapSnapshot(res, o.component);
      // tests that measure memory start the process with --expose-gc; without it there is no such endpoint
      if (url.pathname === '/debug/gc' && typeof globalThis.gc === 'function') return sendOk(res, collectAndMeasure(globalThis.gc));
      if (url.pathname === '/zpages/tracez') return sendOk(res, o.spans.recent());
      const extra = o.extra?.[url.pathname];
      if (extra) return sendOk(res, extra());
      return sendError(res, 404, `no such endpoint ${url.pathname}; see / for the list`);
    };
    handle().catch((err: unknown) => {
      o.logger.error('admin request failed', { path: url.pathname, error: err });
      if (!res.headersSent) sendError(res, 500, err instanceof Error ? err.message : String(err));
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  o.logger.info('admin interface listening', { address: `${o.host}:${port}` });
  return {
    port,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
