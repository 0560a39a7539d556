// The soak, short by default: edits every 100 ms to a VirtualService plus steady traffic, for
// LEGATE_FAULTS_SOAK_S seconds (default 60; the full soak is 600). The last edit is served,
// no request fails, and the controller's memory, file descriptors and timers level off.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { sleep } from '../support/util.js';
import { figure } from './figures.js';
import { byStatus, startLoad } from './load.js';
import { componentPid, rssMiB } from './procs.js';
import fs from 'node:fs';

const ITEM = 'soak';
const SOAK_MS = Number(process.env['LEGATE_FAULTS_SOAK_S'] ?? 60) * 1000;
const HOST = 'soak.example.com';
let gw: Gateway;
let app: EchoUpstream;

const config = (edit: number, port: number) => `apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: soak, namespace: default }
spec:
  virtualHost:
    domains: ['${HOST}']
    routes:
      - matchers: [{ prefix: /edit }]
        directResponseAction: { status: 200, body: 'edit-${edit}' }
      - matchers: [{ prefix: /edit-${edit % 7}-extra }]
        directResponseAction: { status: 200, body: 'extra' }
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({ 'soak.yaml': config(0, app.port) }, { env: { START_STATS_SERVER: '1' } });
  await gw.until('/edit', (r) => r.text === 'edit-0', { host: HOST }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

/** The controller's open fds and active timers (prom-client's nodejs_active_resources{type="Timeout"}). */
async function resources(pid: number): Promise<{ fds: number; timers: number; handles: number; heapMiB: number }> {
  const text = await (await fetch(`http://127.0.0.1:${gw.ports.controllerStats}/metrics`)).text();
  const metric = (re: RegExp) => Number(re.exec(text)?.[1] ?? NaN);
  return {
    fds: fs.readdirSync(`/proc/${pid}/fd`).length,
    timers: metric(/^legate_controller_nodejs_active_resources\{type="Timeout"\} (\d+)/m) || 0,
    handles: metric(/^legate_controller_nodejs_active_handles_total (\d+)/m),
    heapMiB: Math.round(metric(/^legate_controller_nodejs_heap_size_used_bytes (\d+)/m) / 1024 / 102.4) / 10,
  };
}

describe('soak', () => {
  it(
    `edits every 100 ms for ${SOAK_MS / 1000} s under traffic: every edit lands, memory, fds and timers level off`,
    async () => {
      const pid = componentPid(gw, 'controller')!;
      const load = startLoad({ port: gw.ports.http, path: '/plain', host: HOST }, { connections: 2, maxMs: SOAK_MS + 60_000 });
      const rss: number[] = [];
      const res: Awaited<ReturnType<typeof resources>>[] = [];
      const served = new Set<string>();
      let edit = 0;
      const started = performance.now();
      let nextSample = started;
      while (performance.now() - started < SOAK_MS) {
        edit++;
        gw.write('soak.yaml', config(edit, app.port));
        if (edit % 5 === 0) served.add((await gw.request('/edit', { host: HOST })).text);
        if (performance.now() >= nextSample) {
          rss.push(rssMiB(pid));
          res.push(await resources(pid));
          nextSample += SOAK_MS / 12;
        }
        await sleep(100);
      }
      const last = await gw.until('/edit', (r) => r.text === `edit-${edit}`, { host: HOST }, 15_000);
      rss.push(rssMiB(pid));
      res.push(await resources(pid));
      const samples = await load.stop();
      const failed = samples.filter((s) => s.status !== 200);
      const half = Math.floor(rss.length / 2);
      const firstHalfMax = Math.max(...rss.slice(0, half));
      const secondHalfMax = Math.max(...rss.slice(half));

      figure(ITEM, 'edits', edit);
      figure(ITEM, 'distinct edits seen served (probed every 5th)', served.size);
      figure(ITEM, 'traffic: requests / failed', `${samples.length} / ${failed.length}`);
      figure(ITEM, 'controller RSS samples', rss.join(', '), 'MiB');
      figure(ITEM, 'controller heap used samples', res.map((r) => r.heapMiB).join(', '), 'MiB');
      figure(ITEM, 'controller fds first / last', `${res[0]!.fds} / ${res.at(-1)!.fds}`);
      figure(ITEM, 'controller timers first / last', `${res[0]!.timers} / ${res.at(-1)!.timers}`);
      figure(ITEM, 'controller handles first / last', `${res[0]!.handles} / ${res.at(-1)!.handles}`);
      expect(last.text).toBe(`edit-${edit}`);
      expect(byStatus(failed)).toEqual({});
      expect(componentPid(gw, 'controller')).toBe(pid);
      expect(secondHalfMax).toBeLessThan(firstHalfMax + 64);
      expect(res.at(-1)!.fds).toBeLessThanOrEqual(res[0]!.fds + 5);
      expect(res.at(-1)!.timers).toBeLessThanOrEqual(res[0]!.timers + 5);
    },
    SOAK_MS + 60_000,
  );
});
