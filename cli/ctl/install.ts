// `legatectl install` / `legatectl uninstall`: the Helm chart install/helm/legate into a cluster, as
// `glooctl install gateway` / `glooctl uninstall` do. helm renders the chart and keeps the release
// (legatectl runs the `helm` on PATH or --helm PATH; docs/decisions.md says why); legatectl adds the
// defaults (release legate in legate-system), clear errors, and `uninstall --all` (the CRDs and the
// namespace, which a Helm release never removes).
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { packageRoot } from '../paths.js';
import { CliError } from './backend.js';

export const DEFAULT_NAMESPACE = 'legate-system';
export const DEFAULT_RELEASE = 'legate';
/** The label on every CRD `legate crds` makes (controller/api/crds.ts). */
const CRD_SELECTOR = 'app.kubernetes.io/part-of=legate';

interface ClusterValues {
  namespace: string;
  release: string;
  kubeconfig?: string | undefined;
  'kube-context'?: string | undefined;
  helm?: string | undefined;
}

export interface InstallValues extends ClusterValues {
  values: string[];
  set: string[];
  'dry-run': boolean;
  chart?: string | undefined;
}

export interface UninstallValues extends ClusterValues {
  all: boolean;
}

type Out = (text: string) => void;

export async function install(values: InstallValues, out: Out): Promise<number> {
  checkName('--namespace', values.namespace);
  checkName('--release', values.release);
  const chart = path.resolve(values.chart ?? path.join(packageRoot(), 'install', 'helm', 'legate'));
  if (!fs.existsSync(path.join(chart, 'Chart.yaml'))) {
    throw new CliError(`no Helm chart at ${chart} (Chart.yaml missing)${values.chart ? '' : '; pass --chart DIR'}`);
  }
  for (const file of values.values) if (!fs.existsSync(file)) throw new CliError(`--values: ${file} does not exist`);
  for (const s of values.set) if (!/^[^=]+=/.test(s)) throw new CliError(`--set: expected KEY=VALUE, got ${JSON.stringify(s)}`);
  const helm = findHelm(values.helm);
  const chartValues = [...values.values.flatMap((f) => ['--values', f]), ...values.set.flatMap((s) => ['--set', s])];

  if (values['dry-run']) {
    // rendered locally: no cluster needed
    return runHelm(helm, ['template', values.release, chart, '--namespace', values.namespace, '--include-crds', ...chartValues]);
  }
  // never --wait: the release is recorded once the API server has the objects; `legatectl check`
  // then says whether the pods come up
  const code = await runHelm(helm, [
    ...['upgrade', '--install', values.release, chart, '--namespace', values.namespace, '--create-namespace'],
    ...clusterFlags(values),
    ...chartValues,
  ]);
  if (code !== 0) throw new CliError(`helm could not install release ${values.release} in ${values.namespace} (its error is above)`);
  out(`\nLegate is installed in namespace ${values.namespace} (release ${values.release}). Next: legatectl check -n ${values.namespace}\n`);
  return 0;
}

export async function uninstall(values: UninstallValues, out: Out): Promise<number> {
  checkName('--namespace', values.namespace);
  checkName('--release', values.release);
  const helm = findHelm(values.helm);
  const result = await runHelmCaptured(helm, ['uninstall', values.release, '--namespace', values.namespace, ...clusterFlags(values)]);
  if (result.code === 0) out(result.stdout);
  else if (/not found/i.test(result.stderr)) {
    // nothing to remove is no failure with --all: the CRDs and the namespace may still be there
    if (!values.all) throw new CliError(`no release ${values.release} in namespace ${values.namespace} (pass -n / --release)`);
    out(`no release ${values.release} in namespace ${values.namespace}\n`);
  } else throw new CliError(`helm uninstall failed: ${result.stderr.trim()}`);
  if (!values.all) return 0;

  const kc = kubeConfig(values);
  try {
    const crdApi = kc.makeApiClient(k8s.ApiextensionsV1Api);
    const crds = await crdApi.listCustomResourceDefinition({ labelSelector: CRD_SELECTOR });
    for (const crd of crds.items) {
      const name = crd.metadata?.name;
      if (!name) continue;
      await ignoreNotFound(crdApi.deleteCustomResourceDefinition({ name }));
      out(`deleted customresourcedefinition ${name}\n`);
    }
    if (crds.items.length === 0) out(`no CRDs labelled ${CRD_SELECTOR}\n`);
    const core = kc.makeApiClient(k8s.CoreV1Api);
    if (await ignoreNotFound(core.deleteNamespace({ name: values.namespace }))) out(`deleted namespace ${values.namespace}\n`);
    else out(`no namespace ${values.namespace}\n`);
  } catch (err) {
    throw new CliError(
      `cannot remove Legate's CRDs and namespace from ${kc.getCurrentCluster()?.server ?? 'the cluster'}: ${apiMessage(err)}`,
    );
  }
  return 0;
}

function checkName(flag: string, value: string): void {
  // DNS-1123 labels, as Kubernetes and Helm require: caught here with the flag's name
  if (!/^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$/.test(value)) {
    throw new CliError(`${flag}: ${JSON.stringify(value)} is not a valid name (lower case letters, digits and '-')`);
  }
}

function clusterFlags(values: { kubeconfig?: string | undefined; 'kube-context'?: string | undefined }): string[] {
  return [
    ...(values.kubeconfig ? ['--kubeconfig', values.kubeconfig] : []),
    ...(values['kube-context'] ? ['--kube-context', values['kube-context']] : []),
  ];
}

/** The helm to run: --helm PATH, else `helm` on PATH; v3 or newer, with a clear error otherwise. */
export function findHelm(given: string | undefined): string {
  const helm = given ?? 'helm';
  const probe = spawnSync(helm, ['version', '--short'], { encoding: 'utf8', timeout: 30_000 });
  if (probe.error) {
    const missing = (probe.error as NodeJS.ErrnoException).code === 'ENOENT';
    throw new CliError(
      missing
        ? given
          ? `--helm: ${given} not found`
          : 'legatectl install and uninstall run helm (v3 or v4), which is not on PATH: install it ' +
            '(https://helm.sh/docs/intro/install/) or pass --helm PATH'
        : `cannot run ${helm}: ${probe.error.message}`,
    );
  }
  const version = /v(\d+)\.(\d+)/.exec(probe.stdout);
  if (probe.status !== 0 || !version) throw new CliError(`${helm} version failed: ${(probe.stderr || probe.stdout).trim()}`);
  if (Number(version[1]) < 3) throw new CliError(`${helm} is helm ${version[0]}; legatectl needs helm v3 or v4`);
  return helm;
}

/** helm with its output on ours (manifests, release notes, errors); resolves with its exit code. */
function runHelm(helm: string, args: string[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(helm, args, { stdio: ['ignore', 'pipe', 'inherit'] });
    // through process.stdout, so a closed reader ends quietly as everywhere in legatectl
    child.stdout.on('data', (chunk: Buffer) => process.stdout.write(chunk));
    child.on('error', (err) => reject(new CliError(`cannot run ${helm}: ${err.message}`)));
    child.on('close', (code) => resolve(code ?? 1));
  });
}

function runHelmCaptured(helm: string, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(helm, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
    child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
    child.on('error', (err) => reject(new CliError(`cannot run ${helm}: ${err.message}`)));
    child.on('close', (code) => resolve({ code: code ?? 1, stdout, stderr }));
  });
}

function kubeConfig(values: { kubeconfig?: string | undefined; 'kube-context'?: string | undefined }): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  try {
    if (values.kubeconfig) kc.loadFromFile(values.kubeconfig);
    else kc.loadFromDefault();
  } catch (err) {
    throw new CliError(`cannot read the kubeconfig${values.kubeconfig ? ` ${values.kubeconfig}` : ''}: ${(err as Error).message}`);
  }
  const context = values['kube-context'];
  if (context) {
    if (!kc.getContextObject(context)) {
      throw new CliError(
        `--kube-context: no context ${JSON.stringify(context)} (there are: ${kc
          .getContexts()
          .map((c) => c.name)
          .join(', ')})`,
      );
    }
    kc.setCurrentContext(context);
  }
  return kc;
}

/** true when deleted, false when it was not there */
async function ignoreNotFound(p: Promise<unknown>): Promise<boolean> {
  try {
    await p;
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === 404) return false;
    throw err;
  }
}

function apiMessage(err: unknown): string {
  const e = err as { code?: number; body?: unknown; message?: string };
  if (typeof e.body === 'string') {
    try {
      const status = JSON.parse(e.body) as { message?: string };
      if (status.message) return `HTTP ${e.code}: ${status.message}`;
    } catch {
      // not JSON: the message below
    }
  }
  return e.message ?? String(err);
}
