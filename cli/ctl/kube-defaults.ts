// What legatectl needs to know of Kubernetes before it talks to a cluster: kept apart from the Kubernetes client,
// which takes about half a second to load, so commands that do not reach a cluster do not load it.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const DEFAULT_INSTALL_NAMESPACE = 'legate-system';

export function inCluster(): boolean {
  return Boolean(process.env['KUBERNETES_SERVICE_HOST']) && fs.existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token');
}

/**
 * The kubeconfig legatectl would use without --kubeconfig, as kubectl finds it: KUBECONFIG, else
 * ~/.kube/config, else the pod's service account; undefined when there is none.
 */
export function defaultKubeconfig(): string | undefined {
  const env = process.env['KUBECONFIG'];
  if (env) return `KUBECONFIG=${env}`;
  const home = path.join(os.homedir(), '.kube', 'config');
  if (fs.existsSync(home)) return home;
  if (inCluster()) return 'in-cluster service account';
  return undefined;
}
