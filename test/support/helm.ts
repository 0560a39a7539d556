// helm for the chart tests: the one `make kube-tools` builds (test/kube/tools/helm) into
// .cache/kube/bin, and the chart rendered into parsed objects.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from './gateway.js';
import { KUBE_BIN, ensureKubeTools } from './kube.js';

export const HELM = path.join(KUBE_BIN, 'helm');
export const CHART = path.join(ROOT, 'install', 'helm', 'legate');

export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
  [field: string]: unknown;
}

export function helm(args: string[], options: { check?: boolean } = {}): { status: number; stdout: string; stderr: string } {
  ensureKubeTools();
  const r = spawnSync(HELM, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 * 1024 * 1024 });
  const out = { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
  if ((options.check ?? true) && out.status !== 0) throw new Error(`helm ${args.join(' ')} failed (${out.status}):\n${out.stderr}`);
  return out;
}

export function parseObjects(text: string): KubeObject[] {
  return parseAllDocuments(text)
    .map((d) => d.toJS() as KubeObject | null)
    .filter((d): d is KubeObject => d !== null);
}

/** `helm template` of the chart: the manifest text and its objects (CRDs included with includeCrds). */
export function renderChart(
  namespace: string,
  extra: string[] = [],
  options: { release?: string; includeCrds?: boolean } = {},
): { text: string; objects: KubeObject[] } {
  const args = [
    'template',
    options.release ?? 'legate',
    CHART,
    '--namespace',
    namespace,
    ...(options.includeCrds ? ['--include-crds'] : []),
  ];
  const text = helm([...args, ...extra]).stdout;
  return { text, objects: parseObjects(text) };
}
