import { describe, expect, it, vi } from 'vitest';
import { TypeUrls, decodeAny, envoyType } from '../../envoy/protos.js';
import { EMPTY_VERSION, SnapshotCache, XdsSnapshotError, canonicalJson, orderTypeUrls } from '../../controller/xds/cache.js';
import type { XdsResource, XdsSnapshot } from '../../controller/xds/types.js';

const ROLE = 'legate-system~gateway-proxy';

function cluster(name: string, port = 8080): XdsResource {
  return {
    name,
    resource: {
      name,
      type: 'EDS',
      connect_timeout: { seconds: 5, nanos: 0 },
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
      // Struct fields in Envoy's plain JSON form; envoy/protos.ts converts them (see docs/xds.md)
      metadata: { filter_metadata: { legate: { port } } },
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

function listener(name: string, port: number): XdsResource {
  return {
    name,
    resource: {
      name,
      address: { socket_address: { address: '127.0.0.1', port_value: port } },
      filter_chains: [
        {
          filters: [
            {
              name: 'envoy.filters.network.http_connection_manager',
              typed_config: {
                '@type': 'type.googleapis.com/envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
                stat_prefix: 'http',
                rds: { config_source: { ads: {}, resource_api_version: 'V3' }, route_config_name: `${name}-routes` },
                http_filters: [
                  {
                    name: 'envoy.filters.http.router',
                    typed_config: { '@type': 'type.googleapis.com/envoy.extensions.filters.http.router.v3.Router' },
                  },
                ],
              },
            },
          ],
        },
      ],
    },
  };
}

function routeConfig(name: string, prefix: string): XdsResource {
  return {
    name,
    resource: {
      name,
      virtual_hosts: [{ name: 'vh', domains: ['*'], routes: [{ match: { prefix }, route: { cluster: 'c1' } }] }],
    },
  };
}

function snapshot(entries: Record<string, XdsResource[]>): XdsSnapshot {
  return new Map(Object.entries(entries));
}

function base(): Record<string, XdsResource[]> {
  return {
    [TypeUrls.cluster]: [cluster('c1'), cluster('c2')],
    [TypeUrls.endpoint]: [cla('c1', 9001), cla('c2', 9002)],
    [TypeUrls.listener]: [listener('listener-::-8080', 8080)],
    [TypeUrls.route]: [routeConfig('listener-::-8080-routes', '/')],
  };
}

describe('SnapshotCache versions', () => {
  it('first set reports every type, in push order', () => {
    const cache = new SnapshotCache();
    const changed = cache.set(ROLE, snapshot(base()));
    expect(changed).toEqual([TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener, TypeUrls.route]);
    const snap = cache.get(ROLE)!;
    for (const t of changed) expect(snap.typeSnapshot(t).version).toMatch(/^[0-9a-f]{16}$/);
    expect(cache.roles()).toEqual([ROLE]);
  });

  it('an identical set changes nothing and reuses encodings', () => {
    const cache = new SnapshotCache();
    cache.set(ROLE, snapshot(base()));
    const before = cache.get(ROLE)!;
    const listener = vi.fn();
    cache.subscribe(ROLE, listener);
    expect(cache.set(ROLE, snapshot(base()))).toEqual([]);
    expect(listener).not.toHaveBeenCalled();
    expect(cache.get(ROLE)).toBe(before);
  });

  it('versions depend on content only: key order and resource order do not matter', () => {
    const a = new SnapshotCache();
    const b = new SnapshotCache();
    a.set(ROLE, snapshot({ [TypeUrls.cluster]: [cluster('c1'), cluster('c2')] }));
    const reordered = cluster('c2');
    const shuffled: XdsResource = { name: reordered.name, resource: Object.fromEntries(Object.entries(reordered.resource).reverse()) };
    b.set(ROLE, snapshot({ [TypeUrls.cluster]: [shuffled, cluster('c1')] }));
    expect(a.get(ROLE)!.typeSnapshot(TypeUrls.cluster).version).toBe(b.get(ROLE)!.typeSnapshot(TypeUrls.cluster).version);
    expect(canonicalJson({ b: 1, a: [{ d: 2, c: undefined }] })).toBe('{"a":[{"d":2}],"b":1}');
  });

  it('only the changed type gets a new version, and only changed resources are re-encoded', () => {
    const cache = new SnapshotCache();
    cache.set(ROLE, snapshot(base()));
    const first = cache.get(ROLE)!;
    const next = base();
    next[TypeUrls.endpoint] = [cla('c1', 9001), cla('c2', 9999)];
    const seen: string[][] = [];
    cache.subscribe(ROLE, (c) => seen.push([...c.changedTypes]));
    expect(cache.set(ROLE, snapshot(next))).toEqual([TypeUrls.endpoint]);
    expect(seen).toEqual([[TypeUrls.endpoint]]);
    const second = cache.get(ROLE)!;
    for (const t of [TypeUrls.cluster, TypeUrls.listener, TypeUrls.route]) {
      expect(second.typeSnapshot(t)).toBe(first.typeSnapshot(t));
    }
    const e1 = first.typeSnapshot(TypeUrls.endpoint);
    const e2 = second.typeSnapshot(TypeUrls.endpoint);
    expect(e2.version).not.toBe(e1.version);
    expect(e2.byName.get('c1')!.any).toBe(e1.byName.get('c1')!.any); // unchanged resource reused
    expect(e2.byName.get('c2')!.any).not.toBe(e1.byName.get('c2')!.any);
  });

  it('a removed type changes to the empty version', () => {
    const cache = new SnapshotCache();
    cache.set(ROLE, snapshot(base()));
    const next = base();
    delete next[TypeUrls.route];
    expect(cache.set(ROLE, snapshot(next))).toEqual([TypeUrls.route]);
    const t = cache.get(ROLE)!.typeSnapshot(TypeUrls.route);
    expect(t.version).toBe(EMPTY_VERSION);
    expect(t.resources).toEqual([]);
    // present-but-empty is the same as missing
    next[TypeUrls.route] = [];
    expect(cache.set(ROLE, snapshot(next))).toEqual([]);
  });

  it('roles are independent; delete notifies and forgets', () => {
    const cache = new SnapshotCache();
    cache.set('a', snapshot(base()));
    cache.set('b', snapshot(base()));
    const listener = vi.fn();
    const unsubscribe = cache.subscribe('a', listener);
    cache.set('b', snapshot({}));
    expect(listener).not.toHaveBeenCalled();
    expect(cache.delete('a')).toBe(true);
    expect(listener).toHaveBeenCalledWith({ role: 'a', changedTypes: [], snapshot: undefined });
    expect(cache.get('a')).toBeUndefined();
    expect(cache.roles()).toEqual(['b']);
    expect(cache.subscriberCount('a')).toBe(1);
    unsubscribe();
    expect(cache.subscriberCount()).toBe(0);
  });

  it('orders types make-before-break, then others by name', () => {
    expect(
      orderTypeUrls([
        'type.googleapis.com/z.Z',
        TypeUrls.route,
        'type.googleapis.com/a.A',
        TypeUrls.listener,
        TypeUrls.endpoint,
        TypeUrls.cluster,
      ]),
    ).toEqual([
      TypeUrls.cluster,
      TypeUrls.endpoint,
      TypeUrls.listener,
      TypeUrls.route,
      'type.googleapis.com/a.A',
      'type.googleapis.com/z.Z',
    ]);
  });
});

describe('SnapshotCache encoding', () => {
  it('round-trips Envoy resources through protobuf', () => {
    const cache = new SnapshotCache();
    const input = base();
    cache.set(ROLE, snapshot(input));
    const snap = cache.get(ROLE)!;
    for (const [typeUrl, resources] of Object.entries(input)) {
      for (const r of resources) {
        const enc = snap.typeSnapshot(typeUrl).byName.get(r.name)!;
        expect(decodeAny(typeUrl, enc.value)).toEqual(r.resource);
        // the Any bytes carry the type URL and the same value
        const any = envoyType('google.protobuf.Any').decode(enc.any) as unknown as { type_url: string; value: Uint8Array };
        expect(any.type_url).toBe(typeUrl);
        expect(Buffer.from(any.value).equals(enc.value)).toBe(true);
      }
    }
  });

  it('uses a caller-provided encoder for custom type URLs, once per set', () => {
    const typeUrl = 'type.googleapis.com/legate.extauth.v1.AuthConfig';
    const encoder = vi.fn((_t: string, r: object) => Buffer.from(JSON.stringify(r)));
    const cache = new SnapshotCache({ encoders: { [typeUrl]: encoder } });
    const subscribers = [vi.fn(), vi.fn(), vi.fn()];
    for (const s of subscribers) cache.subscribe('extauth', s);
    cache.set(
      'extauth',
      snapshot({
        [typeUrl]: [
          { name: 'ns.a', resource: { x: 1 } },
          { name: 'ns.b', resource: { x: 2 } },
        ],
      }),
    );
    expect(encoder).toHaveBeenCalledTimes(2);
    const enc = cache.get('extauth')!.typeSnapshot(typeUrl).byName.get('ns.a')!;
    expect(JSON.parse(enc.value.toString())).toEqual({ x: 1 });
    // a set-level encoder overrides the constructor's
    const other = vi.fn(() => Buffer.from('other'));
    cache.set('extauth', snapshot({ [typeUrl]: [{ name: 'ns.a', resource: { x: 3 } }] }), { encoders: new Map([[typeUrl, other]]) });
    expect(other).toHaveBeenCalledTimes(1);
    expect(encoder).toHaveBeenCalledTimes(2);
  });

  it('rejects an unencodable snapshot and keeps the previous one', () => {
    const cache = new SnapshotCache();
    cache.set(ROLE, snapshot(base()));
    const before = cache.get(ROLE);
    const bad = base();
    bad[TypeUrls.cluster] = [{ name: 'c1', resource: { name: 'c1', connect_timeout: '5s' } }];
    expect(() => cache.set(ROLE, snapshot(bad))).toThrow(XdsSnapshotError);
    const dup = base();
    dup[TypeUrls.cluster] = [cluster('c1'), cluster('c1', 1)];
    expect(() => cache.set(ROLE, snapshot(dup))).toThrow(/duplicate resource name "c1"/);
    expect(cache.get(ROLE)).toBe(before);
  });
});
