// Micro-benchmark of one edit at config scale (not a test): the controller's work between a file
// change and an xDS push, stage by stage, for config-scale's VirtualServices (1,000 x 10 routes by
// default), in this process, without Envoy.
//
//   node --import tsx bench/micro/config-pipeline.ts [--vs 1000] [--routes 10] [--files 10] [--edits 15] [--full]
//
// Stages timed per edit (median over the edits): parse (the edited file's YAML), pipeline (runPipeline:
// validate, discover, translate, render), status (StatusBook: the API's view), cache (SnapshotCache.set:
// canonical JSON, hashing, encoding). The first, full load is reported apart.
import { performance } from 'node:perf_hooks';
import { runPipeline, type PipelineMemo, type PipelineOutput } from '../../controller/pipeline.js';
import type { LegateResource } from '../../controller/api/resources.js';
import type { RawResource } from '../../controller/api/meta.js';
import { parseResourcesReusing, type DocumentMemo } from '../../controller/source/parse.js';
import { LatestStatuses, StatusBook } from '../../controller/status/book.js';
import type { VirtualHostIR } from '../../controller/translate/ir.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { ExtensionTypeUrls, encodeExtensionConfig } from '../../common/contract.js';
import { upstreamYaml } from '../lib/resources.js';
import { vsYaml } from '../scenarios/config-scale.js';
import { numberOption } from '../lib/args.js';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number): number => numberOption(name, dflt, args);
const N = opt('vs', 1000);
const ROUTES = opt('routes', 10);
const FILES = opt('files', 10);
const EDITS = opt('edits', 15);

const perFile = Math.ceil(N / FILES);
const fileText = (f: number, versions: ReadonlyMap<number, number>): string => {
  const docs: string[] = [];
  for (let i = f * perFile; i < Math.min(N, (f + 1) * perFile); i++) docs.push(vsYaml(i, ROUTES, versions.get(i) ?? 1));
  return docs.join('---\n');
};

// --full: no reuse between runs (every edit parses its whole file and runs the whole pipeline)
const full = args.includes('--full');
const docMemos = new Map<string, DocumentMemo>();
function parse(file: string, text: string): RawResource[] {
  const parsed = parseResourcesReusing(text, file, full ? undefined : docMemos.get(file));
  docMemos.set(file, parsed.memo);
  return parsed.resources;
}

const files = new Map<string, RawResource[]>();
files.set('upstream.yaml', parse('upstream.yaml', upstreamYaml(18080)));
const versions = new Map<number, number>();
let t = performance.now();
for (let f = 0; f < FILES; f++) files.set(`vs-${f}.yaml`, parse(`vs-${f}.yaml`, fileText(f, versions)));
const loadParse = performance.now() - t;

const encoder = (_typeUrl: string, resource: object): Uint8Array => encodeExtensionConfig(resource);
const cache = new SnapshotCache({ encoders: Object.fromEntries(Object.values(ExtensionTypeUrls).map((u) => [u, encoder])) });
const book = new StatusBook([new LatestStatuses()]);
let lastAccepted = new Map<string, LegateResource>();
let lastServed = new Map<string, VirtualHostIR>();
let memo: PipelineMemo | undefined;

interface Timing {
  parse: number;
  pipeline: number;
  status: number;
  cache: number;
}

function reconcile(): Timing & { out: PipelineOutput } {
  const resources = [...files.values()].flat();
  const t0 = performance.now();
  const out = runPipeline({ resources, lastAccepted, lastServed, ...(memo && !full ? { memo } : {}), options: {} });
  const t1 = performance.now();
  lastAccepted = out.accepted;
  lastServed = out.served;
  memo = out.memo;
  book.translated(out);
  const t2 = performance.now();
  for (const [role, snap] of out.xds) book.nacks.served(role, cache.set(role, snap));
  const t3 = performance.now();
  return { parse: 0, pipeline: t1 - t0, status: t2 - t1, cache: t3 - t2, out };
}

const load = reconcile();
console.log(
  `load: ${N} VirtualServices x ${ROUTES} routes; parse ${loadParse.toFixed(0)} ms, pipeline ${load.pipeline.toFixed(0)} ms, ` +
    `status ${load.status.toFixed(0)} ms, cache ${load.cache.toFixed(0)} ms`,
);

const edits: Timing[] = [];
const last = N - 1;
const lastFile = Math.floor(last / perFile);
for (let e = 0; e < EDITS; e++) {
  versions.set(last, e + 2);
  t = performance.now();
  files.set(`vs-${lastFile}.yaml`, parse(`vs-${lastFile}.yaml`, fileText(lastFile, versions)));
  const parseMs = performance.now() - t;
  const r = reconcile();
  edits.push({ parse: parseMs, pipeline: r.pipeline, status: r.status, cache: r.cache });
}
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const col = (k: keyof Timing): string => `${k} ${median(edits.map((x) => x[k])).toFixed(1)} ms`;
const total = median(edits.map((x) => x.parse + x.pipeline + x.status + x.cache));
console.log(
  `edit (median of ${EDITS}): ${col('parse')}, ${col('pipeline')}, ${col('status')}, ${col('cache')}; total ${total.toFixed(1)} ms`,
);
