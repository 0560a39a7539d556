// Product text says what things are, not which work item made them: no issue number (the word and a number) in docs,
// README, CONTRIBUTING or source and test files, comments and strings alike. Generated results (bench/results,
// test/faults/results) are not checked. Exits 1 with a file:line list.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const ISSUE = /\bissues? #?\d+/i;
const files = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(md|ts|mts|mjs|js|cjs|ya?ml)$/.test(f))
  .filter((f) => !/^(bench\/results|test\/faults\/results)\//.test(f));

const found = [];
for (const file of files) {
  const full = path.join(root, file);
  if (!fs.existsSync(full)) continue;
  fs.readFileSync(full, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      const m = ISSUE.exec(line);
      if (m) found.push(`${file}:${i + 1}: "${m[0]}"`);
    });
}
if (found.length) {
  console.error(`issue numbers in product text (say what the thing is instead):\n${found.join('\n')}`);
  process.exit(1);
}
console.log('no issue numbers in docs, comments or strings');
