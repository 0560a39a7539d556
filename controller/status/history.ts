// A bounded, in-memory timeline of each resource's status: when it appeared, changed (its spec or its
// state and reason, NACKs included) and went away. The console shows it; nothing else reads it, and a
// restart starts it afresh.
import { resourceKey, type ResourceState } from '../api/meta.js';
import type { StatusReport, StatusSink } from './book.js';

export interface HistoryEvent {
  at: string;
  kind: string;
  namespace: string;
  name: string;
  /** added, a new spec, a new state or reason only, removed */
  change: 'added' | 'spec' | 'status' | 'removed';
  state: ResourceState | 'Removed';
  reason?: string;
}

interface Seen {
  spec: unknown;
  body: unknown;
  state: ResourceState;
  reason: string | undefined;
}

export class StatusHistory implements StatusSink {
  private readonly events: HistoryEvent[] = [];
  private seen = new Map<string, Seen>();

  /** `limit`: the events kept in all (the oldest go first). */
  constructor(
    private readonly limit = 5000,
    private readonly now: () => Date = () => new Date(),
  ) {}

  publish(_writeNamespace: string, reports: readonly StatusReport[]): void {
    const at = this.now().toISOString();
    const next = new Map<string, Seen>();
    for (const { resource, status } of reports) {
      const { kind } = resource;
      const { namespace, name } = resource.metadata;
      const key = resourceKey(kind, namespace, name);
      const now: Seen = { spec: resource.spec, body: resource.body, state: status.state, reason: status.reason };
      next.set(key, now);
      const before = this.seen.get(key);
      const change = !before
        ? 'added'
        : before.spec !== now.spec && JSON.stringify(before.spec) !== JSON.stringify(now.spec)
          ? 'spec'
          : before.state !== now.state || before.reason !== now.reason
            ? 'status'
            : undefined;
      if (change) this.push({ at, kind, namespace, name, change, state: now.state, ...(now.reason ? { reason: now.reason } : {}) });
    }
    for (const key of this.seen.keys()) {
      if (next.has(key)) continue;
      const [kind = '', namespace = '', ...rest] = key.split('/');
      this.push({ at, kind, namespace, name: rest.join('/'), change: 'removed', state: 'Removed' });
    }
    this.seen = next;
  }

  /** The events, oldest first, of one resource or of all. */
  list(filter: { kind?: string; namespace?: string; name?: string } = {}): HistoryEvent[] {
    return this.events.filter(
      (e) =>
        (!filter.kind || e.kind === filter.kind) &&
        (!filter.namespace || e.namespace === filter.namespace) &&
        (!filter.name || e.name === filter.name),
    );
  }

  private push(event: HistoryEvent): void {
    this.events.push(event);
    if (this.events.length > this.limit) this.events.splice(0, this.events.length - this.limit);
  }
}
