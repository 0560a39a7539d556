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
