// Config scale: with `legate run` up, write N VirtualServices x R routes (distinct domains) into the
// watched directory as F files, and time it until Envoy serves the last one; then edit one route's
// direct-response body and time that. Reports controller and Envoy CPU and memory along the way.
import { performance } from 'node:perf_hooks';
import { startLegate, untilServed, type Legate } from '../lib/legate.js';
import { get } from '../lib/net.js';
import { cpuSeconds, machineCpu, memory, selfAndReapedChildrenCpu, sleep, type Memory } from '../lib/procs.js';
import { toUpstream, upstreamYaml } from '../lib/resources.js';
import type { Figure, FiguresScenario } from '../lib/types.js';

const pad = (i: number): string => String(i).padStart(4, '0');
export const vsName = (i: number): string => `vs-${pad(i)}`;
export const domain = (i: number): string => `${vsName(i)}.bench.test`;
export const bodyOf = (i: number, version: number): string => `${vsName(i)} v${version}`;

/** VirtualService i: R-1 prefix routes to the upstream, then an exact /version direct response. */
export function vsYaml(i: number, routes: number, version: number): string {
  const lines = [
    'apiVersion: gateway.legate.dev/v1',
    'kind: VirtualService',
    `metadata: { name: ${vsName(i)}, namespace: default }`,
    'spec:',
    '  virtualHost:',
    `    domains: [${domain(i)}]`,
    '    routes:',
  ];
  for (let r = 0; r < routes - 1; r++) lines.push(`      - matchers: [{ prefix: /r${r}/ }]`, `        ${toUpstream()}`);
  lines.push('      - matchers: [{ exact: /version }]', `        directResponseAction: { status: 200, body: "${bodyOf(i, version)}" }`);
  return lines.join('\n') + '\n';
}

interface ConfigDumpCounts {
  virtualHosts: number;
  routes: number;
  bytes: number;
}

export async function routeCounts(adminPort: number): Promise<ConfigDumpCounts> {
  const r = await get(adminPort, '/config_dump?resource=dynamic_route_configs', undefined, 60_000);
  if (r.status !== 200) throw new Error(`config_dump answered ${r.status}`);
  const dump = JSON.parse(r.text) as { configs?: { route_config?: { virtual_hosts?: { domains?: string[]; routes?: unknown[] }[] } }[] };
  let virtualHosts = 0;
  let routes = 0;
  for (const c of dump.configs ?? []) {
    for (const vh of c.route_config?.virtual_hosts ?? []) {
      if (!vh.domains?.some((d) => d.endsWith('.bench.test') && d.startsWith('vs-'))) continue;
      virtualHosts++;
      routes += vh.routes?.length ?? 0;
    }
  }
  return { virtualHosts, routes, bytes: r.text.length };
}

/** The controller's "configuration translated" log records since `mark`. */
function translations(gw: Legate, mark: number): { at: number; ms: number; resources: number }[] {
  return gw
    .logLines('controller')
    .slice(mark)
    .filter((l) => l['msg'] === 'configuration translated')
    .map((l) => ({ at: Date.parse(String(l['time'])), ms: Number(l['ms']), resources: Number(l['resources']) }));
}

const mib = (m: number): string => m.toFixed(1);
const secs = (ms: number): number => Math.round(ms) / 1000;

export const configScale: FiguresScenario = {
  kind: 'figures',
  name: 'config-scale',
  description:
    'legate run with many VirtualServices written as files (1,000 x 10 routes by default): seconds until Envoy serves them, an edit ' +
    'until served, controller and Envoy memory',
  async run(ctx) {
    const { virtualServices: n, routesPerVs: perVs, files: fileCount, edits } = ctx.settings.scale;
    const up = await ctx.upstream();
    const probe = `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: probe, namespace: default }
spec:
  virtualHost:
    domains: [probe.bench.test]
    routes:
      - matchers: [{ exact: /version }]
        directResponseAction: { status: 200, body: "probe" }
`;
    // Not pinned: no load generator runs here, so the controller and Envoy get the whole machine.
    const gw = await startLegate(ctx, 'config-scale', { 'upstream.yaml': upstreamYaml(up.port), 'probe.yaml': probe }, undefined);
    const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
    try {
      await untilServed(gw.ports.http, '/version', 'probe.bench.test', 'probe', 30_000, 100, dead);
      const ctl = gw.controllerPid;
      const envoy = gw.envoyPid;
      const memBefore = { controller: memory(ctl), envoy: memory(envoy) };

      // ---- the initial write ----
      const perFile = Math.ceil(n / fileCount);
      const fileOf = (i: number): string => `vs-${String(Math.floor(i / perFile)).padStart(2, '0')}.yaml`;
      const fileText = (f: number, versions: Map<number, number>): string => {
        const docs: string[] = [];
        for (let i = f * perFile; i < Math.min(n, (f + 1) * perFile); i++) docs.push(vsYaml(i, perVs, versions.get(i) ?? 1));
        return docs.join('---\n');
      };
      const texts = Array.from({ length: Math.ceil(n / perFile) }, (_, f) => fileText(f, new Map()));
      const yamlBytes = texts.reduce((a, t) => a + Buffer.byteLength(t), 0);
      const last = n - 1;
      const logMark = gw.logLines('controller').length;
      const cpu0 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };
      const machine0 = machineCpu();
      const self0 = selfAndReapedChildrenCpu();
      const wall0 = Date.now();
      const t0 = performance.now();
      texts.forEach((text, f) => gw.write(fileOf(f * perFile), text));
      const writeMs = performance.now() - t0;
      await untilServed(gw.ports.http, '/version', domain(last), bodyOf(last, 1), 180_000, 20, dead);
      const loadMs = performance.now() - t0;
      const cpu1 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };
      const machine1 = machineCpu();
      const ours = cpu1.controller - cpu0.controller + (cpu1.envoy - cpu0.envoy) + (selfAndReapedChildrenCpu() - self0);
      const otherPct = (Math.max(0, machine1.busy - machine0.busy - ours) / (loadMs / 1000)) * 100;
      const stealPct = ((machine1.steal - machine0.steal) / (loadMs / 1000)) * 100;
      const memLoaded = { controller: memory(ctl), envoy: memory(envoy) };
      const first = await get(gw.ports.http, '/version', domain(0));
      if (first.status !== 200 || first.text !== bodyOf(0, 1))
        throw new Error(`first VirtualService not served after the last one: ${first.status} ${first.text}`);
      const counts = await routeCounts(gw.ports.admin);
      const loadTranslations = translations(gw, logMark);
      const lastTranslation = loadTranslations[loadTranslations.length - 1];

      // ---- idle after the load: nothing should be spinning ----
      const idleS = 3;
      const idle0 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };
      await sleep(idleS * 1000);
      const idle1 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };

      // ---- edits: one route's direct-response body in the last VirtualService ----
      // The file is rewritten and renamed into place, as editors and apply tools do. Pauses between
      // edits are random so later edits do not fall into step with the controller's 1 s poll.
      interface Edit {
        servedMs: number;
        translatedMs: number | undefined;
        pipelineMs: number[];
        cpu: { controller: number; envoy: number };
      }
      const versions = new Map<number, number>();
      const done: Edit[] = [];
      for (let e = 0; e < edits; e++) {
        if (e > 0) await sleep(200 + Math.random() * 1000);
        versions.set(last, e + 2);
        const text = fileText(Math.floor(last / perFile), versions);
        const mark = gw.logLines('controller').length;
        const c0 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };
        const wallStart = Date.now();
        const start = performance.now();
        gw.write(fileOf(last), text);
        await untilServed(gw.ports.http, '/version', domain(last), bodyOf(last, e + 2), 60_000, 10, dead);
        const servedMs = performance.now() - start;
        const c1 = { controller: cpuSeconds(ctl), envoy: cpuSeconds(envoy) };
        const ts = translations(gw, mark);
        const lastT = ts[ts.length - 1];
        done.push({
          servedMs,
          translatedMs: lastT ? lastT.at - wallStart : undefined,
          pipelineMs: ts.map((t) => t.ms),
          cpu: { controller: c1.controller - c0.controller, envoy: c1.envoy - c0.envoy },
        });
      }
      const memEnd = { controller: memory(ctl), envoy: memory(envoy) };
      const firstEdit = done[0]!;
      const later = done.slice(1);
      const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
      const describe = (e: Edit): string =>
        `served after ${Math.round(e.servedMs)} ms, translated (controller log) after ${e.translatedMs ?? '?'} ms, pipeline ` +
        `${e.pipelineMs.join('+') || '?'} ms`;

      const mem = (m: Memory): string => `${mib(m.rssMiB)}`;
      const figures: Figure[] = [
        {
          name: 'resources written',
          value: `${n} VirtualServices x ${perVs} routes = ${n * perVs} routes`,
          note: `${texts.length} files, ${(yamlBytes / 1048576).toFixed(2)} MiB of YAML, written in ${Math.round(writeMs)} ms`,
        },
        {
          name: 'write -> served by Envoy',
          value: secs(loadMs),
          unit: 's',
          note: `GET /version with Host ${domain(last)} (the last VirtualService) polled every 20 ms`,
        },
        {
          name: 'write -> controller translated',
          value: lastTranslation ? secs(lastTranslation.at - wall0) : 'n/a',
          unit: 's',
          note:
            `${loadTranslations.length} translation(s): ` +
            `${loadTranslations.map((t) => `${t.ms} ms (${t.resources} resources)`).join(', ')}`,
        },
        {
          name: 'Envoy route config',
          value: `${counts.virtualHosts} virtual hosts, ${counts.routes} routes`,
          note: `config_dump of dynamic_route_configs is ${(counts.bytes / 1048576).toFixed(1)} MiB`,
        },
        {
          name: 'CPU during the load: controller / Envoy',
          value: `${(cpu1.controller - cpu0.controller).toFixed(2)} / ${(cpu1.envoy - cpu0.envoy).toFixed(2)}`,
          unit: 's',
          note: `other work on the machine meanwhile: ${otherPct.toFixed(0)}% of a core (steal ${stealPct.toFixed(0)}%)`,
        },
        {
          name: 'edit one route -> served',
          value: secs(firstEdit.servedMs),
          unit: 's',
          note: `first edit of the file: ${describe(firstEdit)}`,
        },
        ...(later.length
          ? [
              {
                name: 'later edits -> served (median)',
                value: secs(median(later.map((e) => e.servedMs))),
                unit: 's',
                note: later.map(describe).join('; '),
              },
            ]
          : []),
        {
          name: 'CPU per edit: controller / Envoy',
          value:
            `${(done.reduce((a, e) => a + e.cpu.controller, 0) / done.length).toFixed(2)} / ` +
            `${(done.reduce((a, e) => a + e.cpu.envoy, 0) / done.length).toFixed(2)}`,
          unit: 's',
        },
        {
          name: 'controller RSS: before / loaded / after edits (peak)',
          value:
            `${mem(memBefore.controller)} / ${mem(memLoaded.controller)} / ${mem(memEnd.controller)} ` +
            `(${mib(memEnd.controller.hwmMiB)})`,
          unit: 'MiB',
        },
        {
          name: 'Envoy RSS: before / loaded / after edits (peak)',
          value: `${mem(memBefore.envoy)} / ${mem(memLoaded.envoy)} / ${mem(memEnd.envoy)} (${mib(memEnd.envoy.hwmMiB)})`,
          unit: 'MiB',
        },
        {
          name: 'idle CPU after the load: controller / Envoy',
          value:
            `${(((idle1.controller - idle0.controller) / idleS) * 100).toFixed(1)} / ` +
            `${(((idle1.envoy - idle0.envoy) / idleS) * 100).toFixed(1)}`,
          unit: '% of a core',
          note: `over ${idleS} s`,
        },
      ];
      const notes: string[] = [];
      if (counts.virtualHosts !== n || counts.routes !== n * perVs)
        notes.push(`Envoy holds ${counts.virtualHosts} of ${n} virtual hosts and ${counts.routes} of ${n * perVs} routes`);
      return { kind: 'figures', figures, notes };
    } finally {
      await gw.stop();
    }
  },
};
