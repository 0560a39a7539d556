// The ADS server against a grpc-js client speaking the protocol by hand (no Envoy): holds, ACK/NACK,
// stale nonces, by-name subscriptions, push order, cleanup, Delta, Fetch*.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { TypeUrls, decodeAny, envoyType, protoLoaderOptions } from '../../envoy/protos.js';
import { createLogger } from '../../common/log.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { AdsServer, serializeDiscoveryResponse } from '../../controller/xds/server.js';
import type { NackEvent } from '../../controller/xds/server.js';
import type { XdsResource, XdsSnapshot } from '../../controller/xds/types.js';

interface AnyMsg {
  type_url: string;
  value: Buffer;
}
interface ResponseMsg {
  version_info?: string;
  resources?: AnyMsg[];
  type_url?: string;
  nonce?: string;
}
interface RequestMsg {
  version_info?: string;
  node?: unknown;
  resource_names?: string[];
  type_url: string;
  response_nonce?: string;
  error_detail?: { code: number; message: string };
}
type ClientCtor = new (address: string, creds: grpc.ChannelCredentials) => grpc.Client & Record<string, (...args: unknown[]) => unknown>;

const pkg = grpc.loadPackageDefinition(
  protoLoader.loadSync(['envoy/service/discovery/v3/ads.proto', 'envoy/service/cluster/v3/cds.proto'], protoLoaderOptions()),
);
function ctor(path: string): ClientCtor {
  let o: unknown = pkg;
  for (const p of path.split('.')) o = (o as Record<string, unknown>)[p];
  return o as ClientCtor;
}
const AdsClient = ctor('envoy.service.discovery.v3.AggregatedDiscoveryService');
const CdsClient = ctor('envoy.service.cluster.v3.ClusterDiscoveryService');

const CUSTOM = 'type.googleapis.com/legate.test.v1.Thing';

function node(role: string | undefined, id = 'node-1'): unknown {
  return role === undefined ? { id } : { id, cluster: 'c', metadata: { fields: { role: { stringValue: role } } } };
}

function cluster(name: string): XdsResource {
  return {
    name,
    resource: {
      name,
      type: 'EDS',
      connect_timeout: { seconds: 1, nanos: 0 },
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    },
  };
}
function cla(name: string, port: number): XdsResource {
  return {
    name,
    resource: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } }] }],
    },
  };
}
function rc(name: string, prefix: string): XdsResource {
  return {
    name,
    resource: { name, virtual_hosts: [{ name: 'vh', domains: ['*'], routes: [{ match: { prefix }, direct_response: { status: 200 } }] }] },
  };
}
function listener(name: string, port: number): XdsResource {
  return { name, resource: { name, address: { socket_address: { address: '127.0.0.1', port_value: port } } } };
}
function snap(o: Record<string, XdsResource[]>): XdsSnapshot {
  return new Map(Object.entries(o));
}

class TestStream {
  private readonly queue: ResponseMsg[] = [];
  private waiters: ((r: ResponseMsg) => void)[] = [];
  readonly call: grpc.ClientDuplexStream<RequestMsg, ResponseMsg>;
  status: grpc.StatusObject | undefined;
  constructor(client: grpc.Client & Record<string, (...args: unknown[]) => unknown>) {
    this.call = client['StreamAggregatedResources']!() as grpc.ClientDuplexStream<RequestMsg, ResponseMsg>;
    this.call.on('data', (r: ResponseMsg) => {
      const w = this.waiters.shift();
      if (w) w(r);
      else this.queue.push(r);
    });
    this.call.on('status', (s: grpc.StatusObject) => (this.status = s));
    this.call.on('error', () => undefined);
  }
  send(req: RequestMsg): void {
    this.call.write(req);
  }
  next(timeoutMs = 2000): Promise<ResponseMsg> {
    const r = this.queue.shift();
    if (r) return Promise.resolve(r);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== done);
        reject(new Error('no response within ' + timeoutMs + ' ms'));
      }, timeoutMs);
      const done = (x: ResponseMsg): void => {
        clearTimeout(t);
        resolve(x);
      };
      this.waiters.push(done);
    });
  }
  async nothing(ms = 150): Promise<void> {
    await new Promise((r) => setTimeout(r, ms));
    expect(this.queue).toEqual([]);
  }
  ack(r: ResponseMsg, names: string[] = []): void {
    this.send({ type_url: r.type_url!, version_info: r.version_info, response_nonce: r.nonce, resource_names: names });
  }
}

const names = (r: ResponseMsg): string[] =>
  (r.resources ?? []).map((a) => {
    const d = decodeAny(a.type_url, a.value);
    return String(d['name'] ?? d['cluster_name']);
  });

describe('AdsServer (protocol, no Envoy)', () => {
  const cache = new SnapshotCache({ encoders: { [CUSTOM]: (_t, r) => Buffer.from(JSON.stringify(r)) } });
  const nacks: NackEvent[] = [];
  const server = new AdsServer(cache, {
    logger: createLogger('xds-test', { level: 'error' }),
    observers: [{ onNack: (e) => void nacks.push(e) }],
    stopGraceMs: 500,
  });
  let client: grpc.Client & Record<string, (...args: unknown[]) => unknown>;
  let port = 0;
  const streams: TestStream[] = [];
  const open = (): TestStream => {
    const s = new TestStream(client);
    streams.push(s);
    return s;
  };

  beforeAll(async () => {
    ({ port } = await server.start({ host: '127.0.0.1', port: 0 }));
    client = new AdsClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
  });
  afterAll(async () => {
    for (const s of streams) s.call.cancel();
    client?.close();
    await server.stop();
  });

  it('serializes DiscoveryResponse like protobufjs', () => {
    cache.set('ser', snap({ [TypeUrls.cluster]: [cluster('a'), cluster('b')] }));
    const t = cache.get('ser')!.typeSnapshot(TypeUrls.cluster);
    const bytes = serializeDiscoveryResponse({
      version_info: t.version,
      type_url: t.typeUrl,
      nonce: '7',
      resources: t.resources,
      control_plane_id: 'legate',
    });
    const decoded = envoyType('envoy.service.discovery.v3.DiscoveryResponse').toObject(
      envoyType('envoy.service.discovery.v3.DiscoveryResponse').decode(bytes),
      { json: true },
    ) as Record<string, unknown>;
    expect(decoded).toMatchObject({
      version_info: t.version,
      type_url: TypeUrls.cluster,
      nonce: '7',
      control_plane: { identifier: 'legate' },
    });
    expect((decoded['resources'] as { name: string }[]).map((r) => r.name)).toEqual(['a', 'b']);
  });

  it('holds a request until the role has a snapshot, then ACKs are recorded and nothing is resent', async () => {
    const s = open();
    s.send({ node: node('held'), type_url: TypeUrls.cluster });
    await s.nothing(200);
    expect(server.connections().find((c) => c.role === 'held')?.types[TypeUrls.cluster]?.waiting).toBe(true);
    cache.set('held', snap({ [TypeUrls.cluster]: [cluster('a')] }));
    const r = await s.next();
    expect(r.type_url).toBe(TypeUrls.cluster);
    expect(names(r)).toEqual(['a']);
    s.ack(r);
    await s.nothing();
    const info = server.connections().find((c) => c.role === 'held')!;
    expect(info.nodeId).toBe('node-1');
    expect(info.types[TypeUrls.cluster]).toMatchObject({ sentVersion: r.version_info, ackedVersion: r.version_info, waiting: false });
  });

  it('answers a wildcard type with the full set and an empty type with an empty response', async () => {
    cache.set('wild', snap({ [TypeUrls.cluster]: [cluster('a'), cluster('b')] }));
    const s = open();
    s.send({ node: node('wild'), type_url: TypeUrls.cluster, resource_names: ['a'] });
    expect(names(await s.next())).toEqual(['a', 'b']);
    s.send({ type_url: TypeUrls.listener });
    const l = await s.next();
    expect(l.type_url).toBe(TypeUrls.listener);
    expect(l.resources ?? []).toEqual([]);
  });

  it('serves by-name types by requested names and sends a requested name when it appears', async () => {
    cache.set('named', snap({ [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2)] }));
    const s = open();
    s.send({ node: node('named'), type_url: TypeUrls.endpoint, resource_names: ['a', 'c'] });
    const r1 = await s.next();
    expect(names(r1)).toEqual(['a']);
    s.ack(r1, ['a', 'c']);
    await s.nothing();
    // a change of a resource nobody asked for still changes the type version: resend of the subset
    cache.set('named', snap({ [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2), cla('c', 3)] }));
    const r2 = await s.next();
    expect(names(r2)).toEqual(['a', 'c']);
    // new names with the current nonce (what Envoy does when a cluster is added): answered, same version
    s.ack(r2, ['b']);
    const r3 = await s.next();
    expect(names(r3)).toEqual(['b']);
    expect(r3.version_info).toBe(r2.version_info);
    s.ack(r3, ['b']);
    await s.nothing();
  });

  it('ignores requests with a stale nonce', async () => {
    cache.set('stale', snap({ [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2)] }));
    const s = open();
    s.send({ node: node('stale'), type_url: TypeUrls.endpoint, resource_names: ['a'] });
    const r1 = await s.next();
    cache.set('stale', snap({ [TypeUrls.endpoint]: [cla('a', 10), cla('b', 2)] }));
    const r2 = await s.next();
    expect(r2.nonce).not.toBe(r1.nonce);
    const before = server.counters().staleRequests;
    s.ack(r1, ['b']); // answers the superseded response: must be ignored
    await s.nothing();
    expect(server.counters().staleRequests).toBe(before + 1);
    s.ack(r2, ['a']);
    await s.nothing();
  });

  it('reports a NACK and does not resend the rejected version', async () => {
    cache.set('nack', snap({ [TypeUrls.route]: [rc('r', '/')] }));
    const s = open();
    s.send({ node: node('nack', 'node-n'), type_url: TypeUrls.route, resource_names: ['r'] });
    const r1 = await s.next();
    s.ack(r1, ['r']);
    cache.set('nack', snap({ [TypeUrls.route]: [rc('r', '/v2')] }));
    const r2 = await s.next();
    const nacksBefore = server.counters().nacks;
    s.send({
      type_url: TypeUrls.route,
      version_info: r1.version_info,
      response_nonce: r2.nonce,
      resource_names: ['r'],
      error_detail: { code: 13, message: 'bad route' },
    });
    await s.nothing();
    expect(server.counters().nacks).toBe(nacksBefore + 1);
    expect(nacks.at(-1)).toEqual({
      role: 'nack',
      nodeId: 'node-n',
      typeUrl: TypeUrls.route,
      version: r2.version_info,
      previousVersion: r1.version_info,
      message: 'bad route',
      code: 13,
      resourceNames: ['r'],
    });
    const t = server.connections().find((c) => c.role === 'nack')!.types[TypeUrls.route]!;
    expect(t.lastNack).toMatchObject({ version: r2.version_info, message: 'bad route' });
    expect(t.ackedVersion).toBe(r1.version_info);
  });

  it('pushes changed types in make-before-break order, only subscribed and changed ones', async () => {
    const all = (p: string): Record<string, XdsResource[]> => ({
      [CUSTOM]: [{ name: 'x', resource: { p } }],
      [TypeUrls.route]: [rc('r', p)],
      [TypeUrls.listener]: [listener('l', p.length + 10000)],
      [TypeUrls.endpoint]: [cla('c', p.length + 20000)],
      [TypeUrls.cluster]: [{ name: 'c', resource: { ...cluster('c').resource, connect_timeout: { seconds: p.length, nanos: 0 } } }],
    });
    cache.set('order', snap(all('/')));
    const s = open();
    // subscribe in reverse order; skip nothing but the custom type
    s.send({ node: node('order'), type_url: TypeUrls.route, resource_names: ['r'] });
    s.send({ type_url: TypeUrls.listener });
    s.send({ type_url: TypeUrls.endpoint, resource_names: ['c'] });
    s.send({ type_url: TypeUrls.cluster });
    const initial = [await s.next(), await s.next(), await s.next(), await s.next()];
    for (const r of initial) s.ack(r, r.type_url === TypeUrls.route ? ['r'] : r.type_url === TypeUrls.endpoint ? ['c'] : []);
    await s.nothing();
    cache.set('order', snap(all('/abc')));
    // the cluster changed: listeners and routes wait until Envoy ACKs CDS (i.e. the cluster is warm)
    const warming = [await s.next(), await s.next()];
    expect(warming.map((r) => r.type_url)).toEqual([TypeUrls.cluster, TypeUrls.endpoint]);
    await s.nothing();
    expect(server.connections().find((c) => c.role === 'order')!.types[TypeUrls.route]!.held).toBe(true);
    s.ack(warming[1]!, ['c']);
    await s.nothing();
    s.ack(warming[0]!);
    const pushed = [...warming, await s.next(), await s.next()];
    expect(pushed.map((r) => r.type_url)).toEqual([TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener, TypeUrls.route]);
    for (const r of pushed.slice(2)) s.ack(r, r.type_url === TypeUrls.route ? ['r'] : []);
    await s.nothing(); // the custom type was not subscribed
    // only the route changes
    const next = all('/abc');
    next[TypeUrls.route] = [rc('r', '/xyz')];
    cache.set('order', snap(next));
    const only = await s.next();
    expect(only.type_url).toBe(TypeUrls.route);
    s.ack(only, ['r']);
    await s.nothing();
  });

  it('re-sends unchanged endpoints after a CDS push that adds or updates a cluster', async () => {
    const withTimeout = (name: string, seconds: number): XdsResource => ({
      name,
      resource: { ...cluster(name).resource, connect_timeout: { seconds, nanos: 0 } },
    });
    cache.set(
      'warm',
      snap({ [TypeUrls.cluster]: [withTimeout('a', 1), withTimeout('b', 1)], [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2)] }),
    );
    const s = open();
    s.send({ node: node('warm'), type_url: TypeUrls.cluster });
    const c1 = await s.next();
    s.send({ type_url: TypeUrls.endpoint, resource_names: ['a', 'b'] });
    const e1 = await s.next();
    s.ack(c1);
    s.ack(e1, ['a', 'b']);
    await s.nothing();
    // cluster a updated, endpoints unchanged: CDS, then EDS again with the same version
    cache.set(
      'warm',
      snap({ [TypeUrls.cluster]: [withTimeout('a', 2), withTimeout('b', 1)], [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2)] }),
    );
    const c2 = await s.next();
    const e2 = await s.next();
    expect([c2.type_url, e2.type_url]).toEqual([TypeUrls.cluster, TypeUrls.endpoint]);
    expect(e2.version_info).toBe(e1.version_info);
    expect(names(e2)).toEqual(['a', 'b']);
    s.ack(c2);
    s.ack(e2, ['a', 'b']);
    await s.nothing();
    // only a removal: no EDS re-send
    cache.set('warm', snap({ [TypeUrls.cluster]: [withTimeout('a', 2)], [TypeUrls.endpoint]: [cla('a', 1), cla('b', 2)] }));
    const c3 = await s.next();
    expect(c3.type_url).toBe(TypeUrls.cluster);
    s.ack(c3);
    await s.nothing();
  });

  it('holds routes while clusters warm even across late ACKs, and stops holding after the timeout', async () => {
    const quick = new AdsServer(cache, {
      logger: createLogger('xds-test', { level: 'error' }),
      clusterWarmingTimeoutMs: 300,
      stopGraceMs: 200,
    });
    const { port: quickPort } = await quick.start({ port: 0 });
    const quickClient = new AdsClient(`127.0.0.1:${quickPort}`, grpc.credentials.createInsecure());
    try {
      const withTimeout = (seconds: number): XdsResource => ({
        name: 'a',
        resource: { ...cluster('a').resource, connect_timeout: { seconds, nanos: 0 } },
      });
      cache.set('gate', snap({ [TypeUrls.cluster]: [withTimeout(1)], [TypeUrls.route]: [rc('r', '/')] }));
      const s = new TestStream(quickClient);
      streams.push(s);
      s.send({ node: node('gate'), type_url: TypeUrls.cluster });
      const c1 = await s.next();
      s.ack(c1);
      s.send({ type_url: TypeUrls.route, resource_names: ['r'] });
      const r1 = await s.next();
      cache.set('gate', snap({ [TypeUrls.cluster]: [withTimeout(2)], [TypeUrls.route]: [rc('r', '/new')] }));
      expect((await s.next()).type_url).toBe(TypeUrls.cluster);
      s.ack(r1, ['r']); // a late ACK of the old routes must not release the new ones early
      await s.nothing(150);
      const started = Date.now();
      const r2 = await s.next(2000); // no CDS ACK: released by the timeout
      expect(r2.type_url).toBe(TypeUrls.route);
      expect(r2.version_info).toBe(cache.get('gate')!.typeSnapshot(TypeUrls.route).version);
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      quickClient.close();
      await quick.stop();
    }
  });

  it('does not resend a wildcard type a reconnecting client already has at the current version', async () => {
    cache.set('reconnect', snap({ [TypeUrls.cluster]: [cluster('a')], [TypeUrls.endpoint]: [cla('a', 1)] }));
    const version = cache.get('reconnect')!.typeSnapshot(TypeUrls.cluster).version;
    const s = open();
    s.send({ node: node('reconnect'), type_url: TypeUrls.cluster, version_info: version });
    s.send({
      type_url: TypeUrls.endpoint,
      version_info: cache.get('reconnect')!.typeSnapshot(TypeUrls.endpoint).version,
      resource_names: ['a'],
    });
    const e = await s.next();
    expect(e.type_url).toBe(TypeUrls.endpoint); // by-name types are always answered
    await s.nothing();
    expect(server.connections().find((c) => c.role === 'reconnect')!.types[TypeUrls.cluster]).toMatchObject({
      sentVersion: version,
      ackedVersion: version,
    });
    // an outdated version gets the current set
    const s2 = open();
    s2.send({ node: node('reconnect'), type_url: TypeUrls.cluster, version_info: 'outdated' });
    expect((await s2.next()).version_info).toBe(version);
  });

  it('serves custom type URLs with the caller encoder (empty names = all)', async () => {
    cache.set(
      'extauth',
      snap({
        [CUSTOM]: [
          { name: 'ns.a', resource: { v: 1 } },
          { name: 'ns.b', resource: { v: 2 } },
        ],
      }),
    );
    const s = open();
    s.send({ node: node(undefined, 'extauth'), type_url: CUSTOM });
    const r = await s.next();
    expect(r.resources!.map((a) => JSON.parse(a.value.toString()))).toEqual([{ v: 1 }, { v: 2 }]);
    expect(r.resources![0]!.type_url).toBe(CUSTOM);
  });

  it('rejects a stream without node and cleans up cancelled streams', async () => {
    const bad = open();
    bad.send({ type_url: TypeUrls.cluster });
    await new Promise((r) => setTimeout(r, 200));
    expect(bad.status?.code).toBe(grpc.status.INVALID_ARGUMENT);

    cache.set('gone', snap({ [TypeUrls.cluster]: [cluster('a')] }));
    const subsBefore = cache.subscriberCount('gone');
    const s1 = open();
    const s2 = open();
    s1.send({ node: node('gone', 'g1'), type_url: TypeUrls.cluster });
    s2.send({ node: node('gone', 'g2'), type_url: TypeUrls.cluster });
    await s1.next();
    await s2.next();
    expect(cache.subscriberCount('gone')).toBe(subsBefore + 2);
    expect(server.connections().filter((c) => c.role === 'gone')).toHaveLength(2);
    s1.call.cancel();
    s2.call.end();
    await new Promise((r) => setTimeout(r, 200));
    expect(cache.subscriberCount('gone')).toBe(subsBefore);
    expect(server.connections().filter((c) => c.role === 'gone')).toHaveLength(0);
  });

  it('answers Delta with UNIMPLEMENTED', async () => {
    const call = client['DeltaAggregatedResources']!() as grpc.ClientDuplexStream<unknown, unknown>;
    const status = await new Promise<grpc.StatusObject>((resolve) => {
      call.on('status', resolve);
      call.on('error', () => undefined);
      call.write({ node: node('x'), type_url: TypeUrls.cluster });
    });
    expect(status.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(status.details).toMatch(/State-of-the-World/);
  });

  it('serves FetchClusters for a role, NOT_FOUND for an unknown one', async () => {
    cache.set('fetch', snap({ [TypeUrls.cluster]: [cluster('a'), cluster('b')] }));
    const cds = new CdsClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    const fetch = (req: unknown): Promise<ResponseMsg> =>
      new Promise((resolve, reject) =>
        cds['FetchClusters']!(req, (err: grpc.ServiceError | null, res: ResponseMsg) => (err ? reject(err) : resolve(res))),
      );
    try {
      const r = await fetch({ node: node('fetch') });
      expect(r.version_info).toBe(cache.get('fetch')!.typeSnapshot(TypeUrls.cluster).version);
      expect(names(r)).toEqual(['a', 'b']);
      expect(names(await fetch({ node: node('fetch'), resource_names: ['b'] }))).toEqual(['b']);
      await expect(fetch({ node: node('nobody') })).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    } finally {
      cds.close();
    }
  });

  it('counts streams and responses', () => {
    const c = server.counters();
    expect(c.responsesSent).toBeGreaterThan(10);
    expect(c.acks).toBeGreaterThan(5);
    expect(c.byType[TypeUrls.cluster]!.responses).toBeGreaterThan(0);
    expect(c.connectedStreams).toBe(server.connections().length);
  });
});
