// Status bookkeeping: what the pipeline decided for each resource, overlaid with the NACKs Envoy
// sent about it, handed to a StatusSink whenever it changes. The sink is where statuses go: in file
// mode the controller API shows them; a Kubernetes sink writes the status subresource.
import { REPORTER, type RawResource, type ResourceStatus } from '../api/meta.js';
import type { PipelineOutput } from '../pipeline.js';
import { NackBook } from './nacks.js';

export interface StatusReport {
  resource: RawResource;
  status: ResourceStatus;
}

export interface StatusSink {
  /** Every resource with its status now; `writeNamespace` is the key statuses are written under. */
  publish(writeNamespace: string, reports: readonly StatusReport[]): void;
}

/** File mode: keeps the latest statuses for the controller API to show. */
export class LatestStatuses implements StatusSink {
  private latest: { writeNamespace: string; reports: readonly StatusReport[] } = { writeNamespace: '', reports: [] };

  publish(writeNamespace: string, reports: readonly StatusReport[]): void {
    this.latest = { writeNamespace, reports };
  }

  get(): { writeNamespace: string; reports: readonly StatusReport[] } {
    return this.latest;
  }
}

export class StatusBook {
  /** Record NACKs here (it is an XdsObserver) and tell it what each role was served. */
  readonly nacks: NackBook;
  private output: PipelineOutput | undefined;

  constructor(private readonly sinks: readonly StatusSink[]) {
    this.nacks = new NackBook(() => this.publish());
  }

  /** A new translation: its statuses, with the NACKs that still hold. */
  translated(output: PipelineOutput): void {
    this.output = output;
    this.nacks.setNames(output.envoyNames);
    this.publish();
  }

  private publish(): void {
    const out = this.output;
    if (!out) return;
    const reports = [...out.listed.values()].map(({ resource, status }) => ({ resource, status: this.withNacks(resource, status) }));
    for (const sink of this.sinks) sink.publish(out.writeNamespace, reports);
  }

  private withNacks(resource: RawResource, status: ResourceStatus): ResourceStatus {
    const mine = this.nacks.about({ kind: resource.kind, namespace: resource.metadata.namespace, name: resource.metadata.name });
    if (!mine.length) return status;
    return {
      state: 'Rejected',
      reason: mine
        .map((n) => `Envoy ${n.nodeId} rejected ${n.typeUrl.split('.').pop()} version ${n.version}: ${n.message.trim()}`)
        .join('; '),
      reportedBy: REPORTER,
    };
  }
}
