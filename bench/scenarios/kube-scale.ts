// Config scale through Kubernetes: the same N VirtualServices x R routes as config-scale (its file-mode
// baseline, in the same run), created in a real kube-apiserver with kubectl (server-side apply) and
// read by `legate controller --source kubernetes`, until a real Envoy serves the last one; then edits
// of one VirtualService until served, and how many objects each edit wrote (status writes included).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { installCrds, startKubeApiServer, startKubeController } from '../../test/e2e/harness/kube.js';
import { untilServed } from '../lib/legate.js';
import { freePort, get } from '../lib/net.js';
import { memory, sleep } from '../lib/procs.js';
import { upstreamYaml } from '../lib/resources.js';
import type { Figure, FiguresScenario } from '../lib/types.js';
import { parse } from 'yaml';
import { bodyOf, domain, routeCounts, vsName, vsYaml } from './config-scale.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const secs = (ms: number): number => Math.round(ms) / 1000;

export const kubeScale: FiguresScenario = {
  kind: 'figures',
  name: 'kube-scale',
  description:
    'legate controller --source kubernetes with the VirtualServices of config-scale created in a real kube-apiserver (kubectl apply ' +
    '--server-side): seconds until Envoy serves them, an edit until served, objects written per edit, controller memory',
  async run(ctx) {
    const { virtualServices: n, routesPerVs: perVs, edits } = ctx.settings.scale;
    const up = await ctx.upstream();
    const kube = await startKubeApiServer();
    ctx.defer(() => kube.stop());
    installCrds(kube);
    kube.kubectl(['create', 'namespace', 'legate-system']);
    kube.kubectl(['apply', '-f', '-'], { input: upstreamYaml(up.port) });
    const dir = fs.mkdtempSync(path.join(ctx.workDir, 'kube-scale-'));
    const controller = await startKubeController(kube, dir, 'controller');
    ctx.defer(() => controller.stop());
    const adminPort = await freePort();
    const bootstrap = spawnSync(
      process.execPath,
      [path.join(ctx.root, 'bin', 'legate.js'), 'bootstrap', '--xds-port', String(controller.ports.xds), '--admin-port', String(adminPort)],
      { encoding: 'utf8' },
    ).stdout;
    fs.writeFileSync(path.join(dir, 'envoy.yaml'), bootstrap);
    const envoyLog = fs.openSync(path.join(dir, 'envoy.log'), 'a');
    const envoy = spawn(
      path.join(ctx.root, '.venv/bin/envoy'),
      ['-c', path.join(dir, 'envoy.yaml'), '--disable-hot-restart', '--drain-time-s', '1', '-l', 'warn', '--base-id', String(adminPort)],
      { stdio: ['ignore', envoyLog, envoyLog] },
    );
    fs.closeSync(envoyLog);
    ctx.defer(() => void envoy.kill('SIGTERM'));
    const http = controller.ports.http;
    const probe = vsYaml(999_999, 1, 1);
    kube.kubectl(['apply', '-f', '-'], { input: probe });
    await untilServed(http, '/version', domain(999_999), bodyOf(999_999, 1), 60_000, 100);
    const memBefore = memory(controller.process.pid ?? 0);

    // ---- create them all ----
    const docs = Array.from({ length: n }, (_, i) => vsYaml(i, perVs, 1)).join('---\n');
    const last = n - 1;
    const t0 = performance.now();
    const applied = kube.kubectl(['apply', '--server-side', '-f', '-'], { input: docs });
    const applyMs = performance.now() - t0;
    await untilServed(http, '/version', domain(last), bodyOf(last, 1), 180_000, 20);
    const loadMs = performance.now() - t0;
    const memLoaded = memory(controller.process.pid ?? 0);
    const counts = await routeCounts(adminPort);
    const first = await get(http, '/version', domain(0));
    if (first.status !== 200 || first.text !== bodyOf(0, 1))
      throw new Error(`first VirtualService not served: ${first.status} ${first.text}`);
    // statuses of the whole set, before the edits are measured
    await sleep(3000);

    // ---- edits ----
    const versions = (): Map<string, string> => {
      const out = kube.kubectl([
        'get',
        'vs',
        '-n',
        'default',
        '--no-headers',
        '-o',
        'custom-columns=N:.metadata.name,RV:.metadata.resourceVersion',
      ]);
      return new Map(
        out.stdout
          .trim()
          .split('\n')
          .map((l) => l.trim().split(/\s+/) as [string, string]),
      );
    };
    const served: number[] = [];
    const written: number[] = [];
    for (let e = 0; e < edits; e++) {
      const before = versions();
      // straight to the API (a merge patch of the spec), so kubectl's own start-up is not counted
      const spec = (parse(vsYaml(last, perVs, e + 2)) as { spec: unknown }).spec;
      const start = performance.now();
      const patched = await kube.api(
        'PATCH',
        `/apis/gateway.legate.dev/v1/namespaces/default/virtualservices/${vsName(last)}`,
        { spec },
        'application/merge-patch+json',
      );
      if (patched.status !== 200) throw new Error(`PATCH answered ${patched.status}: ${JSON.stringify(patched.body)}`);
      await untilServed(http, '/version', domain(last), bodyOf(last, e + 2), 60_000, 5);
      served.push(performance.now() - start);
      await sleep(1000); // its status write
      const after = versions();
      written.push([...after].filter(([name, rv]) => before.get(name) !== rv).length);
    }
    const memEnd = memory(controller.process.pid ?? 0);

    const figures: Figure[] = [
      {
        name: 'resources created',
        value: `${n} VirtualServices x ${perVs} routes`,
        note: `kubectl apply --server-side took ${secs(applyMs)} s (${applied.stdout.split('\n').length - 1} objects)`,
      },
      {
        name: 'apply -> served by Envoy',
        value: secs(loadMs),
        unit: 's',
        note: `GET /version with Host ${domain(last)} polled every 20 ms; aim <= 3 s`,
      },
      { name: 'Envoy route config', value: `${counts.virtualHosts} virtual hosts, ${counts.routes} routes` },
      {
        name: 'edit one VirtualService -> served (median)',
        value: secs(median(served)),
        unit: 's',
        note: `${served.map((m) => Math.round(m)).join(', ')} ms; aim p50 <= 0.3 s`,
      },
      {
        name: 'objects written per edit (the edit and status writes)',
        value: median(written),
        note: `per edit: ${written.join(', ')}; aim: only the edited one`,
      },
      {
        name: 'controller RSS: before / loaded / after edits',
        value: `${memBefore.rssMiB.toFixed(1)} / ${memLoaded.rssMiB.toFixed(1)} / ${memEnd.rssMiB.toFixed(1)}`,
        unit: 'MiB',
      },
    ];
    return { kind: 'figures', figures, notes: [] };
  },
};
