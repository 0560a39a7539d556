// Clusters with one fixed address (the extension services, the controller's wasm download): an IP
// gives a STATIC cluster, a name (a Kubernetes Service) STRICT_DNS, which Envoy needs for names.
import { describe, expect, it } from 'vitest';
import { extensionCluster, fixedAddressDiscovery } from '../../controller/translate/envoy-json.js';

describe('fixed-address clusters', () => {
  it('are STATIC for IPv4 and IPv6 addresses', () => {
    expect(fixedAddressDiscovery('127.0.0.1')).toEqual({ type: 'STATIC' });
    expect(fixedAddressDiscovery('::1')).toEqual({ type: 'STATIC' });
    expect(extensionCluster('extauth', { host: '10.0.0.7', port: 8083 }).type).toBe('STATIC');
  });

  it('resolve DNS names (IPv4 first), as a Service name on a cluster needs', () => {
    const cluster = extensionCluster('extauth', { host: 'extauth.legate-system.svc.cluster.local', port: 8083 });
    expect(cluster).toMatchObject({ type: 'STRICT_DNS', dns_lookup_family: 'V4_PREFERRED' });
    expect(cluster.load_assignment?.endpoints?.[0]?.lb_endpoints?.[0]?.endpoint?.address?.socket_address).toEqual({
      address: 'extauth.legate-system.svc.cluster.local',
      port_value: 8083,
    });
  });
});
