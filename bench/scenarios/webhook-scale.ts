// The validating admission webhook at scale: the VirtualServices of config-scale created in a real kube-apiserver
// by server-side apply requests (16 at a time), first with the webhook not configured (the controller running, the
// same objects in another namespace, then deleted), then with it (failurePolicy Fail: every request waits for it);
// the ratio of the two is the webhook's cost to a GitOps tool. Then, with them all loaded, the webhook's own latency:
// AdmissionReviews posted straight at it as the API server does (a new VirtualService, then an edit of a loaded one).
import https from 'node:https';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parse } from 'yaml';
import { installCrds, startKubeApiServer, startKubeController, type KubeApiServer } from '../../test/support/kube.js';
import { freePort } from '../lib/net.js';
import { sleep } from '../lib/procs.js';
import { upstreamYaml } from '../lib/resources.js';
import type { Figure, FiguresScenario } from '../lib/types.js';
import { vsYaml } from './config-scale.js';

const CONCURRENCY = 16;
const REVIEWS = 200;
const CONFIG = 'legate-validation-bench';
const quantile = (xs: number[], q: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))] ?? NaN;
const ms = (x: number): string => `${x.toFixed(1)} ms`;

async function createAll(kube: KubeApiServer, namespace: string, objects: readonly { metadata: { name: string } }[]): Promise<number[]> {
  const times: number[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < objects.length) {
      const obj = objects[next++]!;
      const t0 = performance.now();
      const res = await kube.api(
        'PATCH',
        `/apis/gateway.legate.dev/v1/namespaces/${namespace}/virtualservices/${obj.metadata.name}?fieldManager=bench&force=true`,
        obj,
        'application/apply-patch+yaml',
      );
      times.push(performance.now() - t0);
      if (res.status !== 200 && res.status !== 201)
        throw new Error(`apply ${obj.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  return times;
}

function review(port: number, ca: string, body: string): Promise<number> {
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port, path: '/validation', method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => (text += c.toString()));
        res.on('end', () => {
          const allowed = (JSON.parse(text) as { response?: { allowed?: boolean } }).response?.allowed;
          if (res.statusCode !== 200 || allowed !== true) reject(new Error(`review: ${res.statusCode} ${text.slice(0, 300)}`));
          else resolve(performance.now() - t0);
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

const reviewOf = (operation: 'CREATE' | 'UPDATE', object: unknown, oldObject?: unknown): string =>
  JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'bench',
      kind: { group: 'gateway.legate.dev', version: 'v1', kind: 'VirtualService' },
      namespace: 'default',
      name: (object as { metadata: { name: string } }).metadata.name,
      operation,
      object,
      ...(oldObject ? { oldObject } : {}),
    },
  });

export const webhookScale: FiguresScenario = {
  kind: 'figures',
  name: 'webhook-scale',
  description:
    `the validating webhook with the VirtualServices of config-scale: their creation by server-side apply (${CONCURRENCY} at a time) ` +
    `with the webhook on / off, and its latency (p50/p99 of ${REVIEWS} AdmissionReviews) with them all loaded`,
  async run(ctx) {
    const { virtualServices: n, routesPerVs: perVs } = ctx.settings.scale;
    const up = await ctx.upstream();
    const kube = await startKubeApiServer();
    ctx.defer(() => kube.stop());
    installCrds(kube);
    kube.kubectl(['create', 'namespace', 'legate-system']);
    kube.kubectl(['create', 'namespace', 'off']);
    kube.kubectl(['apply', '-f', '-'], { input: upstreamYaml(up.port) });
    const dir = fs.mkdtempSync(path.join(ctx.workDir, 'webhook-scale-'));
    const port = await freePort();
    const controller = await startKubeController(kube, dir, 'controller', [
      '--webhook-address',
      `127.0.0.1:${port}`,
      '--webhook-config',
      CONFIG,
    ]);
    ctx.defer(() => controller.stop());
    const objects = (ns: string) =>
      Array.from(
        { length: n },
        (_, i) => parse(vsYaml(i, perVs, 1).replace('namespace: default', `namespace: ${ns}`)) as { metadata: { name: string } },
      );

    // ---- webhook not configured: the controller watching, the objects in namespace `off`, then deleted ----
    const off0 = performance.now();
    const offTimes = await createAll(kube, 'off', objects('off'));
    const offMs = performance.now() - off0;
    const deleted = await kube.api('DELETE', '/apis/gateway.legate.dev/v1/namespaces/off/virtualservices');
    if (deleted.status !== 200) throw new Error(`deleting namespace off's VirtualServices: ${deleted.status}`);

    // ---- webhook on: every request waits for it (Fail) ----
    const config = {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: CONFIG },
      webhooks: [
        {
          name: 'validation.bench.legate.dev',
          clientConfig: { url: `https://127.0.0.1:${port}/validation` },
          rules: [
            {
              apiGroups: ['gateway.legate.dev', 'gloo.solo.io'],
              apiVersions: ['*'],
              operations: ['CREATE', 'UPDATE', 'DELETE'],
              resources: ['*'],
            },
          ],
          failurePolicy: 'Fail',
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    };
    kube.kubectl(['apply', '-f', '-'], { input: JSON.stringify(config) });
    let ca = '';
    for (const until = performance.now() + 60_000; performance.now() < until && !ca; await sleep(200)) {
      ca = kube.kubectl(['get', 'validatingwebhookconfiguration', CONFIG, '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}']).stdout;
    }
    if (!ca) throw new Error('the controller did not put its CA into the webhook configuration');
    // the API server picks the new configuration up within a second or so: wait until a request is validated
    await sleep(2000);
    const on0 = performance.now();
    const onTimes = await createAll(kube, 'default', objects('default'));
    const onMs = performance.now() - on0;

    // ---- the webhook alone, all loaded (the controller's snapshot holds them) ----
    for (const until = performance.now() + 120_000; performance.now() < until; await sleep(500)) {
      const listed = await controller.api<unknown[]>('/api/v1/resources?kind=VirtualService&namespace=default');
      if (listed.length >= n) break;
    }
    const caPem = Buffer.from(ca, 'base64').toString();
    const created: number[] = [];
    for (let i = 0; i < REVIEWS; i++) created.push(await review(port, caPem, reviewOf('CREATE', parse(vsYaml(n + i, perVs, 1)))));
    const edited: number[] = [];
    for (let i = 0; i < REVIEWS; i++) {
      const j = i % n;
      edited.push(await review(port, caPem, reviewOf('UPDATE', parse(vsYaml(j, perVs, i + 2)), parse(vsYaml(j, perVs, 1)))));
    }

    const figures: Figure[] = [
      { name: 'resources', value: `${n} VirtualServices x ${perVs} routes`, note: `server-side apply requests, ${CONCURRENCY} at a time` },
      {
        name: 'creation, webhook off',
        value: (offMs / 1000).toFixed(2),
        unit: 's',
        note:
          `per request p50 ${ms(quantile(offTimes, 0.5))}, p99 ${ms(quantile(offTimes, 0.99))} ` +
          '(the controller watching, no webhook configured)',
      },
      {
        name: 'creation, webhook on',
        value: (onMs / 1000).toFixed(2),
        unit: 's',
        note: `per request p50 ${ms(quantile(onTimes, 0.5))}, p99 ${ms(quantile(onTimes, 0.99))}; failurePolicy Fail`,
      },
      { name: 'creation on / off', value: (onMs / offMs).toFixed(2), unit: 'x', note: 'aim <= 1.5x' },
      {
        name: `webhook latency, a new VirtualService, ${n} loaded`,
        value: `p50 ${ms(quantile(created, 0.5))}, p99 ${ms(quantile(created, 0.99))}`,
        note: `${REVIEWS} AdmissionReviews one after another over one TLS connection each; aim p99 <= 100 ms`,
      },
      {
        name: `webhook latency, an edit of a loaded one`,
        value: `p50 ${ms(quantile(edited, 0.5))}, p99 ${ms(quantile(edited, 0.99))}`,
      },
    ];
    return { kind: 'figures', figures, notes: [] };
  },
};
