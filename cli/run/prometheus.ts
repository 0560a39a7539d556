// `legate run --observability`: the Prometheus that scrapes Envoy's stats listener and every component's /metrics,
// found on disk (never downloaded), with its configuration written into the state directory.
import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { packageRoot } from '../paths.js';

/** Where the binary is: --prometheus-bin, else the one `make prometheus` builds, else `prometheus` on PATH. */
export function findPrometheus(flag: string | undefined): string | undefined {
  if (flag) return fs.existsSync(flag) ? flag : undefined;
  const built = path.join(packageRoot(), '.cache', 'prometheus', 'bin', 'prometheus');
  if (fs.existsSync(built)) return built;
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'prometheus');
    if (dir && fs.existsSync(candidate)) return candidate;
  }
  return undefined;
}

export interface ScrapeTarget {
  /** the job label: envoy, controller, extauth, … */
  job: string;
  /** host:port */
  address: string;
  path: string;
}

/** prometheus.yml: every target scraped every `interval`, each its own job. */
export function prometheusConfig(targets: readonly ScrapeTarget[], interval = '5s'): string {
  return stringify({
    global: { scrape_interval: interval, evaluation_interval: interval },
    scrape_configs: targets.map((t) => ({ job_name: t.job, metrics_path: t.path, static_configs: [{ targets: [t.address] }] })),
  });
}
