// The controller's loopback API, read by legatectl: resources with status, served snapshots, xDS
// connections, load errors. JSON envelope {status, data, error}.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendError, sendOk } from '../../common/envelope.js';
import type { Logger } from '../../common/log.js';
import { kindFromUserInput } from '../api/kinds.js';
import type { RouteMatchResult, TestRequest } from '../routetest/match.js';
import type { HistoryEvent } from '../status/history.js';

export interface ControllerView {
  version: string;
  /** Changes whenever the resources or their statuses do (the list's ETag). */
  generation?(): number;
  /** Resources (user's, discovered, generated) with their status, in list form. */
  resources(): ApiResource[];
  loadErrors(): { origin: string; message: string }[];
  /** the resource source and what keeps it from being current */
  source(): { description: string; problems: string[] };
  /** role -> type URL -> resources (Envoy JSON). */
  served(role?: string): Record<string, Record<string, unknown[]>>;
  connections(): unknown[];
  /** the route tester, on the IR being served */
  routeTest(req: TestRequest): RouteMatchResult;
  /** the timeline of statuses (bounded, since the controller started) */
  history(filter: { kind?: string; namespace?: string; name?: string }): HistoryEvent[];
}

export interface ApiResource {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: unknown;
  status: unknown;
  [extra: string]: unknown;
}

/** Files the API also serves (wasm modules for Envoys that fetch them): URL path -> bytes. */
export type StaticFiles = ReadonlyMap<string, Buffer>;

export async function startApiServer(
  view: ControllerView,
  host: string,
  port: number,
  logger: Logger,
  files: StaticFiles = new Map(),
): Promise<{ server: http.Server; port: number }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET') return sendError(res, 405, `method ${req.method} not allowed`);
    const file = files.get(url.pathname);
    if (file) {
      res.writeHead(200, { 'content-type': 'application/wasm', 'content-length': file.length });
      res.end(file);
      return;
    }
    try {
      switch (url.pathname) {
        case '/healthz':
          return sendOk(res, 'ok');
        case '/api/v1/version':
          return sendOk(res, { version: view.version });
        case '/api/v1/resources': {
          const kindParam = url.searchParams.get('kind');
          const kind = kindParam ? kindFromUserInput(kindParam) : undefined;
          if (kindParam && !kind) return sendError(res, 400, `unknown kind ${JSON.stringify(kindParam)}`);
          const ns = url.searchParams.get('namespace');
          const name = url.searchParams.get('name');
          // the console re-reads the whole list often: unchanged, it is a 304
          if (view.generation) {
            const etag = `"g${view.generation()}"`;
            res.setHeader('etag', etag);
            if (req.headers['if-none-match'] === etag) {
              res.writeHead(304);
              res.end();
              return;
            }
          }
          const items = view
            .resources()
            .filter((r) => (!kind || r.kind === kind) && (!ns || r.metadata.namespace === ns) && (!name || r.metadata.name === name));
          if (name && items.length === 0) return sendError(res, 404, `${kind ?? 'resource'} ${ns ? ns + '.' : ''}${name} not found`);
          return sendOk(res, items);
        }
        case '/api/v1/errors':
          return sendOk(res, view.loadErrors());
        case '/api/v1/source':
          return sendOk(res, view.source());
        case '/api/v1/served':
          return sendOk(res, view.served(url.searchParams.get('role') ?? undefined));
        case '/api/v1/connections':
          return sendOk(res, view.connections());
        case '/api/v1/routetest': {
          const q = url.searchParams;
          const headers: Record<string, string> = {};
          for (const h of q.getAll('header')) {
            const colon = h.indexOf(':');
            if (colon <= 0) return sendError(res, 400, `header ${JSON.stringify(h)}: expected NAME:VALUE`);
            headers[h.slice(0, colon).trim()] = h.slice(colon + 1).trim();
          }
          const port = q.get('port');
          if (port !== null && port !== '' && !/^\d+$/.test(port))
            return sendError(res, 400, `port ${JSON.stringify(port)}: expected a number`);
          return sendOk(
            res,
            view.routeTest({
              method: q.get('method') || 'GET',
              host: q.get('host') || 'localhost',
              path: q.get('path') || '/',
              headers,
              ...(port ? { port: Number(port) } : {}),
            }),
          );
        }
        case '/api/v1/history': {
          const kindParam = url.searchParams.get('kind');
          const kind = kindParam ? kindFromUserInput(kindParam) : undefined;
          if (kindParam && !kind) return sendError(res, 400, `unknown kind ${JSON.stringify(kindParam)}`);
          const ns = url.searchParams.get('namespace');
          const name = url.searchParams.get('name');
          return sendOk(res, view.history({ ...(kind ? { kind } : {}), ...(ns ? { namespace: ns } : {}), ...(name ? { name } : {}) }));
        }
        default:
          return sendError(res, 404, `no such endpoint ${url.pathname}`);
      }
    } catch (err) {
      logger.error('api request failed', { path: url.pathname, error: err });
      return sendError(res, 500, String(err));
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return { server, port: (server.address() as AddressInfo).port };
}
