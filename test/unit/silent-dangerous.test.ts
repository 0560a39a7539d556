// The two rows issue "Gloo listeners and upstreams" called silent and dangerous, pinned: a TLS Secret with ca.crt means
// client certificates are required (one-way TLS only with oneWayTls), and useProxyProto puts Envoy's proxy_protocol
// listener filter on the listener. Goldens and e2es show them too; these assertions fail even if a golden is rewritten.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runPipeline } from '../../controller/pipeline.js';
import { parseResources } from '../../controller/source/parse.js';

const LISTENER = 'type.googleapis.com/envoy.config.listener.v3.Listener';

/** The certificate, key and client CA of the ssl-mtls translate golden's first Secret. */
function mtlsSecret(): string {
  const golden = fs.readFileSync(path.join(import.meta.dirname, '../golden/translate/ssl-mtls.in.yaml'), 'utf8');
  const doc = golden.split(/^---$/m).find((d) => d.includes('name: mtls-cert'));
  if (!doc || !doc.includes('ca.crt')) throw new Error('ssl-mtls.in.yaml: no Secret mtls-cert with ca.crt');
  return doc;
}

/** The listeners rendered for `yaml`, as JSON. */
function listeners(yaml: string): Record<string, unknown>[] {
  const parsed = parseResources(yaml, 'silent-dangerous.yaml');
  expect(parsed.errors).toEqual([]);
  const out = runPipeline({ resources: parsed.resources, lastAccepted: new Map() });
  for (const [key, l] of out.listed) expect(l.status.state, `${key}: ${l.status.reason ?? ''}`).not.toBe('Rejected');
  return [...out.xds.values()].flatMap((snap) => (snap.get(LISTENER) ?? []).map((r) => r.resource as Record<string, unknown>));
}

/** Every value of `key` anywhere in `v`. */
function valuesOf(v: unknown, key: string): unknown[] {
  if (Array.isArray(v)) return v.flatMap((x) => valuesOf(x, key));
  if (typeof v !== 'object' || v === null) return [];
  return Object.entries(v).flatMap(([k, x]) => (k === key ? [x] : valuesOf(x, key)));
}

const UPSTREAM = `
apiVersion: legate.dev/v1
kind: Upstream
metadata: { name: backend, namespace: default }
spec: { static: { hosts: [{ addr: 10.0.0.1, port: 8080 }] } }
`;

const secureVs = (oneWayTls: boolean) => `
apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: secure, namespace: default }
spec:
  sslConfig:
    secretRef: { name: mtls-cert, namespace: default }
    ${oneWayTls ? 'oneWayTls: true' : ''}
  virtualHost:
    domains: [secure.example.com]
    routes: [{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: backend } } } }]
`;

describe('silent and dangerous, fixed', () => {
  it('a Secret with ca.crt requires client certificates', () => {
    const tls = listeners([mtlsSecret(), UPSTREAM, secureVs(false)].join('\n---\n')).flatMap((l) =>
      valuesOf(l, 'require_client_certificate'),
    );
    expect(tls).toEqual([true]);
  });

  it('oneWayTls: true serves one-way TLS with the same Secret', () => {
    const tls = listeners([mtlsSecret(), UPSTREAM, secureVs(true)].join('\n---\n')).flatMap((l) =>
      valuesOf(l, 'require_client_certificate'),
    );
    expect(tls).not.toContain(true);
  });

  it('useProxyProto: true puts the proxy_protocol listener filter first', () => {
    const gateway = (useProxyProto: boolean) => `
apiVersion: gateway.solo.io/v1
kind: Gateway
metadata: { name: gateway-proxy, namespace: gloo-system }
spec:
  bindAddress: '::'
  bindPort: 8080
  httpGateway: {}
  useProxyProto: ${useProxyProto}
`;
    const names = (on: boolean) =>
      listeners([UPSTREAM, gateway(on)].join('\n---\n')).map((l) => valuesOf(l['listener_filters'] ?? [], 'name'));
    expect(names(true)).toEqual([['envoy.filters.listener.proxy_protocol']]);
    expect(names(false)).toEqual([[]]);
  });
});
