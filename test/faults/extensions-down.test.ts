// Item 2: the graphql and the extauth service killed under load. `legate run` restarts each with
// backoff; meanwhile GraphQL routes answer a clean 503 GraphQL error, protected routes 403 (fail
// closed), and the other routes are unaffected. Figures: failed requests per route, recovery time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually, sleep } from '../support/util.js';
import { figure } from './figures.js';
import { GRAPHQL_ANSWER, GRAPHQL_QUERY, bearer, gatewayConfig, startFakeProvider, type FakeProvider } from './fixtures.js';
import { byStatus, recovered, recovery, startLoad, type Load, type Sample } from './load.js';
import { componentPid, rssMiB, runState, waitForComponent } from './procs.js';

const ITEM = 'extension-down';
let gw: Gateway;
let app: EchoUpstream;
let provider: FakeProvider;

const GQL_HEADERS = { 'content-type': 'application/json' };
const UNAVAILABLE = [
  JSON.stringify({ errors: [{ message: 'the GraphQL service is unavailable; try again', extensions: { code: 'SERVICE_UNAVAILABLE' } }] }),
  JSON.stringify({ errors: [{ message: 'GraphQL API "legate-system.echo" is not loaded', extensions: { code: 'SERVICE_UNAVAILABLE' } }] }),
];

beforeAll(async () => {
  app = await startEcho('app');
  provider = await startFakeProvider();
  gw = await startGateway({ 'faults.yaml': gatewayConfig(app.port, provider.url) });
  await gw.until('/plain', (r) => r.status === 200, {}, 30_000);
  await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 30_000);
  await gw.until('/graphql', (r) => r.text === GRAPHQL_ANSWER, { method: 'POST', headers: GQL_HEADERS, body: GRAPHQL_QUERY }, 30_000);
});

afterAll(async () => {
  await gw?.stop();
  await provider?.close();
  await app?.close();
});

interface Loads {
  plain: Load;
  graphql: Load;
  secure: Load;
}

function startLoads(): Loads {
  const port = gw.ports.http;
  return {
    plain: startLoad({ port, path: '/plain' }, { connections: 2 }),
    graphql: startLoad(
      { port, path: '/graphql', method: 'POST', headers: GQL_HEADERS, body: GRAPHQL_QUERY },
      { connections: 1, keepBodies: true },
    ),
    secure: startLoad({ port, path: '/secure/x', headers: bearer() }, { connections: 1 }),
  };
}

async function stopLoads(loads: Loads): Promise<Record<keyof Loads, Sample[]>> {
  return { plain: await loads.plain.stop(), graphql: await loads.graphql.stop(), secure: await loads.secure.stop() };
}

async function killUnderLoad(component: 'graphql' | 'extauth', victim: keyof Loads) {
  const loads = startLoads();
  await sleep(1500);
  const pid = componentPid(gw, component)!;
  const killedAt = loads[victim].now();
  process.kill(pid, 'SIGKILL');
  const t = performance.now();
  const next = await waitForComponent(gw, component, pid);
  const restartedMs = Math.round(performance.now() - t);
  await eventually(`${victim} requests served again`, () => (recovered(loads[victim].samples, killedAt) ? true : undefined), 30_000);
  await sleep(500);
  const samples = await stopLoads(loads);
  return { samples, killedAt, restartedMs, rss: rssMiB(next) };
}

describe('extension services killed under load', () => {
  it('graphql killed: GraphQL answers 503 SERVICE_UNAVAILABLE until it is back, the other routes never fail', async () => {
    const { samples, killedAt, restartedMs, rss } = await killUnderLoad('graphql', 'graphql');
    const { failures, recoveredMs } = recovery(samples.graphql, killedAt);
    figure(ITEM, 'graphql killed: new process after', restartedMs, 'ms');
    figure(ITEM, 'graphql killed: GraphQL requests', samples.graphql.length);
    figure(ITEM, 'graphql killed: GraphQL answers 503', failures.length);
    figure(ITEM, 'graphql killed: GraphQL full service again after', recoveredMs, 'ms');
    figure(
      ITEM,
      'graphql killed: failed plain + protected requests',
      [...samples.plain, ...samples.secure].filter((s) => s.status !== 200).length,
    );
    figure(ITEM, 'graphql killed: new graphql RSS', rss, 'MiB');
    expect(failures.length).toBeGreaterThan(0);
    for (const f of failures) {
      expect(f.status).toBe(503);
      expect(UNAVAILABLE).toContain(f.body);
    }
    expect(byStatus(samples.plain)).toEqual({ 200: samples.plain.length });
    expect(byStatus(samples.secure)).toEqual({ 200: samples.secure.length });
    expect(recoveredMs).toBeLessThan(15_000);
  });

  it('extauth killed: protected routes answer 403 (fail closed) until it is back, the other routes never fail', async () => {
    const { samples, killedAt, restartedMs, rss } = await killUnderLoad('extauth', 'secure');
    const { failures, recoveredMs } = recovery(samples.secure, killedAt);
    figure(ITEM, 'extauth killed: new process after', restartedMs, 'ms');
    figure(ITEM, 'extauth killed: protected requests', samples.secure.length);
    figure(ITEM, 'extauth killed: protected answers 403', failures.length);
    figure(ITEM, 'extauth killed: protected full service again after', recoveredMs, 'ms');
    figure(
      ITEM,
      'extauth killed: failed plain + GraphQL requests',
      [...samples.plain, ...samples.graphql].filter((s) => s.status !== 200).length,
    );
    figure(ITEM, 'extauth killed: new extauth RSS', rss, 'MiB');
    expect(failures.length).toBeGreaterThan(0);
    expect(byStatus(failures)).toEqual({ 403: failures.length });
    expect(byStatus(samples.plain)).toEqual({ 200: samples.plain.length });
    expect(byStatus(samples.graphql)).toEqual({ 200: samples.graphql.length });
    expect(recoveredMs).toBeLessThan(15_000);
  });

  it('restarts a service that keeps dying with growing delays (backoff)', async () => {
    const delays: number[] = [];
    let pid = componentPid(gw, 'extauth')!;
    for (let i = 0; i < 3; i++) {
      process.kill(pid, 'SIGKILL');
      const t = performance.now();
      pid = await waitForComponent(gw, 'extauth', pid);
      delays.push(Math.round(performance.now() - t));
    }
    figure(ITEM, 'extauth killed 3 times in a row: restart delays', delays.join(', '), 'ms');
    expect(delays[2]!).toBeGreaterThan(delays[0]!);
    // and it serves again
    await gw.until('/secure/x', (r) => r.status === 200, { headers: bearer() }, 30_000);
    // run.json names the live processes, so legatectl check does not report the restarted ones dead
    await eventually('run.json to name the new extauth', () => (runState(gw).components['extauth']?.pid === pid ? true : undefined), 5000);
    expect(runState(gw).components['graphql']?.pid).toBe(componentPid(gw, 'graphql'));
    const check = gw.ctl('check');
    expect(check.stdout + check.stderr).not.toContain('is not running');
  });
});
