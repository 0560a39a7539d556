// The dev-mode debug endpoint (spec 4.4), on when the Settings resource has `devMode: true`.
// Deprecated (as Gloo's is since 1.17): the same data is on the admin interface and legatectl.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { sendError, sendOk } from '../../common/envelope.js';
import type { Logger } from '../../common/log.js';

export interface DevModeView {
  /** the controller's input: resources as read from the source, and load errors */
  input(): unknown;
  /** the IR: Proxy resources */
  ir(): unknown;
  roles(): string[];
  xds(role: string): unknown;
}

export async function startDevModeServer(
  view: DevModeView,
  host: string,
  port: number,
  logger: Logger,
): Promise<{ port: number; stop(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method !== 'GET') return sendError(res, 405, `method ${req.method} not allowed`);
    if (url.pathname === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(
        '<!doctype html><title>Developer API</title><h1>Developer API</h1><p>Deprecated: use the admin interface (START_STATS_SERVER) ' +
          'and legatectl.</p><ul>' +
          ['/snapshots/input', '/snapshots/ir', '/xds'].map((p) => `<li><a href="${p}">${p}</a></li>`).join('') +
          view
            .roles()
            .map((r) => `<li><a href="/xds/${encodeURIComponent(r)}">/xds/${r}</a></li>`)
            .join('') +
          '</ul>\n',
      );
      return;
    }
    if (url.pathname === '/snapshots/input') return sendOk(res, view.input());
    if (url.pathname === '/snapshots/ir') return sendOk(res, view.ir());
    if (url.pathname === '/xds') return sendOk(res, view.roles());
    if (url.pathname.startsWith('/xds/')) {
      const role = decodeURIComponent(url.pathname.slice('/xds/'.length));
      if (!view.roles().includes(role)) return sendError(res, 404, `no xDS snapshot for role ${JSON.stringify(role)}; see /xds`);
      return sendOk(res, view.xds(role));
    }
    return sendError(res, 404, `no such endpoint ${url.pathname}`);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  logger.warn(
    'settings.devMode is deprecated: the dev-mode debug endpoint will be removed; use the admin interface (START_STATS_SERVER) and ' +
      'legatectl instead',
    {
      address: `${host}:${bound}`,
    },
  );
  return {
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
