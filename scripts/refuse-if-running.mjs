// `make run`'s first step: when a `legate run` from this checkout is already running, say so before `make setup`
// rebuilds dist/ under it (the run would refuse anyway, after the rebuild). Builtins only: it runs before setup.
import fs from 'node:fs';
import path from 'node:path';

const stateDir = process.env.LEGATE_STATE_DIR ?? path.join(process.cwd(), '.legate');
let state;
try {
  state = JSON.parse(fs.readFileSync(path.join(stateDir, 'run.json'), 'utf8'));
} catch {
  process.exit(0);
}
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}
if (alive(state.pid)) {
  process.stderr.write(
    `legate run is already running on ${state.configDir} (pid ${state.pid}, state in ${stateDir}); ` +
      'stop it (Ctrl-C in its terminal) first: make run would rebuild dist/ under it\n',
  );
  process.exit(1);
}
