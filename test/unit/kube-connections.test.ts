// controller/source/kubernetes/connections.ts: every request of a KubeConfig shares one connection
// pool per API server and TLS options (client-node 2.0 alone builds a new one per request).
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { reuseConnections } from '../../controller/source/kubernetes/connections.js';

function kubeConfig(server: string, skipTLSVerify: boolean): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

async function dispatcherOf(kc: k8s.KubeConfig): Promise<unknown> {
  const ctx = new k8s.RequestContext('https://127.0.0.1:6443/api', k8s.HttpMethod.GET);
  await kc.applySecurityAuthentication(ctx);
  return ctx.getDispatcher();
}

describe('reuseConnections', () => {
  it('gives every request the same dispatcher (client-node alone makes one per request)', async () => {
    const plain = kubeConfig('https://127.0.0.1:6443', true);
    const a = await dispatcherOf(plain);
    expect(a).toBeDefined();
    expect(await dispatcherOf(plain)).not.toBe(a);

    const kc = reuseConnections(kubeConfig('https://127.0.0.1:6443', true));
    expect(reuseConnections(kc)).toBe(kc); // once
    const first = await dispatcherOf(kc);
    expect(first).toBeDefined();
    expect(await dispatcherOf(kc)).toBe(first);
  });

  it('keeps one per API server and TLS options', async () => {
    const kc = reuseConnections(kubeConfig('https://127.0.0.1:6443', true));
    const first = await dispatcherOf(kc);
    kc.clusters[0] = { ...kc.clusters[0]!, server: 'https://127.0.0.1:7443' };
    const other = await dispatcherOf(kc);
    expect(other).not.toBe(first);
    expect(await dispatcherOf(kc)).toBe(other);
  });
});
