// One measured round of a load scenario, or of a group at once (warmup, then wrk with the server
// processes' CPU time read before and after), and the aggregate of a scenario's rounds.
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

/**
 * One measured round of one target, or of several at once (a group, see LoadScenario.group): the warmups, then
 * the measured runs, are started together; each target gets its own wrk and its own processes' CPU.
 */
export async function measureTogether(tool: LoadTool, settings: Settings, targets: LoadTarget[]): Promise<Round[]> {
  const specs = targets.map((target) => ({
    port: target.port,
    path: target.path,
    host: target.host,
    request: target.request,
    connections: target.connections ?? settings.connections,
    threads: settings.threads,
    durationS: settings.durationS,
    cpus: settings.loadCpus,
  }));
  if (settings.warmupS > 0) await Promise.all(specs.map((spec) => tool.run({ ...spec, durationS: settings.warmupS })));
  const counters0 = await Promise.all(targets.map(async (t) => (await t.counters?.()) ?? {}));
  const before = targets.map((t) => t.processes.map((p) => cpuSeconds(p.pid)));
  const machine0 = machineCpu();
  const self0 = selfAndReapedChildrenCpu();
  const t0 = performance.now();
  const stats = await Promise.all(specs.map((spec) => tool.run(spec)));
  const wallS = (performance.now() - t0) / 1000;
  const self1 = selfAndReapedChildrenCpu();
  const machine1 = machineCpu();
  const after = targets.map((t) => t.processes.map((p) => cpuSeconds(p.pid)));
  const counters1 = await Promise.all(targets.map(async (t) => (await t.counters?.()) ?? {}));
  const cpu = after.map((a, i) => a.map((x, j) => x - before[i]![j]!));
  // ours: the measured servers (each process once), this runner and the load generators (reaped, so
  // counted as our children)
  const byPid = new Map<number, number>();
  targets.forEach((t, i) => t.processes.forEach((p, j) => byPid.set(p.pid, cpu[i]![j]!)));
  const ours = [...byPid.values()].reduce((a, b) => a + b, 0) + (self1 - self0);
  const other = Math.max(0, machine1.busy - machine0.busy - ours);
  const otherCpuPct = (other / wallS) * 100;
  const stealPct = ((machine1.steal - machine0.steal) / wallS) * 100;
  return targets.map((t, i) => {
    if (stats[i]!.requests === 0) throw new Error(`no request completed: ${JSON.stringify(stats[i]!.errorDetail)}`);
    const c0 = counters0[i]!;
    const counters = Object.fromEntries(Object.entries(counters1[i]!).map(([k, v]) => [k, v - (c0[k] ?? 0)]));
    return { stats: stats[i]!, cpu: cpu[i]!, otherCpuPct, stealPct, counters };
  });
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

export function aggregate(target: LoadTarget, rounds: Round[], settings: Settings): LoadResult {
  const requests = rounds.reduce((a, r) => a + r.stats.requests, 0);
  const durationS = rounds.reduce((a, r) => a + r.stats.durationS, 0);
  const errorDetail: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.stats.errorDetail)) errorDetail[k] = (errorDetail[k] ?? 0) + v;
  // a rejection scenario: the non-2xx answers are the point, not errors
  const rejecting = target.expectedStatus !== undefined && target.expectedStatus >= 400;
  const isStatus = (k: string): boolean => k.startsWith('non2xx');
  const statusAnswers = Object.entries(errorDetail).reduce((a, [k, v]) => a + (isStatus(k) ? v : 0), 0);
  const stats: LoadStats = {
    requests,
    durationS,
    rps: requests / durationS,
    p50Ms: median(rounds.map((r) => r.stats.p50Ms)),
    p90Ms: median(rounds.map((r) => r.stats.p90Ms)),
    p99Ms: median(rounds.map((r) => r.stats.p99Ms)),
    maxMs: Math.max(...rounds.map((r) => r.stats.maxMs)),
    // rejecting: socket errors and timeouts, plus the answers that were not refusals
    errors: rounds.reduce((a, r) => a + r.stats.errors, 0) + (rejecting ? requests - 2 * statusAnswers : 0),
    errorDetail: rejecting
      ? { ...Object.fromEntries(Object.entries(errorDetail).filter(([k]) => !isStatus(k))), notRefused: requests - statusAnswers }
      : errorDetail,
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
  if (target.connections !== undefined && target.connections !== settings.connections)
    notes.push(`${target.connections} connection(s) (not ${settings.connections})`);
  if (rejecting) {
    const all = statusAnswers === requests;
    notes.push(
      all
        ? `all ${requests.toLocaleString('en-US')} responses were >= 400, as expected (${target.expectedStatus}; not counted as errors)`
        : `only ${statusAnswers.toLocaleString('en-US')} of ${requests.toLocaleString('en-US')} responses were >= 400 (expected: all ` +
            `${target.expectedStatus})`,
    );
  }
  if (stats.errors > 0) notes.push(`${stats.errors} errors: ${JSON.stringify(errorDetail)}`);
  const busiest = Math.max(...rounds.map((r) => r.otherCpuPct + r.stealPct));
  if (busiest > 15)
    notes.push(
      `other work on the machine took up to ${busiest.toFixed(0)}% of a core during a round (background processes or hypervisor steal): ` +
        `expect noise`,
    );
  const totals: Record<string, number> = {};
  for (const r of rounds) for (const [k, v] of Object.entries(r.counters)) totals[k] = (totals[k] ?? 0) + v;
  const perRequest = Object.fromEntries(Object.entries(totals).map(([k, v]) => [k, v / requests]));
  const perReq = (v: number): string => (v === 0 || v >= 0.1 ? v.toFixed(2) : v.toPrecision(2));
  if (Object.keys(totals).length) {
    notes.push(
      `per measured request: ${Object.entries(totals)
        .map(([k, v]) => `${k} ${perReq(v / requests)}${v !== 0 && v / requests < 0.1 ? ` (${v} in all)` : ''}`)
        .join(', ')}`,
    );
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
