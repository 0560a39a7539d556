// The suite's figures: each test records what it measured (failed requests, recovery time, memory)
// with figure(); a line goes to the test's output at once and to results/figures.jsonl, which the
// global teardown (summary.ts) turns into results/latest.md and a table at the end of the run.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'results');
export const FIGURES_FILE = path.join(RESULTS_DIR, 'figures.jsonl');

export interface Figure {
  /** the suite item, e.g. `controller-down` */
  item: string;
  name: string;
  value: number | string;
  unit?: string;
}

export function figure(item: string, name: string, value: number | string, unit?: string): void {
  const f: Figure = { item, name, value, ...(unit ? { unit } : {}) };
  const line = JSON.stringify(f);
  console.log(`[figure] ${line}`);
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.appendFileSync(FIGURES_FILE, line + '\n');
}

export function readFigures(): Figure[] {
  if (!fs.existsSync(FIGURES_FILE)) return [];
  return fs
    .readFileSync(FIGURES_FILE, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Figure);
}
