// Resource churn against a real kube-apiserver (and etcd): rounds of 1,000 VirtualServices (each with its
// Upstream, AuthConfig and its Secret, GraphQLApi, RateLimitConfig) created through the API and deleted
// (a deletecollection per kind), with the controller in Kubernetes mode (informers, status writes) and a
// real Envoy serving a route nobody touches. After each round's deletion the controller is measured after
// a forced GC. The extensions are measured by churn-file.test.ts (they get their configs over xDS the same
// way in both modes).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { startLocalEnvoy, type LocalEnvoy } from '../support/envoy.js';
import {
  controllerKubeconfig,
  installCrds,
  startKubeApiServer,
  startKubeController,
  type KubeApiServer,
  type KubeController,
} from '../support/kube.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';
import { CHURN_NAMESPACE, churnGroup, DELETE_ORDER } from './churn-resources.js';
import { CHURN_COUNT, envoyClusters, get, heapGrowth, memoryAfterGc, roundFigure, type RoundFigures } from './churn.js';
import { figure } from './figures.js';
import { byStatus, startLoad } from './load.js';

const ITEM = 'churn (kube)';
const ROUNDS = Number(process.env['LEGATE_FAULTS_CHURN_KUBE_ROUNDS'] ?? 5);
const STEADY = 'steady.example.com';
/** API requests in flight while creating a round */
const PARALLEL = 16;

const PATHS: Record<string, string> = {
  Upstream: '/apis/gloo.solo.io/v1',
  Secret: '/api/v1',
  AuthConfig: '/apis/enterprise.gloo.solo.io/v1',
  GraphQLApi: '/apis/graphql.gloo.solo.io/v1beta1',
  RateLimitConfig: '/apis/ratelimit.solo.io/v1alpha1',
  VirtualService: '/apis/gateway.solo.io/v1',
};
const PLURAL: Record<string, string> = {
  Upstream: 'upstreams',
  Secret: 'secrets',
  AuthConfig: 'authconfigs',
  GraphQLApi: 'graphqlapis',
  RateLimitConfig: 'ratelimitconfigs',
  VirtualService: 'virtualservices',
};
const collection = (kind: string): string => `${PATHS[kind]}/namespaces/${CHURN_NAMESPACE}/${PLURAL[kind]}`;

let kube: KubeApiServer;
let dir: string;
let controller: KubeController;
let envoy: LocalEnvoy;
let app: EchoUpstream;

beforeAll(async () => {
  app = await startEcho('app');
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-churn-kube-'));
  installCrds(kube);
  const asController = controllerKubeconfig(kube, dir);
  kube.kubectl(['create', 'namespace', CHURN_NAMESPACE]);
  kube.kubectl(['apply', '-f', '-'], {
    input: `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: app, namespace: default }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${app.port} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: steady, namespace: default }
spec:
  virtualHost:
    domains: ['${STEADY}']
    routes: [{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: app, namespace: default } } } }]
`,
  });
  // measurable after a forced GC (/debug/gc on its admin interface)
  process.env['START_STATS_SERVER'] = '1';
  process.env['NODE_OPTIONS'] = '--expose-gc';
  try {
    controller = await startKubeController(kube, dir, 'controller', ['--log-level', 'warn', '--access-log', 'off'], asController);
  } finally {
    delete process.env['NODE_OPTIONS'];
    delete process.env['START_STATS_SERVER'];
  }
  envoy = await startLocalEnvoy(dir, controller.ports.xds);
  await eventually(
    'the steady route',
    async () => ((await get(controller.ports.http, '/', STEADY)).status === 200 ? true : undefined),
    60_000,
  );
}, 300_000);

afterAll(async () => {
  await envoy?.stop();
  await controller?.stop();
  await kube?.stop();
  await app?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function create(round: number): Promise<void> {
  const objects = Array.from({ length: CHURN_COUNT }, (_, i) => churnGroup(round, i, app.port).objects).flat();
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) {
      const o = objects[next++]!;
      await createOne(o.kind, o.name, parse(o.document) as object);
    }
  };
  await Promise.all(Array.from({ length: PARALLEL }, worker));
}

/** A POST, again when the API server was too busy to answer in time (then 409: the first one made it). */
async function createOne(kind: string, name: string, body: object): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await kube.api('POST', collection(kind), body);
      if (res.status === 201 || (attempt > 1 && res.status === 409)) return;
      if (res.status < 500 && res.status !== 429)
        throw new Error(`create ${kind} ${name}: ${res.status} ${JSON.stringify(res.body).slice(0, 300)}`);
    } catch (err) {
      if (attempt >= 5 || (err instanceof Error && err.message.startsWith('create '))) throw err;
    }
    await new Promise((r) => setTimeout(r, 500 * attempt));
  }
}

async function deleteAll(): Promise<void> {
  for (const kind of DELETE_ORDER) {
    // idempotent: asked again when the API server was too busy to answer in time
    for (let attempt = 1; ; attempt++) {
      const res = await kube.api('DELETE', collection(kind)).catch((err: unknown) => (attempt < 5 ? undefined : Promise.reject(err)));
      if (res?.status === 200) break;
      if (res && attempt >= 5) throw new Error(`deletecollection ${kind}: ${res.status}`);
      await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}

async function listed(): Promise<number> {
  return (await controller.api<unknown[]>('/api/v1/resources')).length;
}

describe('resource churn (Kubernetes mode)', () => {
  it(`gives memory back: ${ROUNDS} rounds of ${CHURN_COUNT} VirtualServices created and deleted through the API`, async () => {
    const baseListed = await listed();
    const baseClusters = await envoyClusters(envoy.adminPort);
    figure(ITEM, 'before the first round: heap/RSS after GC', JSON.stringify(await memoryAfterGc(controller.ports.stats)), 'MiB');
    const load = startLoad(
      { port: controller.ports.http, path: '/', host: STEADY },
      { connections: 2, pauseMs: 20, maxMs: 1_800_000, keepBodies: true, retryReusedReset: true },
    );
    const rounds: RoundFigures[] = [];
    let seen = 0;
    for (let round = 1; round <= ROUNDS; round++) {
      const t0 = performance.now();
      await create(round);
      const last = `r${round}-${CHURN_COUNT - 1}.churn.example`;
      await eventually(
        'the round to be served',
        async () => ((await get(controller.ports.http, '/', last)).status === 200 ? true : undefined),
        180_000,
      );
      await eventually('every resource listed', async () => ((await listed()) >= baseListed + CHURN_COUNT * 6 ? true : undefined), 60_000);
      const loadS = (performance.now() - t0) / 1000;
      const served = `${await listed()} resources, ${await envoyClusters(envoy.adminPort)} clusters`;
      const peak = await memoryAfterGc(controller.ports.stats);
      const t1 = performance.now();
      await deleteAll();
      await eventually(
        'the controller and Envoy back to the steady config',
        async () => ((await listed()) === baseListed && (await envoyClusters(envoy.adminPort)) === baseClusters ? true : undefined),
        180_000,
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
        controller: await memoryAfterGc(controller.ports.stats),
        extensions: {},
        requests: samples.length,
        retried: samples.filter((s) => s.retried).length,
        failed: samples.filter((s) => s.status !== 200).length,
      };
      if (f.failed)
        figure(
          ITEM,
          `round ${round}: failed requests`,
          JSON.stringify(samples.filter((s) => s.status !== 200).map((s) => `${s.status} ${s.body?.slice(0, 40) ?? ''}`)),
        );
      roundFigure(ITEM, f);
      rounds.push(f);
    }
    const samples = await load.stop();
    const failed = samples.filter((s) => s.status !== 200);
    const retried = samples.filter((s) => s.retried).length;
    figure(ITEM, 'untouched route: requests / retried on a new connection / failed', `${samples.length} / ${retried} / ${failed.length}`);
    const growth = heapGrowth(rounds, (f) => f.controller);
    figure(ITEM, 'controller heap after deletion: most above the first round', Math.round(growth * 1000) / 10, '%');
    expect(byStatus(failed)).toEqual({});
    expect(growth).toBeLessThan(0.1);
  }, 1_800_000);
});
