// Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection does it: the
// holder renews every renewMs; another replica takes the Lease over once it has not been renewed
// for its duration. Every replica serves xDS; only the leader writes statuses. Updates carry the
// Lease's resourceVersion, so two replicas cannot both win a takeover.
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../../../common/log.js';
import { reuseConnections } from './connections.js';

export interface LeaderElectionOptions {
  kubeConfig: k8s.KubeConfig;
  namespace: string;
  /** the Lease's name, shared by every replica */
  name: string;
  /** this replica, e.g. its pod name */
  identity: string;
  leaseDurationMs?: number;
  renewMs?: number;
  logger: Logger;
  /** called on every change of leadership */
  onChange(leader: boolean): void;
}

function errorText(err: unknown): string {
  const e = err as { code?: unknown; body?: unknown; message?: unknown } | undefined;
  if (typeof e?.body === 'string') {
    try {
      const status = JSON.parse(e.body) as { message?: unknown };
      if (typeof status.message === 'string') return status.message;
    } catch {
      // not a Kubernetes Status: the message below
    }
  }
  return err instanceof Error ? err.message : String(err);
}

function statusCode(err: unknown): number | undefined {
  const e = err as { code?: unknown } | undefined;
  return typeof e?.code === 'number' ? e.code : undefined;
}

export class LeaderElection {
  private leader = false;
  /** why the last attempt failed (for `legatectl check`); cleared by a success */
  private failure: string | undefined;
  private readonly api: k8s.CoordinationV1Api;
  private readonly core: k8s.CoreV1Api;
  private readonly durationMs: number;
  private readonly renewMs: number;

  constructor(private readonly o: LeaderElectionOptions) {
    this.api = reuseConnections(o.kubeConfig).makeApiClient(k8s.CoordinationV1Api);
    this.core = o.kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.durationMs = o.leaseDurationMs ?? 15_000;
    this.renewMs = o.renewMs ?? Math.max(500, Math.floor(this.durationMs / 3));
  }

  get isLeader(): boolean {
    return this.leader;
  }

  /** What keeps this replica from taking part in the election (and so from ever writing statuses). */
  problems(): string[] {
    return this.failure ? [`leader election (Lease ${this.o.namespace}/${this.o.name}): ${this.failure}; no status is written`] : [];
  }

  /** Tries now and every renewMs until `signal` aborts; a leader that stops lets the Lease go. */
  run(signal: AbortSignal): void {
    const tick = async (): Promise<void> => {
      if (signal.aborted) return;
      let leader = false;
      try {
        leader = await this.tryAcquireOrRenew();
        this.failure = undefined;
      } catch (error) {
        // unreachable API server: a leader steps down before its lease could have run out elsewhere
        const failure = errorText(error);
        if (failure !== this.failure) this.o.logger.warn('leader election: cannot reach the Lease', { error });
        this.failure = failure;
      }
      this.set(leader);
      if (!signal.aborted) setTimeout(() => void tick(), this.renewMs).unref();
    };
    void tick();
    signal.addEventListener('abort', () => {
      if (this.leader) void this.release();
      this.set(false);
    });
  }

  private set(leader: boolean): void {
    if (leader === this.leader) return;
    this.leader = leader;
    this.o.logger.info(leader ? 'became the leader: writing statuses' : 'not the leader: not writing statuses', {
      lease: `${this.o.namespace}/${this.o.name}`,
      identity: this.o.identity,
    });
    this.o.onChange(leader);
  }

  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name, identity } = this.o;
    const now = new k8s.V1MicroTime();
    const seconds = Math.ceil(this.durationMs / 1000);
    let lease: k8s.V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (statusCode(err) !== 404) throw err;
      const created: k8s.V1Lease = {
        metadata: { name, namespace },
        spec: { holderIdentity: identity, leaseDurationSeconds: seconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
      };
      try {
        await this.api.createNamespacedLease({ namespace, body: created });
        return true;
      } catch (e) {
        if (statusCode(e) === 409) return false; // another replica created it first
        if (statusCode(e) !== 404) throw e;
      }
      // the namespace itself is missing (a quickstart without the chart): made here, as the chart would
      await this.createNamespace(namespace);
      await this.api.createNamespacedLease({ namespace, body: created });
      this.o.logger.info('created the namespace of the leader election Lease', { namespace });
      return true;
    }
    const spec = lease.spec ?? {};
    const held = spec.holderIdentity === identity;
    const renewed = spec.renewTime ? new Date(spec.renewTime).getTime() : 0;
    const expired = Date.now() > renewed + (spec.leaseDurationSeconds ?? seconds) * 1000;
    if (!held && spec.holderIdentity && !expired) return false;
    lease.spec = {
      ...spec,
      holderIdentity: identity,
      leaseDurationSeconds: seconds,
      renewTime: now,
      ...(held ? {} : { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 }),
    };
    try {
      await this.api.replaceNamespacedLease({ name, namespace, body: lease });
      return true;
    } catch (e) {
      if (statusCode(e) === 409) return false; // someone else renewed or took it meanwhile
      throw e;
    }
  }

  private async createNamespace(namespace: string): Promise<void> {
    try {
      await this.core.createNamespace({ body: { metadata: { name: namespace } } });
    } catch (e) {
      if (statusCode(e) === 409) return;
      throw new Error(
        `namespace ${namespace} does not exist and cannot be created (${errorText(e)}): create it, or start with --lease-namespace NAME`,
        { cause: e },
      );
    }
  }

  /** Gives the Lease up on a clean stop, so another replica need not wait out its duration. */
  private async release(): Promise<void> {
    try {
      const lease = await this.api.readNamespacedLease({ name: this.o.name, namespace: this.o.namespace });
      if (lease.spec?.holderIdentity !== this.o.identity) return;
      lease.spec = { ...lease.spec, holderIdentity: '', renewTime: new k8s.V1MicroTime(0) };
      await this.api.replaceNamespacedLease({ name: this.o.name, namespace: this.o.namespace, body: lease });
    } catch {
      // best effort: the Lease runs out by itself
    }
  }
}
