// Resource churn, file mode: rounds of 1,000 VirtualServices (each with its Upstream, AuthConfig and its
// Secret, GraphQLApi, RateLimitConfig) written into the watched directory, served in full through the
// real Envoy and the extensions, then deleted, while a route nobody touches takes traffic. After each
// round's deletion the controller and each extension (graphql, extauth, ratelimit) are measured after a
// forced GC: what a deleted resource leaves behind would add up round after round.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { churnGroup } from './churn-resources.js';
import {
  CHURN_COUNT,
  envoyClusters,
  groupGone,
  groupServed,
  heapGrowth,
  memoryAfterGc,
  roundFigure,
  type Memory,
  type RoundFigures,
  useEveryGroup,
} from './churn.js';
import { figure } from './figures.js';
import { byStatus, startLoad, type Sample } from './load.js';

const ITEM = 'churn (file)';
// 10 rounds take ~10 minutes on 2 shared cores; 5 show the trend (LEGATE_FAULTS_CHURN_ROUNDS=10 for the full run)
const ROUNDS = Number(process.env['LEGATE_FAULTS_CHURN_ROUNDS'] ?? 5);
const FILES = 10;
const STEADY = 'steady.example.com';

let gw: Gateway;
let app: EchoUpstream;
let load0 = 0;

beforeAll(async () => {
  app = await startEcho('app');
  gw = await startGateway(
    {
      'steady.yaml': `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: app, namespace: legate-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: steady, namespace: default }
spec:
  virtualHost:
    domains: ['${STEADY}']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: app, namespace: legate-system } } }
`,
    },
    // every component measurable after a forced GC (/debug/gc)
    { env: { START_STATS_SERVER: '1', NODE_OPTIONS: '--expose-gc', LOG_LEVEL: 'info' } },
  );
  await gw.until('/', (r) => r.status === 200, { host: STEADY }, 30_000);
  await eventually('every component measurable', async () => ((await extensionsMemory()) ? true : undefined), 30_000);
}, 120_000);

afterAll(async () => {
  await gw?.stop();
  await app?.close();
});

async function extensionsMemory(): Promise<Record<string, Memory>> {
  return {
    graphql: await memoryAfterGc(gw.ports.graphqlStats),
    extauth: await memoryAfterGc(gw.ports.extauthStats),
    ratelimit: await memoryAfterGc(gw.ports.ratelimitStats),
  };
}

/** Failed requests by status, with when they failed (s since the round started). */
function failedAt(samples: readonly Sample[], roundStart: number): Record<string, string> {
  const at0 = roundStart - load0;
  const out: Record<string, number[]> = {};
  for (const s of samples)
    if (s.status !== 200) (out[`${s.status} ${s.body?.slice(0, 60) ?? ''}`] ??= []).push(Math.round((s.at - at0) / 100) / 10);
  return Object.fromEntries(Object.entries(out).map(([k, v]) => [k, `${v.length} at ${v[0]}..${v.at(-1)} s`]));
}

async function listedCount(): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${gw.ports.api}/api/v1/resources`);
  return ((await res.json()) as { data: unknown[] }).data.length;
}

describe('resource churn (file mode)', () => {
  it(`gives memory back: ${ROUNDS} rounds of ${CHURN_COUNT} VirtualServices created and deleted`, async () => {
    const baseListed = await listedCount();
    const baseClusters = await envoyClusters(gw.ports.admin);
    const start = { controller: await memoryAfterGc(gw.ports.controllerStats), ...(await extensionsMemory()) };
    figure(ITEM, 'before the first round: heap/RSS after GC', JSON.stringify(start), 'MiB');
    load0 = performance.now();
    const load = startLoad(
      { port: gw.ports.http, path: '/', host: STEADY },
      { connections: 2, pauseMs: 20, maxMs: 1_800_000, keepBodies: true, retryReusedReset: true },
    );
    const rounds: RoundFigures[] = [];
    let seen = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const per = Math.ceil(CHURN_COUNT / FILES);
      const t0 = performance.now();
      for (let f = 0; f < FILES; f++) {
        const docs: string[] = [];
        for (let i = f * per; i < Math.min(CHURN_COUNT, (f + 1) * per); i++) docs.push(...churnGroup(round, i, app.port).documents);
        gw.write(`churn-${f}.yaml`, docs.join('---\n'));
      }
      await eventually(
        'the round to be served',
        async () =>
          (await groupServed(gw.ports.http, round, CHURN_COUNT - 1)) && (await groupServed(gw.ports.http, round, 0)) ? true : undefined,
        180_000,
      );
      const loadS = (performance.now() - t0) / 1000;
      const unused = await useEveryGroup(gw.ports.http, round, CHURN_COUNT);
      if (unused.length) figure(ITEM, `round ${round}: groups not answering as expected`, unused.slice(0, 5).join('; '));
      expect(unused).toEqual([]);
      const served = `${await listedCount()} resources, ${await envoyClusters(gw.ports.admin)} clusters`;
      const peak = await memoryAfterGc(gw.ports.controllerStats);
      const t1 = performance.now();
      for (let f = 0; f < FILES; f++) gw.remove(`churn-${f}.yaml`);
      await groupGone(gw.ports.http, round, CHURN_COUNT - 1);
      await eventually(
        'the controller and Envoy back to the steady config',
        async () => ((await listedCount()) === baseListed && (await envoyClusters(gw.ports.admin)) === baseClusters ? true : undefined),
        120_000,
      );
      const removeS = (performance.now() - t1) / 1000;
      const samples = load.samples.slice(seen);
      seen += samples.length;
      const f: RoundFigures = {
        round,
        loadS: Math.round(loadS * 10) / 10,
        removeS: Math.round(removeS * 10) / 10,
        served,
        controllerPeakHeapMiB: peak.heapMiB,
        controller: await memoryAfterGc(gw.ports.controllerStats),
        extensions: await extensionsMemory(),
        requests: samples.length,
        retried: samples.filter((s) => s.retried).length,
        failed: samples.filter((s) => s.status !== 200).length,
      };
      if (f.failed) figure(ITEM, `round ${round}: failed requests`, JSON.stringify(failedAt(samples, t0)));
      roundFigure(ITEM, f);
      rounds.push(f);
    }
    const samples = await load.stop();
    const failed = samples.filter((s) => s.status !== 200);
    const retried = samples.filter((s) => s.retried).length;
    figure(ITEM, 'untouched route: requests / retried on a new connection / failed', `${samples.length} / ${retried} / ${failed.length}`);
    const growth = {
      controller: heapGrowth(rounds, (f) => f.controller),
      graphql: heapGrowth(rounds, (f) => f.extensions['graphql']!),
      extauth: heapGrowth(rounds, (f) => f.extensions['extauth']!),
      ratelimit: heapGrowth(rounds, (f) => f.extensions['ratelimit']!),
    };
    figure(ITEM, 'heap after deletion: most above the first round', JSON.stringify(growth));
    expect(byStatus(failed)).toEqual({});
    for (const [component, g] of Object.entries(growth)) expect({ component, over: g > 0.1 }).toEqual({ component, over: false });
  }, 1_800_000);
});
