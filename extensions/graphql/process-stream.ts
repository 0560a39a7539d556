// The handler of one ext_proc Process stream of the graphql service: Envoy sends the request headers
// and the buffered body; the handler executes the query on the route's API and ends the stream with an
// immediate response. Independent of xDS and of the server, so it can be driven directly.
//
// On the single-message path (the POST route with a body, controller/translate/features/graphql) Envoy
// skips the headers message: the body arrives first, carrying as request attributes the method, path and
// the headers the API reads (`request.headers['accept']`…), which stand in for the headers.
import { performance } from 'node:perf_hooks';
import { GRAPHQL_API_METADATA_KEY } from '../../common/contract.js';
import { METHOD_ATTRIBUTE, PATH_ATTRIBUTE, headerOfAttribute } from '../../common/extproc-attributes.js';
import type { Logger } from '../../common/log.js';
import type { Tracer } from '../common/tracing.js';
import type { Engine } from './engine/index.js';
import { framePrefix, frameMessage, type ProcessCall, type ProcessStreamHandler } from './extproc-server.js';
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
/** the span of a request's stream, named as gRPC servers name theirs */
const PROCESS_SPAN = 'envoy.service.ext_proc.v3.ExternalProcessor/Process';

/** Called once per answered request: the API, the HTTP status, the seconds it took, and whether the
 * request came as its body alone (the single-message path). */
export type ObserveRequest = (api: string, status: number, seconds: number, oneMessage: boolean) => void;

/**
 * One Process stream: collects the request (headers, then the buffered body), executes it on the API
 * named in the metadata and answers with an immediate response.
 */
export function processStream(
  call: ProcessCall,
  engines: () => Map<string, Engine>,
  log: Logger,
  observe: ObserveRequest | undefined,
  tracer?: Tracer,
): ProcessStreamHandler {
  const apiName = call.metadata(GRAPHQL_API_METADATA_KEY);
  // a span, child of Envoy's ext_proc call, when Envoy sampled the request
  const span = tracer?.startServerSpan(PROCESS_SPAN, { header: (n) => call.metadata(n) || undefined })?.set('legate.graphql.api', apiName);
  let method = 'GET';
  let path = '/';
  const headers: Record<string, string> = {};
  let chunks: Buffer[] | undefined;
  let answered = false;
  /** a headers message came (the general path); without one the request came as its body alone */
  let headersMessage = false;

  const t0 = observe ? performance.now() : 0;
  const answer = (status: number, responseHeaders: Record<string, string>, body: string): void => {
    if (answered) return;
    answered = true;
    observe?.(apiName, status, (performance.now() - t0) / 1000, !headersMessage);
    span?.set('http.response.status_code', status).end(status >= 500 ? `HTTP ${status}` : undefined);
    call.end(framePrefix(encodeImmediateResponse(status, responseHeaders, body, DETAILS, 5)));
  };

  const execute = (): void => {
    const engine = engines().get(apiName);
    if (!engine) {
      log.error('request for a GraphQL API that is not loaded', { api: apiName });
      // (e.g. just after a restart, before the controller's configs arrive): the same code as the route's own
      // answer when this service is down
      answer(
        503,
        JSON_CONTENT_TYPE,
        JSON.stringify({
          errors: [{ message: `GraphQL API ${JSON.stringify(apiName)} is not loaded`, extensions: { code: 'SERVICE_UNAVAILABLE' } }],
        }),
      );
      return;
    }
    const body = chunks === undefined ? EMPTY_BODY : chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks);
    engine.handle(span ? { method, path, headers, body, traceHeaders: span.propagation() } : { method, path, headers, body }).then(
      (res) => answer(res.status, res.headers, res.body),
      (err: unknown) => {
        log.error('GraphQL execution failed', { api: apiName, error: err });
        answer(500, JSON_CONTENT_TYPE, JSON.stringify({ errors: [{ message: 'internal error' }] }));
      },
    );
  };

  const fromAttributes = (attributes: string[]): void => {
    for (let i = 0; i < attributes.length; i += 2) {
      const expression = attributes[i]!;
      const value = attributes[i + 1]!;
      if (expression === METHOD_ATTRIBUTE) method = value;
      else if (expression === PATH_ATTRIBUTE) path = value;
      else {
        const name = headerOfAttribute(expression);
        if (name !== undefined) headers[name] = value;
      }
    }
  };

  return {
    message(msg: ProcessingRequestIn): void {
      if (answered) return;
      if (msg.malformed) {
        log.error('unparsable ProcessingRequest', { api: apiName });
        answer(500, JSON_CONTENT_TYPE, JSON.stringify({ errors: [{ message: 'internal error' }] }));
        return;
      }
      if (msg.attributes.length > 0) fromAttributes(msg.attributes);
      switch (msg.phase) {
        case Phase.requestHeaders: {
          headersMessage = true;
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
        span?.end();
        call.end();
      }
    },
    error(): void {
      answered = true;
      span?.end('the stream failed');
    },
  };
}
