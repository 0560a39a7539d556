// One measured round of a load scenario (warmup, then wrk with the server processes' CPU time read
// before and after), and the aggregate of a scenario's rounds.
import { performance } from 'node:perf_hooks';
import type { LoadStats, LoadTool } from './load.js';
import { cpuSeconds, machineCpu, selfAndReapedChildrenCpu } from './procs.js';
import type { CpuShare, LoadResult, LoadTarget, RoundStats, Settings } from './types.js';

export interface Round {
  stats: LoadStats;
  /** CPU seconds per process of the target, same order as target.processes */
  cpu: number[];
  /** CPU used on the machine by anything but this benchmark's measured processes, % of one core */
  otherCpuPct: number;
  /** CPU stolen by the hypervisor, % of one core */
  stealPct: number;
  /** growth of the target's counters over the measured run */
  counters: Record<string, number>;
}

export async function measureRound(tool: LoadTool, settings: Settings, target: LoadTarget): Promise<Round> {
  const spec = {
    port: target.port,
    path: target.path,
    host: target.host,
    request: target.request,
    connections: settings.connections,
    threads: settings.threads,
    durationS: settings.durationS,
    cpus: settings.loadCpus,
  };
  if (settings.warmupS > 0) await tool.run({ ...spec, durationS: settings.warmupS });
  const counters0 = (await target.counters?.()) ?? {};
  const before = target.processes.map((p) => cpuSeconds(p.pid));
  const machine0 = machineCpu();
  const self0 = selfAndReapedChildrenCpu();
  const t0 = performance.now();
  const stats = await tool.run(spec);
  const wallS = (performance.now() - t0) / 1000;
  const self1 = selfAndReapedChildrenCpu();
  const machine1 = machineCpu();
  const after = target.processes.map((p) => cpuSeconds(p.pid));
  const counters1 = (await target.counters?.()) ?? {};
  const counters = Object.fromEntries(Object.entries(counters1).map(([k, v]) => [k, v - (counters0[k] ?? 0)]));
  if (stats.requests === 0) throw new Error(`no request completed: ${JSON.stringify(stats.errorDetail)}`);
  const cpu = after.map((a, i) => a - before[i]!);
  // ours: the measured servers, this runner and the load generator (reaped, so counted as our child)
  const ours = cpu.reduce((a, b) => a + b, 0) + (self1 - self0);
  const other = Math.max(0, machine1.busy - machine0.busy - ours);
  return { stats, cpu, otherCpuPct: (other / wallS) * 100, stealPct: ((machine1.steal - machine0.steal) / wallS) * 100, counters };
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export function aggregate(target: LoadTarget, rounds: Round[]): LoadResult {
  const requests = rounds.reduce((a, r) => a + r.stats.requests, 0);
  const durationS = rounds.reduce((a, r) => a + r.stats.durationS, 0);
  const errorDetail: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.stats.errorDetail)) errorDetail[k] = (errorDetail[k] ?? 0) + v;
  const stats: LoadStats = {
    requests,
    durationS,
    rps: requests / durationS,
    p50Ms: median(rounds.map((r) => r.stats.p50Ms)),
    p90Ms: median(rounds.map((r) => r.stats.p90Ms)),
    p99Ms: median(rounds.map((r) => r.stats.p99Ms)),
    maxMs: Math.max(...rounds.map((r) => r.stats.maxMs)),
    errors: rounds.reduce((a, r) => a + r.stats.errors, 0),
    errorDetail,
  };
  const cpu: CpuShare[] = target.processes.map((p, i) => {
    const seconds = rounds.reduce((a, r) => a + r.cpu[i]!, 0);
    return { label: p.label, role: p.role, cpuSeconds: seconds, usPerRequest: (seconds / requests) * 1e6 };
  });
  const byRole = (role: CpuShare['role']): number | undefined => {
    const mine = cpu.filter((c) => c.role === role);
    return mine.length ? mine.reduce((a, c) => a + c.usPerRequest, 0) : undefined;
  };
  const perRound: RoundStats[] = rounds.map((r) => ({
    rps: r.stats.rps,
    p50Ms: r.stats.p50Ms,
    p99Ms: r.stats.p99Ms,
    requests: r.stats.requests,
    errors: r.stats.errors,
    otherCpuPct: r.otherCpuPct,
    stealPct: r.stealPct,
  }));
  const rpsList = perRound.map((r) => r.rps);
  const notes = [...(target.notes ?? [])];
  if (stats.errors > 0) notes.push(`${stats.errors} errors: ${JSON.stringify(errorDetail)}`);
  const busiest = Math.max(...rounds.map((r) => r.otherCpuPct + r.stealPct));
  if (busiest > 15) notes.push(`other work on the machine took up to ${busiest.toFixed(0)}% of a core during a round (background processes or hypervisor steal): expect noise`);
  const totals: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.counters)) totals[k] = (totals[k] ?? 0) + v;
  const perRequest = Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v / requests]));
  const perReq = (v: number): string => (v === 0 || v >= 0.1 ? v.toFixed(2) : v.toPrecision(2));
  if (Object.keys(totals).length) {
    notes.push(`per measured request: ${Object.entries(totals).map(([k, v]) => `${k} ${perReq(v / requests)}${v !== 0 && v / requests < 0.1 ? ` (${v} in all)` : ''}`).join(', ')}`);
  }
  const cp = cpu.find((c) => c.role === 'control-plane');
  if (cp && cp.cpuSeconds > 0.2 * rounds.length) notes.push(`${cp.label} used ${cp.cpuSeconds.toFixed(2)} s of CPU while under load`);
  return {
    kind: 'load',
    target: `http://127.0.0.1:${target.port}${target.path}${target.host ? ` (Host ${target.host})` : ''}`,
    stats,
    rounds: perRound,
    rpsSpreadPct: ((Math.max(...rpsList) - Math.min(...rpsList)) / stats.rps) * 100,
    cpu,
    perRequest,
    proxyUs: byRole('proxy'),
    upstreamUs: byRole('upstream'),
    extensionUs: byRole('extension'),
    appUs: byRole('app'),
    providerUs: byRole('provider'),
    serverUs: cpu.filter((c) => c.role !== 'control-plane').reduce((a, c) => a + c.usPerRequest, 0),
    notes,
  };
}
