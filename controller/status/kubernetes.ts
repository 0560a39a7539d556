// Statuses written to the status subresource of each custom resource that came from the Kubernetes
// source, only when they changed (a status write is a watch event; writing only changes keeps that
// from looping), with observedGeneration. Core kinds (Service, Secret) get none, as in Gloo.
// At most MAX_IN_FLIGHT writes are on their way at once (the others wait their turn, first come first
// served, each with the latest status): status writes cost the API server about what the writes of
// the resources themselves do, and a thousand at once took it from the users creating resources
// (docs/benchmarks.md, kube-scale: 8 in flight, creation ~2x the API server alone; 1-2, 1.4-2.2x, with
// every status written as soon). Two, so one slow request does not hold up every status.
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../common/log.js';
import { isKnownKind, kindInfo } from '../api/kinds.js';
import { reuseConnections } from '../source/kubernetes/connections.js';
import type { StatusReport, StatusSink } from './book.js';

const MAX_IN_FLIGHT = 2;

interface Target {
  group: string;
  version: string;
  namespace: string;
  plural: string;
  name: string;
}

export class KubeStatusSink implements StatusSink {
  private readonly api: k8s.CustomObjectsApi;
  /** by origin: the status body last written, and the one wanted now (`key`: what it is made of) */
  private readonly written = new Map<string, string>();
  private readonly wanted = new Map<string, { target: Target; key: string; text: string }>();
  private readonly inFlight = new Set<string>();
  /** origins waiting for a free slot, in the order they asked */
  private readonly queued = new Set<string>();
  /** status writes done since start, for metrics and tests */
  writes = 0;
  /** with leader election, only the leader writes; without, this replica always does */
  private leader = true;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly log: Logger,
  ) {
    this.api = reuseConnections(kubeConfig).makeApiClient(k8s.CustomObjectsApi);
  }

  /** Leadership changed: a new leader writes everything (another replica may have written meanwhile). */
  setLeader(leader: boolean): void {
    this.leader = leader;
    if (!leader) return;
    this.written.clear();
    for (const origin of this.wanted.keys()) this.write(origin);
  }

  publish(writeNamespace: string, reports: readonly StatusReport[]): void {
    const live = new Set<string>();
    for (const { resource, status } of reports) {
      if (!resource.origin.startsWith('kube:') || !isKnownKind(resource.kind)) continue;
      const info = kindInfo(resource.kind);
      if (info.group === '') continue;
      live.add(resource.origin);
      // most statuses are as they were: compared without building their body
      const key = JSON.stringify([writeNamespace, resource.apiVersion, status, resource.metadata.generation]);
      const before = this.wanted.get(resource.origin);
      if (before?.key === key) {
        this.write(resource.origin);
        continue;
      }
      const [group = '', version = ''] = resource.apiVersion.split('/');
      const body = {
        status: {
          state: status.state,
          reason: status.reason ?? null,
          ...(resource.metadata.generation !== undefined ? { observedGeneration: resource.metadata.generation } : {}),
          statuses: { [writeNamespace]: { state: status.state, reason: status.reason ?? null, reportedBy: status.reportedBy } },
        },
      };
      const target = { group, version, namespace: resource.metadata.namespace, plural: info.plural, name: resource.metadata.name };
      this.wanted.set(resource.origin, { target, key, text: JSON.stringify(body) });
      this.write(resource.origin);
    }
    if (live.size === this.wanted.size) return;
    for (const origin of [...this.wanted.keys()]) {
      if (live.has(origin)) continue;
      this.wanted.delete(origin);
      this.written.delete(origin);
      this.queued.delete(origin);
    }
  }

  /** Writes what is wanted for `origin` unless it is written or a write is on its way (which re-checks). */
  private write(origin: string): void {
    const want = this.wanted.get(origin);
    if (!this.leader || !want || this.written.get(origin) === want.text || this.inFlight.has(origin)) return;
    if (this.inFlight.size >= MAX_IN_FLIGHT) {
      this.queued.add(origin);
      return;
    }
    this.queued.delete(origin);
    this.inFlight.add(origin);
    this.api
      .patchNamespacedCustomObjectStatus(
        { ...want.target, body: JSON.parse(want.text) as object },
        k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
      )
      .then(
        () => {
          this.writes++;
          // not for a resource deleted while its write was on its way: nothing would ever drop the entry
          if (this.wanted.has(origin)) this.written.set(origin, want.text);
        },
        (error: unknown) => {
          // deleted meanwhile, or the API server is away: the next translation tries again
          this.written.delete(origin);
          this.log.warn('cannot write status', { namespace: want.target.namespace, name: want.target.name, error });
        },
      )
      .finally(() => {
        this.inFlight.delete(origin);
        const now = this.wanted.get(origin);
        if (now && now.text !== want.text) this.write(origin);
        // the next in line (write() takes it off the queue, or drops it when nothing is left to write)
        for (const next of this.queued) {
          if (this.inFlight.size >= MAX_IN_FLIGHT) break;
          this.queued.delete(next);
          this.write(next);
        }
      });
  }
}
