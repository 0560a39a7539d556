// One connection pool per API server for every request of a KubeConfig. @kubernetes/client-node 2.0
// builds a new undici Agent for each request whenever the cluster has TLS options (a CA, or
// insecure-skip-tls-verify): a new TLS connection and secure context per status write, lease renewal
// or list, each socket then lingering until its keep-alive timeout. At a thousand status writes that
// was seconds of handshakes on both sides (and as many sockets). Here the Agent is kept per set of TLS
// options (a rotated CA gives a new one), so requests share connections.
import { createHash } from 'node:crypto';
import type * as k8s from '@kubernetes/client-node';

const POOLED = Symbol('legate.pooledConnections');
const KEEP = 8;

type CreateDispatcher = (cluster: unknown, agentOptions: unknown) => unknown;

/** Makes `kubeConfig` reuse one dispatcher per TLS options (in place, once); returns it. */
export function reuseConnections(kubeConfig: k8s.KubeConfig): k8s.KubeConfig {
  const target = kubeConfig as unknown as { createDispatcher?: CreateDispatcher; [POOLED]?: true };
  // a private method of client-node's KubeConfig: without it (another version), requests work as before
  if (target[POOLED] || typeof target.createDispatcher !== 'function') return kubeConfig;
  const create = target.createDispatcher.bind(kubeConfig);
  const pool = new Map<string, unknown>();
  target.createDispatcher = (cluster, agentOptions) => {
    const { server, proxyUrl } = (cluster ?? {}) as { server?: string; proxyUrl?: string };
    const key = createHash('sha256')
      .update(JSON.stringify([server, proxyUrl, agentOptions]))
      .digest('hex');
    if (pool.has(key)) return pool.get(key);
    const dispatcher = create(cluster, agentOptions);
    // an evicted one is left to finish what it carries and close its idle sockets itself
    if (pool.size >= KEEP) pool.delete(pool.keys().next().value!);
    pool.set(key, dispatcher);
    return dispatcher;
  };
  target[POOLED] = true;
  return kubeConfig;
}

const LIMITED = Symbol('legate.requestRate');

/** A token bucket: `qps` tokens a second, at most `burst` held; a request takes one or waits for it, in order. */
class RequestBucket {
  private tokens: number;
  private at = performance.now();
  private readonly waiting: (() => void)[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly qps: number,
    readonly burst: number,
  ) {
    this.tokens = burst;
  }

  /** undefined when a token was free (the usual case: no promise), else when one is. */
  take(): Promise<void> | undefined {
    this.refill();
    if (this.waiting.length === 0 && this.tokens >= 1) {
      this.tokens -= 1;
      return undefined;
    }
    return new Promise<void>((resolve) => {
      this.waiting.push(resolve);
      this.schedule();
    });
  }

  private refill(): void {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.at) / 1000) * this.qps);
    this.at = now;
  }

  private schedule(): void {
    if (this.timer) return;
    const ms = Math.max(1, Math.ceil(((1 - this.tokens) / this.qps) * 1000));
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.refill();
      while (this.waiting.length > 0 && this.tokens >= 1) {
        this.tokens -= 1;
        this.waiting.shift()!();
      }
      if (this.waiting.length > 0) this.schedule();
    }, ms);
    this.timer.unref();
  }
}

type ApplyAuth = (context: unknown) => Promise<void>;

/**
 * Settings kubernetes.rateLimits (Gloo's Kubernetes client QPS and burst): every request made with `kubeConfig` (lists,
 * watches, status writes, leases: each passes applySecurityAuthentication) waits for a token. QPS 0 or none: no limit,
 * as before (client-node has none of its own). A change replaces the bucket; requests already waiting keep their place.
 */
export function limitRequestRate(kubeConfig: k8s.KubeConfig, limits: { QPS: number; burst: number }): void {
  const target = kubeConfig as unknown as { applySecurityAuthentication?: ApplyAuth; [LIMITED]?: { bucket?: RequestBucket } };
  const qps = limits.QPS;
  const burst = Math.max(1, limits.burst || Math.ceil(qps));
  let state = target[LIMITED];
  if (!state) {
    if (qps <= 0 || typeof target.applySecurityAuthentication !== 'function') return;
    const apply = target.applySecurityAuthentication.bind(kubeConfig);
    const s: { bucket?: RequestBucket } = {};
    target.applySecurityAuthentication = (context) => {
      const wait = s.bucket?.take();
      return wait ? wait.then(() => apply(context)) : apply(context);
    };
    target[LIMITED] = state = s;
  }
  if (qps <= 0) delete state.bucket;
  else if (state.bucket?.qps !== qps || state.bucket.burst !== burst) state.bucket = new RequestBucket(qps, burst);
}
