// Global setup of the fault suite: starts each run with no figures; at the end writes
// results/latest.md and prints the same table, so the run's output carries every figure.
import fs from 'node:fs';
import path from 'node:path';
import { FIGURES_FILE, RESULTS_DIR, readFigures } from './figures.js';

export default function setup(): () => void {
  fs.mkdirSync(RESULTS_DIR, { recursive: true });
  fs.rmSync(FIGURES_FILE, { force: true });
  const started = new Date();
  return () => {
    const figures = readFigures();
    const rows = figures.map((f) => `| ${f.item} | ${f.name} | ${String(f.value)} | ${f.unit ?? ''} |`);
    const text = [
      `# Fault suite figures (${started.toISOString()})`,
      '',
      '| item | figure | value | unit |',
      '|---|---|---|---|',
      ...rows,
      '',
    ].join('\n');
    fs.writeFileSync(path.join(RESULTS_DIR, 'latest.md'), text);
    console.log(`\n${text}\n(also in ${path.relative(process.cwd(), path.join(RESULTS_DIR, 'latest.md'))})`);
  };
}
