// `make bench`: runs the scenarios of bench/scenarios on loopback, prints a table with the baseline
// measured in the same run, and writes bench/results/latest.{json,md}. See docs/benchmarks.md.
//
//   node --import tsx bench/run.ts [--only a,b] [--skip a,b] [--rounds 3] [--duration 4] [--warmup 1]
//     [--connections 32] [--threads 1] [--quiet-pct 30] [--max-repeats 4] [--no-pin] [--scale-vs 1000] [--scale-routes 10]
//     [--scale-files 10] [--edits 3] [--keep] [--list]
//   (make bench BENCH_ARGS="--only direct,legate-route")
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { envoyPath } from './lib/legate.js';
import { findLoadTool, tempWorkDir } from './lib/load.js';
import { closeClient, waitFor } from './lib/net.js';
import { aggregate, measureTogether, type Round } from './lib/measure.js';
import { cpuSeconds, hasTaskset, installCleanupHandlers, isInterrupted, startProcess, stopAll } from './lib/procs.js';
import { render, type RunInfo } from './lib/report.js';
import {
  ScenarioSkipped,
  type Aim,
  type BenchContext,
  type LoadScenario,
  type LoadTarget,
  type ScenarioRecord,
  type Settings,
  type Upstream,
} from './lib/types.js';
import { SCENARIOS } from './scenarios/index.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const log = (msg: string): void => void process.stderr.write(`bench: ${msg}\n`);

function positiveInt(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name}: expected a whole number, got ${JSON.stringify(value)}`);
  return n;
}

function parseSettings(argv: string[]): { settings: Settings; only?: string[]; skip: string[]; list: boolean; keep: boolean } {
  const { values } = parseArgs({
    args: argv,
    options: {
      only: { type: 'string' },
      skip: { type: 'string' },
      rounds: { type: 'string' },
      duration: { type: 'string' },
      warmup: { type: 'string' },
      connections: { type: 'string' },
      'quiet-pct': { type: 'string' },
      'max-repeats': { type: 'string' },
      threads: { type: 'string' },
      'no-pin': { type: 'boolean' },
      keep: { type: 'boolean' },
      'scale-vs': { type: 'string' },
      'scale-routes': { type: 'string' },
      'scale-files': { type: 'string' },
      edits: { type: 'string' },
      list: { type: 'boolean' },
    },
  });
  // Two cores: the load generator gets the last CPU, every server process (upstream, Envoy, the
  // controller, extensions) the others, so the client never steals the servers' CPU.
  const cpus = os.cpus().length;
  const pin = !values['no-pin'] && cpus >= 2 && hasTaskset();
  const split = (s: string | undefined): string[] | undefined =>
    s
      ?.split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  const only = split(values.only);
  return {
    settings: {
      durationS: Math.max(1, positiveInt(values.duration, 'duration', 4)),
      warmupS: positiveInt(values.warmup, 'warmup', 1),
      rounds: Math.max(1, positiveInt(values.rounds, 'rounds', 3)),
      quietPct: positiveInt(values['quiet-pct'], 'quiet-pct', 30),
      connections: positiveInt(values.connections, 'connections', 32),
      threads: positiveInt(values.threads, 'threads', 1),
      maxRepeats: positiveInt(values['max-repeats'], 'max-repeats', 4),
      loadCpus: pin ? String(cpus - 1) : undefined,
      serverCpus: pin ? (cpus === 2 ? '0' : `0-${cpus - 2}`) : undefined,
      scale: {
        virtualServices: positiveInt(values['scale-vs'], 'scale-vs', 1000),
        routesPerVs: Math.max(1, positiveInt(values['scale-routes'], 'scale-routes', 10)),
        files: Math.max(1, positiveInt(values['scale-files'], 'scale-files', 10)),
        edits: Math.max(1, positiveInt(values.edits, 'edits', 3)),
      },
    },
    ...(only ? { only } : {}),
    skip: split(values.skip) ?? [],
    list: values.list ?? false,
    keep: values.keep ?? false,
  };
}

function envoyVersion(): string {
  const r = spawnSync(envoyPath(ROOT), ['--version'], { encoding: 'utf8', timeout: 30_000 });
  return /version: \S+?\/([\d.]+)\//.exec(r.stdout ?? '')?.[1] ?? 'unknown';
}

function machine(): string {
  const cpu = os.cpus()[0]?.model.trim() ?? 'unknown CPU';
  return `${os.cpus().length} x ${cpu}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Linux ${os.release()}`;
}

async function main(): Promise<number> {
  const { settings, only, skip, list, keep } = parseSettings(process.argv.slice(2));
  if (list) {
    const width = Math.max(...SCENARIOS.map((s) => s.name.length)) + 1;
    for (const s of SCENARIOS) process.stdout.write(`${s.name.padEnd(width)} ${s.description}\n`);
    return 0;
  }
  const unknown = [...(only ?? []), ...skip].filter((n) => !SCENARIOS.some((s) => s.name === n));
  if (unknown.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')} (see --list)`);
  const selected = SCENARIOS.filter((s) => (!only || only.includes(s.name)) && !skip.includes(s.name));
  for (const f of ['dist/legate.js', 'bin/legate.js']) {
    if (!fs.existsSync(path.join(ROOT, f)))
      throw new Error(`${f} is missing: run 'make bench' (it builds first) or 'node scripts/build.mjs'`);
  }
  if (!fs.existsSync(envoyPath(ROOT))) throw new Error(`Envoy not found at ${envoyPath(ROOT)}: run ./envoy/install.sh`);

  installCleanupHandlers();
  const workDir = tempWorkDir();
  // also on Ctrl-C, which exits from the signal handler once the children are stopped
  if (!keep) process.on('exit', () => fs.rmSync(workDir, { recursive: true, force: true }));
  const deferred: (() => Promise<void> | void)[] = [];
  const records: ScenarioRecord[] = [];
  let info: RunInfo | undefined;
  try {
    const tool = findLoadTool(workDir, log);
    info = {
      date: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
      machine: machine(),
      node: process.version,
      envoy: envoyVersion(),
      tool: `${tool.name} ${tool.version}`,
      load:
        `${settings.threads} thread(s), ${settings.connections} connections, keep-alive; ${settings.rounds} interleaved rounds per ` +
        `scenario, each ${settings.durationS} s measured after ${settings.warmupS} s warmup`,
      pinning: settings.loadCpus
        ? `load generator on CPU ${settings.loadCpus}; every server process (upstreams, legate run with its controller, Envoy and ` +
          `extensions, the GraphQL peers, the OAuth2 provider) on CPU ${settings.serverCpus} (taskset); config-scale not pinned`
        : 'none',
    };
    log(`${info.tool}; ${info.load}; pinning: ${info.pinning}`);

    let upstream: Promise<Upstream> | undefined;
    const ctx: BenchContext = {
      settings,
      tool,
      workDir,
      root: ROOT,
      log,
      facts: new Map(),
      defer: (fn) => void deferred.push(fn),
      upstream: () => (upstream ??= startUpstream(settings.serverCpus)),
    };
    const record = (s: { name: string; description: string; aims?: Record<string, Aim> }, compareTo: string[] = []): ScenarioRecord => {
      const rec: ScenarioRecord = {
        name: s.name,
        description: s.description,
        compareTo,
        ok: false,
        seconds: 0,
        ...(s.aims ? { aims: s.aims } : {}),
      };
      records.push(rec);
      return rec;
    };
    const failed = (rec: ScenarioRecord, err: unknown): void => {
      if (err instanceof ScenarioSkipped) {
        rec.ok = true;
        rec.skipped = err.message;
        log(`scenario ${rec.name} skipped: ${err.message}`);
        return;
      }
      rec.ok = false;
      rec.error = err instanceof Error ? err.message : String(err);
      log(`scenario ${rec.name} FAILED: ${rec.error.split('\n')[0]}`);
    };

    // ---- load scenarios: set all up, measure in interleaved rounds, stop all ----
    const loads: { scenario: LoadScenario; rec: ScenarioRecord; target?: LoadTarget; rounds: Round[]; repeats: number; started: number }[] =
      [];
    for (const scenario of selected) {
      if (scenario.kind !== 'load') continue;
      const rec = record(scenario, scenario.compareTo);
      const started = performance.now();
      log(`setting up ${scenario.name}: ${scenario.description}`);
      try {
        loads.push({ scenario, rec, target: await scenario.setup(ctx), rounds: [], repeats: 0, started });
      } catch (err) {
        failed(rec, err);
      }
    }
    const ready = loads.filter((l) => l.target);
    // slots: a scenario alone, or a group of scenarios measured at the same time (LoadScenario.group)
    type Load = (typeof loads)[number];
    const slots: Load[][] = [];
    for (const l of ready) {
      const g = l.scenario.group;
      const slot = g === undefined ? undefined : slots.find((s) => s[0]!.scenario.group === g);
      if (slot) slot.push(l);
      else slots.push([l]);
    }
    await untilIdle(ready.flatMap((l) => l.target!.processes.map((p) => p.pid)));
    let repeats = 0;
    try {
      // A round during which other work took more than `quietPct` of a core is measured again, once,
      // and the quieter of the two kept (at most `rounds` repeats per scenario, `maxRepeats` in all).
      const busy = (r: Round): number => r.otherCpuPct + r.stealPct;
      for (let round = 1; round <= settings.rounds; round++) {
        // rotate the order every round so no scenario always follows the same one, and reverse it every
        // other round so the two sides of a pair (listed next to each other) take turns going first
        const shift = (round - 1) % Math.max(1, slots.length);
        const order = [...slots.slice(shift), ...slots.slice(0, shift)];
        if (round % 2 === 0) order.reverse();
        for (const slot of order) {
          const live = slot.filter((l) => !l.rec.error);
          if (!live.length) continue;
          const show = (l: Load, x: Round, tag = ''): void => {
            const s = x.stats;
            log(
              `round ${round}/${settings.rounds}${tag} ${l.scenario.name.padEnd(26)} ${Math.round(s.rps).toString().padStart(6)} req/s  ` +
                `p50 ${s.p50Ms.toFixed(2)} ms  p99 ${s.p99Ms.toFixed(2)} ms  (other load ${x.otherCpuPct.toFixed(0)}%, steal ` +
                `${x.stealPct.toFixed(0)}%)${live.length > 1 ? ' [together]' : ''}`,
            );
          };
          try {
            let rs = await measureTogether(
              tool,
              settings,
              live.map((l) => l.target!),
            );
            live.forEach((l, i) => show(l, rs[i]!));
            const lead = live[0]!;
            if (busy(rs[0]!) > settings.quietPct && lead.repeats < settings.rounds && repeats < settings.maxRepeats) {
              for (const l of live) l.repeats++;
              repeats++;
              const again = await measureTogether(
                tool,
                settings,
                live.map((l) => l.target!),
              );
              live.forEach((l, i) => show(l, again[i]!, ' again'));
              if (busy(again[0]!) < busy(rs[0]!)) rs = again;
            }
            live.forEach((l, i) => l.rounds.push(rs[i]!));
          } catch (err) {
            for (const l of live) failed(l.rec, err);
          }
        }
      }
    } finally {
      for (const l of [...ready].reverse()) {
        try {
          await l.target!.stop();
        } catch (err) {
          log(`stopping ${l.scenario.name}: ${String(err)}`);
        }
      }
    }
    for (const l of ready) {
      if (!l.rec.error && l.rounds.length) {
        l.rec.result = aggregate(l.target!, l.rounds, settings);
        if (l.repeats) l.rec.result.notes.push(`${l.repeats} round(s) measured again because other work was running`);
        const mates = ready
          .filter((m) => m !== l && l.scenario.group !== undefined && m.scenario.group === l.scenario.group)
          .map((m) => m.scenario.name);
        if (mates.length)
          l.rec.result.notes.push(
            `measured at the same time as ${mates.join(', ')} (group ${l.scenario.group}): each got about 1/${mates.length + 1} of the ` +
              `server core`,
          );
        l.rec.ok = true;
      }
      l.rec.seconds = Math.round(performance.now() - l.started) / 1000;
    }

    // ---- everything else, one at a time ----
    for (const scenario of selected) {
      if (scenario.kind !== 'figures') continue;
      const rec = record(scenario);
      log(`scenario ${scenario.name}: ${scenario.description}`);
      const started = performance.now();
      try {
        rec.result = await scenario.run(ctx);
        rec.ok = true;
        log(`  done`);
      } catch (err) {
        failed(rec, err);
      }
      rec.seconds = Math.round(performance.now() - started) / 1000;
    }
  } finally {
    for (const fn of deferred.reverse()) {
      try {
        await fn();
      } catch (err) {
        log(`cleanup: ${String(err)}`);
      }
    }
    await stopAll();
    closeClient();
    if (keep) log(`kept the work directory (configs, state, logs): ${workDir}`);
    else fs.rmSync(workDir, { recursive: true, force: true });
  }

  if (isInterrupted()) return 130;
  const text = render(info, records);
  process.stdout.write('\n' + text);
  const outDir = path.join(ROOT, 'bench', 'results');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(path.join(outDir, 'latest.md'), text);
  fs.writeFileSync(path.join(outDir, 'latest.json'), JSON.stringify({ info, settings, scenarios: records }, null, 2) + '\n');
  log(`wrote ${path.relative(process.cwd(), path.join(outDir, 'latest.md'))} and latest.json`);
  return records.every((r) => r.ok) ? 0 : 1;
}

/**
 * Waits until the measured processes are idle (together under 5% of a core over a second, at most 60 s):
 * a freshly started `legate run` spends seconds of CPU loading its extensions after its routes are
 * served, and on the one server core that would land in the first round of whichever scenario came first.
 */
async function untilIdle(pids: number[]): Promise<void> {
  const unique = [...new Set(pids)];
  const total = (): number => unique.reduce((a, pid) => a + (fs.existsSync(`/proc/${pid}`) ? cpuSeconds(pid) : 0), 0);
  const t0 = performance.now();
  let before = total();
  for (;;) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = total();
    const pct = (now - before) * 100;
    before = now;
    if (pct < 5) break;
    if (performance.now() - t0 > 60_000) {
      log(`the servers never went idle (${pct.toFixed(0)}% of a core in the last second): measuring anyway`);
      return;
    }
  }
  log(`servers idle after ${((performance.now() - t0) / 1000).toFixed(1)} s`);
}

async function startUpstream(cpus: string | undefined): Promise<Upstream> {
  const p = startProcess('upstream', process.execPath, { args: [path.join(ROOT, 'bench', 'upstream.mjs')], cpus });
  const ready = await waitFor(
    'the upstream to listen',
    () => {
      const line = /\{"port":.*\}/.exec(p.output())?.[0];
      return line ? (JSON.parse(line) as { port: number; body: string }) : undefined;
    },
    { timeoutMs: 10_000, intervalMs: 20, abortIf: () => (p.alive() ? undefined : `upstream exited:\n${p.output()}`) },
  );
  return { port: ready.port, pid: p.pid, body: ready.body };
}

main().then(
  (code) => process.exit(code),
  async (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    await stopAll();
    process.exit(2);
  },
);
