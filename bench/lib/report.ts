// Tables (markdown pipe tables, also what the terminal shows) from scenario records.
import type { Aim, LoadResult, ScenarioRecord } from './types.js';

export interface RunInfo {
  date: string;
  machine: string;
  node: string;
  envoy: string;
  tool: string;
  load: string;
  pinning: string;
}

export function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const numeric = header.map((_, i) => rows.length > 0 && rows.every((r) => /^[-+]?[\d.,]+[×x%]?$|^-$|^n\/a$/.test(r[i] ?? '')));
  const cell = (s: string, i: number): string => (numeric[i] ? s.padStart(widths[i]!) : s.padEnd(widths[i]!));
  const line = (cells: string[]): string => `| ${cells.map(cell).join(' | ')} |`;
  const rule = `|${widths.map((w, i) => (numeric[i] ? '-'.repeat(w + 1) + ':' : '-'.repeat(w + 2))).join('|')}|`;
  return [line(header), rule, ...rows.map(line)].join('\n');
}

const num = (v: number | undefined, digits = 0): string =>
  v === undefined || !Number.isFinite(v)
    ? '-'
    : v.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a: number | undefined, b: number | undefined): string =>
  a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? '-' : `${(a / b).toFixed(2)}×`;

function loadOf(records: ScenarioRecord[], name: string): LoadResult | undefined {
  const r = records.find((x) => x.name === name)?.result;
  return r?.kind === 'load' ? r : undefined;
}

export function loadTable(records: ScenarioRecord[]): string | undefined {
  const base = loadOf(records, 'direct');
  const rows: string[][] = [];
  for (const rec of records) {
    const r = rec.result;
    if (r?.kind !== 'load') continue;
    const s = r.stats;
    rows.push([
      rec.name,
      num(s.rps),
      `${num(r.rpsSpreadPct)}%`,
      num(s.p50Ms, 2),
      num(s.p99Ms, 2),
      num(s.errors),
      num(r.serverUs, 1),
      ratio(s.rps, base?.stats.rps),
      ratio(s.p50Ms, base?.stats.p50Ms),
      ratio(s.p99Ms, base?.stats.p99Ms),
      ratio(r.serverUs, base?.serverUs),
    ]);
  }
  if (!rows.length) return undefined;
  return table(
    [
      'scenario',
      'req/s',
      'round spread',
      'p50 ms',
      'p99 ms',
      'errors',
      'server CPU µs/req',
      'req/s vs direct',
      'p50 vs direct',
      'p99 vs direct',
      'server CPU vs direct',
    ],
    rows,
  );
}

/** CPU per request by role (columns) and by process (the last column), µs. */
export function cpuTable(records: ScenarioRecord[]): string | undefined {
  const rows: string[][] = [];
  for (const rec of records) {
    const r = rec.result;
    if (r?.kind !== 'load') continue;
    const byProcess = r.cpu
      .filter((c) => c.role !== 'control-plane')
      .map((c) => `${c.label} ${num(c.usPerRequest, 1)}`)
      .join(', ');
    rows.push([
      rec.name,
      num(r.proxyUs, 1),
      num(r.extensionUs, 1),
      num(r.appUs, 1),
      num(r.upstreamUs, 1),
      num(r.providerUs, 1),
      num(r.serverUs, 1),
      byProcess,
    ]);
  }
  if (!rows.length) return undefined;
  return table(['scenario', 'Envoy', 'extensions', 'app server', 'upstream', 'provider', 'server', 'by process'], rows);
}

/** Ratios of each scenario against the scenarios it names in `compareTo`, with its aims. */
export function comparisonTable(records: ScenarioRecord[]): string | undefined {
  const rows: string[][] = [];
  for (const rec of records) {
    const a = rec.result?.kind === 'load' ? rec.result : undefined;
    if (!a) continue;
    for (const other of rec.compareTo) {
      const b = loadOf(records, other);
      if (!b) continue;
      const aim = rec.aims?.[other];
      const met = aim === undefined ? '' : aimVerdict(aim, a, b, (name) => loadOf(records, name));
      rows.push([
        `${rec.name} / ${other}`,
        ratio(a.stats.rps, b.stats.rps),
        ratio(a.stats.p50Ms, b.stats.p50Ms),
        ratio(a.stats.p99Ms, b.stats.p99Ms),
        ratio(a.serverUs, b.serverUs),
        met,
      ]);
    }
  }
  if (!rows.length) return undefined;
  return table(['comparison', 'req/s', 'p50', 'p99', 'server CPU/req', 'aim'], rows);
}

const verdict = (ok: boolean): string => (ok ? 'met' : 'NOT met');
const signed = (v: number, digits = 0): string => `${v >= 0 ? '+' : '-'}${num(Math.abs(v), digits)}`;

/** An aim of `a` against `b`, with each bound's verdict (see Aim). */
export function aimVerdict(aim: Aim, a: LoadResult, b: LoadResult, load: (name: string) => LoadResult | undefined): string {
  const rps = a.stats.rps / b.stats.rps;
  if (typeof aim === 'number') return `>= ${aim.toFixed(2)}×: ${verdict(rps >= aim)}`;
  const parts: string[] = [];
  const [withIt, without] = aim.isolated ? [load(aim.isolated[0]), load(aim.isolated[1])] : [];
  const isolatedUs = withIt && without ? withIt.serverUs - without.serverUs : undefined;
  if (aim.minRps !== undefined) {
    parts.push(`req/s >= ${aim.minRps.toFixed(2)}×: ${verdict(rps >= aim.minRps)}`);
    // on one core, req/s ~ 1 / server CPU per request: the same bound on CPU
    const byCpu = b.serverUs / a.serverUs;
    if (aim.alsoByCpu) parts.push(`by CPU/req: ${verdict(byCpu >= aim.minRps)} (${byCpu.toFixed(2)}×)`);
    if (isolatedUs !== undefined) {
      const est = b.serverUs / (b.serverUs + isolatedUs);
      parts.push(`by the isolated cost: ${verdict(est >= aim.minRps)} (${est.toFixed(2)}×)`);
    }
  }
  if (aim.maxAddedP50Us !== undefined) {
    const added = (a.stats.p50Ms - b.stats.p50Ms) * 1000;
    parts.push(`p50 added <= ${aim.maxAddedP50Us} µs: ${verdict(added <= aim.maxAddedP50Us)} (${signed(added)} µs)`);
    if (isolatedUs !== undefined)
      parts.push(`by the isolated cost: ${verdict(isolatedUs <= aim.maxAddedP50Us)} (${signed(isolatedUs, 1)} µs)`);
  }
  if (aim.isolated && isolatedUs === undefined) parts.push(`(${aim.isolated.join(' / ')} not measured)`);
  return parts.join('; ');
}

/**
 * Where the difference between the two scenarios of a comparison goes, when both are served by the
 * same processes (same labels): p50 and CPU per request, in all and by process (µs).
 */
export function differenceTable(records: ScenarioRecord[]): string | undefined {
  const rows: string[][] = [];
  const served = (r: LoadResult): Map<string, number> =>
    new Map(r.cpu.filter((c) => c.role !== 'control-plane').map((c) => [c.label, c.usPerRequest]));
  for (const rec of records) {
    const a = rec.result?.kind === 'load' ? rec.result : undefined;
    if (!a) continue;
    for (const other of rec.compareTo) {
      const b = loadOf(records, other);
      if (!b) continue;
      const pa = served(a);
      const pb = served(b);
      if (pa.size !== pb.size || [...pa.keys()].some((k) => !pb.has(k))) continue;
      const byProcess = [...pa.entries()]
        .filter(([label, us]) => Math.max(us, pb.get(label)!) >= 1)
        .map(([label, us]) => `${label} ${num(pb.get(label), 1)} → ${num(us, 1)} (${signed(us - pb.get(label)!, 1)})`)
        .join(', ');
      rows.push([`${rec.name} / ${other}`, signed((a.stats.p50Ms - b.stats.p50Ms) * 1000), signed(a.serverUs - b.serverUs, 1), byProcess]);
    }
  }
  if (!rows.length) return undefined;
  return table(['comparison', 'Δ p50 µs', 'Δ server CPU µs/req', 'by process, µs/req: second → first (Δ)'], rows);
}

export function figureTables(records: ScenarioRecord[]): { name: string; text: string }[] {
  const out: { name: string; text: string }[] = [];
  for (const rec of records) {
    if (rec.result?.kind !== 'figures') continue;
    const rows = rec.result.figures.map((f) => [f.name, `${f.value}${f.unit ? ` ${f.unit}` : ''}`, f.note ?? '']);
    out.push({ name: rec.name, text: table(['metric', 'value', 'detail'], rows) });
  }
  return out;
}

export function render(info: RunInfo, records: ScenarioRecord[]): string {
  const parts: string[] = [
    `Legate benchmarks, ${info.date}`,
    '',
    `- machine: ${info.machine}`,
    `- node ${info.node}, Envoy ${info.envoy}`,
    `- load: ${info.tool}, ${info.load}`,
    `- pinning: ${info.pinning}`,
    '',
  ];
  const load = loadTable(records);
  if (load) {
    parts.push(
      'Load (loopback; the request of each scenario is in docs/benchmarks.md). req/s: all rounds together; round',
      "spread: (max - min) / mean of the rounds' req/s; p50/p99: median of the rounds'; server CPU: user+system",
      'time of the server processes per request (control plane excluded).',
      '',
      load,
      '',
    );
  }
  const cpu = cpuTable(records);
  if (cpu) parts.push('CPU per request by role and by process (µs of user+system time per request):', '', cpu, '');
  const cmp = comparisonTable(records);
  if (cmp) parts.push('Comparisons (ratio of the first to the second):', '', cmp, '');
  const diff = differenceTable(records);
  if (diff)
    parts.push(
      'Differences of the comparisons served by the same processes (first minus second; processes under 1 µs/req left out):',
      '',
      diff,
      '',
    );
  for (const f of figureTables(records)) parts.push(`${f.name}:`, '', f.text, '');
  const notes = records.flatMap((r) => (r.result?.notes ?? []).map((n) => `- ${r.name}: ${n}`));
  if (notes.length) parts.push('Notes:', '', ...notes, '');
  const skipped = records.filter((r) => r.skipped);
  if (skipped.length) parts.push('Skipped:', '', ...skipped.map((r) => `- ${r.name}: ${r.skipped}`), '');
  const failed = records.filter((r) => !r.ok);
  if (failed.length)
    parts.push('FAILED:', '', ...failed.map((r) => `- ${r.name}: ${(r.error ?? '').split('\n').slice(0, 8).join('\n  ')}`), '');
  return parts.join('\n');
}
