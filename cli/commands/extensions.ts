// `legate graphql` and `legate extauth`: the extension services, each its own process (a Deployment
// on Kubernetes), fed over xDS by the controller.
import { VERSION } from '../../common/version.js';
import type { Logger } from '../../common/log.js';
import type { Tracer } from '../../extensions/common/tracing.js';
import type { RunningExtauthService } from '../../extensions/extauth/service.js';
import { command, type FlagValues } from '../flags.js';
import { DEFAULTS, LOG_LEVEL_FLAG, componentAdmin, componentLogger, waitForSignal } from './common.js';

function extensionFlags(servicePort: number, statsPort: number) {
  return {
    host: { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address the gRPC service binds' },
    port: { type: 'port', default: servicePort, description: 'port of the gRPC service Envoy calls' },
    'xds-address': { type: 'hostPort', default: `127.0.0.1:${DEFAULTS.xdsPort}`, description: "the controller's xDS server" },
    'stats-port': { type: 'port', default: statsPort, description: 'admin interface port (with START_STATS_SERVER=1)' },
    'admin-host': {
      type: 'string',
      default: '127.0.0.1',
      placeholder: 'HOST',
      description: 'address of the admin interface (beyond loopback its writes need LEGATE_ADMIN_TOKEN; the chart: the pod IP)',
    },
    'log-level': LOG_LEVEL_FLAG,
    'otlp-endpoint': {
      type: 'string',
      placeholder: 'URL',
      description: 'export spans of traced requests over OTLP/HTTP to this collector (default OTEL_EXPORTER_OTLP_ENDPOINT; none: off)',
    },
  } as const;
}

/** The service's tracer when a collector is configured (docs/tracing.md). */
async function tracerFor(service: string, flag: string | undefined, logger: Logger): Promise<Tracer | undefined> {
  const { Tracer, otlpEndpoint } = await import('../../extensions/common/tracing.js');
  const endpoint = otlpEndpoint(flag);
  if (!endpoint) return undefined;
  logger.info('exporting spans of traced requests', { endpoint });
  return new Tracer({ endpoint, serviceName: process.env['OTEL_SERVICE_NAME'] || service, logger: logger.child('tracing') });
}

const graphqlFlags = extensionFlags(DEFAULTS.graphqlPort, DEFAULTS.stats.graphql);
const extauthFlags = extensionFlags(DEFAULTS.extauthPort, DEFAULTS.stats.extauth);

export const graphqlCommand = command({
  name: 'graphql',
  summary: 'run the GraphQL extension (Envoy ext_proc service)',
  flags: graphqlFlags,
  async run(flags: FlagValues<typeof graphqlFlags>) {
    // loaded here, not at the top: each process loads only its own service (see cli/commands/index.ts)
    const { graphqlMetrics } = await import('../../extensions/graphql/metrics.js');
    const { startGraphQLService } = await import('../../extensions/graphql/service.js');
    const logger = componentLogger('graphql', flags['log-level']);
    const admin = componentAdmin('graphql', flags['stats-port'], flags['admin-host']);
    let apis = (): Record<string, string> => ({});
    const metrics = graphqlMetrics(admin.registry, admin.spans, () => apis());
    const xdsAddress = `${flags['xds-address'].host}:${flags['xds-address'].port}`;
    const tracer = await tracerFor('legate-graphql', flags['otlp-endpoint'], logger);
    const svc = await startGraphQLService({
      host: flags.host,
      port: flags.port,
      xdsAddress,
      logger,
      observe: metrics.observe,
      ...(tracer ? { tracer } : {}),
    });
    apis = svc.apis;
    const adminServer = await admin.start(logger, { '/apis': () => svc.apis() });
    logger.info('graphql extension started', { version: VERSION });
    await waitForSignal();
    await adminServer?.stop();
    await svc.stop();
    await tracer?.stop();
    return 0;
  },
});

export const extauthCommand = command({
  name: 'extauth',
  summary: 'run the access-token extension (Envoy ext_authz service)',
  flags: extauthFlags,
  async run(flags: FlagValues<typeof extauthFlags>) {
    const { extauthMetrics } = await import('../../extensions/extauth/metrics.js');
    const { startExtauthService } = await import('../../extensions/extauth/service.js');
    const logger = componentLogger('extauth', flags['log-level']);
    const admin = componentAdmin('extauth', flags['stats-port'], flags['admin-host']);
    // the metrics read the service's stats once it exists
    let stats: () => ReturnType<RunningExtauthService['stats']> | undefined = () => undefined;
    const metrics = extauthMetrics(admin.registry, admin.spans, () => stats());
    const xdsAddress = `${flags['xds-address'].host}:${flags['xds-address'].port}`;
    const tracer = await tracerFor('legate-extauth', flags['otlp-endpoint'], logger);
    const svc = await startExtauthService({
      host: flags.host,
      port: flags.port,
      xdsAddress,
      logger,
      observe: metrics.observe,
      ...(tracer ? { tracer } : {}),
    });
    stats = svc.stats;
    const adminServer = await admin.start(logger, { '/configs': () => svc.configs() });
    logger.info('extauth extension started', { version: VERSION });
    await waitForSignal();
    await adminServer?.stop();
    await svc.stop();
    await tracer?.stop();
    return 0;
  },
});
