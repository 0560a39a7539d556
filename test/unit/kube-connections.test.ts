// controller/source/kubernetes/connections.ts: every request of a KubeConfig shares one connection
// pool per API server and TLS options (client-node 2.0 alone builds a new one per request).
import * as k8s from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { limitRequestRate, reuseConnections } from '../../controller/source/kubernetes/connections.js';

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

describe('limitRequestRate (Settings kubernetes.rateLimits)', () => {
  const fakeConfig = (): { calls: number[]; config: k8s.KubeConfig } => {
    const calls: number[] = [];
    const started = performance.now();
    const config = {
      applySecurityAuthentication(): Promise<void> {
        calls.push(performance.now() - started);
        return Promise.resolve();
      },
    } as unknown as k8s.KubeConfig;
    return { calls, config };
  };

  it('lets a burst through at once, then QPS a second, in order', async () => {
    const { calls, config } = fakeConfig();
    limitRequestRate(config, { QPS: 20, burst: 2 });
    const apply = (config as unknown as { applySecurityAuthentication(c: unknown): Promise<void> }).applySecurityAuthentication;
    await Promise.all([1, 2, 3, 4, 5].map(() => apply.call(config, {})));
    expect(calls).toHaveLength(5);
    // two at once, the other three 50 ms apart (20 a second)
    expect(calls[1]!).toBeLessThan(30);
    expect(calls[4]!).toBeGreaterThanOrEqual(140);
  });

  it('QPS 0 is no limit', async () => {
    const { calls, config } = fakeConfig();
    limitRequestRate(config, { QPS: 0, burst: 0 });
    const apply = (c: k8s.KubeConfig): Promise<void> =>
      (c as unknown as { applySecurityAuthentication(x: unknown): Promise<void> }).applySecurityAuthentication({});
    await Promise.all(Array.from({ length: 50 }, () => apply(config)));
    expect(calls).toHaveLength(50);
    expect(calls[49]!).toBeLessThan(100);
  });
});
