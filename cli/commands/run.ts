// `legate run`: the whole gateway on one machine. Starts the controller, the extension services,
// Envoy and the processes of DIR/legate.values.yaml as supervised children (restarted with backoff),
// records where everything is in <state-dir>/run.json for legatectl, and stops it all on Ctrl-C.
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { statsServerEnabled } from '../../common/admin.js';
import { createLogger } from '../../common/log.js';
import { VERSION } from '../../common/version.js';
import { LEGATE_NAMESPACE } from '../../controller/api/meta.js';
import { renderBootstrap } from '../../controller/bootstrap/bootstrap.js';
import { UsageError, command, type FlagValues } from '../flags.js';
import { defaultEnvoyPath, defaultStateDir, legateEntry, processAlive, readRunState, runStatePath, type RunState } from '../paths.js';
import { Supervisor } from '../run/supervisor.js';
import { ensureExtensionsTls, ensureXdsTls, type XdsTlsDirs } from '../run/xds-tls.js';
import { VALUES_FILE, readValues, type RunValues } from '../run/values.js';
import { findPrometheus, prometheusConfig } from '../run/prometheus.js';
import { DEFAULTS, waitForSignal } from './common.js';

const runFlags = {
  config: {
    type: 'string',
    short: 'c',
    default: 'examples',
    placeholder: 'DIR',
    description: 'the directory of resources (and legate.values.yaml)',
  },
  'http-port': { type: 'port', default: DEFAULTS.httpPort, description: "the gateway's HTTP port" },
  'access-log': {
    type: 'string',
    default: '/dev/stdout',
    placeholder: 'PATH',
    description: "the default gateways' JSON access log (/dev/stdout: .legate/logs/envoy.log, legatectl proxy logs); off for none",
  },
  'https-port': { type: 'port', default: DEFAULTS.httpsPort, description: "the gateway's HTTPS port (virtual services with sslConfig)" },
  'admin-port': { type: 'port', default: DEFAULTS.adminPort, description: "Envoy's admin interface" },
  'stats-listener-port': {
    type: 'int',
    default: 0,
    min: 0,
    max: 65535,
    description: "a listener serving Envoy's Prometheus metrics on GET /metrics (the chart's 8081, as Gloo's); 0: none",
  },
  'console-port': { type: 'int', default: 0, min: 0, max: 65535, description: 'the web console (0: a free port, printed)' },
  'console-address': {
    type: 'string',
    default: '127.0.0.1',
    placeholder: 'HOST',
    description: 'where the console listens; beyond loopback it needs --console-token',
  },
  'console-token': {
    type: 'string',
    placeholder: 'TOKEN',
    description: "the console's bearer token (default LEGATE_CONSOLE_TOKEN); required beyond loopback",
  },
  'xds-port': { type: 'port', default: DEFAULTS.xdsPort, description: "the controller's xDS server" },
  'api-port': { type: 'port', default: DEFAULTS.apiPort, description: 'the controller API, which legatectl reads' },
  'graphql-port': { type: 'port', default: DEFAULTS.graphqlPort, description: 'the graphql extension (ext_proc)' },
  'extauth-port': { type: 'port', default: DEFAULTS.extauthPort, description: 'the extauth extension (ext_authz)' },
  'ratelimit-port': { type: 'port', default: DEFAULTS.ratelimitPort, description: 'the ratelimit extension (RateLimitService)' },
  'controller-stats-port': {
    type: 'port',
    default: DEFAULTS.stats.controller,
    description: "the controller's admin interface (START_STATS_SERVER=1)",
  },
  'extauth-stats-port': { type: 'port', default: DEFAULTS.stats.extauth, description: "extauth's admin interface (START_STATS_SERVER=1)" },
  'graphql-stats-port': { type: 'port', default: DEFAULTS.stats.graphql, description: "graphql's admin interface (START_STATS_SERVER=1)" },
  'ratelimit-stats-port': {
    type: 'port',
    default: DEFAULTS.stats.ratelimit,
    description: "ratelimit's admin interface (START_STATS_SERVER=1)",
  },
  'ratelimit-redis': {
    type: 'string',
    placeholder: 'HOST:PORT',
    description: 'the ratelimit extension keeps its counters in this Redis (default: in memory)',
  },
  'dev-port': { type: 'port', default: DEFAULTS.devPort, description: 'the dev-mode endpoint (Settings devMode: true)' },
  'otlp-endpoint': {
    type: 'string',
    placeholder: 'URL',
    description: 'the extensions export spans of traced requests over OTLP/HTTP to this collector (docs/tracing.md)',
  },
  'wasm-source': {
    type: 'choice',
    choices: ['local', 'remote'],
    default: 'local',
    description: 'Envoy reads the wasm filters from disk, or fetches them',
  },
  'state-dir': {
    type: 'string',
    placeholder: 'DIR',
    description: 'logs, run.json, the bootstrap (default LEGATE_STATE_DIR, else ./.legate)',
  },
  envoy: { type: 'string', placeholder: 'PATH', description: 'the Envoy binary (default LEGATE_ENVOY, else .venv/bin/envoy)' },
  observability: {
    type: 'boolean',
    default: false,
    description: 'Prometheus (if found) scraping Envoy and the components every 5 s, and legate observability (docs/observability.md)',
  },
  'prometheus-port': { type: 'port', default: 9090, description: 'the Prometheus of --observability' },
  'prometheus-bin': {
    type: 'string',
    placeholder: 'PATH',
    description: "Prometheus for --observability (default: make prometheus's .cache/prometheus/bin, else PATH)",
  },
  'xds-tls': {
    type: 'boolean',
    default: false,
    description: 'mutual TLS between the controller and Envoy and the extensions (certificates made in <state-dir>/xds-tls)',
  },
  'extensions-mtls': {
    type: 'boolean',
    default: false,
    description: 'mutual TLS from Envoy to extauth, graphql and ratelimit (certificates made in <state-dir>/extensions-tls)',
  },
} as const;

type RunFlags = FlagValues<typeof runFlags>;

export const runCommand = command({
  name: 'run',
  summary: 'start the whole gateway (controller, Envoy, extra processes) on a config directory',
  flags: runFlags,
  async run(flags: RunFlags) {
    const configDir = path.resolve(flags.config);
    if (!fs.existsSync(configDir)) throw new UsageError(`--config: directory ${configDir} does not exist`);
    const envoyPath = flags.envoy ?? defaultEnvoyPath();
    if (!fs.existsSync(envoyPath)) throw new UsageError(`Envoy not found at ${envoyPath}; run 'make setup' (installs it into .venv)`);
    const stateDir = path.resolve(flags['state-dir'] ?? defaultStateDir());
    // refuse before touching anything: a second start must not disturb a running instance
    refuseIfRunning(stateDir);
    const values = readValues(configDir);
    if (flags['prometheus-bin'] && !fs.existsSync(flags['prometheus-bin']))
      throw new UsageError(`--prometheus-bin: ${flags['prometheus-bin']} does not exist`);
    // the components' /metrics are their admin interfaces
    if (flags.observability && !statsServerEnabled()) process.env['START_STATS_SERVER'] = '1';
    await refuseIfPortsTaken(flags, values);
    const consoleToken = flags['console-token'] ?? process.env['LEGATE_CONSOLE_TOKEN'];
    if (!isLoopback(flags['console-address']) && !consoleToken) {
      throw new UsageError(
        `--console-address ${flags['console-address']} is beyond loopback: set --console-token (or LEGATE_CONSOLE_TOKEN)`,
      );
    }
    const consolePort = flags['console-port'] || (await freePort(flags['console-address']));
    const logDir = path.join(stateDir, 'logs');
    fs.mkdirSync(logDir, { recursive: true });
    const logger = createLogger('run');
    const xdsTls = flags['xds-tls'] ? ensureXdsTls(stateDir) : undefined;
    const extensionsTls = flags['extensions-mtls'] ? ensureExtensionsTls(stateDir) : undefined;
    const gateway: Gateway = {
      flags,
      configDir,
      stateDir,
      logDir,
      values,
      sup: new Supervisor(logDir, logger),
      consolePort,
      ...(xdsTls ? { xdsTls } : {}),
      ...(extensionsTls ? { extensionsTls } : {}),
    };

    const shutdown = async (): Promise<void> => {
      logger.info('stopping all components');
      await gateway.sup.stopAll();
      fs.rmSync(runStatePath(stateDir), { force: true });
    };
    try {
      const role = await startController(gateway);
      startExtensions(gateway);
      const envoy = startEnvoy(gateway, role, envoyPath);
      startExtraProcesses(gateway);
      if (flags.observability) startObservability(gateway);
      startConsole(gateway, consoleToken);
      await waitForHttp(`http://127.0.0.1:${flags['admin-port']}/ready`, 30_000, () => envoy.exitCode === null);
      const state = runState(gateway, role);
      const writeState = (): void => {
        // write-then-rename: legatectl may be reading it
        const tmp = `${runStatePath(stateDir)}.tmp`;
        fs.writeFileSync(tmp, JSON.stringify({ ...state, components: runState(gateway, role).components }, null, 2));
        fs.renameSync(tmp, runStatePath(stateDir));
      };
      writeState();
      // a component restarted after a crash has a new pid, which legatectl check looks for
      gateway.sup.onRestart = () => {
        try {
          writeState();
        } catch (err) {
          logger.error('cannot update run.json', { error: err });
        }
      };
      process.stdout.write(banner(gateway));
    } catch (err) {
      await shutdown();
      throw err;
    }
    await waitForSignal();
    await shutdown();
    return 0;
  },
});

function refuseIfRunning(stateDir: string): void {
  const state = readRunState(stateDir);
  if (state && processAlive(state.pid)) {
    throw new UsageError(
      `legate run is already running on ${state.configDir} (pid ${state.pid}, state in ${stateDir}); ` +
        'stop it (Ctrl-C in its terminal) or start this one with another --state-dir and other ports',
    );
  }
}

/** Every port this run would listen on must be free; names the flag that moves a taken one. */
async function refuseIfPortsTaken(flags: RunFlags, values: RunValues): Promise<void> {
  const taken: string[] = [];
  for (const [name, spec] of Object.entries(runFlags)) {
    if (spec.type !== 'port' && name !== 'stats-listener-port' && name !== 'console-port') continue;
    if (name === 'prometheus-port' && !flags.observability) continue;
    const port = name === 'stats-listener-port' ? statsListenerPort(flags) : (flags[name as keyof RunFlags] as number);
    if (port === 0) continue;
    if (!(await portFree(port))) taken.push(`${port} (--${name})`);
  }
  // the processes of legate.values.yaml (the example apps) listen on their env PORT
  for (const p of values.processes ?? []) {
    const port = Number(p.env?.['PORT']);
    if (Number.isInteger(port) && port > 0 && !(await portFree(port))) taken.push(`${port} (PORT of process ${p.name} in ${VALUES_FILE})`);
  }
  if (taken.length) throw new UsageError(`cannot start: port(s) in use: ${taken.join(', ')}; stop what uses them or choose others`);
}

/** Whether `port` can be bound on all addresses (the gateway binds ::), or on 127.0.0.1 where IPv6 is off. */
function portFree(port: number, host = '::'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EADDRINUSE' && err.code !== 'EACCES' && host === '::') resolve(portFree(port, '127.0.0.1'));
      else resolve(false);
    });
    server.listen({ port, host, ipv6Only: false }, () => server.close(() => resolve(true)));
  });
}

/** What the steps of a run share. */
interface Gateway {
  flags: RunFlags;
  configDir: string;
  stateDir: string;
  logDir: string;
  values: RunValues;
  sup: Supervisor;
  /** with --xds-tls */
  xdsTls?: XdsTlsDirs;
  /** with --extensions-mtls: server/ for the extensions, client/ for Envoy */
  extensionsTls?: XdsTlsDirs;
  consolePort: number;
  /** with --observability, when its binary was found */
  prometheus?: string;
}

/** The stats listener's port: --stats-listener-port, else Gloo's 8081 with --observability, else none (0). */
function statsListenerPort(f: RunFlags): number {
  return f['stats-listener-port'] || (f.observability ? 8081 : 0);
}

/** Prometheus scraping Envoy and each component every 5 s, and legate observability writing the dashboards. */
function startObservability(g: Gateway): void {
  const f = g.flags;
  const bin = findPrometheus(f['prometheus-bin']);
  if (bin) {
    const dir = path.join(g.stateDir, 'prometheus');
    fs.mkdirSync(dir, { recursive: true });
    const config = path.join(dir, 'prometheus.yml');
    const local = (port: number): string => `127.0.0.1:${port}`;
    fs.writeFileSync(
      config,
      prometheusConfig([
        { job: 'envoy', address: local(statsListenerPort(f)), path: '/metrics' },
        { job: 'controller', address: local(f['controller-stats-port']), path: '/metrics' },
        { job: 'extauth', address: local(f['extauth-stats-port']), path: '/metrics' },
        { job: 'graphql', address: local(f['graphql-stats-port']), path: '/metrics' },
        { job: 'ratelimit', address: local(f['ratelimit-stats-port']), path: '/metrics' },
      ]),
    );
    g.sup.start({
      name: 'prometheus',
      command: bin,
      args: [
        `--config.file=${config}`,
        `--storage.tsdb.path=${path.join(dir, 'data')}`,
        '--storage.tsdb.retention.time=1d',
        `--web.listen-address=127.0.0.1:${f['prometheus-port']}`,
      ],
    });
    g.prometheus = bin;
  }
  g.sup.start({
    name: 'observability',
    command: process.execPath,
    args: [
      legateEntry(),
      'observability',
      '--controller',
      `http://127.0.0.1:${f['api-port']}`,
      '--out',
      path.join(g.stateDir, 'dashboards'),
    ],
    env: logLevelEnv(g.values.controller?.logLevel),
  });
}

function logLevelEnv(level: string | undefined): Record<string, string> {
  return level ? { LOG_LEVEL: level } : {};
}

/** Starts the controller, waits for its API, and returns the role of the proxy it serves. */
async function startController(g: Gateway): Promise<string> {
  const f = g.flags;
  const ctl = g.sup.start({
    name: 'controller',
    command: process.execPath,
    args: [
      legateEntry(),
      'controller',
      ...['--config', g.configDir, '--xds-port', String(f['xds-port']), '--api-port', String(f['api-port'])],
      ...['--http-port', String(f['http-port']), '--https-port', String(f['https-port'])],
      ...['--access-log', f['access-log']],
      ...['--graphql-address', `127.0.0.1:${f['graphql-port']}`, '--extauth-address', `127.0.0.1:${f['extauth-port']}`],
      ...['--ratelimit-address', `127.0.0.1:${f['ratelimit-port']}`],
      ...['--stats-port', String(f['controller-stats-port']), '--dev-port', String(f['dev-port'])],
      ...['--wasm-source', f['wasm-source'], '--edge-secret-file', path.join(g.stateDir, 'edge-secret')],
      ...['--accepted-file', path.join(g.stateDir, 'accepted.json')],
      ...(g.xdsTls ? ['--xds-tls', g.xdsTls.server] : []),
      ...(g.extensionsTls ? ['--extensions-tls', g.extensionsTls.client] : []),
    ],
    env: logLevelEnv(g.values.controller?.logLevel),
  });
  // (30 s: on a loaded 2-core machine five Node processes and Envoy start at once)
  await waitForHttp(`http://127.0.0.1:${f['api-port']}/healthz`, 30_000, () => ctl.exitCode === null);
  // The proxy's role follows the write namespace, which a Settings resource may change (Gloo's
  // manifests use gloo-system): ask the controller which roles it serves.
  return servedRole(f['api-port']);
}

function startExtensions(g: Gateway): void {
  const f = g.flags;
  const xds = `127.0.0.1:${f['xds-port']}`;
  const redis = f['ratelimit-redis'];
  const otlp = f['otlp-endpoint'] ? ['--otlp-endpoint', f['otlp-endpoint']] : [];
  const server = g.extensionsTls?.server;
  const tls = server
    ? [
        '--tls-cert',
        path.join(server, 'tls.crt'),
        '--tls-key',
        path.join(server, 'tls.key'),
        '--tls-client-ca',
        path.join(server, 'ca.crt'),
      ]
    : [];
  // the ratelimit service always runs (it is small, and idle until a route limits): a RateLimitConfig
  // applied later needs no restart
  for (const [name, port, statsPort, level, extra] of [
    ['graphql', f['graphql-port'], f['graphql-stats-port'], g.values.graphql?.logLevel, otlp],
    ['extauth', f['extauth-port'], f['extauth-stats-port'], g.values.extauth?.logLevel, otlp],
    ['ratelimit', f['ratelimit-port'], f['ratelimit-stats-port'], g.values.ratelimit?.logLevel, redis ? ['--redis', redis] : []],
  ] as const) {
    g.sup.start({
      name,
      command: process.execPath,
      args: [legateEntry(), name, '--port', String(port), '--xds-address', xds, '--stats-port', String(statsPort), ...extra, ...tls],
      env: { ...logLevelEnv(level), ...(g.xdsTls ? { LEGATE_XDS_TLS: g.xdsTls.client } : {}) },
    });
  }
}

function startEnvoy(g: Gateway, role: string, envoyPath: string): { exitCode: number | null } {
  const bootstrapFile = path.join(g.stateDir, 'envoy-bootstrap.yaml');
  const bootstrap = renderBootstrap({
    role,
    xdsHost: '127.0.0.1',
    xdsPort: g.flags['xds-port'],
    adminHost: '127.0.0.1',
    adminPort: g.flags['admin-port'],
    ...(statsListenerPort(g.flags) ? { statsPort: statsListenerPort(g.flags) } : {}),
    ...(g.xdsTls ? { xdsTlsDir: g.xdsTls.client } : {}),
  });
  fs.writeFileSync(bootstrapFile, bootstrap);
  return g.sup.start({
    name: 'envoy',
    command: envoyPath,
    // a listener update (an HTTP filter coming or going with the resources that use it) drains the old listener's
    // connections: each is told to close at its next response at once, so none is still open with a request on it
    // when the drain ends (gradual draining left a few to be reset, 1 s later)
    args: [
      ...['-c', bootstrapFile, '--disable-hot-restart', '-l', g.values.proxy?.logLevel ?? 'info'],
      ...['--drain-time-s', '1', '--drain-strategy', 'immediate'],
    ],
  });
}

/** The web console, on the controller API and Envoy's admin (its token, when any, passes in the environment). */
function startConsole(g: Gateway, token: string | undefined): void {
  const f = g.flags;
  g.sup.start({
    name: 'console',
    command: process.execPath,
    args: [
      legateEntry(),
      'console',
      ...['--address', f['console-address'], '--port', String(g.consolePort)],
      ...['--api', `http://127.0.0.1:${f['api-port']}`, '--envoy-admin', `http://127.0.0.1:${f['admin-port']}`],
      ...['--gateway', `http://127.0.0.1:${f['http-port']}`],
      // with --observability the charts read its Prometheus
      ...(g.prometheus ? ['--prometheus', `http://127.0.0.1:${f['prometheus-port']}`] : []),
    ],
    env: { ...logLevelEnv(g.values.console?.logLevel), ...(token ? { LEGATE_CONSOLE_TOKEN: token } : {}) },
  });
}

function consoleUrl(g: Gateway): string {
  const host = g.flags['console-address'];
  return `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host.includes(':') ? `[${host}]` : host}:${g.consolePort}/`;
}

/** A free port on `host`, for a component whose port was left to us. */
function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, host, () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The sample upstreams and whatever else DIR/legate.values.yaml lists. */
function startExtraProcesses(g: Gateway): void {
  for (const p of g.values.processes ?? []) {
    const [command, ...rest] = p.command;
    g.sup.start({
      name: p.name,
      command: command === 'node' ? process.execPath : command!,
      args: rest,
      cwd: g.configDir,
      ...(p.env ? { env: p.env } : {}),
    });
  }
}

function runState(g: Gateway, role: string): RunState {
  const f = g.flags;
  const stats = statsServerEnabled();
  const component = (name: string, endpoints: Record<string, string>) => ({ pid: g.sup.pid(name), log: g.sup.logPath(name), endpoints });
  return {
    version: VERSION,
    pid: process.pid,
    startedAt: new Date().toISOString(),
    configDir: g.configDir,
    logDir: g.logDir,
    writeNamespace: role.split('~')[0] ?? LEGATE_NAMESPACE,
    proxyRole: role,
    components: {
      controller: component('controller', {
        api: `http://127.0.0.1:${f['api-port']}`,
        xds: `127.0.0.1:${f['xds-port']}`,
        dev: `http://127.0.0.1:${f['dev-port']}`,
        ...(stats ? { admin: `http://127.0.0.1:${f['controller-stats-port']}` } : {}),
      }),
      envoy: component('envoy', {
        admin: `http://127.0.0.1:${f['admin-port']}`,
        http: `http://127.0.0.1:${f['http-port']}`,
        https: `https://127.0.0.1:${f['https-port']}`,
        ...(statsListenerPort(f) ? { metrics: `http://127.0.0.1:${statsListenerPort(f)}/metrics` } : {}),
      }),
      extauth: component('extauth', {
        grpc: `127.0.0.1:${f['extauth-port']}`,
        ...(stats ? { admin: `http://127.0.0.1:${f['extauth-stats-port']}` } : {}),
      }),
      graphql: component('graphql', {
        grpc: `127.0.0.1:${f['graphql-port']}`,
        ...(stats ? { admin: `http://127.0.0.1:${f['graphql-stats-port']}` } : {}),
      }),
      ratelimit: component('ratelimit', {
        grpc: `127.0.0.1:${f['ratelimit-port']}`,
        ...(stats ? { admin: `http://127.0.0.1:${f['ratelimit-stats-port']}` } : {}),
      }),
      console: component('console', { http: consoleUrl(g) }),
      ...(g.prometheus ? { prometheus: component('prometheus', { http: `http://127.0.0.1:${f['prometheus-port']}` }) } : {}),
      ...(f.observability ? { observability: component('observability', {}) } : {}),
      ...Object.fromEntries((g.values.processes ?? []).map((p) => [p.name, component(p.name, {})])),
    },
  };
}

function banner(g: Gateway): string {
  const f = g.flags;
  return [
    `Legate ${VERSION} is running on ${g.configDir}`,
    `  gateway        http://localhost:${f['http-port']}`,
    `  Envoy admin    http://127.0.0.1:${f['admin-port']}`,
    ...(statsListenerPort(f) ? [`  metrics        http://localhost:${statsListenerPort(f)}/metrics`] : []),
    ...(g.prometheus ? [`  prometheus     http://127.0.0.1:${f['prometheus-port']}`] : []),
    ...(f.observability && !g.prometheus
      ? ['  prometheus     not found (make prometheus builds it, or --prometheus-bin PATH): metrics endpoints only']
      : []),
    ...(f.observability ? [`  dashboards     ${path.join(g.stateDir, 'dashboards')}  (Grafana JSON)`] : []),
    `  controller API http://127.0.0.1:${f['api-port']}  (xDS on 127.0.0.1:${f['xds-port']})`,
    `  console        ${consoleUrl(g)}`,
    `  logs           ${g.logDir}`,
    `Try: npx legatectl get virtualservices     Stop: Ctrl-C`,
    '',
  ].join('\n');
}

async function waitForHttp(url: string, timeoutMs: number, isAlive: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(1000) });
      if (res.ok) return;
    } catch {
      // not up yet
    }
    if (!isAlive()) throw new Error(`process serving ${url} exited during startup`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${url}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The role of the gateway proxy the controller serves (`<write namespace>~gateway-proxy`). */
async function servedRole(apiPort: number): Promise<string> {
  for (let i = 0; i < 50; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${apiPort}/api/v1/served`, { signal: AbortSignal.timeout(1000) });
      const body = (await res.json()) as { data?: Record<string, unknown> };
      const roles = Object.keys(body.data ?? {});
      const role = roles.find((r) => r.endsWith('~gateway-proxy')) ?? roles[0];
      if (role) return role;
    } catch {
      // first translation not done yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return DEFAULTS.role;
}
