// Status reporting end to end: Envoy NACKs surface on resources, a Gloo Settings resource moves the
// write namespace, and legatectl reports errors clearly.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';
import { startEcho, type EchoUpstream } from '../support/upstreams.js';
import { eventually } from '../support/util.js';

let gw: Gateway;
let echo: EchoUpstream;

beforeAll(async () => {
  echo = await startEcho('echo');
  gw = await startGateway({
    'settings.yaml': `
apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec:
  discoveryNamespace: gloo-system
`,
    'app.yaml': `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: echo, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echo.port} }] }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: app, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: echo, namespace: gloo-system } } }
`,
  });
});

afterAll(async () => {
  await gw?.stop();
  await echo?.close();
});

describe('status', () => {
  it('serves the proxy of the Settings write namespace and reports statuses under it', async () => {
    await gw.until('/x', (r) => r.status === 200);
    const vs = JSON.parse(gw.ctl('get', 'vs', 'app', '-n', 'gloo-system', '-o', 'json').stdout);
    expect(vs.status.statuses['gloo-system'].state).toBe('Accepted');
    const proxies = gw.ctl('get', 'proxies');
    expect(proxies.stdout).toMatch(/gloo-system\s+gateway-proxy\s+Accepted/);
  });

  it('reports a configuration Envoy rejects (NACK) on the Proxy, and keeps serving the last good config', async () => {
    // Legate cannot see Envoy's file system, so a missing CA file is only caught by Envoy itself.
    gw.write(
      'tls.yaml',
      `
apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: needs-ca, namespace: gloo-system }
spec:
  static: { hosts: [{ addr: 127.0.0.1, port: ${echo.port} }] }
  sslConfig: { sslFiles: { rootCa: /nonexistent/legate-test/ca.pem } }
`,
    );
    const proxy = await eventually('the NACK on the Proxy status', () => {
      const out = JSON.parse(gw.ctl('get', 'proxy', 'gateway-proxy', '-n', 'gloo-system', '-o', 'json').stdout);
      const s = out.status.statuses['gloo-system'];
      return s.state === 'Rejected' ? s : undefined;
    });
    expect(proxy.reason).toMatch(/rejected Cluster/);
    expect(proxy.reason).toContain('/nonexistent/legate-test/ca.pem');
    expect(gw.log('controller')).toMatch(/NACK|nack|rejected/);
    const upstream = JSON.parse(gw.ctl('get', 'upstream', 'needs-ca', '-n', 'gloo-system', '-o', 'json').stdout);
    expect(upstream.status.statuses['gloo-system'].state).toBe('Rejected');
    expect((await gw.request('/still')).status).toBe(200);

    gw.remove('tls.yaml');
    await eventually('the Proxy to be accepted again', () => {
      const out = JSON.parse(gw.ctl('get', 'proxy', 'gateway-proxy', '-n', 'gloo-system', '-o', 'json').stdout);
      return out.status.statuses['gloo-system'].state === 'Accepted' ? true : undefined;
    });
  });
});

describe('a VirtualService whose certificate files Envoy cannot read', () => {
  it('is Rejected itself (not only the Proxy), with a reason that names the file and ends cleanly', async () => {
    gw.write(
      'tls-files.yaml',
      `
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: secure, namespace: gloo-system }
spec:
  sslConfig:
    sslFiles: { tlsCert: /nonexistent/legate-test/tls.crt, tlsKey: /nonexistent/legate-test/tls.key }
    sniDomains: [secure.example.com]
  virtualHost:
    domains: [secure.example.com]
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200, body: secure } }]
`,
    );
    const status = await eventually('the NACK on the VirtualService', () => {
      const out = JSON.parse(gw.ctl('get', 'vs', 'secure', '-n', 'gloo-system', '-o', 'json').stdout);
      const s = out.status?.statuses?.['gloo-system'];
      return s?.state === 'Rejected' ? s : undefined;
    });
    expect(status.reason).toContain('/nonexistent/legate-test/tls.');
    expect(status.reason).not.toMatch(/\s$/);
    expect((await gw.request('/still')).status).toBe(200);
    gw.remove('tls-files.yaml');
    await eventually('the Proxy to be accepted again', () => {
      const out = JSON.parse(gw.ctl('get', 'proxy', 'gateway-proxy', '-n', 'gloo-system', '-o', 'json').stdout);
      return out.status.statuses['gloo-system'].state === 'Accepted' ? true : undefined;
    });
  });
});

describe('legatectl errors', () => {
  it('names an unknown kind and exits non-zero', () => {
    const r = gw.ctl('get', 'widgets');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('unknown kind "widgets"');
  });

  it('says when a named resource does not exist', () => {
    const r = gw.ctl('get', 'vs', 'nope', '-n', 'default');
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('not found');
  });

  it('says clearly when the controller cannot be reached', () => {
    const r = gw.ctl('get', 'vs', '--controller', 'http://127.0.0.1:1');
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('cannot reach the Legate controller');
  });

  it('rejects unknown flags with a usage error', () => {
    const r = gw.ctl('get', 'vs', '--frobnicate');
    expect(r.status).toBe(2);
    expect(r.stderr).toContain('frobnicate');
  });
});
