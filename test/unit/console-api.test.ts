// The console's API answers: no secret value in any of them (Secrets, inline secrets of any kind), the
// references both ways, the bounded status timeline, and the token beyond loopback.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { StatusHistory } from '../../controller/status/history.js';
import { redactResource, redactValue } from '../../console/server/redact.js';
import { referenceIndex } from '../../console/server/refs.js';
import { explorerEnabled, startConsole, type RunningConsole } from '../../console/server/server.js';

const SECRET = 'hunter2-do-not-show';

const resources = [
  {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'oauth', namespace: 'gloo-system' },
    // as the controller API answers, and as a raw value would be if it ever passed through
    data: { 'client-secret': '<redacted, 19 bytes>', other: SECRET },
    stringData: { token: SECRET },
    status: { statuses: { 'gloo-system': { state: 'Accepted' } } },
  },
  {
    apiVersion: 'enterprise.gloo.solo.io/v1',
    kind: 'AuthConfig',
    metadata: { name: 'oidc', namespace: 'gloo-system' },
    spec: {
      configs: [
        {
          oauth2: {
            oidcAuthorizationCode: {
              clientId: 'app',
              clientSecret: SECRET,
              clientSecretRef: { name: 'oauth', namespace: 'gloo-system' },
              session: { redis: { options: { password: SECRET } } },
            },
          },
        },
        { apiKeyAuth: { apiKeySecretRefs: [{ name: 'keys' }], headerName: 'x-api-key' } },
        { ldap: { address: 'ldap://x', credentialsSecretRef: { name: 'ldap' }, bindPassword: SECRET } },
      ],
    },
    status: { statuses: { 'gloo-system': { state: 'Accepted' } } },
  },
  {
    apiVersion: 'gateway.solo.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'shop', namespace: 'default' },
    spec: {
      virtualHost: {
        domains: ['*'],
        options: {
          jwt: { providers: { p: { jwks: { local: { key: JSON.stringify({ keys: [{ kty: 'oct', k: SECRET }] }) } } } } },
        },
        routes: [
          {
            matchers: [{ prefix: '/' }],
            routeAction: { single: { upstream: { name: 'echo', namespace: 'gloo-system' } } },
            options: { extauth: { configRef: { name: 'oidc', namespace: 'gloo-system' } }, cors: { allowCredentials: true } },
          },
          { matchers: [{ prefix: '/rt' }], delegateAction: { ref: { name: 'team' } } },
        ],
      },
    },
    status: { statuses: { 'gloo-system': { state: 'Rejected', reason: 'a reason' } } },
  },
];

describe('redaction', () => {
  it('hides Secret values and inline secret fields, keeps references and other fields', () => {
    const text = JSON.stringify(resources.map((r) => redactResource(r)));
    expect(text).not.toContain(SECRET);
    const secret = redactResource(resources[0]!) as unknown as Record<string, Record<string, string>>;
    expect(secret['data']).toEqual({ 'client-secret': '<redacted, 19 bytes>', other: '<redacted>' });
    expect(secret['stringData']).toEqual({ token: '<redacted>' });
    const auth = JSON.stringify(redactResource(resources[1]!));
    expect(auth).toContain('"clientSecretRef":{"name":"oauth","namespace":"gloo-system"}');
    expect(auth).toContain('"clientId":"app"');
    expect(auth).toContain('"headerName":"x-api-key"');
    expect(JSON.stringify(redactResource(resources[2]!))).toContain('"allowCredentials":true');
  });

  it('keeps a JWKS public and its private members hidden', () => {
    const jwks = JSON.stringify({ keys: [{ kty: 'RSA', n: 'public-n', e: 'AQAB', d: SECRET }] });
    const out = redactValue({ localJwks: jwks }) as { localJwks: string };
    expect(out.localJwks).toContain('public-n');
    expect(out.localJwks).not.toContain(SECRET);
  });
});

describe('references', () => {
  it('finds what a VirtualService references, and turns it around', () => {
    const index = referenceIndex(resources as never);
    expect(index.get('VirtualService/default/shop')?.out).toEqual([
      { kind: 'Upstream', namespace: 'gloo-system', name: 'echo' },
      { kind: 'AuthConfig', namespace: 'gloo-system', name: 'oidc' },
      { kind: 'RouteTable', namespace: 'default', name: 'team' },
    ]);
    expect(index.get('AuthConfig/gloo-system/oidc')?.in).toEqual([{ kind: 'VirtualService', namespace: 'default', name: 'shop' }]);
    expect(index.get('AuthConfig/gloo-system/oidc')?.out).toContainEqual({ kind: 'Secret', namespace: 'gloo-system', name: 'oauth' });
  });
});

describe('status history', () => {
  const meta = (name: string) => ({ name, namespace: 'default' });
  const report = (name: string, spec: unknown, state: 'Accepted' | 'Rejected', reason?: string) => ({
    resource: { apiVersion: 'v1', kind: 'VirtualService', metadata: meta(name), spec, body: {}, origin: 'x' },
    status: { state, reportedBy: 'legate', ...(reason ? { reason } : {}) },
  });

  it('records additions, spec and status changes, removals; keeps a bounded number', () => {
    const h = new StatusHistory(4, () => new Date(0));
    h.publish('ns', [report('a', { v: 1 }, 'Accepted')]);
    h.publish('ns', [report('a', { v: 1 }, 'Accepted')]);
    h.publish('ns', [report('a', { v: 2 }, 'Rejected', 'bad')]);
    h.publish('ns', [report('a', { v: 2 }, 'Accepted')]);
    expect(h.list({ name: 'a' }).map((e) => [e.change, e.state, e.reason])).toEqual([
      ['added', 'Accepted', undefined],
      ['spec', 'Rejected', 'bad'],
      ['status', 'Accepted', undefined],
    ]);
    h.publish('ns', []);
    h.publish('ns', [report('b', {}, 'Accepted')]);
    expect(h.list().map((e) => `${e.name}:${e.change}`)).toEqual(['a:spec', 'a:status', 'a:removed', 'b:added']);
  });
});

describe('console server', () => {
  let controller: http.Server;
  let apiUrl: string;
  let open: RunningConsole;
  let guarded: RunningConsole;

  beforeAll(async () => {
    controller = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      const data =
        url.pathname === '/api/v1/resources'
          ? resources
          : url.pathname === '/api/v1/version'
            ? { version: 'test' }
            : url.pathname === '/api/v1/served'
              ? {}
              : [];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', data }));
    });
    await new Promise<void>((r) => controller.listen(0, '127.0.0.1', () => r()));
    apiUrl = `http://127.0.0.1:${(controller.address() as AddressInfo).port}`;
    const common = { port: 0, apiUrl, staticDir: '/nonexistent', version: 'test', logger: createLogger('console-test') };
    open = await startConsole({ ...common, host: '127.0.0.1' });
    guarded = await startConsole({ ...common, host: '127.0.0.1', token: 'tok-123' });
  });

  afterAll(async () => {
    await open?.stop();
    await guarded?.stop();
    await new Promise((r) => controller.close(r));
  });

  it('answers without a secret value', async () => {
    for (const p of [
      'api/overview',
      'api/resources',
      'api/resources?kind=AuthConfig',
      'api/resource?kind=AuthConfig&namespace=gloo-system&name=oidc',
      'api/resource.yaml?kind=Secret&namespace=gloo-system&name=oauth',
      'api/resource?kind=VirtualService&namespace=default&name=shop',
    ]) {
      const res = await fetch(`${open.url}${p}`);
      expect(res.status, p).toBe(200);
      expect(await res.text(), p).not.toContain(SECRET);
    }
  });

  it('lists by kind and state with the reason', async () => {
    const body = (await (await fetch(`${open.url}api/resources?state=Rejected`)).json()) as { data: { items: unknown[] } };
    expect(body.data.items).toEqual([
      { kind: 'VirtualService', namespace: 'default', name: 'shop', state: 'Rejected', reason: 'a reason' },
    ]);
  });

  it('is read-only, and needs its token when it has one', async () => {
    expect((await fetch(`${open.url}api/overview`, { method: 'DELETE' })).status).toBe(405);
    expect((await fetch(`${guarded.url}api/overview`)).status).toBe(401);
    expect((await fetch(`${guarded.url}api/overview`, { headers: { authorization: 'Bearer nope-123' } })).status).toBe(401);
    expect((await fetch(`${guarded.url}api/overview`, { headers: { authorization: 'Bearer tok-123' } })).status).toBe(200);
    const login = await fetch(`${guarded.url}login?token=tok-123`, { redirect: 'manual' });
    expect(login.status).toBe(303);
    const cookie = login.headers.get('set-cookie')!.split(';')[0]!;
    expect((await fetch(`${guarded.url}api/overview`, { headers: { cookie } })).status).toBe(200);
  });

  it('refuses to listen beyond loopback without a token', async () => {
    await expect(
      startConsole({ host: '0.0.0.0', port: 0, apiUrl, staticDir: '/x', version: 't', logger: createLogger('console-test') }),
    ).rejects.toThrow(/needs a token/);
  });
});

describe('private keys', () => {
  it('hides a PEM private key wherever it is', () => {
    const pem = `-----BEGIN PRIVATE KEY-----\n${SECRET}\n-----END PRIVATE KEY-----`;
    expect(JSON.stringify(redactValue({ sslConfig: { sslFiles: { tlsKey: pem } } }))).not.toContain(SECRET);
  });
});

describe('dashboard values from Envoy stats', () => {
  it("computes rates between reads, quantiles and per-cluster series from the admin's JSON", async () => {
    const { EnvoyStatsSource } = await import('../../console/server/dashboards.js');
    const { gatewayDashboard, upstreamDashboard } = await import('../../controller/observability/dashboards.js');
    let total = 100;
    const admin = http.createServer((req, res) => {
      const filter = new URL(req.url ?? '/', 'http://x').searchParams.get('filter') ?? '';
      const stats = [
        { name: 'cluster.echo_gloo-system.upstream_rq_total', value: total },
        { name: 'cluster.echo_gloo-system.upstream_rq_2xx', value: total },
        { name: 'cluster.echo_gloo-system.upstream_cx_active', value: 3 },
        { name: 'cluster.echo_gloo-system.membership_healthy', value: 1 },
        { name: 'cluster.other_default.membership_healthy', value: 2 },
        {
          histograms: {
            supported_quantiles: [0, 50, 99, 100],
            computed_quantiles: [
              {
                name: 'cluster.echo_gloo-system.upstream_rq_time',
                values: [null, { interval: 4, cumulative: 5 }, { interval: 9, cumulative: 9 }, null],
              },
            ],
          },
        },
      ].filter((s) => !('name' in s) || new RegExp(filter).test(s.name ?? ''));
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ stats }));
    });
    await new Promise<void>((r) => admin.listen(0, '127.0.0.1', () => r()));
    try {
      const source = new EnvoyStatsSource(`http://127.0.0.1:${(admin.address() as AddressInfo).port}`);
      const model = upstreamDashboard({ namespace: 'gloo-system', name: 'echo' });
      const first = await source.values(model);
      expect(first.panels['requests']).toEqual([{ label: 'requests/s', value: null }]);
      expect(first.panels['latency']).toEqual([
        { label: 'p50', value: 4 },
        { label: 'p99', value: 9 },
      ]);
      expect(first.panels['connections']![0]).toEqual({ label: 'connections', value: 3 });
      total = 300;
      await new Promise((r) => setTimeout(r, 50));
      const second = await source.values(model);
      expect(second.panels['requests']![0]!.value).toBeGreaterThan(0);
      const gateway = await source.values(gatewayDashboard());
      expect(gateway.panels['healthy']).toEqual([
        { label: 'echo_gloo-system', value: 1 },
        { label: 'other_default', value: 2 },
      ]);
    } finally {
      await new Promise((r) => admin.close(r));
    }
  });
});

describe('served vs desired', () => {
  it("compares the controller's snapshot with Envoy's config_dump, with the NACK and Envoy's update errors", async () => {
    const L = 'type.googleapis.com/envoy.config.listener.v3.Listener';
    const role = 'gloo-system~gateway-proxy';
    const controller = http.createServer((req, res) => {
      const p = new URL(req.url ?? '/', 'http://x').pathname;
      const data =
        p === '/api/v1/served'
          ? { [role]: { [L]: [{ name: 'l1' }, { name: 'l2' }] } }
          : p === '/api/v1/connections'
            ? [
                {
                  role,
                  nodeId: 'gw-1',
                  connectedAt: '',
                  types: { [L]: { sentVersion: 'v2', ackedVersion: 'v1', lastNack: { version: 'v2', message: 'bad listener', at: '' } } },
                },
              ]
            : [];
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ status: 'ok', data }));
    });
    const envoy = http.createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const listeners = [
        { name: 'l1', active_state: { version_info: 'v1' }, error_state: { details: 'bad listener', last_update_attempt: 't' } },
        { name: 'l3', active_state: { version_info: 'v1' } },
      ];
      res.end(JSON.stringify({ configs: [{ '@type': 'ListenersConfigDump', dynamic_listeners: listeners }] }));
    });
    await Promise.all([controller, envoy].map((s) => new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()))));
    const url = (s: http.Server): string => `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    const c = await startConsole({
      host: '127.0.0.1',
      port: 0,
      apiUrl: url(controller),
      envoyAdminUrl: url(envoy),
      staticDir: '/x',
      version: 't',
      logger: createLogger('console-test'),
    });
    try {
      const text = await (await fetch(`${c.url}api/served`)).text();
      const body = JSON.parse(text) as { data: { envoy: string; roles: { role: string; connections: unknown[]; types: unknown[] }[] } };
      expect(body.data.envoy).toBe('read');
      expect(body.data.roles[0]!.types).toEqual([
        {
          type: 'Listener',
          desired: 2,
          held: 2,
          missing: ['l2'],
          extra: ['l3'],
          errors: [{ name: 'l1', details: 'bad listener', at: 't' }],
          versions: ['v1'],
        },
      ]);
      expect(body.data.roles[0]!.connections).toEqual([
        {
          nodeId: 'gw-1',
          types: { Listener: { sentVersion: 'v2', ackedVersion: 'v1', lastNack: { version: 'v2', message: 'bad listener', at: '' } } },
        },
      ]);
    } finally {
      await c.stop();
      await Promise.all([controller, envoy].map((s) => new Promise((r) => s.close(r))));
    }
  });
});

describe('Settings consoleOptions', () => {
  const settings = (name: string, consoleOptions?: object) => ({
    apiVersion: 'gloo.solo.io/v1',
    kind: 'Settings',
    metadata: { name, namespace: 'gloo-system' },
    spec: consoleOptions ? { consoleOptions } : {},
  });

  it('apiExplorerEnabled: false turns the GraphQL explorer off; unset or true keeps it; the default Settings decides', () => {
    expect(explorerEnabled([])).toBe(true);
    expect(explorerEnabled([settings('default', { apiExplorerEnabled: true, readOnly: false })])).toBe(true);
    expect(explorerEnabled([settings('default', { apiExplorerEnabled: false })])).toBe(false);
    expect(explorerEnabled([settings('other', { apiExplorerEnabled: false }), settings('default')])).toBe(true);
  });
});
