// Which backend a legatectl command talks to. Asked for (--backend, LEGATE_BACKEND), implied by its
// flags (--kubeconfig, --kube-context, --install-namespace, --pod-selector: a cluster; --state-dir,
// --controller, LEGATE_STATE_DIR, LEGATE_CONTROLLER: a local `legate run`), else a local `legate
// run` when one is found from here, else the cluster of the default kubeconfig when there is one,
// else the file backend (whose error says where it looked and how to reach a cluster).
import { UsageError } from '../flags.js';

export type BackendName = 'file' | 'kubernetes';

export interface ChoiceInput {
  /** --backend, else LEGATE_BACKEND */
  backend?: string | undefined;
  /** the file backend's flags or environment given (--state-dir, --controller, LEGATE_STATE_DIR, LEGATE_CONTROLLER) */
  fileFlags: readonly string[];
  /** the Kubernetes backend's flags given */
  kubeFlags: readonly string[];
}

export interface ChoiceProbes {
  /** a local `legate run` found from here (a run.json), and where it looked */
  localRun(): { found: boolean; tried: readonly string[] };
  /** the kubeconfig kubectl would use (KUBECONFIG, ~/.kube/config, in-cluster), if any */
  kubeconfig(): string | undefined;
}

export interface Choice {
  backend: BackendName;
  /** why, when the user did not say: for errors */
  because?: string;
}

export function chooseBackend(input: ChoiceInput, probes: ChoiceProbes): Choice {
  const asked = input.backend ?? 'auto';
  if (asked !== 'auto' && asked !== 'file' && asked !== 'kubernetes') {
    throw new UsageError(`--backend: expected auto, file or kubernetes, got ${JSON.stringify(asked)}`);
  }
  const kube = input.kubeFlags.join(', ');
  const file = input.fileFlags.join(', ');
  if (asked === 'file' && kube) throw new UsageError(`${kube}: for the Kubernetes backend, not --backend file`);
  if (asked === 'kubernetes' && file)
    throw new UsageError(`${file}: for the file backend (a local 'legate run'), not --backend kubernetes`);
  if (asked !== 'auto') return { backend: asked };
  if (kube && file) throw new UsageError(`${kube} (a cluster) and ${file} (a local 'legate run') do not go together; choose one`);
  if (kube) return { backend: 'kubernetes' };
  if (file) return { backend: 'file' };
  const local = probes.localRun();
  if (local.found) return { backend: 'file' };
  const kubeconfig = probes.kubeconfig();
  if (kubeconfig) {
    const looked = local.tried.map((t) => `${t}/run.json`).join(', ');
    return { backend: 'kubernetes', because: `no local 'legate run' was found (looked for ${looked}) and ${kubeconfig} is there` };
  }
  return { backend: 'file' };
}
