// Item 6: restart with bad resources present. The controller keeps the last accepted version of each
// resource in the state directory (accepted.json); after a restart, a resource whose current version is
// rejected (or whose file no longer parses) serves its last accepted version, and its status says so.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { figure } from './figures.js';
import { byStatus, startLoad } from './load.js';
import { componentPid, envoyVersions, waitForComponent } from './procs.js';

const ITEM = 'restart-last-good';
const RESTORED = '(serving the last accepted version, restored from the state directory at start)';
let gw: Gateway;
let app: EchoUpstream;

const upstream = (port: number) => `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: v1
kind: Secret
metadata: { name: restart-secret, namespace: legate-system }
stringData: { token: restart-secret-value-Hq4Zt8 }
`;

const vs = (name: string, prefix: string, routes?: string) => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: ['${name}.example.com']
    routes: ${
      routes ??
      `
      - matchers: [{ prefix: ${prefix} }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }`
    }
`;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'app.yaml': upstream(app.port), 'shop.yaml': vs('shop', '/v1'), 'blog.yaml': vs('blog', '/posts') });
  await gw.until('/v1/x', (r) => r.status === 200, { host: 'shop.example.com' }, 30_000);
  await gw.until('/posts/1', (r) => r.status === 200, { host: 'blog.example.com' }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

interface Listed {
  status: { statuses: Record<string, { state: string; reason?: string }> };
}

async function status(name: string): Promise<{ state: string; reason?: string }> {
  const res = await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/resources?kind=VirtualService&namespace=default&name=${name}`);
  const [item] = ((await res.json()) as { data: Listed[] }).data;
  return Object.values(item!.status.statuses)[0]!;
}

describe('restart with bad resources present', () => {
  it('serves the last accepted versions after a controller restart, and says so in their statuses', async () => {
    const store = path.join(gw.stateDir, 'accepted.json');
    await eventually('accepted.json to hold both VirtualServices', () => {
      const text = fs.existsSync(store) ? fs.readFileSync(store, 'utf8') : '';
      return text.includes('"shop"') && text.includes('"blog"') ? text : undefined;
    });
    expect(fs.readFileSync(store, 'utf8')).not.toContain('restart-secret-value');
    expect(fs.statSync(store).mode & 0o777).toBe(0o600);

    // shop: a schema error; blog: a file that no longer parses
    gw.write('shop.yaml', vs('shop', '/v1', '5'));
    gw.write('blog.yaml', `${vs('blog', '/posts')}\n  : : [unclosed\n`);
    await eventually('both rejected', async () =>
      (await status('shop')).state === 'Rejected' && (await status('blog')).state === 'Rejected' ? true : undefined,
    );
    expect((await status('shop')).reason).toMatch(/\(serving the last accepted version\)$/);
    const versionsBefore = await envoyVersions(gw);

    const load = startLoad({ port: gw.ports.http, path: '/v1/x', host: 'shop.example.com' }, { connections: 2, maxMs: 60_000 });
    const first = componentPid(gw, 'controller')!;
    process.kill(first, 'SIGKILL');
    await waitForComponent(gw, 'controller', first);
    const shop = await eventually(
      'shop restored',
      async () => {
        const s = await status('shop').catch(() => undefined);
        return s?.reason?.endsWith(RESTORED) ? s : undefined;
      },
      30_000,
    );
    const blog = await status('blog');
    await eventually(
      'Envoy back on the controller',
      async () => {
        const r = await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/connections`);
        return ((await r.json()) as { data: unknown[] }).data.length > 0 ? true : undefined;
      },
      20_000,
    );
    await new Promise((r) => setTimeout(r, 2000));
    const samples = await load.stop();
    const versionsAfter = await envoyVersions(gw);
    const blogServed = await gw.request('/posts/1', { host: 'blog.example.com' });

    figure(ITEM, 'shop (schema error) status after restart', shop.reason!.slice(0, 120));
    figure(ITEM, 'blog (file does not parse) status after restart', (blog.reason ?? '').slice(0, 120));
    figure(
      ITEM,
      'requests to the rejected VirtualService across the restart / failed',
      `${samples.length} / ${samples.filter((s) => s.status !== 200).length}`,
    );
    figure(
      ITEM,
      'Envoy resources whose version changed',
      Object.keys(versionsAfter).filter((k) => versionsAfter[k] !== versionsBefore[k]).length,
    );
    expect(shop.state).toBe('Rejected');
    expect(shop.reason).toMatch(/^spec\.virtualHost\.routes/);
    expect(blog.state).toBe('Rejected');
    expect(blog.reason).toMatch(/does not load/);
    expect(blog.reason).toContain(RESTORED);
    expect(byStatus(samples)).toEqual({ 200: samples.length });
    expect(blogServed.status).toBe(200);
    expect(versionsAfter).toEqual(versionsBefore);

    // fixed: accepted again, the note is gone
    gw.write('shop.yaml', vs('shop', '/v2'));
    await gw.until('/v2/x', (r) => r.status === 200, { host: 'shop.example.com' });
    expect(await status('shop')).toMatchObject({ state: 'Accepted' });
  });
});
