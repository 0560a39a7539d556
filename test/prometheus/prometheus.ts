// A real Prometheus (built from its Go module by scripts/prometheus-tool.sh) for the suites that scrape with it:
// started on a random loopback port with its own scrape configuration (bench), or found running under
// `legate run --observability` (test/e2e/observability.test.ts); its query API read back the same way.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { prometheusConfig, type ScrapeTarget } from '../../cli/run/prometheus.js';
import { eventually, freePort, stopProcess } from '../support/util.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
export const PROMETHEUS = path.join(ROOT, '.cache', 'prometheus', 'bin', 'prometheus');

/** Builds Prometheus if needed (minutes, once). */
export function ensurePrometheus(): void {
  const result = spawnSync(path.join(ROOT, 'scripts', 'prometheus-tool.sh'), { stdio: 'inherit' });
  if (result.status !== 0) throw new Error('scripts/prometheus-tool.sh failed: see its output above');
}

export interface Sample {
  metric: Record<string, string>;
  value: number;
}

/** An instant query; throws with Prometheus's error when it refuses the PromQL. */
export async function query(url: string, promql: string): Promise<Sample[]> {
  const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`);
  const body = (await res.json()) as {
    status: string;
    error?: string;
    data?: { resultType: string; result: { metric: Record<string, string>; value: [number, string] }[] | [number, string] };
  };
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error ?? `HTTP ${res.status}`}`);
  const r = body.data?.result;
  if (body.data?.resultType === 'scalar' && Array.isArray(r)) return [{ metric: {}, value: Number(r[1]) }];
  return ((r ?? []) as { metric: Record<string, string>; value: [number, string] }[]).map((s) => ({
    metric: s.metric,
    value: Number(s.value[1]),
  }));
}

/** The scrape targets Prometheus knows and whether the last scrape of each worked. */
export async function targets(url: string): Promise<{ job: string; health: string; lastError: string }[]> {
  const res = await fetch(`${url}/api/v1/targets`);
  const body = (await res.json()) as { data: { activeTargets: { labels: { job: string }; health: string; lastError: string }[] } };
  return body.data.activeTargets.map((t) => ({ job: t.labels.job, health: t.health, lastError: t.lastError }));
}

export interface RunningPrometheus {
  pid: number;
  url: string;
  log(): string;
  stop(): Promise<void>;
}

export async function startPrometheus(scrape: readonly ScrapeTarget[], interval = '5s'): Promise<RunningPrometheus> {
  ensurePrometheus();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-prometheus-'));
  const port = await freePort();
  const file = path.join(dir, 'prometheus.yml');
  fs.writeFileSync(file, prometheusConfig(scrape, interval));
  const child: ChildProcess = spawn(
    PROMETHEUS,
    [`--config.file=${file}`, `--storage.tsdb.path=${path.join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const stop = async (): Promise<void> => {
    await stopProcess(child, 'SIGTERM', 10_000);
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    await eventually(
      'prometheus to start',
      async () => {
        if (child.exitCode !== null) throw new Error(`prometheus exited with ${child.exitCode}: ${output}`);
        return (await fetch(`${url}/-/ready`)).ok || undefined;
      },
      60_000,
    );
  } catch (err) {
    await stop();
    throw err;
  }
  return { pid: child.pid ?? 0, url, log: () => output, stop };
}
