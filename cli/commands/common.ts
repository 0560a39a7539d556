// What several `legate` commands share: default ports, the --log-level flag, waiting for a signal,
// and a component's metrics registry and admin interface.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { DEFAULT_ADMIN_PORTS, startAdminServer, statsServerEnabled, type RunningAdmin } from '../../common/admin.js';
import { createLogger, type Logger } from '../../common/log.js';
import { SpanRecorder } from '../../common/trace.js';
import { LEGATE_NAMESPACE } from '../../controller/api/meta.js';
import type { ChoiceFlag } from '../flags.js';

export const DEFAULTS = {
  httpPort: 8080,
  httpsPort: 8443,
  adminPort: 19000,
  xdsPort: 9977,
  apiPort: 9095,
  graphqlPort: 8084,
  extauthPort: 8083,
  /** Gloo's rate-limit port */
  ratelimitPort: 18081,
  devPort: 10010,
  stats: DEFAULT_ADMIN_PORTS,
  role: `${LEGATE_NAMESPACE}~gateway-proxy`,
};

export const LOG_LEVEL_FLAG = {
  type: 'choice',
  choices: ['debug', 'info', 'warn', 'error'],
  description: 'log level (default: LOG_LEVEL, else info)',
} as const satisfies ChoiceFlag;

export function componentLogger(component: string, level: string | undefined): Logger {
  return createLogger(component, level === 'debug' || level === 'info' || level === 'warn' || level === 'error' ? { level } : {});
}

export function waitForSignal(): Promise<NodeJS.Signals> {
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

/** Registry, spans and (when START_STATS_SERVER is set) the admin interface of one component. */
export function componentAdmin(component: string, port: number, host = '127.0.0.1') {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: `legate_${component}_` });
  const spans = new SpanRecorder();
  const start = async (logger: Logger, extra?: Record<string, () => unknown>): Promise<RunningAdmin | undefined> =>
    statsServerEnabled() ? startAdminServer({ component, host, port, logger, registry, spans, ...(extra ? { extra } : {}) }) : undefined;
  return { registry, spans, start };
}
