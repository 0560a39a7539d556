// What several `legate` commands share: default ports, the --log-level flag, waiting for a signal,
// and a component's metrics registry and admin interface.
import { collectDefaultMetrics, Registry } from 'prom-client';
import { DEFAULT_ADMIN_PORTS, startAdminServer, statsServerEnabled, type RunningAdmin } from '../../common/admin.js';
import { createLogger, type Logger } from '../../common/log.js';
import { SpanRecorder } from '../../common/trace.js';
import { LEGATE_NAMESPACE } from '../../controller/api/meta.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_CONCURRENT_STREAMS, LIMIT_FLAGS, limitFlagName } from '../../extensions/common/h2/limits.js';
import { readTlsFiles, TlsFilesError, type TlsFile } from '../../extensions/common/h2/tls.js';
import { H2_TRANSPORTS, type H2Config, type H2TlsFiles, type H2TransportName } from '../../extensions/common/h2/transport.js';
import { UsageError, type ChoiceFlag, type IntFlag, type StringFlag } from '../flags.js';

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

/** The extensions' HTTP/2 server flags: the transport, the stream limit, each abuse limit (`--http2-<limit>`), mutual TLS. */
export function http2Flags() {
  const limits = Object.fromEntries(
    Object.entries(LIMIT_FLAGS).map(([key, description]) => [
      limitFlagName(key),
      { type: 'int', default: DEFAULT_LIMITS[key as keyof typeof DEFAULT_LIMITS], min: 0, description } satisfies IntFlag,
    ]),
  );
  return {
    'http2-transport': {
      type: 'choice',
      choices: H2_TRANSPORTS,
      description: "the gRPC server's HTTP/2 implementation: Legate's own or node:http2 (default LEGATE_HTTP2_TRANSPORT, else legate)",
    },
    'http2-max-concurrent-streams': {
      type: 'int',
      default: DEFAULT_MAX_CONCURRENT_STREAMS,
      min: 1,
      description: 'streams a client may open at once on one connection (advertised; more are refused)',
    },
    ...limits,
    'tls-cert': {
      type: 'string',
      placeholder: 'FILE',
      description: "mutual TLS with Envoy: the server's certificate (PEM; with --tls-key and --tls-client-ca)",
    },
    'tls-key': { type: 'string', placeholder: 'FILE', description: "mutual TLS: the certificate's private key (PEM)" },
    'tls-client-ca': {
      type: 'string',
      placeholder: 'FILE',
      description: "mutual TLS: the CA (PEM) Envoy's client certificate must chain to; a client without one is refused",
    },
  } as const satisfies Record<string, ChoiceFlag | IntFlag | StringFlag>;
}

const TLS_FLAGS = { cert: 'tls-cert', key: 'tls-key', ca: 'tls-client-ca' } as const;

/** --tls-cert, --tls-key and --tls-client-ca: all three or none, each file readable, the key the certificate's. */
function tlsFiles(flags: Record<string, unknown>): H2TlsFiles | undefined {
  const given = Object.values(TLS_FLAGS).filter((f) => flags[f] !== undefined);
  if (!given.length) return undefined;
  if (given.length < 3) {
    const missing = Object.values(TLS_FLAGS).filter((f) => flags[f] === undefined);
    throw new UsageError(`--${given.join(', --')} needs ${missing.map((f) => `--${f}`).join(' and ')} (mutual TLS takes all three)`);
  }
  const files = {
    certFile: String(flags[TLS_FLAGS.cert]),
    keyFile: String(flags[TLS_FLAGS.key]),
    clientCaFile: String(flags[TLS_FLAGS.ca]),
  };
  try {
    readTlsFiles(files);
  } catch (err) {
    if (!(err instanceof TlsFilesError)) throw err;
    const flag = (file: TlsFile): string => (file === 'pair' ? '--tls-cert, --tls-key, --tls-client-ca' : `--${TLS_FLAGS[file]}`);
    throw new UsageError(`${flag(err.file)}: ${err.message}`);
  }
  return files;
}

/** The H2Config of the parsed http2Flags() (the transport from LEGATE_HTTP2_TRANSPORT when the flag is not given; TLS files checked). */
export function http2Config(flags: Record<string, unknown>): H2Config {
  const transport = (flags['http2-transport'] as string | undefined) ?? process.env['LEGATE_HTTP2_TRANSPORT'] ?? 'legate';
  if (!(H2_TRANSPORTS as readonly string[]).includes(transport))
    throw new UsageError(`LEGATE_HTTP2_TRANSPORT: expected ${H2_TRANSPORTS.join(', ')}, got ${JSON.stringify(transport)}`);
  const limits = Object.fromEntries(Object.keys(LIMIT_FLAGS).map((key) => [key, Number(flags[limitFlagName(key)])]));
  const tls = tlsFiles(flags);
  return {
    transport: transport as H2TransportName,
    maxConcurrentStreams: Number(flags['http2-max-concurrent-streams']),
    limits,
    ...(tls ? { tls } : {}),
  };
}
