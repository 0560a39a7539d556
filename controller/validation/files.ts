// `legate validate` / `legatectl validate -f`: the check the webhook makes, on a set of resources read from files,
// before anything serves them. Every resource gets the status the controller would give it; the set passes when
// nothing would be Rejected (nor a Warning, with Settings gateway.validation.allowWarnings: false) and every
// document loaded. Pure: the caller reads the files.
import type { RawResource, ResourceState } from '../api/meta.js';
import { runPipeline, type PipelineOptions } from '../pipeline.js';
import type { LoadError } from '../source/source.js';
import { policyOf } from './admission.js';

export interface FileVerdict {
  ok: boolean;
  /** one per resource read (not the discovered or generated ones), in the order read */
  resources: { kind: string; namespace: string; name: string; origin: string; state: ResourceState; reason?: string }[];
  /** documents that did not load */
  errors: LoadError[];
  /** why warnings fail the check, when they do */
  warningsFail: boolean;
}

export function validateResources(resources: readonly RawResource[], errors: readonly LoadError[], options?: PipelineOptions): FileVerdict {
  const out = runPipeline({ resources, lastAccepted: new Map(), ...(options ? { options } : {}) });
  const policy = policyOf(resources);
  const listed = resources.map((r) => {
    const status = out.listed.get(`${r.kind}/${r.metadata.namespace}/${r.metadata.name}`)?.status;
    return {
      kind: r.kind,
      namespace: r.metadata.namespace,
      name: r.metadata.name,
      origin: r.origin,
      state: status?.state ?? 'Pending',
      ...(status?.reason ? { reason: status.reason } : {}),
    };
  });
  const failing = listed.some((r) => r.state === 'Rejected' || (r.state === 'Warning' && !policy.allowWarnings));
  return { ok: !failing && errors.length === 0, resources: listed, errors: [...errors], warningsFail: !policy.allowWarnings };
}

/** The verdict as lines for a terminal: what fails first, then a summary. */
export function formatVerdict(verdict: FileVerdict): string {
  const lines: string[] = [];
  for (const e of verdict.errors) lines.push(`${e.origin}: ${e.message}`);
  for (const r of verdict.resources) {
    if (r.state === 'Accepted') continue;
    const fails = r.state === 'Rejected' || (r.state === 'Warning' && verdict.warningsFail);
    lines.push(`${r.origin}: ${r.kind} ${r.namespace}.${r.name}: ${r.state}${fails ? '' : ' (allowed)'}: ${r.reason ?? ''}`);
  }
  const counts = (s: ResourceState) => verdict.resources.filter((r) => r.state === s).length;
  lines.push(
    `${verdict.ok ? 'valid' : 'invalid'}: ${verdict.resources.length} resources, ${counts('Accepted')} accepted, ` +
      `${counts('Warning')} with warnings${verdict.warningsFail ? ' (not allowed)' : ''}, ${counts('Rejected')} rejected` +
      (verdict.errors.length ? `, ${verdict.errors.length} documents not loaded` : ''),
  );
  return lines.join('\n') + '\n';
}
