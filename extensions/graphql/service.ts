// Legate's graphql extension: an Envoy ext_proc service (envoy.service.ext_proc.v3.ExternalProcessor)
// that executes GraphQL locally and answers with an immediate response. GraphQL APIs arrive from the
// controller over xDS (role `graphql`) and are swapped atomically; each route names its API in the
// stream's gRPC initial metadata.
//
// The ext_proc stream is served by ./extproc-server.ts (gRPC on node:http2, no grpc-js) with the
// messages decoded and encoded by ./wire.ts: per request, that transport costs less than the query.
import {
  ExtensionRoles,
  ExtensionTypeUrls,
  GRAPHQL_API_METADATA_KEY,
  decodeExtensionConfig,
  type GraphQLApiConfig,
} from '../../common/contract.js';
import type { Logger } from '../../common/log.js';
import { XdsClient } from '../common/xds-client.js';
import { createEngine, type Engine } from './engine/index.js';
import { framePrefix, frameMessage, startExtProcServer, type ProcessCall, type ProcessStreamHandler } from './extproc-server.js';
import {
  CONTINUE_REQUEST_BODY,
  CONTINUE_REQUEST_HEADERS,
  CONTINUE_RESPONSE_BODY,
  CONTINUE_RESPONSE_HEADERS,
  CONTINUE_RESPONSE_TRAILERS,
  Phase,
  encodeImmediateResponse,
  type ProcessingRequestIn,
} from './wire.js';

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

  const server = await startExtProcServer(options.host, options.port, {
    open: (call) => processStream(call, () => engines, log, options.observe),
    onError: (what, err) => log.warn(`${what} failed`, { error: err instanceof Error ? err.message : String(err) }),
  });
  log.info('graphql ext_proc server listening', { address: `${options.host}:${server.port}` });
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

// The CONTINUE answers, framed once.
const FRAMED = {
  requestHeaders: frameMessage(CONTINUE_REQUEST_HEADERS),
  requestBody: frameMessage(CONTINUE_REQUEST_BODY),
  responseHeaders: frameMessage(CONTINUE_RESPONSE_HEADERS),
  responseBody: frameMessage(CONTINUE_RESPONSE_BODY),
  responseTrailers: frameMessage(CONTINUE_RESPONSE_TRAILERS),
};
const JSON_CONTENT_TYPE = { 'content-type': 'application/json; charset=utf-8' };
const DETAILS = 'legate_graphql';
const EMPTY_BODY = Buffer.alloc(0);

/** One Process stream: collects the request (headers, then the buffered body), executes it on the API named
 * in the metadata and answers with an immediate response. Exported for extproc-bench.ts. */
export function processStream(
  call: ProcessCall,
  engines: () => Map<string, Engine>,
  log: Logger,
  observe: GraphQLServiceOptions['observe'],
): ProcessStreamHandler {
  const apiName = call.metadata(GRAPHQL_API_METADATA_KEY);
  let method = 'GET';
  let path = '/';
  const headers: Record<string, string> = {};
  let chunks: Buffer[] | undefined;
  let answered = false;

  const t0 = observe ? performance.now() : 0;
  const answer = (status: number, responseHeaders: Record<string, string>, body: string): void => {
    if (answered) return;
    answered = true;
    observe?.(apiName, status, (performance.now() - t0) / 1000);
    call.end(framePrefix(encodeImmediateResponse(status, responseHeaders, body, DETAILS, 5)));
  };

  const execute = (): void => {
    const engine = engines().get(apiName);
    if (!engine) {
      log.error('request for a GraphQL API that is not loaded', { api: apiName });
      answer(503, JSON_CONTENT_TYPE, JSON.stringify({ errors: [{ message: `GraphQL API ${JSON.stringify(apiName)} is not loaded` }] }));
      return;
    }
    const body = chunks === undefined ? EMPTY_BODY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    engine.handle({ method, path, headers, body }).then(
      (res) => answer(res.status, res.headers, res.body),
      (err: unknown) => {
        log.error('GraphQL execution failed', { api: apiName, error: err });
        answer(500, JSON_CONTENT_TYPE, JSON.stringify({ errors: [{ message: 'internal error' }] }));
      },
    );
  };

  return {
    message(msg: ProcessingRequestIn): void {
      if (answered) return;
      if (msg.malformed) {
        log.error('unparsable ProcessingRequest', { api: apiName });
        answer(500, JSON_CONTENT_TYPE, JSON.stringify({ errors: [{ message: 'internal error' }] }));
        return;
      }
      switch (msg.phase) {
        case Phase.requestHeaders: {
          const hs = msg.headers;
          for (let i = 0; i < hs.length; i += 2) {
            const key = hs[i]!;
            const value = hs[i + 1]!;
            if (key === ':method') method = value;
            else if (key === ':path') path = value;
            else headers[key] = value;
          }
          if (msg.endOfStream) execute();
          else call.write(FRAMED.requestHeaders);
          return;
        }
        case Phase.requestBody:
          if (msg.body !== undefined) (chunks ??= []).push(msg.body);
          if (msg.endOfStream) execute();
          else call.write(FRAMED.requestBody);
          return;
        case Phase.requestTrailers:
          execute();
          return;
        // phases this filter does not ask for; let them pass
        case Phase.responseHeaders:
          call.write(FRAMED.responseHeaders);
          return;
        case Phase.responseBody:
          call.write(FRAMED.responseBody);
          return;
        case Phase.responseTrailers:
          call.write(FRAMED.responseTrailers);
          return;
        default:
        // no phase: nothing to do
      }
    },
    end(): void {
      if (!answered) {
        answered = true;
        call.end();
      }
    },
    error(): void {
      answered = true;
    },
  };
}
