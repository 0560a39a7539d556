// `legate console`: the web console (read-only) over the controller API, Envoy's admin and Prometheus.
import path from 'node:path';
import { VERSION } from '../../common/version.js';
import { command } from '../flags.js';
import { packageRoot } from '../paths.js';
import { DEFAULTS, LOG_LEVEL_FLAG, componentLogger, waitForSignal } from './common.js';

export const consoleCommand = command({
  name: 'console',
  summary: 'serve the web console (read-only): resources and statuses, route tester, served config, charts',
  flags: {
    address: {
      type: 'string',
      default: '127.0.0.1',
      placeholder: 'HOST',
      description: 'where it listens; beyond loopback it needs --token',
    },
    port: { type: 'int', default: 0, min: 0, max: 65535, description: 'its port (0: a free one, printed)' },
    token: {
      type: 'string',
      placeholder: 'TOKEN',
      description: 'the bearer token every request must carry (default LEGATE_CONSOLE_TOKEN); required beyond loopback',
    },
    api: { type: 'string', default: `http://127.0.0.1:${DEFAULTS.apiPort}`, placeholder: 'URL', description: 'the controller API' },
    'envoy-admin': {
      type: 'string',
      default: `http://127.0.0.1:${DEFAULTS.adminPort}`,
      placeholder: 'URL',
      description: "Envoy's admin interface (served config, stats); empty: none",
    },
    gateway: {
      type: 'string',
      default: `http://127.0.0.1:${DEFAULTS.httpPort}`,
      placeholder: 'URL',
      description: "the gateway's HTTP address, where the GraphQL explorer sends queries",
    },
    prometheus: {
      type: 'string',
      placeholder: 'URL',
      description: "a Prometheus scraping Envoy: the charts' source (default: Envoy's stats)",
    },
    'log-level': LOG_LEVEL_FLAG,
  },
  async run(flags) {
    const logger = componentLogger('console', flags['log-level']);
    const { startConsole } = await import('../../console/server/server.js');
    const token = flags.token ?? process.env['LEGATE_CONSOLE_TOKEN'] ?? undefined;
    const running = await startConsole({
      host: flags.address,
      port: flags.port,
      ...(token ? { token } : {}),
      apiUrl: flags.api.replace(/\/$/, ''),
      ...(flags['envoy-admin'] ? { envoyAdminUrl: flags['envoy-admin'].replace(/\/$/, '') } : {}),
      ...(flags.gateway ? { gatewayUrl: flags.gateway } : {}),
      ...(flags.prometheus ? { prometheusUrl: flags.prometheus.replace(/\/$/, '') } : {}),
      staticDir: process.env['LEGATE_CONSOLE_DIR'] ?? path.join(packageRoot(), 'dist', 'console'),
      version: VERSION,
      logger,
    });
    logger.info('console listening', { url: running.url });
    process.stdout.write(`console ${running.url}\n`);
    await waitForSignal();
    await running.stop();
    return 0;
  },
});
