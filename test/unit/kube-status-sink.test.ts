// Status writes to the API server: a lone change's status is written at once; during a burst of translations
// (objects applied by the thousand) no new write starts until the burst ends, or has lasted BURST_MAX_HOLD_MS.
import * as k8s from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RawResource } from '../../controller/api/meta.js';
import type { StatusReport } from '../../controller/status/book.js';
import { BURST_GAP_MS, BURST_MAX_HOLD_MS, KubeStatusSink, type StatusApi } from '../../controller/status/kubernetes.js';
import { createLogger } from '../../common/log.js';

function report(name: string, state: 'Accepted' | 'Rejected' = 'Accepted'): StatusReport {
  const resource: RawResource = {
    apiVersion: 'gateway.solo.io/v1',
    kind: 'VirtualService',
    metadata: { name, namespace: 'default', generation: 1 },
    spec: {},
    body: {},
    origin: `kube:VirtualService/default/${name}`,
  };
  return { resource, status: { state, reportedBy: 'gateway' } };
}

/** A fake API server: records the names patched, answers after `latencyMs`. */
function fakeApi(latencyMs = 5): { api: StatusApi; patched: string[] } {
  const patched: string[] = [];
  const api: StatusApi = {
    patchNamespacedCustomObjectStatus: ((req: { name: string }) =>
      new Promise((resolve) =>
        setTimeout(() => {
          patched.push(req.name);
          resolve({});
        }, latencyMs),
      )) as StatusApi['patchNamespacedCustomObjectStatus'],
  };
  return { api, patched };
}

const logger = createLogger('test', { write: () => undefined });

describe('KubeStatusSink', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('writes a lone change at once', async () => {
    const { api, patched } = fakeApi();
    const sink = new KubeStatusSink(new k8s.KubeConfig(), logger, api);
    sink.publish('gloo-system', [report('a')]);
    await vi.advanceTimersByTimeAsync(20);
    expect(patched).toEqual(['a']);
  });

  it('holds new writes while translations come closer than the burst gap, then writes them all', async () => {
    const { api, patched } = fakeApi();
    const sink = new KubeStatusSink(new k8s.KubeConfig(), logger, api);
    const reports: StatusReport[] = [];
    sink.publish('gloo-system', [report('first')]);
    for (let i = 0; i < 8; i++) {
      await vi.advanceTimersByTimeAsync(BURST_GAP_MS / 2);
      reports.push(report(`vs-${i}`));
      sink.publish('gloo-system', [report('first'), ...reports]);
    }
    // the first (a lone change) went; none of the burst's
    expect(patched).toEqual(['first']);
    expect(sink.pending).toBe(8);
    await vi.advanceTimersByTimeAsync(BURST_GAP_MS + 200);
    expect(patched.length).toBe(9);
    expect(sink.pending).toBe(0);
  });

  it('writes during a burst that outlasts the longest hold', async () => {
    const { api, patched } = fakeApi();
    const sink = new KubeStatusSink(new k8s.KubeConfig(), logger, api);
    const reports: StatusReport[] = [];
    const steps = Math.ceil((BURST_MAX_HOLD_MS * 1.5) / (BURST_GAP_MS / 2));
    let writtenDuringBurst = 0;
    for (let i = 0; i < steps; i++) {
      reports.push(report(`vs-${i}`));
      sink.publish('gloo-system', reports);
      await vi.advanceTimersByTimeAsync(BURST_GAP_MS / 2);
      writtenDuringBurst = patched.length;
    }
    expect(writtenDuringBurst).toBeGreaterThan(steps / 2);
  });

  it('forgets a deleted resource that waited for a burst to end', async () => {
    const { api, patched } = fakeApi();
    const sink = new KubeStatusSink(new k8s.KubeConfig(), logger, api);
    sink.publish('gloo-system', [report('a')]);
    await vi.advanceTimersByTimeAsync(BURST_GAP_MS / 2);
    sink.publish('gloo-system', [report('a'), report('b')]);
    await vi.advanceTimersByTimeAsync(BURST_GAP_MS / 2);
    sink.publish('gloo-system', [report('a')]);
    await vi.advanceTimersByTimeAsync(BURST_GAP_MS * 2);
    expect(patched).toEqual(['a']);
    expect(sink.pending).toBe(0);
  });
});
