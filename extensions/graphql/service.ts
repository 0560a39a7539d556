// Legate's graphql extension: an Envoy ext_proc service (envoy.service.ext_proc.v3.ExternalProcessor)
// that executes GraphQL locally and answers with an immediate response. GraphQL APIs arrive from the
// controller over xDS (role `graphql`) and are swapped atomically; each route names its API in the
// stream's gRPC initial metadata.
//
// The ext_proc stream is served by ./extproc-server.ts (gRPC on Legate's HTTP/2 server, extensions/common/h2/) and
// handled by ./process-stream.ts with the messages decoded and encoded by ./wire.ts: per request, that transport
// costs less than the query.
import { ExtensionRoles, ExtensionTypeUrls, decodeExtensionConfig, type GraphQLApiConfig } from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import type { H2Config } from '../common/h2/transport.js';
import { throttledLogger } from '../common/log-throttle.js';
import type { Tracer } from '../common/tracing.js';
import { XdsClient } from '../common/xds-client.js';
import { createEngine, type Engine } from './engine/index.js';
import { startExtProcServer } from './extproc-server.js';
import { processStream, type ObserveRequest } from './process-stream.js';

export interface GraphQLServiceOptions {
  host: string;
  port: number;
  /** host:port of the controller's xDS server */
  xdsAddress: string;
  nodeId?: string;
  logger: Logger;
  /** Called once per GraphQL request with the API, the HTTP status answered and the duration. */
  observe?: ObserveRequest;
  /** exports a span per request whose trace context Envoy sampled, passed on to backend calls (none: no tracing) */
  tracer?: Tracer;
  /** the HTTP/2 transport and its limits (--http2-transport, --http2-*) */
  http2?: H2Config;
}

export interface RunningGraphQLService {
  port: number;
  /** loaded APIs: name -> version */
  apis(): Record<string, string>;
  ready(): boolean;
  stop(): Promise<void>;
}

export async function startGraphQLService(options: GraphQLServiceOptions): Promise<RunningGraphQLService> {
  const log = options.logger;
  /** what a client can cause once per stream or message: one line per message text per LOG_THROTTLE_MS */
  const perCall = throttledLogger(log);
  let engines = new Map<string, Engine>();

  const xds = new XdsClient({
    address: options.xdsAddress,
    role: ExtensionRoles.graphql,
    nodeId: options.nodeId ?? `graphql-${process.pid}`,
    typeUrl: ExtensionTypeUrls.graphqlApi,
    logger: log.child('xds'),
    apply(resources, version) {
      const next = new Map<string, Engine>();
      const problems: string[] = [];
      for (const bytes of resources) {
        const config = decodeExtensionConfig<GraphQLApiConfig>(bytes);
        const current = engines.get(config.name);
        if (current && current.version === config.version) {
          next.set(config.name, current);
          continue;
        }
        try {
          next.set(config.name, createEngine(config, { logger: log.child('engine') }));
        } catch (err) {
          problems.push(`${config.name}: ${err instanceof Error ? err.message : String(err)}`);
          if (current) next.set(config.name, current); // keep serving the previous version
        }
      }
      const previous = engines;
      engines = next;
      for (const [name, engine] of previous) if (next.get(name) !== engine) engine.close();
      log.info('got new config', { version, apis: [...next.values()].map((e) => ({ name: e.name, version: e.version })) });
      if (problems.length) throw new Error(`cannot load GraphQL APIs: ${problems.join('; ')}`);
    },
  });

  const server = await startExtProcServer(options.host, options.port, {
    open: (call) => processStream(call, () => engines, perCall, options.observe, options.tracer),
    onError: (what, err) => perCall.warn(`${what} failed`, { error: err instanceof Error ? err.message : String(err) }),
    ...(options.http2 ? { http2: options.http2 } : {}),
  });
  log.info('graphql ext_proc server listening', {
    address: `${options.host}:${server.port}`,
    http2: options.http2?.transport ?? 'legate',
    tls: options.http2?.tls ? 'mutual' : 'none',
  });
  xds.start();

  return {
    port: server.port,
    apis: () => Object.fromEntries([...engines.values()].map((e) => [e.name, e.version])),
    ready: () => xds.applied > 0,
    stop: async () => {
      xds.stop();
      await server.stop();
      for (const e of engines.values()) e.close();
    },
  };
}
