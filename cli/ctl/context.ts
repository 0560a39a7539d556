// What every legatectl command shares: the global flags (accepted before or after the command), the
// backend they name (cli/ctl/select.ts decides which), and the version-skew warning.
import { VERSION } from '../../common/version.js';
import type { FlagSpecs } from '../flags.js';
import { UsageError } from '../flags.js';
import { findStateDir, readRunState } from '../paths.js';
import { FileBackend, type Backend } from './backend.js';
import { DEFAULT_INSTALL_NAMESPACE, defaultKubeconfig } from './kube-defaults.js';
import { chooseBackend } from './select.js';

export const GLOBAL_FLAGS = {
  backend: {
    type: 'string',
    placeholder: 'auto|file|kubernetes',
    description:
      "a local 'legate run' or a cluster (default LEGATE_BACKEND, else auto: a local one found from here, else the kubeconfig's)",
  },
  controller: {
    type: 'string',
    placeholder: 'URL',
    description: 'controller API (default: from .legate/run.json, else http://127.0.0.1:9095)',
  },
  'state-dir': { type: 'string', placeholder: 'DIR', description: "where 'legate run' keeps its state (default .legate)" },
  kubeconfig: {
    type: 'string',
    placeholder: 'PATH',
    description: "the cluster's kubeconfig (default KUBECONFIG, else ~/.kube/config, else in-cluster)",
  },
  'kube-context': { type: 'string', placeholder: 'NAME', description: 'the kubeconfig context (default its current context)' },
  'install-namespace': {
    type: 'string',
    placeholder: 'NS',
    description: `where Legate is installed in the cluster (default LEGATE_NAMESPACE, else ${DEFAULT_INSTALL_NAMESPACE})`,
  },
  'pod-selector': { type: 'string', placeholder: 'LABEL', description: "Legate's pods (default legate)" },
} as const satisfies FlagSpecs;

export interface GlobalValues {
  backend?: string | undefined;
  controller?: string | undefined;
  'state-dir'?: string | undefined;
  kubeconfig?: string | undefined;
  'kube-context'?: string | undefined;
  'install-namespace'?: string | undefined;
  'pod-selector'?: string | undefined;
}

export type Out = (text: string) => void;
export const out: Out = (t) => process.stdout.write(t);

/**
 * The backend for this command. `installNamespace`: -n on the commands where it names the install namespace, as
 * glooctl's -n does (check, proxy, debug, version); `alsoFileFilter`: with a local `legate run` it filters instead
 * (proxy -n: the proxy's namespace).
 */
export async function backendFrom(
  values: GlobalValues,
  installNamespace?: { flag: string; value: string | undefined; alsoFileFilter?: boolean },
): Promise<Backend> {
  const given = (names: readonly [string, string | undefined][]): string[] => names.filter(([, v]) => v).map(([n]) => n);
  const kubeFlags = given([
    ['--kubeconfig', values.kubeconfig],
    ['--kube-context', values['kube-context']],
    ['--install-namespace', values['install-namespace']],
    ['--pod-selector', values['pod-selector']],
  ]);
  const fileFlags = given([
    ['--state-dir', values['state-dir']],
    ['--controller', values.controller],
    ['LEGATE_STATE_DIR', process.env['LEGATE_STATE_DIR'] || undefined],
    ['LEGATE_CONTROLLER', process.env['LEGATE_CONTROLLER'] || undefined],
  ]);
  const choice = chooseBackend(
    { backend: values.backend ?? (process.env['LEGATE_BACKEND'] || undefined), kubeFlags, fileFlags },
    {
      localRun: () => {
        const found = findStateDir();
        return { found: readRunState(found.dir) !== undefined, tried: found.tried };
      },
      kubeconfig: defaultKubeconfig,
    },
  );
  if (choice.backend === 'file') {
    if (installNamespace?.value && !installNamespace.alsoFileFilter) {
      throw new UsageError(
        `${installNamespace.flag} names the install namespace in a cluster; this is a local 'legate run' (file backend)`,
      );
    }
    return FileBackend.open({ controller: values.controller, stateDir: values['state-dir'] });
  }
  // loaded only now: the Kubernetes client costs half a second of every command that does not need it
  const { KubeBackend } = await import('./kube-backend.js');
  return new KubeBackend({
    kubeconfig: values.kubeconfig,
    context: values['kube-context'],
    namespace: installNamespace?.value ?? installNamespaceOf(values),
    podSelector: values['pod-selector'] ?? 'legate',
    chosenBecause: choice.because,
  });
}

export function installNamespaceOf(values: GlobalValues): string {
  return values['install-namespace'] ?? (process.env['LEGATE_NAMESPACE'] || DEFAULT_INSTALL_NAMESPACE);
}

async function serverVersion(backend: Backend): Promise<string | undefined> {
  try {
    return (await backend.api<{ version: string }>('/api/v1/version')).version;
  } catch {
    return undefined;
  }
}

/** Every command warns on stderr when the client and the server differ (spec 9). */
export async function warnOnVersionSkew(backend: Backend): Promise<string | undefined> {
  const server = await serverVersion(backend);
  if (server && server !== VERSION) {
    process.stderr.write(
      `----------\nlegatectl version (${VERSION}) differs from the server components (${server}).\nConsider running the legatectl of ` +
        `release ${server}.\n----------\n`,
    );
  }
  return server;
}

export { serverVersion };
