// Admission: would this change of resources be Rejected? The same pure pipeline the controller runs, on the
// current resources with the change applied (a create or update adds or replaces the candidate, a delete
// removes it), compared with the current resources alone. No I/O: the webhook server (server.ts) and
// `legate validate` (files.ts) call it.
import { resourceKey, type RawResource, type ResourceStatus } from '../api/meta.js';
import type { LegateResource } from '../api/resources.js';
import { SettingsSpecSchema, type GatewayValidation } from '../api/schemas.js';
import { runPipeline, type PipelineMemo, type PipelineOptions, type PipelineOutput } from '../pipeline.js';

/** Gloo's annotation: `"true"` on a resource skips validation of its create or update. */
export const SKIP_VALIDATION_ANNOTATION = 'gateway.solo.io/skip_validation';

export type Operation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface Change {
  operation: Operation;
  /** the object as it would be stored (create, update) */
  object?: RawResource;
  /** the object as it is stored (update, delete) */
  oldObject?: RawResource;
}

export interface Verdict {
  allowed: boolean;
  /** why it is refused (allowed: false), or what would have refused it (alwaysAccept) */
  message?: string;
  /** shown by kubectl when allowed: the candidate's warnings */
  warnings: string[];
  /** validation did not run: why (the annotation, a status-only update, not a watched namespace…) */
  skipped?: string;
  /** refused by validation but let through by alwaysAccept: the controller logs it */
  acceptedAnyway?: boolean;
}

export interface Policy {
  alwaysAccept: boolean;
  allowWarnings: boolean;
  serverEnabled: boolean;
  /** a missing TLS Secret is a warning: deleting a Secret in use is admitted with the warnings it causes (as Gloo) */
  warnMissingTlsSecret: boolean;
}

/** Settings `gateway.validation` of the Settings the pipeline reads (the one named default first). */
export function policyOf(resources: readonly RawResource[]): Policy {
  const settings = resources
    .filter((r) => r.kind === 'Settings')
    .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  const parsed = settings ? SettingsSpecSchema.safeParse(settings.spec ?? {}) : undefined;
  const v: GatewayValidation = (parsed?.success ? parsed.data.gateway?.validation : undefined) ?? {};
  return {
    alwaysAccept: v.alwaysAccept ?? false,
    allowWarnings: v.allowWarnings ?? true,
    serverEnabled: v.serverEnabled ?? true,
    warnMissingTlsSecret: v.warnMissingTlsSecret ?? false,
  };
}

const keyOfRaw = (r: RawResource): string => resourceKey(r.kind, r.metadata.namespace, r.metadata.name);
const label = (r: { kind: string; metadata: { namespace: string; name: string } }): string =>
  `${r.kind} ${r.metadata.namespace}.${r.metadata.name}`;

const SERVING_LAST = / \(serving the last accepted version\)$/;

/** Reports by resource key, as `kind/ns/name` -> messages (errors and warnings apart). */
function messages(out: PipelineOutput): Map<string, { errors: Set<string>; warnings: Set<string> }> {
  const byKey = new Map<string, { errors: Set<string>; warnings: Set<string> }>();
  for (const r of out.reports) {
    if (r.code === 'ServingLastAccepted') continue;
    const key = resourceKey(r.resource.kind, r.resource.namespace, r.resource.name);
    let entry = byKey.get(key);
    if (!entry) byKey.set(key, (entry = { errors: new Set(), warnings: new Set() }));
    (r.severity === 'error' ? entry.errors : entry.warnings).add(r.message);
  }
  return byKey;
}

export interface ValidatorOptions {
  pipeline?: PipelineOptions;
  /** only these namespaces are validated (the controller's --watch-namespaces); else Settings' watchNamespaces, else all */
  namespaces?: readonly string[];
  /**
   * The namespaces the source reads now ([] all, undefined none), selectors resolved: in place of Settings' watchNamespaces
   * (the Kubernetes source's answer to watchNamespaceSelectors, which need the namespaces' labels)
   */
  scope?: () => readonly string[] | undefined;
}

/**
 * Checks changes against one set of current resources. The baseline run (current resources alone) is made once
 * per `setCurrent` and its memo lets each check translate only what the change touches.
 */
export class Validator {
  private resources: readonly RawResource[] = [];
  private lastAccepted: ReadonlyMap<string, LegateResource> = new Map();
  private baseline: { out: PipelineOutput; messages: ReturnType<typeof messages> } | undefined;
  private memo: PipelineMemo | undefined;

  constructor(private readonly options: ValidatorOptions = {}) {}

  /**
   * The resources the controller holds now, and what it accepted last (its domain-conflict incumbents). `baseline`:
   * the controller's own run on them, when it has one, so that checks start at once (its reports are the ones to
   * compare with, and its memo lets a check translate only what the change touches).
   */
  setCurrent(
    resources: readonly RawResource[],
    lastAccepted: ReadonlyMap<string, LegateResource> = new Map(),
    baseline?: PipelineOutput,
  ): void {
    if (resources === this.resources && lastAccepted === this.lastAccepted) return;
    this.resources = resources;
    this.lastAccepted = lastAccepted;
    this.baseline = baseline ? { out: baseline, messages: messages(baseline) } : undefined;
    if (baseline) this.memo = baseline.memo;
  }

  policy(): Policy {
    return policyOf(this.resources);
  }

  private run(resources: readonly RawResource[]): PipelineOutput {
    const out = runPipeline({
      resources,
      lastAccepted: this.lastAccepted,
      statusesOnly: true,
      ...(this.memo ? { memo: this.memo } : {}),
      ...(this.options.pipeline ? { options: this.options.pipeline } : {}),
    });
    return out;
  }

  private current(): { out: PipelineOutput; messages: ReturnType<typeof messages> } {
    if (!this.baseline) {
      const out = this.run(this.resources);
      this.memo = out.memo;
      this.baseline = { out, messages: messages(out) };
    }
    return this.baseline;
  }

  private inScope(namespace: string): boolean {
    const given = this.options.namespaces?.length
      ? this.options.namespaces
      : this.options.scope
        ? this.options.scope()
        : watchNamespacesOf(this.resources);
    if (given === undefined) return false;
    return given.length === 0 || given.includes(namespace);
  }

  check(change: Change): Verdict {
    const target = change.object ?? change.oldObject;
    if (!target || change.operation === 'CONNECT') return { allowed: true, warnings: [], skipped: 'nothing to validate' };
    const policy = this.policy();
    // a change of Settings is judged by the Settings it makes
    const settingsPolicy = target.kind === 'Settings' && change.object ? policyOf([change.object]) : policy;
    if (!policy.serverEnabled || !settingsPolicy.serverEnabled)
      return { allowed: true, warnings: [], skipped: 'Settings gateway.validation.serverEnabled is false' };
    if (target.kind !== 'Settings' && !this.inScope(target.metadata.namespace))
      return { allowed: true, warnings: [], skipped: `namespace ${target.metadata.namespace} is not watched` };
    if (change.operation !== 'DELETE' && change.object?.metadata.annotations?.[SKIP_VALIDATION_ANNOTATION] === 'true')
      return { allowed: true, warnings: [], skipped: `annotation ${SKIP_VALIDATION_ANNOTATION}: "true"` };
    if (change.operation === 'UPDATE' && change.oldObject && change.object && sameContent(change.oldObject, change.object))
      return { allowed: true, warnings: [], skipped: 'nothing the controller reads changed (a status or metadata update)' };

    const base = this.current();
    const key = keyOfRaw(target);
    const next =
      change.operation === 'DELETE'
        ? this.resources.filter((r) => keyOfRaw(r) !== key)
        : [...this.resources.filter((r) => keyOfRaw(r) !== key), change.object!];
    const out = this.run(next);
    const after = messages(out);

    const refusals: string[] = [];
    const warnings: string[] = [];
    if (change.operation === 'DELETE') {
      // what the others gain by the deletion: a reference left dangling, a delegation without its table…
      // (a Secret's, with warnMissingTlsSecret, only warnings: admitted with them, as Gloo permits it)
      const lenient = target.kind === 'Secret' && policy.warnMissingTlsSecret && policy.allowWarnings;
      for (const [other, now] of after) {
        if (other === key) continue;
        const before = base.messages.get(other);
        const isNew = (m: string): boolean => !before?.errors.has(m) && !before?.warnings.has(m);
        for (const m of now.errors) if (isNew(m)) refusals.push(`${labelOfKey(other)}: ${m}`);
        for (const m of now.warnings) if (isNew(m)) (lenient ? warnings : refusals).push(`${labelOfKey(other)}: ${m}`);
      }
      if (refusals.length) {
        const verdict = `Deletion blocked because active resources reference ${label(target)}: ${refusals.join('; ')}`;
        return decide(verdict, [], policy);
      }
      return { allowed: true, warnings };
    }

    const status: ResourceStatus | undefined = out.listed.get(key)?.status;
    if (status?.state === 'Rejected') refusals.push(`${label(target)}: ${(status.reason ?? 'Rejected').replace(SERVING_LAST, '')}`);
    if (status?.state === 'Warning' && status.reason) warnings.push(status.reason);
    for (const [other, now] of after) {
      if (other === key) continue;
      const before = base.messages.get(other);
      const gained = [...now.errors].filter((m) => !before?.errors.has(m));
      if (gained.length) refusals.push(`${labelOfKey(other)} would be Rejected: ${gained.join('; ')}`);
      if (!policy.allowWarnings) {
        const warned = [...now.warnings].filter((m) => !before?.warnings.has(m));
        if (warned.length) warnings.push(`${labelOfKey(other)}: ${warned.join('; ')}`);
      }
    }
    if (!refusals.length && warnings.length && !policy.allowWarnings) {
      refusals.push(
        `${label(target)}: warnings are not allowed (Settings gateway.validation.allowWarnings: false): ${warnings.join('; ')}`,
      );
    }
    if (refusals.length) return decide(`resource incompatible with current Legate snapshot: ${refusals.join('; ')}`, warnings, policy);
    return { allowed: true, warnings };
  }
}

const NOT_YET = 'validation is not yet available: waiting for the first snapshot of resources';

/**
 * The verdict before the controller's first snapshot, when nothing can be judged: refused, unless the Settings known
 * so far (`known`: restored with --accepted-file; or the candidate itself when it is a Settings) say alwaysAccept or
 * serverEnabled false, which Gloo honours at all times.
 */
export function beforeFirstSnapshot(change: Change, known: readonly RawResource[]): Verdict {
  const candidate = change.object?.kind === 'Settings' ? [change.object] : [];
  const policy = policyOf(candidate.length ? candidate : known);
  if (!policy.serverEnabled) return { allowed: true, warnings: [], skipped: 'Settings gateway.validation.serverEnabled is false' };
  return decide(NOT_YET, [], policy);
}

function decide(message: string, warnings: string[], policy: Policy): Verdict {
  if (policy.alwaysAccept) return { allowed: true, message, warnings, acceptedAnyway: true };
  return { allowed: false, message, warnings };
}

function labelOfKey(key: string): string {
  const [kind = '', namespace = '', ...name] = key.split('/');
  return `${kind} ${namespace}.${name.join('/')}`;
}

function watchNamespacesOf(resources: readonly RawResource[]): readonly string[] {
  const settings = resources
    .filter((r) => r.kind === 'Settings')
    .sort((a, b) => Number(b.metadata.name === 'default') - Number(a.metadata.name === 'default'))[0];
  const listed = (settings?.spec as { watchNamespaces?: unknown } | undefined)?.watchNamespaces;
  return Array.isArray(listed) ? listed.filter((n): n is string => typeof n === 'string') : [];
}

/** Same spec, body, labels and annotations: an update the pipeline would not see (status, managedFields…). */
function sameContent(a: RawResource, b: RawResource): boolean {
  const view = (r: RawResource): string =>
    JSON.stringify([r.apiVersion, r.spec ?? null, r.body, r.metadata.labels ?? {}, r.metadata.annotations ?? {}]);
  return view(a) === view(b);
}
