// Micro-benchmark of delegation at scale (not a test): the controller's CPU for delegation-scale's
// resources (1,000 VirtualServices and 10,000 routes by default), written flat and delegated to 3,000
// RouteTables, in this process, without Envoy: parse, runPipeline, statuses and the xDS cache, as
// config-pipeline.ts times them.
//
//   node --import tsx bench/micro/delegation-pipeline.ts [--vs 1000] [--routes 10] [--files 10] [--edits 15] [--repeats 5]
//
// Each repeat runs flat and delegated in fresh processes (one cold load each, as a fresh `legate run`),
// then `--edits` edits: flat, the last VirtualService's direct response; delegated, the same response
// in its RouteTable (its file rewritten, as the scenario does). Reported: CPU of the load and median
// CPU per edit, each mode's median over the repeats, and delegated / flat.
// `--mode flat|delegated` runs one mode once in this process (for node --cpu-prof).
import { spawnSync } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { runPipeline, type PipelineMemo } from '../../controller/pipeline.js';
import type { LegateResource } from '../../controller/api/resources.js';
import type { RawResource } from '../../controller/api/meta.js';
import { parseResourcesReusing, type DocumentMemo } from '../../controller/source/parse.js';
import { LatestStatuses, StatusBook } from '../../controller/status/book.js';
import type { VirtualHostIR } from '../../controller/translate/ir.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { ExtensionTypeUrls, encodeExtensionConfig } from '../../common/contract.js';
import { upstreamYaml } from '../lib/resources.js';
import { TABLES, delegatingVs, flatVs, table } from '../scenarios/delegation-scale.js';
import { numberOption } from '../lib/args.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number): number => numberOption(name, dflt, args);
const N = opt('vs', 1000);
const ROUTES = opt('routes', 10);
const FILES = opt('files', 10);
const EDITS = opt('edits', 15);
const REPEATS = opt('repeats', 5);
const modeAt = args.indexOf('--mode');
const mode = modeAt >= 0 ? args[modeAt + 1] : undefined;

const perTable = Math.max(1, Math.round((ROUTES - 1) / TABLES));
const perFile = Math.ceil(N / FILES);
const chunks = Array.from({ length: Math.ceil(N / perFile) }, (_, f) => {
  const ids: number[] = [];
  for (let i = f * perFile; i < Math.min(N, (f + 1) * perFile); i++) ids.push(i);
  return ids;
});
const lastChunk = chunks.length - 1;
const fileName = (prefix: string, f: number): string => `${prefix}-${String(f).padStart(2, '0')}.yaml`;
const flatText = (ids: number[], version: number): string => ids.map((i) => flatVs(i, perTable, i === N - 1 ? version : 1)).join('---\n');
const tablesText = (ids: number[], version: number): string =>
  ids.flatMap((i) => Array.from({ length: TABLES }, (_, t) => table(i, t, perTable, i === N - 1 ? version : 1))).join('---\n');

interface Result {
  loadMs: number;
  /** when the load ended, ms since the process started (to split a --cpu-prof profile) */
  loadEndedAt: number;
  editMs: number;
  /** what Envoy would hold: routes over all virtual hosts */
  routes: number;
}

const cpuMs = (): number => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

function runMode(delegated: boolean): Result {
  const docMemos = new Map<string, DocumentMemo>();
  const parse = (file: string, text: string): RawResource[] => {
    const parsed = parseResourcesReusing(text, file, docMemos.get(file));
    docMemos.set(file, parsed.memo);
    return parsed.resources;
  };
  const texts = new Map<string, string>();
  if (delegated) {
    chunks.forEach((ids, f) => texts.set(fileName('vs', f), ids.map(delegatingVs).join('---\n')));
    chunks.forEach((ids, f) => texts.set(fileName('rt', f), tablesText(ids, 1)));
  } else chunks.forEach((ids, f) => texts.set(fileName('flat', f), flatText(ids, 1)));
  const editFile = fileName(delegated ? 'rt' : 'flat', lastChunk);
  const editText = (version: number): string => (delegated ? tablesText : flatText)(chunks[lastChunk]!, version);

  const encoder = (_typeUrl: string, resource: object): Uint8Array => encodeExtensionConfig(resource);
  const cache = new SnapshotCache({ encoders: Object.fromEntries(Object.values(ExtensionTypeUrls).map((u) => [u, encoder])) });
  const book = new StatusBook([new LatestStatuses()]);
  const files = new Map<string, RawResource[]>();
  let lastAccepted = new Map<string, LegateResource>();
  let lastServed = new Map<string, VirtualHostIR>();
  let memo: PipelineMemo | undefined;
  let routes = 0;
  const reconcile = (): void => {
    const out = runPipeline({ resources: [...files.values()].flat(), lastAccepted, lastServed, ...(memo ? { memo } : {}), options: {} });
    lastAccepted = out.accepted;
    lastServed = out.served;
    memo = out.memo;
    book.translated(out);
    for (const [role, snap] of out.xds) book.nacks.served(role, cache.set(role, snap));
    routes = [...out.served.values()].reduce((n, vh) => n + vh.routes.length, 0);
  };

  const c0 = cpuMs();
  files.set('upstream.yaml', parse('upstream.yaml', upstreamYaml(18080)));
  for (const [file, text] of texts) files.set(file, parse(file, text));
  reconcile();
  const loadMs = cpuMs() - c0;
  const loadRoutes = routes;
  const loadEndedAt = performance.now();
  const edits: number[] = [];
  for (let e = 0; e < EDITS; e++) {
    // the text is the editor's work, not the controller's
    const text = editText(e + 2);
    const c = cpuMs();
    files.set(editFile, parse(editFile, text));
    reconcile();
    edits.push(cpuMs() - c);
  }
  return { loadMs, loadEndedAt, editMs: median(edits), routes: loadRoutes };
}

if (mode === 'flat' || mode === 'delegated') {
  const t0 = performance.now();
  const r = runMode(mode === 'delegated');
  process.stdout.write(JSON.stringify({ ...r, wallMs: performance.now() - t0 }) + '\n');
} else {
  const self = fileURLToPath(import.meta.url);
  const once = (m: string): Result => {
    const child = spawnSync(process.execPath, [...process.execArgv, self, ...args, '--mode', m], { encoding: 'utf8' });
    if (child.status !== 0) throw new Error(`${m}: exited ${child.status}\n${child.stderr}`);
    return JSON.parse(child.stdout.trim().split('\n').pop()!) as Result;
  };
  const runs: Record<'flat' | 'delegated', Result[]> = { flat: [], delegated: [] };
  for (let r = 0; r < REPEATS; r++) {
    for (const m of ['flat', 'delegated'] as const) runs[m].push(once(m));
    const [f, d] = [runs.flat[r]!, runs.delegated[r]!];
    console.log(
      `repeat ${r + 1}: load ${f.loadMs.toFixed(0)} / ${d.loadMs.toFixed(0)} ms, edit ${f.editMs.toFixed(1)} / ${d.editMs.toFixed(1)} ms ` +
        `(flat / delegated; routes ${f.routes} / ${d.routes})`,
    );
  }
  const load = (m: 'flat' | 'delegated'): number => median(runs[m].map((x) => x.loadMs));
  const edit = (m: 'flat' | 'delegated'): number => median(runs[m].map((x) => x.editMs));
  console.log(
    `${N} VirtualServices, ${N * TABLES} RouteTables, ${EDITS} edits, median of ${REPEATS}: ` +
      `CPU per load flat ${load('flat').toFixed(0)} ms, delegated ${load('delegated').toFixed(0)} ms ` +
      `(${(load('delegated') / load('flat')).toFixed(2)}x); CPU per edit flat ${edit('flat').toFixed(1)} ms, ` +
      `delegated ${edit('delegated').toFixed(1)} ms (${(edit('delegated') / edit('flat')).toFixed(2)}x)`,
  );
}
