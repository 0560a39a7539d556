// Kubernetes objects -> RawResources (controller/source/kubernetes/convert.ts).
import { describe, expect, it } from 'vitest';
import { endpointsFromSlices, toRawResource } from '../../controller/source/kubernetes/convert.js';

describe('toRawResource', () => {
  it('keeps spec, labels and generation, drops status, and names its origin', () => {
    const raw = toRawResource(
      {
        apiVersion: 'gateway.solo.io/v1',
        kind: 'VirtualService',
        metadata: { name: 'shop', namespace: 'default', generation: 3, labels: { a: 'b' }, resourceVersion: '77' },
        spec: { virtualHost: { domains: ['x'] } },
        status: { state: 'Accepted' },
      },
      'gateway.solo.io/v1',
      'VirtualService',
    );
    expect(raw).toEqual({
      apiVersion: 'gateway.solo.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'shop', namespace: 'default', labels: { a: 'b' }, generation: 3 },
      spec: { virtualHost: { domains: ['x'] } },
      body: {},
      origin: 'kube:gateway.solo.io/v1/VirtualService/default/shop',
    });
  });

  it('keeps the fields of core kinds beside spec (a Secret has data, no spec)', () => {
    const raw = toRawResource(
      { apiVersion: 'v1', kind: 'Secret', metadata: { name: 's', namespace: 'n' }, type: 'Opaque', data: { k: 'dg==' } },
      'v1',
      'Secret',
    );
    expect(raw?.body).toEqual({ type: 'Opaque', data: { k: 'dg==' } });
    expect(raw?.spec).toBeUndefined();
  });
});

describe('endpointsFromSlices', () => {
  it("gathers a Service's slices into one Endpoints with the ready addresses", () => {
    const slice = (name: string, ips: [string, boolean | undefined][]) => ({
      metadata: { name, namespace: 'default', labels: { 'kubernetes.io/service-name': 'pets' } },
      addressType: 'IPv4',
      endpoints: ips.map(([ip, ready]) => ({ addresses: [ip], conditions: ready === undefined ? {} : { ready } })),
      ports: [{ name: 'http', port: 9000, protocol: 'TCP' }],
    });
    const eps = endpointsFromSlices([
      slice('pets-a', [
        ['198.18.0.1', true],
        ['198.18.0.2', false],
      ]),
      slice('pets-b', [['198.18.0.3', undefined]]),
      { metadata: { name: 'fqdn', namespace: 'default', labels: { 'kubernetes.io/service-name': 'pets' } }, addressType: 'FQDN' },
    ]);
    expect(eps).toHaveLength(1);
    expect(eps[0]?.metadata).toEqual({ name: 'pets', namespace: 'default' });
    expect(eps[0]?.body).toEqual({
      subsets: [
        { addresses: [{ ip: '198.18.0.1' }], ports: [{ name: 'http', port: 9000, protocol: 'TCP' }] },
        { addresses: [{ ip: '198.18.0.3' }], ports: [{ name: 'http', port: 9000, protocol: 'TCP' }] },
      ],
    });
  });
});
