// What the Kubernetes source keeps of a watched object (controller/source/kubernetes/convert.ts
// trimObject): everything the pipeline reads, nothing of managedFields, status or a last-applied copy.
import { describe, expect, it } from 'vitest';
import {
  LAST_APPLIED_ANNOTATION,
  endpointsFromSlices,
  toRawResource,
  trimObject,
  type KubeObject,
} from '../../controller/source/kubernetes/convert.js';

const managedFields = [{ manager: 'kubectl', operation: 'Apply', fieldsV1: { 'f:spec': { 'f:virtualHost': {} } } }];

describe('trimObject', () => {
  it('drops managedFields, status, the last-applied copy and unread metadata; keeps what the pipeline reads', () => {
    const vs: KubeObject = {
      apiVersion: 'gateway.legate.dev/v1',
      kind: 'VirtualService',
      metadata: {
        name: 'shop',
        namespace: 'default',
        uid: 'u-1',
        resourceVersion: '42',
        generation: 3,
        creationTimestamp: '2026-11-24T00:00:00Z',
        labels: { team: 'a' },
        annotations: { [LAST_APPLIED_ANNOTATION]: '{"a whole":"copy"}', note: 'kept' },
        managedFields,
      },
      spec: { virtualHost: { domains: ['shop.example.com'] } },
      status: { state: 'Accepted', statuses: {} },
    };
    const before = toRawResource(structuredClone(vs), 'gateway.legate.dev/v1', 'VirtualService');
    const trimmed = trimObject(vs);
    expect(trimmed).toBe(vs); // in place: the informer's cache holds this very object
    expect(trimmed).toEqual({
      apiVersion: 'gateway.legate.dev/v1',
      kind: 'VirtualService',
      metadata: {
        name: 'shop',
        namespace: 'default',
        uid: 'u-1',
        resourceVersion: '42',
        generation: 3,
        labels: { team: 'a' },
        annotations: { note: 'kept' },
      },
      spec: { virtualHost: { domains: ['shop.example.com'] } },
    });
    const after = toRawResource(trimmed, 'gateway.legate.dev/v1', 'VirtualService');
    expect(after).toEqual({ ...before, metadata: { ...before!.metadata, annotations: { note: 'kept' } } });
    // an object with only the last-applied annotation loses its annotations altogether
    const secret = trimObject({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', annotations: { [LAST_APPLIED_ANNOTATION]: '{}' } },
    });
    expect(secret.metadata).toEqual({ name: 's' });
  });

  it('keeps what EndpointSlices and core kinds carry beside spec', () => {
    const slice: KubeObject = {
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { name: 'web-abc', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' }, managedFields },
      addressType: 'IPv4',
      endpoints: [{ addresses: ['198.18.0.10'], conditions: { ready: true } }],
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    };
    const before = endpointsFromSlices([structuredClone(slice)]);
    expect(endpointsFromSlices([trimObject(slice)])).toEqual(before);
    expect(slice.metadata?.['managedFields']).toBeUndefined();

    const secret: KubeObject = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's', namespace: 'n', managedFields },
      type: 'Opaque',
      data: { k: 'dg==' },
    };
    const raw = toRawResource(trimObject(secret), 'v1', 'Secret');
    expect(raw?.body).toEqual({ type: 'Opaque', data: { k: 'dg==' } });
  });
});
