// Config scale through Kubernetes: the same N VirtualServices x R routes as config-scale (its file-mode
// baseline, in the same run), created in a real kube-apiserver and read by `legate controller --source
// kubernetes`, until a real Envoy serves the last one; then edits of one VirtualService until served,
// and how many objects each edit wrote (status writes included).
//
// Creation is what a GitOps tool does: server-side apply requests straight to the API, 16 at a time
// (CREATE_CONCURRENCY), so the figure is Legate's, not a client's; the same creation with nothing
// watching (before the controller starts, in another namespace, deleted after) is the API server's
// own share, measured in the same run. For comparison, at the end another
// N VirtualServices (namespace `kubectl`, domains vs-NNNN.kubectl.bench.test) are applied with one
// `kubectl apply --server-side`, which sends them one after another.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { installCrds, startKubeApiServer, startKubeController, type KubeApiServer } from '../../test/support/kube.js';
import { untilServed } from '../lib/legate.js';
import { freePort, get } from '../lib/net.js';
import { cpuSeconds, machineCpu, memory, selfAndReapedChildrenCpu, sleep } from '../lib/procs.js';
import { upstreamYaml } from '../lib/resources.js';
import type { Figure, FiguresScenario } from '../lib/types.js';
import { parse } from 'yaml';
import { bodyOf, domain, routeCounts, vsName, vsYaml } from './config-scale.js';

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const secs = (ms: number): number => Math.round(ms) / 1000;
const CREATE_CONCURRENCY = 16;

/** The pid of the process whose command line has `args` one after another (e.g. a flag and its value). */
function pidWithArgs(...args: string[]): number | undefined {
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let cmdline: string[];
    try {
      cmdline = fs.readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (cmdline.some((_, i) => args.every((a, j) => cmdline[i + j] === a))) return Number(entry);
  }
  return undefined;
}

/** Server-side applies `objects` in `namespace`, CREATE_CONCURRENCY at a time; each request's ms into `requestMs`. */
async function createAll(
  kube: KubeApiServer,
  namespace: string,
  objects: readonly { metadata: { name: string } }[],
  requestMs: number[],
): Promise<void> {
  await eachLimited(objects, CREATE_CONCURRENCY, async (obj) => {
    const r0 = performance.now();
    const res = await kube.api(
      'PATCH',
      `/apis/gateway.legate.dev/v1/namespaces/${namespace}/virtualservices/${obj.metadata.name}?fieldManager=bench&force=true`,
      obj,
      'application/apply-patch+yaml',
    );
    requestMs.push(performance.now() - r0);
    if (res.status !== 200 && res.status !== 201) throw new Error(`apply ${obj.metadata.name}: ${res.status} ${JSON.stringify(res.body)}`);
  });
}

/** Runs `task` over `items`, at most `limit` at a time. */
async function eachLimited<T>(items: readonly T[], limit: number, task: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await task(items[next++]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export const kubeScale: FiguresScenario = {
  kind: 'figures',
  name: 'kube-scale',
  description:
    'legate controller --source kubernetes with the VirtualServices of config-scale created in a real kube-apiserver (server-side ' +
    `apply requests, ${CREATE_CONCURRENCY} at a time): seconds until Envoy serves them, an edit until served, objects written per ` +
    'edit, controller memory; then as many again with kubectl apply --server-side',
  async run(ctx) {
    const { virtualServices: n, routesPerVs: perVs, edits } = ctx.settings.scale;
    const up = await ctx.upstream();
    const kube = await startKubeApiServer();
    ctx.defer(() => kube.stop());
    installCrds(kube);
    kube.kubectl(['create', 'namespace', 'legate-system']);
    kube.kubectl(['apply', '-f', '-'], { input: upstreamYaml(up.port) });
    const dir = fs.mkdtempSync(path.join(ctx.workDir, 'kube-scale-'));
    // ---- the API server alone: the same creation with nothing watching, then deleted again ----
    const alone = await (async () => {
      kube.kubectl(['create', 'namespace', 'alone']);
      const objects = Array.from({ length: n }, (_, i) => parse(vsYaml(i, perVs, 1).replace('namespace: default', 'namespace: alone')));
      const ms: number[] = [];
      const a0 = performance.now();
      await createAll(kube, 'alone', objects as { metadata: { name: string } }[], ms);
      const took = performance.now() - a0;
      const deleted = await kube.api('DELETE', '/apis/gateway.legate.dev/v1/namespaces/alone/virtualservices');
      if (deleted.status !== 200) throw new Error(`deleting the namespace alone's VirtualServices: ${deleted.status}`);
      return { took, median: median(ms) };
    })();

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
    // who spends the CPU while the objects are created
    const apiserverPid = pidWithArgs('--secure-port', new URL(kube.url).port);
    const etcdUrl = apiserverPid ? fs.readFileSync(`/proc/${apiserverPid}/cmdline`, 'utf8').split('\0') : [];
    const etcdPid = pidWithArgs('--listen-client-urls', etcdUrl[etcdUrl.indexOf('--etcd-servers') + 1] ?? '');
    const pids: Record<string, number | undefined> = {
      'kube-apiserver': apiserverPid,
      etcd: etcdPid,
      controller: controller.process.pid,
      Envoy: envoy.pid,
    };
    const cpuOf = (): Record<string, number> => {
      const out: Record<string, number> = { 'this client': selfAndReapedChildrenCpu() };
      for (const [name, pid] of Object.entries(pids)) out[name] = pid ? cpuSeconds(pid) : NaN;
      return out;
    };
    const translations = (): number =>
      controller
        .log()
        .split('\n')
        .filter((l) => l.includes('"configuration translated"')).length;

    // ---- create them all: server-side apply, CREATE_CONCURRENCY requests at a time ----
    const objects = Array.from({ length: n }, (_, i) => parse(vsYaml(i, perVs, 1)) as { metadata: { name: string } });
    const last = n - 1;
    const requestMs: number[] = [];
    let lastServedAt = 0;
    let watchError: unknown;
    const watchLast = untilServed(http, '/version', domain(last), bodyOf(last, 1), 180_000, 20).then(
      (at) => void (lastServedAt = at),
      (err: unknown) => void (watchError = err),
    );
    const cpu0 = cpuOf();
    const machine0 = machineCpu();
    const translations0 = translations();
    const wall0 = Date.now();
    const t0 = performance.now();
    await createAll(kube, 'default', objects, requestMs);
    const applyMs = performance.now() - t0;
    await watchLast;
    if (watchError !== undefined) throw watchError instanceof Error ? watchError : new Error(String(watchError));
    const loadMs = lastServedAt - wall0;
    const cpu1 = cpuOf();
    const machine1 = machineCpu();
    const loadTranslations = translations() - translations0;
    const ours = Object.keys(cpu1).reduce((a, k) => a + (cpu1[k]! - cpu0[k]!), 0);
    const otherPct = (Math.max(0, machine1.busy - machine0.busy - ours) / (loadMs / 1000)) * 100;
    const cpuNote = Object.keys(cpu1)
      .map((k) => `${k} ${(cpu1[k]! - cpu0[k]!).toFixed(1)}`)
      .join(', ');
    const memLoaded = memory(controller.process.pid ?? 0);
    const counts = await routeCounts(adminPort);
    const first = await get(http, '/version', domain(0));
    if (first.status !== 200 || first.text !== bodyOf(0, 1))
      throw new Error(`first VirtualService not served: ${first.status} ${first.text}`);
    // statuses of the whole set, before the edits are measured: when every one says Accepted
    const accepted = async (): Promise<number> => {
      const list = await kube.api<{ items?: { status?: { state?: string } }[] }>(
        'GET',
        '/apis/gateway.legate.dev/v1/namespaces/default/virtualservices',
      );
      return (list.body.items ?? []).filter((i) => i.status?.state === 'Accepted').length;
    };
    let statusesMs: number | undefined;
    for (const until = performance.now() + 120_000; performance.now() < until; await sleep(250)) {
      if ((await accepted()) >= n + 1) {
        statusesMs = performance.now() - t0;
        break;
      }
    }
    await sleep(1000);
    // what the informer caches no longer keep (trimObject): managedFields and status, as listed now
    const listed = await kube.api<{ items?: { metadata?: { managedFields?: unknown }; status?: unknown }[] }>(
      'GET',
      '/apis/gateway.legate.dev/v1/namespaces/default/virtualservices',
    );
    const size = (v: unknown): number => (v === undefined ? 0 : Buffer.byteLength(JSON.stringify(v)));
    const listedBytes = { all: 0, managedFields: 0, status: 0 };
    for (const item of listed.body.items ?? []) {
      listedBytes.all += size(item);
      listedBytes.managedFields += size(item.metadata?.managedFields);
      listedBytes.status += size(item.status);
    }

    // ---- edits ----
    const versions = (): Map<string, string> => {
      const out = kube.kubectl([
        'get',
        // the full name: with the Gloo groups installed too, `vs` may name gateway.solo.io's (empty here)
        'virtualservices.gateway.legate.dev',
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

    // ---- for comparison: another N with kubectl (one client applying them one after another) ----
    kube.kubectl(['create', 'namespace', 'kubectl']);
    const kubectlDomain = (i: number): string => domain(i).replace('.bench.test', '.kubectl.bench.test');
    const kubectlDocs = Array.from({ length: n }, (_, i) =>
      vsYaml(i, perVs, 1).replace('namespace: default', 'namespace: kubectl').replace(domain(i), kubectlDomain(i)),
    ).join('---\n');
    const k0 = performance.now();
    kube.kubectl(['apply', '--server-side', '-f', '-'], { input: kubectlDocs });
    const kubectlMs = performance.now() - k0;
    await untilServed(http, '/version', kubectlDomain(last), bodyOf(last, 1), 180_000, 20);
    const kubectlServedMs = performance.now() - k0;
    const memBoth = memory(controller.process.pid ?? 0);

    const figures: Figure[] = [
      {
        name: 'resources created',
        value: `${n} VirtualServices x ${perVs} routes`,
        note:
          `server-side apply requests, ${CREATE_CONCURRENCY} at a time: all answered after ${secs(applyMs)} s ` +
          `(per request: median ${Math.round(median(requestMs))} ms, max ${Math.round(Math.max(...requestMs))} ms)`,
      },
      {
        name: 'create -> served by Envoy',
        value: secs(loadMs),
        unit: 's',
        note:
          `from the first request until GET /version with Host ${domain(last)} (polled every 20 ms) answers; ` +
          `${secs(loadMs - applyMs)} s after the last request was answered; aim <= 3 s`,
      },
      {
        name: 'create -> every status written',
        value: statusesMs === undefined ? 'not within 120 s' : secs(statusesMs),
        unit: statusesMs === undefined ? '' : 's',
        note: 'every VirtualService reads Accepted in its status (the list polled every 250 ms)',
      },
      {
        name: 'the same creation, the API server alone',
        value: secs(alone.took),
        unit: 's',
        note:
          `before the controller started: the same requests in another namespace, nothing watching (per request: median ` +
          `${Math.round(alone.median)} ms); then deleted`,
      },
      {
        name: 'CPU seconds while creating',
        value: cpuNote,
        note:
          `the controller translated ${loadTranslations} time(s) meanwhile; other work on the machine: ` +
          `${otherPct.toFixed(0)}% of a core`,
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
        name: 'VirtualServices as the API lists them',
        value: `${(listedBytes.all / 1048576).toFixed(2)} MiB of JSON`,
        note:
          `managedFields ${(listedBytes.managedFields / 1048576).toFixed(2)} MiB and status ` +
          `${(listedBytes.status / 1048576).toFixed(2)} MiB of it are dropped on receipt (not kept in the informer caches)`,
      },
      {
        name: 'controller RSS: before / loaded / after edits',
        value: `${memBefore.rssMiB.toFixed(1)} / ${memLoaded.rssMiB.toFixed(1)} / ${memEnd.rssMiB.toFixed(1)}`,
        unit: 'MiB',
      },
      {
        name: `another ${n} with kubectl apply --server-side -> served`,
        value: secs(kubectlServedMs),
        unit: 's',
        note:
          `kubectl itself took ${secs(kubectlMs)} s (one client, one object after another); served ` +
          `${secs(kubectlServedMs - kubectlMs)} s after it returned; controller RSS with ${2 * n}: ${memBoth.rssMiB.toFixed(1)} MiB`,
      },
    ];
    return { kind: 'figures', figures, notes: [] };
  },
};
