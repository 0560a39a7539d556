// Legate's graphql extension: an Envoy ext_proc service (envoy.service.ext_proc.v3.ExternalProcessor)
// that executes GraphQL locally and answers with an immediate response. GraphQL APIs arrive from the
// controller over xDS (role `graphql`) and are swapped atomically; each route names its API in the
// stream's gRPC initial metadata.
import * as grpc from '@grpc/grpc-js';
import {
  ExtensionRoles,
  ExtensionTypeUrls,
  GRAPHQL_API_METADATA_KEY,
  decodeExtensionConfig,
  type GraphQLApiConfig,
} from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { EXTENSION_SERVER_OPTIONS, bindServer, loadEnvoyService, lookupService } from '../common/grpc.js';
import { XdsClient } from '../common/xds-client.js';
import { createEngine, type Engine } from './engine/index.js';

export interface GraphQLServiceOptions {
  host: string;
  port: number;
  /** host:port of the controller's xDS server */
  xdsAddress: string;
  nodeId?: string;
  logger: Logger;
  /** Called once per GraphQL request with the API, the HTTP status answered and the duration. */
  observe?: (api: string, status: number, seconds: number) => void;
}

export interface RunningGraphQLService {
  port: number;
  /** loaded APIs: name -> version */
  apis(): Record<string, string>;
  ready(): boolean;
  stop(): Promise<void>;
}

interface HeaderValueMsg {
  key: string;
  value?: string;
  raw_value?: Buffer;
}

interface ProcessingRequestMsg {
  request_headers?: { headers?: { headers?: HeaderValueMsg[] }; end_of_stream?: boolean };
  request_body?: { body?: Buffer; end_of_stream?: boolean };
  request_trailers?: unknown;
  response_headers?: unknown;
  response_body?: unknown;
  response_trailers?: unknown;
}

type ProcessingResponseMsg = Record<string, unknown>;

export async function startGraphQLService(options: GraphQLServiceOptions): Promise<RunningGraphQLService> {
  const log = options.logger;
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

  const pkg = loadEnvoyService('envoy/service/ext_proc/v3/external_processor.proto');
  const service = lookupService(pkg, 'envoy.service.ext_proc.v3.ExternalProcessor').service;
  const server = new grpc.Server(EXTENSION_SERVER_OPTIONS);
  server.addService(service, {
    Process: (call: grpc.ServerDuplexStream<ProcessingRequestMsg, ProcessingResponseMsg>) => processStream(call, () => engines, log, options.observe),
  });
  const bound = await bindServer(server, options.host, options.port);
  log.info('graphql ext_proc server listening', { address: `${options.host}:${bound.port}` });
  xds.start();

  return {
    port: bound.port,
    apis: () => Object.fromEntries([...engines.values()].map((e) => [e.name, e.version])),
    ready: () => xds.applied > 0,
    stop: async () => {
      xds.stop();
      await bound.stop();
      for (const e of engines.values()) e.close();
    },
  };
}

function headerText(h: HeaderValueMsg): string {
  return h.raw_value && h.raw_value.length ? h.raw_value.toString('utf8') : (h.value ?? '');
}

function processStream(
  call: grpc.ServerDuplexStream<ProcessingRequestMsg, ProcessingResponseMsg>,
  engines: () => Map<string, Engine>,
  log: Logger,
  observe: GraphQLServiceOptions['observe'],
): void {
  const apiName = call.metadata.get(GRAPHQL_API_METADATA_KEY)[0]?.toString() ?? '';
  let method = 'GET';
  let path = '/';
  const headers: Record<string, string> = {};
  const chunks: Buffer[] = [];
  let answered = false;

  const t0 = observe ? performance.now() : 0;
  const answer = (status: number, responseHeaders: Record<string, string>, body: string): void => {
    if (answered) return;
    answered = true;
    observe?.(apiName, status, (performance.now() - t0) / 1000);
    call.write({
      immediate_response: {
        status: { code: status },
        headers: { set_headers: Object.entries(responseHeaders).map(([key, v]) => ({ header: { key, raw_value: Buffer.from(v) } })) },
        body: Buffer.from(body),
        details: 'legate_graphql',
      },
    });
    call.end();
  };

  const execute = (): void => {
    const engine = engines().get(apiName);
    if (!engine) {
      log.error('request for a GraphQL API that is not loaded', { api: apiName });
      answer(503, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify({ errors: [{ message: `GraphQL API ${JSON.stringify(apiName)} is not loaded` }] }));
      return;
    }
    engine.handle({ method, path, headers, body: Buffer.concat(chunks) }).then(
      (res) => answer(res.status, res.headers, res.body),
      (err: unknown) => {
        log.error('GraphQL execution failed', { api: apiName, error: err });
        answer(500, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify({ errors: [{ message: 'internal error' }] }));
      },
    );
  };

  call.on('data', (msg: ProcessingRequestMsg) => {
    if (answered) return;
    if (msg.request_headers) {
      for (const h of msg.request_headers.headers?.headers ?? []) {
        const value = headerText(h);
        if (h.key === ':method') method = value;
        else if (h.key === ':path') path = value;
        else headers[h.key] = value;
      }
      if (msg.request_headers.end_of_stream) execute();
      else call.write({ request_headers: { response: {} } });
    } else if (msg.request_body) {
      if (msg.request_body.body?.length) chunks.push(msg.request_body.body);
      if (msg.request_body.end_of_stream) execute();
      else call.write({ request_body: { response: {} } });
    } else if (msg.request_trailers) {
      execute();
    } else {
      // phases this filter does not ask for; let them pass
      if (msg.response_headers) call.write({ response_headers: { response: {} } });
      else if (msg.response_body) call.write({ response_body: { response: {} } });
      else if (msg.response_trailers) call.write({ response_trailers: {} });
    }
  });
  call.on('error', () => {
    answered = true;
  });
  call.on('end', () => {
    if (!answered) call.end();
  });
}
