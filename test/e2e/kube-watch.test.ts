// Watch expiry against a real kube-apiserver: the controller loses its connection, the cluster moves
// on and etcd compacts away the resourceVersion its watches would resume from, so the API server
// answers 410 Gone. The controller must re-list (client-node's informer does on 410) and serve the
// new state, while Envoy keeps serving the last config the whole time.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { httpGet, startLocalEnvoy, type LocalEnvoy } from '../support/envoy.js';
import {
  controllerKubeconfig,
  installCrds,
  startKubeApiServer,
  startKubeController,
  type KubeApiServer,
  type KubeController,
} from '../support/kube.js';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.js';
import { eventually, sleep } from '../support/util.js';

let kube: KubeApiServer;
let dir: string;
let relay: TcpProxy;
let controller: KubeController;
let envoy: LocalEnvoy;

const vs = (name: string, body: string): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${name}.example.com]
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200, body: ${body} } }]
`;

const VS_PATH = '/apis/gateway.solo.io/v1/virtualservices';

beforeAll(async () => {
  // Without the watch cache, watches are served by etcd, so a compacted resourceVersion is 410 at
  // once (the cache would keep minutes of events); compaction every second makes that quick.
  kube = await startKubeApiServer({ extraArgs: ['--watch-cache=false', '--etcd-compaction-interval=1s'] });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-watch-'));
  installCrds(kube);
  relay = await startTcpProxy(Number(new URL(kube.url).port));
  // the controller reaches the API server only through the relay, with the install's ServiceAccount
  const direct = controllerKubeconfig(kube, dir);
  const viaRelay = path.join(dir, 'relay.kubeconfig');
  fs.writeFileSync(viaRelay, fs.readFileSync(direct, 'utf8').replace(kube.url, `https://127.0.0.1:${relay.port}`));
  controller = await startKubeController(kube, dir, 'controller', [], viaRelay);
  envoy = await startLocalEnvoy(dir, controller.ports.xds);
}, 240_000);

afterAll(async () => {
  await envoy?.stop();
  await controller?.stop();
  await relay?.close();
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const body = async (name: string): Promise<string> => {
  const r = await httpGet(controller.ports.http, '/', `${name}.example.com`);
  return r.status === 200 ? r.body : `HTTP ${r.status}`;
};

describe('watch expiry (410 Gone)', () => {
  it('re-lists after its resourceVersion is compacted away, and Envoy serves throughout', async () => {
    kube.kubectl(['apply', '-f', '-'], { input: [vs('keep', 'keep'), vs('gone', 'gone'), vs('edited', 'v1')].join('---\n') });
    await eventually('first objects served', async () =>
      (await body('keep')) === 'keep' && (await body('gone')) === 'gone' && (await body('edited')) === 'v1' ? true : undefined,
    );
    const listed = await kube.api<{ metadata: { resourceVersion: string } }>('GET', VS_PATH);
    const resumeFrom = listed.body.metadata.resourceVersion;

    // Envoy is polled the whole time; the untouched virtual service must never fail
    let polling = true;
    const failures: string[] = [];
    const poller = (async () => {
      while (polling) {
        const b = await body('keep').catch((e: unknown) => String(e));
        if (b !== 'keep') failures.push(b);
        await sleep(50);
      }
    })();

    relay.cut();
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'gone']);
    kube.kubectl(['apply', '-f', '-'], { input: [vs('edited', 'v2'), vs('fresh', 'fresh')].join('---\n') });
    for (let i = 0; i < 5; i++) {
      kube.kubectl(['annotate', '--overwrite', 'virtualservices.gateway.solo.io', 'keep', `churn=${i}`]);
      await sleep(600);
    }
    // the precondition: a watch resuming where the controller's left off is refused with 410
    const expired = await eventually('resourceVersion compacted', async () => {
      const w = await kube.api<{ type?: string; object?: { code?: number } }>(
        'GET',
        `${VS_PATH}?watch=1&resourceVersion=${resumeFrom}&timeoutSeconds=1`,
      );
      const answer = JSON.stringify(w);
      return w.status === 410 || answer.includes('"code":410') ? answer : undefined;
    });
    expect(expired).toContain('Expired');
    // meanwhile Envoy keeps the last config it was given
    expect(await body('gone')).toBe('gone');
    expect(await body('edited')).toBe('v1');

    relay.restore();
    await eventually(
      'the new state served after the re-list',
      async () =>
        (await body('gone')) === 'HTTP 404' && (await body('edited')) === 'v2' && (await body('fresh')) === 'fresh' ? true : undefined,
      60_000,
    );
    await eventually(
      'the source current again',
      async () => ((await controller.api<{ problems: string[] }>('/api/v1/source')).problems.length === 0 ? true : undefined),
      30_000,
    );
    polling = false;
    await poller;
    expect(failures).toEqual([]);
  });
});
