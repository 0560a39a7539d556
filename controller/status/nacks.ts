// Which resources an Envoy NACK is about. Envoy's error text names the Envoy resource it refused (a
// cluster, a virtual host, a TLS filter chain, a listener); the translation knows which resource
// produced each of those names (envoyNames in translate/names.ts), so a NACK is attributed by exact
// names, not by guessing at the text. The Proxy of the NACKing role always carries it too.
import type { SourceRef } from '../translate/ir.js';
import { proxyRole } from '../translate/names.js';
import type { NackEvent, XdsObserver } from '../xds/observer.js';

/** A NACK as a resource's status shows it. */
export interface AttributedNack {
  event: NackEvent;
  /** the resources it names (besides the Proxy of its role) */
  resources: SourceRef[];
}

// a name is bounded by characters names do not end with (Envoy quotes them, or ends a sentence)
const NAME_CHAR = /[\w-]/;

/** Whether `name` occurs in `text` as a whole token (not as part of a longer name). */
function mentions(text: string, name: string): boolean {
  for (let at = text.indexOf(name); at >= 0; at = text.indexOf(name, at + 1)) {
    const before = at === 0 ? '' : text[at - 1]!;
    const after = text[at + name.length] ?? '';
    if (!NAME_CHAR.test(before) && !NAME_CHAR.test(after)) return true;
  }
  return false;
}

function refKey(r: SourceRef): string {
  return `${r.kind}/${r.namespace}/${r.name}`;
}

/** The resources whose Envoy names the NACK's message mentions. */
export function attributeNack(event: NackEvent, names: ReadonlyMap<string, SourceRef>): SourceRef[] {
  const found = new Map<string, SourceRef>();
  for (const [name, source] of names) {
    if (mentions(event.message, name)) found.set(refKey(source), source);
  }
  return [...found.values()];
}

/**
 * The NACKs in force, per role and type URL: recorded as they arrive (an XdsObserver), dropped when
 * that role is served a new version of the type.
 */
export class NackBook implements XdsObserver {
  private readonly byRoleType = new Map<string, NackEvent>();
  private names: ReadonlyMap<string, SourceRef> = new Map();
  /** per NACK, the keys of the resources it names under `names` (asked once per resource per publish) */
  private attributed = new WeakMap<NackEvent, ReadonlySet<string>>();

  constructor(private readonly onChange: () => void) {}

  onNack(event: NackEvent): void {
    this.byRoleType.set(`${event.role}|${event.typeUrl}`, event);
    this.onChange();
  }

  /** A role was served new versions of these types: their NACKs no longer hold. */
  served(role: string, typeUrls: Iterable<string>): void {
    let changed = false;
    for (const t of typeUrls) changed = this.byRoleType.delete(`${role}|${t}`) || changed;
    if (changed) this.onChange();
  }

  /** The Envoy names of the current translation. */
  setNames(names: ReadonlyMap<string, SourceRef>): void {
    this.names = names;
    this.attributed = new WeakMap();
  }

  /** The NACKs about `resource`: those of its role for a Proxy, those naming it otherwise. */
  about(resource: SourceRef): NackEvent[] {
    const all = [...this.byRoleType.values()];
    if (resource.kind === 'Proxy') return all.filter((n) => n.role === proxyRole(resource));
    const key = refKey(resource);
    return all.filter((n) => {
      let keys = this.attributed.get(n);
      if (!keys) {
        keys = new Set(attributeNack(n, this.names).map(refKey));
        this.attributed.set(n, keys);
      }
      return keys.has(key);
    });
  }
}
