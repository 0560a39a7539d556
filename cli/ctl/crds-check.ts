// `legatectl check-crds`: the cluster's Legate CRDs (label app.kubernetes.io/part-of=legate) against the ones
// `legate crds` of this version makes (with Gloo's groups when the cluster has them).
import { customResourceDefinitions } from '../../controller/api/crds.js';
import type { KubeClient } from './kube-client.js';

interface Crd {
  metadata: { name: string; labels?: Record<string, string> };
  spec: {
    group: string;
    scope: string;
    names: Record<string, unknown>;
    versions: {
      name: string;
      served: boolean;
      storage: boolean;
      schema?: unknown;
      subresources?: unknown;
      additionalPrinterColumns?: unknown;
    }[];
  };
}

/** What the generator decides, in a form that compares equal however the API server orders or defaults it. */
function comparable(crd: Crd): string {
  const sorted = (v: unknown): unknown =>
    Array.isArray(v)
      ? v.map(sorted)
      : v && typeof v === 'object'
        ? Object.fromEntries(
            Object.entries(v)
              .filter(([, x]) => x !== undefined)
              .sort(([a], [b]) => a.localeCompare(b))
              .map(([k, x]) => [k, sorted(x)]),
          )
        : v;
  const { group, scope, names, versions } = crd.spec;
  return JSON.stringify(
    sorted({
      group,
      scope,
      names,
      versions: versions.map((v) => ({
        name: v.name,
        served: v.served,
        storage: v.storage,
        schema: v.schema,
        subresources: v.subresources,
        additionalPrinterColumns: v.additionalPrinterColumns,
      })),
    }),
  );
}

/** The first path where two JSON values differ, for the message. */
function firstDifference(a: unknown, b: unknown, at = ''): string {
  if (JSON.stringify(a) === JSON.stringify(b)) return '';
  if (a && b && typeof a === 'object' && typeof b === 'object') {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) {
      const d = firstDifference((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], `${at}.${k}`);
      if (d) return d;
    }
  }
  return at.replace(/^\./, '') || '(top)';
}

export async function checkCrds(kube: KubeClient, out: (t: string) => void): Promise<number> {
  const installed = (
    await kube.json<{ items: Crd[] }>(
      `/apis/apiextensions.k8s.io/v1/customresourcedefinitions?labelSelector=${encodeURIComponent('app.kubernetes.io/part-of=legate')}`,
    )
  ).items;
  const glooGroups = installed.some((c) => c.metadata.labels?.['legate.dev/gloo-alias'] === 'true');
  const wanted = customResourceDefinitions({ glooGroups }) as unknown as Crd[];
  const byName = new Map(installed.map((c) => [c.metadata.name, c]));
  const problems: string[] = [];
  for (const want of wanted) {
    const have = byName.get(want.metadata.name);
    byName.delete(want.metadata.name);
    if (!have) problems.push(`CRD ${want.metadata.name} is missing`);
    else if (comparable(have) !== comparable(want)) {
      const at = firstDifference(JSON.parse(comparable(have)), JSON.parse(comparable(want)));
      problems.push(`CRD ${want.metadata.name} differs from this version's (first at spec.${at})`);
    }
  }
  for (const extra of byName.keys()) problems.push(`CRD ${extra} is not one this version makes`);
  out(`Checked ${wanted.length} CRDs${glooGroups ? " (with Gloo's groups)" : ''}\n`);
  if (!problems.length) {
    out('All CRDs are up to date.\n');
    return 0;
  }
  out(problems.map((p) => `${p}\n`).join(''));
  out("Update them with: legate crds | kubectl apply --server-side -f -  (legate crds --gloo-groups for Gloo's groups)\n");
  return 1;
}
