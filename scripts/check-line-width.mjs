// No line longer than prettier's printWidth in any file prettier formats. Prettier wraps code but not
// long strings, template literals or comments; this catches those. Exits 1 with file:line list.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as prettier from 'prettier';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
const { printWidth } = JSON.parse(fs.readFileSync(path.join(root, '.prettierrc.json'), 'utf8'));
const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((f) => /\.(ts|mts|mjs|js|cjs|json)$/.test(f));

const long = [];
for (const file of tracked) {
  const full = path.join(root, file);
  if (!fs.existsSync(full)) continue;
  const info = await prettier.getFileInfo(full, { ignorePath: path.join(root, '.prettierignore') });
  if (info.ignored || !info.inferredParser) continue;
  fs.readFileSync(full, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.length > printWidth) long.push(`${file}:${i + 1}: ${line.length} columns`);
    });
}
if (long.length) {
  console.error(`lines over ${printWidth} columns (prettier's printWidth; wrap strings and comments by hand):\n${long.join('\n')}`);
  process.exit(1);
}
console.log(`line width ok: no line over ${printWidth} columns`);
