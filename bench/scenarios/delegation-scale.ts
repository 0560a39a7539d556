// Delegation at scale: the same 10,000 routes (by default) written twice, each time into a fresh
// `legate run`: flat (1,000 VirtualServices x 10 routes), then delegated (the same VirtualServices,
// each with one route of its own and three delegateActions, to 3,000 RouteTables of 3 routes). For
// each: seconds from the write until Envoy serves the last route, and one edit until served (a
// VirtualService's direct response flat; the same response in its RouteTable delegated). Ratios are
// delegated / flat, measured in the same run.
import { performance } from 'node:perf_hooks';
import { startLegate, untilServed } from '../lib/legate.js';
import { cpuSeconds, memory, sleep } from '../lib/procs.js';
import { toUpstream, upstreamYaml } from '../lib/resources.js';
import type { BenchContext, Figure, FiguresScenario } from '../lib/types.js';
import { routeCounts } from './config-scale.js';

export const TABLES = 3;
const pad = (i: number): string => String(i).padStart(4, '0');
const vsName = (i: number): string => `vs-${pad(i)}`;
const domain = (i: number): string => `${vsName(i)}.bench.test`;
const tableName = (i: number, t: number): string => `${vsName(i)}-t${t}`;
const body = (i: number, version: number): string => `${vsName(i)} v${version}`;

/** The routes of table t of VirtualService i: prefixes to the upstream; the last table ends with /tN/version. */
function tableRoutes(i: number, t: number, perTable: number, version: number): string[] {
  const lines: string[] = [];
  const last = t === TABLES - 1;
  for (let r = 0; r < perTable - (last ? 1 : 0); r++) lines.push(`      - matchers: [{ prefix: /t${t}/r${r} }]`, `        ${toUpstream()}`);
  if (last) {
    lines.push(
      `      - matchers: [{ exact: /t${t}/version }]`,
      `        directResponseAction: { status: 200, body: "${body(i, version)}" }`,
    );
  }
  return lines;
}

const header = (i: number): string[] => [
  'apiVersion: gateway.legate.dev/v1',
  'kind: VirtualService',
  `metadata: { name: ${vsName(i)}, namespace: default }`,
  'spec:',
  '  virtualHost:',
  `    domains: [${domain(i)}]`,
  '    routes:',
  '      - matchers: [{ prefix: /own/ }]',
  `        ${toUpstream()}`,
];

/** VirtualService i with its tables' routes written inline. */
export function flatVs(i: number, perTable: number, version: number): string {
  const lines = header(i);
  for (let t = 0; t < TABLES; t++) lines.push(...tableRoutes(i, t, perTable, version));
  return lines.join('\n') + '\n';
}

/** VirtualService i delegating to its tables by ref. */
export function delegatingVs(i: number): string {
  const lines = header(i);
  for (let t = 0; t < TABLES; t++)
    lines.push(`      - matchers: [{ prefix: /t${t}/ }]`, `        delegateAction: { ref: { name: ${tableName(i, t)} } }`);
  return lines.join('\n') + '\n';
}

/** RouteTable t of VirtualService i. */
export function table(i: number, t: number, perTable: number, version: number): string {
  const lines = [
    'apiVersion: gateway.legate.dev/v1',
    'kind: RouteTable',
    `metadata: { name: ${tableName(i, t)}, namespace: default }`,
    'spec:',
    '  routes:',
    ...tableRoutes(i, t, perTable, version),
  ];
  return lines.join('\n') + '\n';
}

interface Run {
  loadMs: number;
  editMs: number[];
  routes: number;
  virtualHosts: number;
  controllerCpuLoad: number;
  controllerCpuEdit: number;
  rssMiB: number;
}

/**
 * Starts a fresh `legate run`, writes `files` (name -> text), waits until VirtualService n-1 serves
 * /t2/version, then edits `edits` times with `edit(version)` (a file and its new text) and waits for each.
 */
async function measure(
  ctx: BenchContext,
  label: string,
  n: number,
  files: Map<string, string>,
  edit: (version: number) => [string, string],
  edits: number,
): Promise<Run> {
  const up = await ctx.upstream();
  const gw = await startLegate(ctx, label, { 'upstream.yaml': upstreamYaml(up.port) }, undefined);
  const dead = (): string | undefined => (gw.proc.alive() ? undefined : `legate run exited:\n${gw.proc.output().slice(-4000)}`);
  try {
    const last = n - 1;
    const ctl = gw.controllerPid;
    const cpu0 = cpuSeconds(ctl);
    const t0 = performance.now();
    for (const [file, text] of files) gw.write(file, text);
    await untilServed(gw.ports.http, '/t2/version', domain(last), body(last, 1), 240_000, 20, dead);
    const loadMs = performance.now() - t0;
    const cpu1 = cpuSeconds(ctl);
    const counts = await routeCounts(gw.ports.admin);
    await sleep(2000);
    const editMs: number[] = [];
    const cpu2 = cpuSeconds(ctl);
    for (let e = 0; e < edits; e++) {
      if (e > 0) await sleep(200 + Math.random() * 1000);
      const [file, text] = edit(e + 2);
      const start = performance.now();
      gw.write(file, text);
      await untilServed(gw.ports.http, '/t2/version', domain(last), body(last, e + 2), 60_000, 10, dead);
      editMs.push(performance.now() - start);
    }
    const cpu3 = cpuSeconds(ctl);
    return {
      loadMs,
      editMs,
      routes: counts.routes,
      virtualHosts: counts.virtualHosts,
      controllerCpuLoad: cpu1 - cpu0,
      controllerCpuEdit: (cpu3 - cpu2) / Math.max(1, edits),
      rssMiB: memory(ctl).rssMiB,
    };
  } finally {
    await gw.stop();
  }
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const secs = (ms: number): number => Math.round(ms) / 1000;

export const delegationScale: FiguresScenario = {
  kind: 'figures',
  name: 'delegation-scale',
  description:
    'legate run with 10,000 routes (by default) written flat (1,000 VirtualServices x 10 routes) and delegated (the same ' +
    'VirtualServices delegating to 3,000 RouteTables): write -> served and one edit -> served, delegated / flat',
  async run(ctx) {
    const { virtualServices: n, routesPerVs, files: fileCount, edits } = ctx.settings.scale;
    // one route of the VirtualService's own, the rest spread over its three tables
    const perTable = Math.max(1, Math.round((routesPerVs - 1) / TABLES));
    const routes = n * (1 + TABLES * perTable);
    const perFile = Math.ceil(n / fileCount);
    const chunks = Array.from({ length: Math.ceil(n / perFile) }, (_, f) => {
      const ids: number[] = [];
      for (let i = f * perFile; i < Math.min(n, (f + 1) * perFile); i++) ids.push(i);
      return ids;
    });
    const lastChunk = chunks.length - 1;
    const file = (prefix: string, f: number): string => `${prefix}-${String(f).padStart(2, '0')}.yaml`;

    const flatText = (ids: number[], versions: Map<number, number>): string =>
      ids.map((i) => flatVs(i, perTable, versions.get(i) ?? 1)).join('---\n');
    const flatFiles = new Map(chunks.map((ids, f) => [file('flat', f), flatText(ids, new Map())]));
    const flat = await measure(
      ctx,
      'delegation-scale-flat',
      n,
      flatFiles,
      (v) => [file('flat', lastChunk), flatText(chunks[lastChunk]!, new Map([[n - 1, v]]))],
      edits,
    );

    // the tables in their own files (as a team's would be), the VirtualServices in theirs
    const tablesText = (ids: number[], version: number): string =>
      ids.flatMap((i) => Array.from({ length: TABLES }, (_, t) => table(i, t, perTable, i === n - 1 ? version : 1))).join('---\n');
    const delegatedFiles = new Map<string, string>();
    chunks.forEach((ids, f) => delegatedFiles.set(file('vs', f), ids.map(delegatingVs).join('---\n')));
    chunks.forEach((ids, f) => delegatedFiles.set(file('rt', f), tablesText(ids, 1)));
    const delegated = await measure(
      ctx,
      'delegation-scale-delegated',
      n,
      delegatedFiles,
      (v) => [file('rt', lastChunk), tablesText(chunks[lastChunk]!, v)],
      edits,
    );

    const ratio = (a: number, b: number): string => (a / b).toFixed(2);
    const editFlat = median(flat.editMs);
    const editDelegated = median(delegated.editMs);
    const figures: Figure[] = [
      {
        name: 'routes',
        value: `${routes} (flat: ${n} VirtualServices; delegated: ${n} VirtualServices + ${n * TABLES} RouteTables)`,
        note: `Envoy held ${flat.routes} / ${delegated.routes} routes in ${flat.virtualHosts} / ${delegated.virtualHosts} virtual hosts`,
      },
      { name: 'write -> served: flat / delegated', value: `${secs(flat.loadMs)} / ${secs(delegated.loadMs)}`, unit: 's' },
      { name: 'write -> served: delegated / flat', value: ratio(delegated.loadMs, flat.loadMs), unit: 'x' },
      {
        name: 'one edit -> served (median): flat / delegated',
        value: `${secs(editFlat)} / ${secs(editDelegated)}`,
        unit: 's',
        note:
          `flat: a VirtualService's direct response (${flat.editMs.map((m) => Math.round(m)).join(', ')} ms); delegated: the same ` +
          `response in its RouteTable (${delegated.editMs.map((m) => Math.round(m)).join(', ')} ms)`,
      },
      { name: 'one edit -> served: delegated / flat', value: ratio(editDelegated, editFlat), unit: 'x' },
      {
        name: 'controller CPU: load / per edit, flat vs delegated',
        value:
          `${flat.controllerCpuLoad.toFixed(2)} / ${flat.controllerCpuEdit.toFixed(2)} vs ` +
          `${delegated.controllerCpuLoad.toFixed(2)} / ${delegated.controllerCpuEdit.toFixed(2)}`,
        unit: 's',
      },
      {
        name: 'controller RSS after the edits: flat / delegated',
        value: `${flat.rssMiB.toFixed(1)} / ${delegated.rssMiB.toFixed(1)}`,
        unit: 'MiB',
      },
    ];
    const notes: string[] = [];
    for (const [label, r] of [
      ['flat', flat],
      ['delegated', delegated],
    ] as const) {
      if (r.routes !== routes || r.virtualHosts !== n)
        notes.push(`${label}: Envoy holds ${r.virtualHosts} of ${n} virtual hosts, ${r.routes} of ${routes} routes`);
    }
    return { kind: 'figures', figures, notes };
  },
};
