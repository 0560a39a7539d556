// NACK attribution by exact Envoy names (controller/status): which resources a refused config is about.
import { describe, expect, it } from 'vitest';
import type { RawResource } from '../../controller/api/meta.js';
import type { PipelineOutput } from '../../controller/pipeline.js';
import { LatestStatuses, StatusBook } from '../../controller/status/book.js';
import { attributeNack } from '../../controller/status/nacks.js';
import { envoyNames } from '../../controller/translate/names.js';
import type { NackEvent } from '../../controller/xds/observer.js';

const ROLE = 'legate-system~gateway-proxy';
const src = (kind: string, namespace: string, name: string) => ({ kind, namespace, name });

const proxies = [
  {
    listeners: [
      {
        name: 'listener-::-8443',
        source: src('Gateway', 'legate-system', 'gateway-proxy-ssl'),
        virtualHosts: [
          { name: 'default_shop', source: src('VirtualService', 'default', 'shop'), tls: {} },
          { name: 'default_shopping', source: src('VirtualService', 'default', 'shopping') },
        ],
      },
    ],
  },
];
const upstreams = [{ cluster: 'petstore_default', source: src('Upstream', 'default', 'petstore') }];
const names = envoyNames(proxies, upstreams);

function nack(message: string, typeUrl = 'type.googleapis.com/envoy.config.listener.v3.Listener'): NackEvent {
  return { role: ROLE, nodeId: 'envoy-1', typeUrl, version: 'v2', previousVersion: 'v1', message, code: 13, resourceNames: [] };
}

describe('attributeNack', () => {
  it("attributes a TLS filter chain's error to its VirtualService", () => {
    const e = nack(
      'Error adding/updating listener(s) listener-::-8443: ' +
        "Failed to load certificate chain from <inline> (filter chain 'default_shop-tls')",
    );
    expect(attributeNack(e, names)).toEqual([
      src('Gateway', 'legate-system', 'gateway-proxy-ssl'),
      src('VirtualService', 'default', 'shop'),
    ]);
  });

  it('attributes a cluster error to its Upstream, and a name at the end of a sentence too', () => {
    expect(attributeNack(nack('cluster petstore_default: bad TLS context.'), names)).toEqual([src('Upstream', 'default', 'petstore')]);
  });

  it('does not take a name for part of a longer one', () => {
    expect(attributeNack(nack("virtual host 'default_shopping' has a bad route"), names)).toEqual([
      src('VirtualService', 'default', 'shopping'),
    ]);
  });
});

describe('StatusBook', () => {
  const raw = (kind: string, namespace: string, name: string): RawResource => ({
    apiVersion: 'v1',
    kind,
    metadata: { namespace, name },
    body: {},
    origin: 'test',
  });
  const output = {
    writeNamespace: 'legate-system',
    listed: new Map([
      ['vs', { resource: raw('VirtualService', 'default', 'shop'), status: { state: 'Accepted' as const, reportedBy: 'legate' } }],
      ['other', { resource: raw('VirtualService', 'default', 'shopping'), status: { state: 'Accepted' as const, reportedBy: 'legate' } }],
      ['proxy', { resource: raw('Proxy', 'legate-system', 'gateway-proxy'), status: { state: 'Accepted' as const, reportedBy: 'legate' } }],
    ]),
    envoyNames: names,
  } as unknown as PipelineOutput;

  it('publishes Rejected on the Proxy and the named resource while the NACK holds, and Accepted once the role is served anew', () => {
    const latest = new LatestStatuses();
    const book = new StatusBook([latest]);
    book.translated(output);
    const state = () => Object.fromEntries(latest.get().reports.map((r) => [r.resource.metadata.name, r.status.state]));
    expect(state()).toEqual({ shop: 'Accepted', shopping: 'Accepted', 'gateway-proxy': 'Accepted' });

    book.nacks.onNack(nack("filter chain 'default_shop-tls': bad certificate"));
    expect(state()).toEqual({ shop: 'Rejected', shopping: 'Accepted', 'gateway-proxy': 'Rejected' });
    expect(latest.get().reports[0]?.status.reason).toContain('Envoy envoy-1 rejected Listener version v2');

    book.nacks.served(ROLE, ['type.googleapis.com/envoy.config.listener.v3.Listener']);
    expect(state()).toEqual({ shop: 'Accepted', shopping: 'Accepted', 'gateway-proxy': 'Accepted' });
  });
});
