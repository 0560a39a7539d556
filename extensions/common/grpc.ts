// gRPC plumbing shared by the extension services: loading Envoy's service definitions, and a server
// that binds, reports its port and shuts down gracefully.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { protoLoaderOptions } from '../../envoy/protos.js';

const loaded = new Map<string, grpc.GrpcObject>();

/** Loads a .proto file of Envoy's API (pinned protos) as a grpc-js package object. */
export function loadEnvoyService(file: string): grpc.GrpcObject {
  let pkg = loaded.get(file);
  if (!pkg) {
    pkg = grpc.loadPackageDefinition(protoLoader.loadSync(file, protoLoaderOptions()));
    loaded.set(file, pkg);
  }
  return pkg;
}

/** Walks a dotted name (`envoy.service.auth.v3.Authorization`) in a package object. */
export function lookupService(pkg: grpc.GrpcObject, dotted: string): grpc.ServiceClientConstructor {
  let node: unknown = pkg;
  for (const part of dotted.split('.')) node = (node as Record<string, unknown> | undefined)?.[part];
  if (typeof node !== 'function' || !('service' in node)) throw new Error(`gRPC service ${dotted} not found in the loaded protos`);
  return node as grpc.ServiceClientConstructor;
}

export interface BoundServer {
  server: grpc.Server;
  port: number;
  stop(graceMs?: number): Promise<void>;
}

export async function bindServer(server: grpc.Server, host: string, port: number): Promise<BoundServer> {
  const bound = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${host}:${port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    server,
    port: bound,
    stop: (graceMs = 2000) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}

/** Server options for services Envoy calls once per request: keep connections, allow many streams. */
export const EXTENSION_SERVER_OPTIONS: grpc.ServerOptions = {
  'grpc.max_concurrent_streams': 100000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.http2.min_ping_interval_without_data_ms': 5000,
  // channelz bookkeeping costs CPU on every call; nothing here reads it
  'grpc.enable_channelz': 0,
};
