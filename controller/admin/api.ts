// The controller's loopback API, read by legatectl: resources with status, served snapshots, xDS
// connections, load errors. JSON envelope {status, data, error}.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendError, sendOk } from '../../common/envelope.js';
import type { Logger } from '../../common/log.js';
import { kindFromUserInput } from '../api/kinds.js';

export interface ControllerView {
  version: string;
  /** Resources (user's, discovered, generated) with their status, in list form. */
  resources(): ApiResource[];
  loadErrors(): { origin: string; message: string }[];
  /** the resource source and what keeps it from being current */
  source(): { description: string; problems: string[] };
  /** role -> type URL -> resources (Envoy JSON). */
  served(role?: string): Record<string, Record<string, unknown[]>>;
  connections(): unknown[];
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
