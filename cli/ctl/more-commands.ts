// check-crds, dashboard and completion.
import { spawn } from 'node:child_process';
import { command } from '../flags.js';
import { findStateDir, readRunState } from '../paths.js';
import { CliError } from './backend.js';
import { backendFrom, GLOBAL_FLAGS, out } from './context.js';

export const checkCrdsCommand = command({
  name: 'check-crds',
  summary: "compare the cluster's Legate CRDs with the ones this version generates",
  details: 'Exits 1 when one is missing or differs; `legate crds | kubectl apply --server-side -f -` updates them.',
  flags: { ...GLOBAL_FLAGS },
  async run(values) {
    const backend = await backendFrom(values);
    if (backend.mode !== 'kubernetes') {
      throw new CliError("check-crds compares a cluster's CRDs; this is a local 'legate run', which reads its files without CRDs");
    }
    const { checkCrds } = await import('./crds-check.js');
    return checkCrds((backend as import('./kube-backend.js').KubeBackend).client, out);
  },
});

/** The console's address: the running `legate run`'s record, else the controller's answer. */
export const dashboardCommand = command({
  name: 'dashboard',
  summary: "print (or --open) the URL of Legate's web console",
  flags: { ...GLOBAL_FLAGS, open: { type: 'boolean', description: 'also open it in the browser (xdg-open / open)' } },
  async run(values) {
    const backend = await backendFrom(values);
    let url: string | undefined;
    if (backend.mode === 'file') {
      const state = readRunState(values['state-dir'] ?? findStateDir().dir);
      url = state?.components['console']?.endpoints['http'];
    }
    if (!url) {
      try {
        url = (await backend.api<{ url?: string }>('/api/v1/console')).url;
      } catch (err) {
        const why = err instanceof Error ? err.message : String(err);
        throw new CliError(`no console running (the controller gives no console address: ${why}); 'legate run' serves one`);
      }
    }
    if (!url) throw new CliError("no console running; 'legate run' serves one");
    out(url + '\n');
    if (values.open) {
      const opener = process.platform === 'darwin' ? 'open' : 'xdg-open';
      const child = spawn(opener, [url], { detached: true, stdio: 'ignore' });
      child.on('error', () => process.stderr.write(`legatectl: cannot run ${opener}; open ${url} yourself\n`));
      child.unref();
    }
    return 0;
  },
});
