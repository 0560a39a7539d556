// `legate controller`: watch a directory of resources, serve xDS and the controller API.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { statsServerEnabled } from '../../common/admin.js';
import { VERSION } from '../../common/version.js';
import type { Logger } from '../../common/log.js';
import type { ResourceSource } from '../../controller/source/source.js';
import type { StatusSink } from '../../controller/status/book.js';
import type { KubeConfig } from '@kubernetes/client-node';
import { loadOrCreateEdgeSecret } from '../edge-secret.js';
import { UsageError, command, toHostPort } from '../flags.js';
import { packageRoot } from '../paths.js';
import { DEFAULTS, LOG_LEVEL_FLAG, componentLogger, waitForSignal } from './common.js';

export const controllerCommand = command({
  name: 'controller',
  summary: 'run the controller: watch a directory or a cluster, serve xDS and the controller API',
  flags: {
    config: { type: 'string', short: 'c', placeholder: 'DIR', description: 'the directory of resources to watch (--source file)' },
    source: {
      type: 'choice',
      choices: ['file', 'kubernetes'],
      default: 'file',
      description: 'read resources from --config DIR, or from the Kubernetes API (CRDs: legate crds)',
    },
    kubeconfig: { type: 'string', placeholder: 'PATH', description: 'with --source kubernetes (default KUBECONFIG, else in-cluster)' },
    'leader-election': {
      type: 'choice',
      choices: ['on', 'off'],
      default: 'on',
      description: 'with --source kubernetes: replicas share a Lease and only the leader writes statuses',
    },
    'lease-namespace': {
      type: 'string',
      default: 'legate-system',
      placeholder: 'NS',
      description: 'namespace of the leader Lease (legate-controller)',
    },
    'lease-duration': {
      type: 'int',
      default: 15,
      min: 1,
      max: 3600,
      description: 'seconds a leader that stopped renewing keeps the Lease',
    },
    'watch-namespaces': {
      type: 'string',
      placeholder: 'NS,NS',
      description: 'with --source kubernetes: only these namespaces (default all)',
    },
    'graphql-address': {
      type: 'hostPort',
      default: `127.0.0.1:${DEFAULTS.graphqlPort}`,
      description: 'where Envoy reaches the graphql extension',
    },
    'extauth-address': {
      type: 'hostPort',
      default: `127.0.0.1:${DEFAULTS.extauthPort}`,
      description: 'where Envoy reaches the extauth extension',
    },
    'ratelimit-address': {
      type: 'hostPort',
      default: `127.0.0.1:${DEFAULTS.ratelimitPort}`,
      description: 'where Envoy reaches the ratelimit extension',
    },
    'extensions-tls': {
      type: 'string',
      placeholder: 'DIR',
      description:
        "mutual TLS from Envoy to the extensions: DIR, as Envoy's filesystem has it (not read here), holds Envoy's tls.crt, " +
        "tls.key and the ca.crt the extensions' certificates must chain to (each extension's --tls-* flags)",
    },
    'stats-port': { type: 'port', default: DEFAULTS.stats.controller, description: 'admin interface port (with START_STATS_SERVER=1)' },
    'dev-port': { type: 'port', default: DEFAULTS.devPort, description: 'dev-mode endpoint port (Settings devMode: true)' },
    'wasm-dir': { type: 'string', placeholder: 'DIR', description: 'where the .wasm filters are (default dist/wasm)' },
    'wasm-source': {
      type: 'choice',
      choices: ['local', 'remote'],
      default: 'local',
      description: 'Envoy reads the filters from disk, or fetches them from the API',
    },
    'edge-secret-file': {
      type: 'string',
      placeholder: 'PATH',
      description: "keeps the edge cache's secret across restarts (default: a new one each start)",
    },
    'accepted-file': {
      type: 'string',
      placeholder: 'PATH',
      description: 'keeps the last accepted version of each resource across restarts (rejected at start: the kept one serves)',
    },
    'wasm-fetch-address': {
      type: 'string',
      placeholder: 'HOST:PORT',
      description: 'with --wasm-source remote: where Envoys fetch the filters (default: the API address; a Service name on Kubernetes)',
    },
    'xds-host': { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address the xDS server binds' },
    'xds-tls': {
      type: 'string',
      placeholder: 'DIR',
      description: 'mutual TLS on xDS: DIR holds tls.crt, tls.key and the ca.crt client certificates must chain to',
    },
    'api-host': {
      type: 'string',
      default: '127.0.0.1',
      placeholder: 'HOST',
      description: 'address the controller API binds (read-only; 0.0.0.0 or the pod IP so legatectl reaches it through the pod proxy)',
    },
    'admin-host': { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address the admin interface binds' },
    'dev-host': { type: 'string', default: '127.0.0.1', placeholder: 'HOST', description: 'address the dev-mode endpoint binds' },
    'xds-port': { type: 'port', default: DEFAULTS.xdsPort, description: 'port of the xDS server' },
    'api-port': { type: 'port', default: DEFAULTS.apiPort, description: 'port of the controller API, which legatectl reads' },
    'http-port': { type: 'port', default: DEFAULTS.httpPort, description: 'port of the default HTTP gateway (when no Gateway exists)' },
    'https-port': { type: 'port', default: DEFAULTS.httpsPort, description: 'port of the default HTTPS gateway' },
    'bind-address': { type: 'string', default: '::', placeholder: 'ADDR', description: "the default gateways' bind address" },
    'access-log': {
      type: 'string',
      default: '/dev/stdout',
      placeholder: 'PATH',
      description: "where the default gateways write Envoy's JSON access log (a line per request); off for none",
    },
    'write-namespace': {
      type: 'string',
      placeholder: 'NS',
      description: 'namespace of generated resources (default legate-system, or Settings)',
    },
    'webhook-address': {
      type: 'string',
      placeholder: 'HOST:PORT',
      description: 'with --source kubernetes: serve the validating admission webhook (HTTPS, /validation) here (default: off)',
    },
    'webhook-tls': {
      type: 'string',
      placeholder: 'DIR',
      description: "the webhook's certificate: DIR holds tls.crt, tls.key (and ca.crt); default: a CA and certificate made at start",
    },
    'webhook-hosts': {
      type: 'string',
      default: 'localhost,127.0.0.1',
      placeholder: 'NAME,…',
      description: 'DNS names and IPs of the certificate made at start (the Service: controller.<ns>.svc)',
    },
    'webhook-config': {
      type: 'string',
      placeholder: 'NAME',
      description: 'the ValidatingWebhookConfiguration whose caBundle the controller sets to its CA (kept so, checked every minute)',
    },
    'log-level': LOG_LEVEL_FLAG,
  },
  async run(flags) {
    // loaded here, not at the top: the other commands' processes never load the controller (cli/commands/index.ts)
    const { startController } = await import('../../controller/controller.js');
    const { DEFAULT_WASM_OPTIONS } = await import('../../controller/translate/features/wasm/index.js');
    const { defaultAccessLog } = await import('../../controller/translate/features/listener/index.js');
    const logger = componentLogger('controller', flags['log-level']);
    const { source, statusSinks, start, kubeConfig, namespaces } = await resourceSource(flags, logger);
    const webhook = flags['webhook-address'] ? await webhookTls(flags, logger) : undefined;
    if (webhook && !kubeConfig) throw new UsageError('--webhook-address needs --source kubernetes');
    const edgeSecretFile = flags['edge-secret-file'];
    const wasmFetchAddress = flags['wasm-fetch-address'];
    if (wasmFetchAddress && flags['wasm-source'] !== 'remote') throw new UsageError('--wasm-fetch-address needs --wasm-source remote');
    // without a file the controller picks a new secret at every start
    const wasm = edgeSecretFile
      ? {
          ...DEFAULT_WASM_OPTIONS,
          bearerCheck: { ...DEFAULT_WASM_OPTIONS.bearerCheck, verifiedValue: loadOrCreateEdgeSecret(path.resolve(edgeSecretFile)) },
        }
      : DEFAULT_WASM_OPTIONS;
    const extensionsTls = flags['extensions-tls'] ? { tls: extensionTlsFiles(flags['extensions-tls']) } : {};
    const ctl = await startController({
      source,
      statusSinks,
      xds: { host: flags['xds-host'], port: flags['xds-port'], ...(flags['xds-tls'] ? { tls: readXdsTls(flags['xds-tls']) } : {}) },
      api: { host: flags['api-host'], port: flags['api-port'] },
      ...(flags['write-namespace'] ? { writeNamespace: flags['write-namespace'] } : {}),
      defaultGateway: {
        bindAddress: flags['bind-address'],
        bindPort: flags['http-port'],
        ...(flags['access-log'] !== 'off' ? { options: defaultAccessLog(flags['access-log']) } : {}),
      },
      defaultSslPort: flags['https-port'],
      render: {
        graphql: { ...flags['graphql-address'], ...extensionsTls },
        extauth: { ...flags['extauth-address'], ...extensionsTls },
        wasm,
        ratelimit: { service: { ...flags['ratelimit-address'], ...extensionsTls } },
      },
      wasm: {
        dir: path.resolve(flags['wasm-dir'] ?? path.join(packageRoot(), 'dist', 'wasm')),
        source: flags['wasm-source'],
        ...(wasmFetchAddress ? { fetchFrom: toHostPort(wasmFetchAddress, 'wasm-fetch-address') } : {}),
      },
      ...(statsServerEnabled() ? { admin: { host: flags['admin-host'], port: flags['stats-port'] } } : {}),
      devMode: { host: flags['dev-host'], port: flags['dev-port'] },
      ...(flags['accepted-file'] ? { acceptedFile: path.resolve(flags['accepted-file']) } : {}),
      ...(webhook
        ? { webhook: { ...webhook.listen, cert: webhook.cert, key: webhook.key, ...(namespaces.length ? { namespaces } : {}) } }
        : {}),
      logger,
    });
    const caAbort = new AbortController();
    const webhookConfig = flags['webhook-config'];
    if (webhook && kubeConfig && webhookConfig) {
      const { patchCaBundle } = await import('../../controller/validation/ca-bundle.js');
      void patchCaBundle(kubeConfig, webhookConfig, webhook.ca, logger.child('webhook'), caAbort.signal);
    }
    const stopSource = start();
    logger.info('controller started', { version: VERSION });
    await waitForSignal();
    logger.info('controller stopping');
    stopSource();
    caAbort.abort();
    await ctl.stop();
    return 0;
  },
});

/** The webhook's address, certificate and the CA to publish: read from --webhook-tls, or made now. */
async function webhookTls(
  flags: { 'webhook-address': string | undefined; 'webhook-tls': string | undefined; 'webhook-hosts': string },
  logger: Logger,
): Promise<{ listen: { host: string; port: number }; cert: string; key: string; ca: string }> {
  // port 0: any free port (tests)
  const address = flags['webhook-address'] ?? '';
  const listen = /:0$/.test(address)
    ? { ...toHostPort(`${address.slice(0, -2)}:1`, 'webhook-address'), port: 0 }
    : toHostPort(address, 'webhook-address');
  const dir = flags['webhook-tls'];
  if (dir) {
    const read = (name: string): string => {
      try {
        return fs.readFileSync(path.join(dir, name), 'utf8');
      } catch {
        throw new UsageError(`--webhook-tls: cannot read ${path.join(dir, name)} (the directory needs tls.crt and tls.key)`);
      }
    };
    const cert = read('tls.crt');
    // ca.crt is what the API server must trust; a self-signed tls.crt is its own CA
    const ca = fs.existsSync(path.join(dir, 'ca.crt')) ? read('ca.crt') : cert;
    return { listen, cert, key: read('tls.key'), ca };
  }
  const { makeWebhookCertificates } = await import('../../controller/validation/certs.js');
  const hosts = flags['webhook-hosts']
    .split(',')
    .map((h) => h.trim())
    .filter(Boolean);
  const made = makeWebhookCertificates(hosts);
  logger.info('webhook certificate made at start (no --webhook-tls)', { hosts });
  return { listen, ...made };
}

/** The xDS server's certificate, key and client CA from a directory laid out as a Kubernetes TLS Secret. */
function readXdsTls(dir: string): { cert: Buffer; key: Buffer; ca: Buffer } {
  const read = (name: string): Buffer => {
    try {
      return fs.readFileSync(path.join(dir, name));
    } catch {
      throw new UsageError(`--xds-tls: cannot read ${path.join(dir, name)} (the directory needs tls.crt, tls.key and ca.crt)`);
    }
  };
  return { cert: read('tls.crt'), key: read('tls.key'), ca: read('ca.crt') };
}

/** Envoy's files for mutual TLS to the extensions, in a directory laid out as a Kubernetes TLS Secret. */
function extensionTlsFiles(dir: string): { certFile: string; keyFile: string; caFile: string } {
  if (!path.isAbsolute(dir)) throw new UsageError(`--extensions-tls: ${dir} is not an absolute path (Envoy reads the files from it)`);
  const file = (name: string): string => path.join(dir, name);
  return { certFile: file('tls.crt'), keyFile: file('tls.key'), caFile: file('ca.crt') };
}

/** Where resources come from, and where statuses go besides the controller API. */
async function resourceSource(
  flags: {
    source: string;
    config: string | undefined;
    kubeconfig: string | undefined;
    'watch-namespaces': string | undefined;
    'leader-election': string;
    'lease-namespace': string;
    'lease-duration': number;
  },
  logger: Logger,
): Promise<{
  source: ResourceSource;
  statusSinks: StatusSink[];
  start: () => () => void;
  kubeConfig?: KubeConfig;
  namespaces: string[];
}> {
  if (flags.source === 'file') {
    if (!flags.config) throw new UsageError('--config DIR is required (or --source kubernetes)');
    if (!fs.existsSync(flags.config)) throw new UsageError(`--config: directory ${flags.config} does not exist`);
    const { FileSource } = await import('../../controller/source/file/source.js');
    const source = new FileSource(path.resolve(flags.config), logger.child('source'));
    return { source, statusSinks: [], start: () => () => undefined, namespaces: [] };
  }
  const { KubeConfig } = await import('@kubernetes/client-node');
  const { LeaderElection } = await import('../../controller/source/kubernetes/leader.js');
  const { KubeSource } = await import('../../controller/source/kubernetes/source.js');
  const { KubeStatusSink } = await import('../../controller/status/kubernetes.js');
  const kubeConfig = new KubeConfig();
  if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
  else kubeConfig.loadFromDefault();
  const namespaces = (flags['watch-namespaces'] ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  const sink = new KubeStatusSink(kubeConfig, logger.child('status'));
  // with an election, nothing is written until this replica leads
  if (flags['leader-election'] === 'on') sink.setLeader(false);
  const election =
    flags['leader-election'] === 'off'
      ? undefined
      : new LeaderElection({
          kubeConfig,
          namespace: flags['lease-namespace'],
          name: 'legate-controller',
          identity: process.env['POD_NAME'] ?? `${os.hostname()}-${process.pid}`,
          leaseDurationMs: flags['lease-duration'] * 1000,
          logger: logger.child('leader'),
          onChange: (leader) => sink.setLeader(leader),
        });
  const start = (): (() => void) => {
    if (!election) return () => undefined;
    const abort = new AbortController();
    election.run(abort.signal);
    return () => abort.abort();
  };
  // a replica that cannot join the election writes no status: `legatectl check` shows why
  const extraProblems = (): string[] => election?.problems() ?? [];
  return {
    source: new KubeSource({ kubeConfig, logger: logger.child('source'), namespaces, extraProblems }),
    statusSinks: [sink],
    start,
    kubeConfig,
    namespaces,
  };
}
