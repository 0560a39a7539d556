// One ADS stream's state machine driven directly, without gRPC: requests in, responses and observer
// events out (the split of controller/xds makes this possible; xds-server.test.ts covers the wire).
import { describe, expect, it } from 'vitest';
import type * as grpc from '@grpc/grpc-js';
import { TypeUrls } from '../../envoy/protos.js';
import { createLogger } from '../../common/log.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { XdsCounters, fanOut, type NackEvent, type StreamIdentity, type XdsObserver } from '../../controller/xds/observer.js';
import { AdsStream, type StreamTransport } from '../../controller/xds/stream.js';
import type { OutgoingDiscoveryResponse } from '../../controller/xds/wire.js';
import type { XdsResource, XdsSnapshot } from '../../controller/xds/types.js';

const ROLE = 'legate-system~gateway-proxy';
const NODE = { id: 'envoy-1', cluster: 'gateway-proxy', metadata: { fields: { role: { stringValue: ROLE } } } };

function cluster(name: string, timeout = 1): XdsResource {
  return { name, resource: { name, type: 'EDS', connect_timeout: { seconds: timeout }, eds_cluster_config: { eds_config: { ads: {} } } } };
}
function cla(name: string): XdsResource {
  return { name, resource: { cluster_name: name, endpoints: [] } };
}
function listener(name: string): XdsResource {
  return { name, resource: { name, address: { socket_address: { address: '127.0.0.1', port_value: 8080 } } } };
}
function snapshot(o: Record<string, XdsResource[]>): XdsSnapshot {
  return new Map(Object.entries(o));
}

class Recorder implements StreamTransport {
  readonly peer = 'test';
  writable = true;
  readonly sent: OutgoingDiscoveryResponse[] = [];
  failed: { code: grpc.status; message: string } | undefined;
  write(r: OutgoingDiscoveryResponse): void {
    this.sent.push(r);
  }
  fail(code: grpc.status, message: string): void {
    this.failed = { code, message };
  }
  last(typeUrl: string): OutgoingDiscoveryResponse {
    const r = [...this.sent].reverse().find((x) => x.type_url === typeUrl);
    if (!r) throw new Error(`nothing sent for ${typeUrl}`);
    return r;
  }
}

function setup(warmingTimeoutMs = 10_000) {
  const cache = new SnapshotCache();
  const events: string[] = [];
  const nacks: NackEvent[] = [];
  const counters = new XdsCounters();
  const recording: XdsObserver = {
    onStreamOpen: (s: StreamIdentity) => void events.push(`open ${s.role}`),
    onStreamClose: (_s, reason) => void events.push(`close ${reason}`),
    onAck: (_s, typeUrl, version) => void events.push(`ack ${typeUrl.split('.').pop()} ${version}`),
    onNack: (e) => void nacks.push(e),
    onStaleRequest: (_s, typeUrl) => void events.push(`stale ${typeUrl.split('.').pop()}`),
  };
  const log = createLogger('xds-stream-test', { level: 'error' });
  const observer = fanOut([counters, recording], (error) => {
    throw error;
  });
  const transport = new Recorder();
  const closed: number[] = [];
  const settings = {
    cache,
    log,
    observer,
    controlPlaneId: 'legate',
    wildcard: new Set([TypeUrls.listener, TypeUrls.cluster]),
    warmingTimeoutMs,
  };
  const stream = new AdsStream(1, transport, settings, (s) => void closed.push(s.id));
  return { cache, stream, transport, events, nacks, counters, closed };
}

describe('AdsStream', () => {
  it('holds a request until the role has a snapshot, then answers it', () => {
    const { cache, stream, transport, events } = setup();
    stream.handleRequest({ node: NODE, type_url: TypeUrls.cluster });
    expect(transport.sent).toEqual([]);
    expect(stream.status()?.types[TypeUrls.cluster]?.waiting).toBe(true);
    cache.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('a')] }));
    expect(transport.sent.map((r) => r.resources.map((x) => x.name))).toEqual([['a']]);
    expect(events).toEqual([`open ${ROLE}`]);
  });

  it('records an ACK, and tells observers about a NACK with the rejected version and resource names', () => {
    const { cache, stream, transport, events, nacks, counters } = setup();
    cache.set(ROLE, snapshot({ [TypeUrls.listener]: [listener('l1')] }));
    stream.handleRequest({ node: NODE, type_url: TypeUrls.listener });
    const first = transport.last(TypeUrls.listener);
    stream.handleRequest({ type_url: TypeUrls.listener, version_info: first.version_info, response_nonce: first.nonce });
    expect(events).toContain(`ack Listener ${first.version_info}`);

    cache.set(ROLE, snapshot({ [TypeUrls.listener]: [listener('l1'), listener('l2')] }));
    const second = transport.last(TypeUrls.listener);
    stream.handleRequest({
      type_url: TypeUrls.listener,
      version_info: first.version_info,
      response_nonce: second.nonce,
      error_detail: { code: 13, message: 'duplicate listener address' },
    });
    expect(nacks).toEqual([
      {
        role: ROLE,
        nodeId: 'envoy-1',
        typeUrl: TypeUrls.listener,
        version: second.version_info,
        previousVersion: first.version_info,
        message: 'duplicate listener address',
        code: 13,
        resourceNames: ['l1', 'l2'],
      },
    ]);
    const status = stream.status()?.types[TypeUrls.listener];
    expect(status?.ackedVersion).toBe(first.version_info);
    expect(status?.lastNack?.version).toBe(second.version_info);
    expect(counters.snapshot()).toMatchObject({ acks: 1, nacks: 1, responsesSent: 2, connectedStreams: 1, streamsTotal: 1 });
  });

  it('ignores a request answering a superseded response', () => {
    const { cache, stream, transport, events } = setup();
    cache.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('a')] }));
    stream.handleRequest({ node: NODE, type_url: TypeUrls.cluster });
    const old = transport.last(TypeUrls.cluster);
    cache.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('b')] }));
    const sent = transport.sent.length;
    stream.handleRequest({ type_url: TypeUrls.cluster, version_info: old.version_info, response_nonce: old.nonce });
    expect(transport.sent.length).toBe(sent);
    expect(events).toContain('stale Cluster');
  });

  it('after a CDS push that updates clusters, re-sends EDS and holds LDS until the CDS ACK', () => {
    const { cache, stream, transport } = setup();
    cache.set(
      ROLE,
      snapshot({ [TypeUrls.cluster]: [cluster('a')], [TypeUrls.endpoint]: [cla('a')], [TypeUrls.listener]: [listener('l1')] }),
    );
    stream.handleRequest({ node: NODE, type_url: TypeUrls.cluster });
    stream.handleRequest({ type_url: TypeUrls.endpoint, resource_names: ['a'] });
    stream.handleRequest({ type_url: TypeUrls.listener });
    for (const t of [TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener]) {
      const r = transport.last(t);
      stream.handleRequest({
        type_url: t,
        version_info: r.version_info,
        response_nonce: r.nonce,
        resource_names: t === TypeUrls.endpoint ? ['a'] : [],
      });
    }
    const before = transport.sent.length;

    // the cluster changes and so does the listener, in one snapshot
    cache.set(
      ROLE,
      snapshot({ [TypeUrls.cluster]: [cluster('a', 2)], [TypeUrls.endpoint]: [cla('a')], [TypeUrls.listener]: [listener('l2')] }),
    );
    const pushed = transport.sent.slice(before).map((r) => r.type_url);
    expect(pushed).toEqual([TypeUrls.cluster, TypeUrls.endpoint]);
    expect(stream.status()?.types[TypeUrls.listener]?.held).toBe(true);

    const cds = transport.last(TypeUrls.cluster);
    stream.handleRequest({ type_url: TypeUrls.cluster, version_info: cds.version_info, response_nonce: cds.nonce });
    expect(transport.sent.slice(before).map((r) => r.type_url)).toEqual([TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener]);
    expect(stream.status()?.types[TypeUrls.listener]?.held).toBe(false);
  });

  it('refuses a stream whose first request names no node, and reports the close once', () => {
    const { stream, transport, closed, events } = setup();
    stream.handleRequest({ type_url: TypeUrls.cluster });
    expect(transport.failed?.message).toMatch(/node\.id or node\.metadata\.role/);
    expect(closed).toEqual([1]);
    stream.close('again');
    expect(closed).toEqual([1]);
    expect(events).toEqual([]);
  });

  it('unsubscribes on close: later snapshots write nothing', () => {
    const { cache, stream, transport, events } = setup();
    cache.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('a')] }));
    stream.handleRequest({ node: NODE, type_url: TypeUrls.cluster });
    stream.close('cancelled');
    const sent = transport.sent.length;
    cache.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('b')] }));
    expect(transport.sent.length).toBe(sent);
    expect(events).toContain('close cancelled');
  });
});

describe('fanOut', () => {
  it('keeps calling the other observers when one throws', () => {
    const seen: string[] = [];
    const errors: unknown[] = [];
    const o = fanOut(
      [
        { onFetch: () => void seen.push('a') },
        {
          onFetch: () => {
            throw new Error('boom');
          },
        },
        { onFetch: () => void seen.push('c') },
      ],
      (e) => void errors.push(e),
    );
    o.onFetch(TypeUrls.cluster);
    expect(seen).toEqual(['a', 'c']);
    expect(errors).toHaveLength(1);
  });
});
