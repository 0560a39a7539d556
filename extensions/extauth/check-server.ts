// extauth's Check, served by the minimal unary gRPC server (extensions/common/unary-server.ts).
import type { H2Config } from '../common/h2/transport.js';
import { startUnaryServer, type UnaryHandler, type UnaryServer } from '../common/unary-server.js';

export { GrpcStatus, MAX_MESSAGE_BYTES, frameMessage, framePrefix } from '../common/unary-server.js';

export const CHECK_PATH = '/envoy.service.auth.v3.Authorization/Check';

export type CheckHandler = UnaryHandler;
export type CheckServer = UnaryServer;

export interface CheckServerOptions {
  handle: CheckHandler;
  /** a stream, session or handler failed in a way worth logging */
  onError?(what: string, err: unknown): void;
  /** the HTTP/2 transport and its limits */
  http2?: H2Config;
}

export function startCheckServer(host: string, port: number, options: CheckServerOptions): Promise<CheckServer> {
  return startUnaryServer(host, port, { path: CHECK_PATH, name: 'Check', ...options });
}
