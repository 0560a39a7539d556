// Item 1: the controller stopped (SIGSTOP for a while) and killed (SIGKILL; `legate run` restarts it)
// under steady load on a plain route: no request fails, and Envoy keeps the very same config
// versions (no churn when the new controller serves the same resources again).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, sleep } from '../support/util.js';
import { figure } from './figures.js';
import { byStatus, p99, startLoad } from './load.js';
import { componentPid, envoyStats, envoyVersions, rssMiB, waitForComponent } from './procs.js';

const ITEM = 'controller-down';
const STOPPED_MS = Number(process.env['LEGATE_FAULTS_CONTROLLER_STOP_S'] ?? 30) * 1000;
// what would change if Envoy applied a different config
const CHURN = new RegExp(
  '^(listener_manager\\.(listener_added|listener_modified|listener_removed|lds\\.update_rejected)' +
    '|cluster_manager\\.(cluster_added|cluster_modified|cluster_removed|cds\\.update_rejected))$',
);

let gw: Gateway;
let app: EchoUpstream;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway({
    'plain.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: plain, namespace: default }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`,
  });
  await gw.until('/x', (r) => r.status === 200, {}, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

const controllerHealthy = async (): Promise<boolean> => {
  try {
    return (await fetch(`http://127.0.0.1:${gw.ports.api}/healthz`, { signal: AbortSignal.timeout(500) })).ok;
  } catch {
    return false;
  }
};

describe('controller down under load', () => {
  it('serves every request while the controller is stopped and after it is killed; Envoy keeps the same config versions', async () => {
    const versionsBefore = await envoyVersions(gw);
    const churnBefore = await envoyStats(gw, CHURN);
    expect(Object.keys(versionsBefore).length).toBeGreaterThan(3);
    const load = startLoad({ port: gw.ports.http, path: '/steady' }, { connections: 2, maxMs: STOPPED_MS + 60_000 });
    await sleep(2000);

    // stopped: its sockets stay open, nothing answers
    const first = componentPid(gw, 'controller')!;
    process.kill(first, 'SIGSTOP');
    await sleep(STOPPED_MS);
    process.kill(first, 'SIGCONT');
    await sleep(2000);

    // killed: `legate run` starts a new one, which reads the same directory and serves Envoy again
    const killedAt = performance.now();
    process.kill(first, 'SIGKILL');
    const second = await waitForComponent(gw, 'controller', first);
    await eventually('the new controller API', async () => ((await controllerHealthy()) ? true : undefined), 20_000);
    const apiBackMs = performance.now() - killedAt;
    await eventually(
      'Envoy connected to the new controller',
      async () => ((await envoyStats(gw, /^control_plane\.connected_state$/))['control_plane.connected_state'] === 1 ? true : undefined),
      20_000,
    );
    const resyncedMs = performance.now() - killedAt;
    await sleep(3000); // room for any push the new controller would make
    const samples = await load.stop();

    const versionsAfter = await envoyVersions(gw);
    const churnAfter = await envoyStats(gw, CHURN);
    const failed = samples.filter((s) => s.status !== 200);
    figure(ITEM, 'requests', samples.length);
    figure(ITEM, 'failed requests', failed.length);
    figure(ITEM, 'controller stopped (SIGSTOP)', STOPPED_MS / 1000, 's');
    figure(ITEM, 'controller API back after SIGKILL', Math.round(apiBackMs), 'ms');
    figure(ITEM, 'Envoy resynced after SIGKILL', Math.round(resyncedMs), 'ms');
    figure(ITEM, 'p99 latency under the faults', p99(samples.map((s) => s.ms)), 'ms');
    figure(ITEM, 'Envoy resources whose version changed', changed(versionsBefore, versionsAfter).length);
    figure(ITEM, 'new controller RSS', rssMiB(second), 'MiB');
    expect(byStatus(failed)).toEqual({});
    expect(changed(versionsBefore, versionsAfter)).toEqual([]);
    expect(churnAfter).toEqual(churnBefore);
  });
});

function changed(a: Record<string, string>, b: Record<string, string>): string[] {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].filter((k) => a[k] !== b[k]).map((k) => `${k}: ${a[k] ?? '-'} -> ${b[k] ?? '-'}`);
}
