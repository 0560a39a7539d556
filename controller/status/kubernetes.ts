// Statuses written to the status subresource of each custom resource that came from the Kubernetes
// source, only when they changed (a status write is a watch event; writing only changes keeps that
// from looping), with observedGeneration. Core kinds (Service, Secret) get none, as in Gloo.
// At most MAX_IN_FLIGHT writes are on their way at once (the others wait their turn, first come first
// served, each with the latest status): status writes cost the API server about what the writes of
// the resources themselves do, and a thousand at once took it from the users creating resources
// (docs/benchmarks.md, kube-scale: 8 in flight, creation ~2x the API server alone; 1-2, 1.4-2.2x, with
// every status written as soon). Two, so one slow request does not hold up every status.
// During a burst of changes (translations closer together than BURST_GAP_MS, as when a thousand objects
// are applied at once) no new write starts: they wait until the burst ends, at most BURST_MAX_HOLD_MS,
// so the API server serves the users' writes first. A lone edit's status is written at once.
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../common/log.js';
import { isKnownKind, kindInfo } from '../api/kinds.js';
import { reuseConnections } from '../source/kubernetes/connections.js';
import type { StatusReport, StatusSink } from './book.js';

const MAX_IN_FLIGHT = 2;
/** Translations closer together than this are a burst (the source paces its snapshots at >= 250 ms in one). */
export const BURST_GAP_MS = 600;
/** The longest statuses wait for a burst to end; then they are written, and no hold starts for as long again. */
export const BURST_MAX_HOLD_MS = 10_000;

/** The one call the sink makes (a fake in tests). */
export type StatusApi = Pick<k8s.CustomObjectsApi, 'patchNamespacedCustomObjectStatus'>;

interface Target {
  group: string;
  version: string;
  namespace: string;
  plural: string;
  name: string;
}

export class KubeStatusSink implements StatusSink {
  private readonly api: StatusApi;
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
  private lastPublishAt = -Infinity;
  /** set while a burst holds new writes back */
  private hold: { since: number; timer: NodeJS.Timeout } | undefined;
  /** after a hold reached its limit: no new hold before this time */
  private noHoldBefore = -Infinity;

  constructor(
    kubeConfig: k8s.KubeConfig,
    private readonly log: Logger,
    api?: StatusApi,
  ) {
    this.api = api ?? reuseConnections(kubeConfig).makeApiClient(k8s.CustomObjectsApi);
  }

  /** Status writes not yet written (queued, or held back by a burst), for tests and metrics. */
  get pending(): number {
    return this.queued.size;
  }

  /** Leadership changed: a new leader writes everything (another replica may have written meanwhile). */
  setLeader(leader: boolean): void {
    this.leader = leader;
    if (!leader) return;
    this.written.clear();
    for (const origin of this.wanted.keys()) this.write(origin);
  }

  publish(writeNamespace: string, reports: readonly StatusReport[]): void {
    const now = Date.now();
    if (now - this.lastPublishAt < BURST_GAP_MS) this.holdWrites(now);
    this.lastPublishAt = now;
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

  /** A burst: new writes wait until no translation came for BURST_GAP_MS (at most BURST_MAX_HOLD_MS in all). */
  private holdWrites(now: number): void {
    if (now < this.noHoldBefore) return;
    const since = this.hold?.since ?? now;
    if (this.hold) clearTimeout(this.hold.timer);
    if (now - since >= BURST_MAX_HOLD_MS) {
      this.hold = undefined;
      this.noHoldBefore = now + BURST_MAX_HOLD_MS;
      this.drain();
      return;
    }
    const timer = setTimeout(() => {
      this.hold = undefined;
      this.drain();
    }, BURST_GAP_MS);
    timer.unref();
    this.hold = { since, timer };
  }

  /** Starts queued writes while slots are free (write() drops what no longer needs writing). */
  private drain(): void {
    for (const next of this.queued) {
      if (this.hold || this.inFlight.size >= MAX_IN_FLIGHT) break;
      this.queued.delete(next);
      this.write(next);
    }
  }

  /** Writes what is wanted for `origin` unless it is written or a write is on its way (which re-checks). */
  private write(origin: string): void {
    const want = this.wanted.get(origin);
    if (!this.leader || !want || this.written.get(origin) === want.text || this.inFlight.has(origin)) return;
    if (this.hold || this.inFlight.size >= MAX_IN_FLIGHT) {
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
        this.drain();
      });
  }
}
