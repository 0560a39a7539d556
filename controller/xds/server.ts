// ADS server (State of the World) on @grpc/grpc-js, fed by a SnapshotCache keyed by node role. This
// module owns the gRPC server and the set of streams; each stream's protocol is ./stream.ts, the
// wire format ./wire.ts, and what happens is reported to observers (./observer.ts). Also serves the
// unary Fetch{Clusters,Endpoints,Listeners,Routes} for diagnostics.
import * as grpc from '@grpc/grpc-js';
import { TypeUrls } from '../../envoy/protos.js';
import { createLogger, type Logger } from '../../common/log.js';
import type { SnapshotCache } from './cache.js';
import { XdsCounters, fanOut, type AdsCounters, type XdsObserver } from './observer.js';
import { AdsStream, type ConnectionInfo, type StreamSettings } from './stream.js';
import {
  ADS_SERVICE,
  FETCH_SERVICES,
  grpcError,
  nodeRole,
  selectResources,
  serviceDefinition,
  type DiscoveryRequestMsg,
  type OutgoingDiscoveryResponse,
} from './wire.js';

export type { AdsCounters, NackEvent, TypeCounters, XdsObserver } from './observer.js';
export type { ConnectionInfo, TypeStatus } from './stream.js';
export { nodeRole, serializeDiscoveryResponse, type DiscoveryRequestMsg, type NodeMsg, type OutgoingDiscoveryResponse } from './wire.js';

export interface AdsServerOptions {
  logger?: Logger;
  /** Told about streams, responses, ACKs and NACKs (NACKs after they are logged at warn). */
  observers?: readonly XdsObserver[];
  /** control_plane.identifier in responses. Default 'legate'. */
  controlPlaneId?: string;
  /** Types always answered with their full set. Default LDS and CDS. */
  wildcardTypes?: readonly string[];
  /**
   * After a CDS push that adds or updates clusters, listener/route (and other) pushes to that stream
   * wait for the CDS ACK (Envoy sends it once the clusters are warm), so routes never point at a
   * cluster that is still warming. This bounds the wait. Default 10000 ms; 0 disables the wait.
   */
  clusterWarmingTimeoutMs?: number;
  /** How long stop() waits for a graceful shutdown before forcing it. Default 2000 ms. */
  stopGraceMs?: number;
  /** Extra grpc-js server options. */
  grpcOptions?: grpc.ServerOptions;
}

export interface ListenOptions {
  /** mutual TLS (PEM): the server's certificate and key, and the CA every client certificate must chain to */
  tls?: { cert: Buffer; key: Buffer; ca: Buffer };
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 picks a free port. Default 9977. */
  port?: number;
  /** Aborting it stops the server (same as stop()). */
  signal?: AbortSignal;
}

type AdsCall = grpc.ServerDuplexStream<DiscoveryRequestMsg, OutgoingDiscoveryResponse>;

export class AdsServer {
  private readonly log: Logger;
  private readonly stopGraceMs: number;
  private readonly grpcOptions: grpc.ServerOptions;
  private readonly counted = new XdsCounters();
  private readonly settings: StreamSettings;
  private readonly streams = new Map<number, { stream: AdsStream; call: AdsCall }>();
  private server: grpc.Server | undefined;
  private nextStreamId = 1;

  constructor(
    private readonly cache: SnapshotCache,
    options: AdsServerOptions = {},
  ) {
    this.log = options.logger ?? createLogger('xds');
    this.stopGraceMs = options.stopGraceMs ?? 2000;
    this.grpcOptions = options.grpcOptions ?? {};
    const observer = fanOut([this.counted, ...(options.observers ?? [])], (error) => this.log.error('xDS observer failed', { error }));
    this.settings = {
      cache,
      log: this.log,
      observer,
      controlPlaneId: options.controlPlaneId ?? 'legate',
      wildcard: new Set(options.wildcardTypes ?? [TypeUrls.listener, TypeUrls.cluster]),
      warmingTimeoutMs: options.clusterWarmingTimeoutMs ?? 10_000,
    };
  }

  /** Binds and serves. Resolves with the bound port (useful with port 0). Can be called again after stop(). */
  async start(listen: ListenOptions = {}): Promise<{ port: number }> {
    if (this.server) throw new Error('AdsServer already started');
    const host = listen.host ?? '127.0.0.1';
    const port = listen.port ?? 9977;
    const server = new grpc.Server({
      'grpc.keepalive_time_ms': 30_000,
      'grpc.keepalive_timeout_ms': 10_000,
      'grpc.max_receive_message_length': 64 * 1024 * 1024,
      ...this.grpcOptions,
    });
    server.addService(serviceDefinition(ADS_SERVICE), {
      StreamAggregatedResources: (call: AdsCall) => this.handleStream(call),
      DeltaAggregatedResources: (call: grpc.ServerDuplexStream<unknown, unknown>) => {
        this.log.warn('delta xDS requested; not implemented', { peer: call.getPeer() });
        const message = 'Legate serves State-of-the-World ADS only: set ads_config.api_type to GRPC (DELTA_GRPC is not implemented)';
        call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, message));
      },
    });
    for (const f of FETCH_SERVICES) {
      const def = serviceDefinition(f.service);
      const impl: grpc.UntypedServiceImplementation = {};
      for (const method of Object.keys(def)) {
        impl[method] =
          method === f.method
            ? (
                call: grpc.ServerUnaryCall<DiscoveryRequestMsg, OutgoingDiscoveryResponse>,
                cb: grpc.sendUnaryData<OutgoingDiscoveryResponse>,
              ) => this.handleFetch(f.typeUrl, call, cb)
            : (call: grpc.ServerDuplexStream<unknown, unknown>) => {
                const message = `${f.service}/${method} is not served; use AggregatedDiscoveryService (ADS)`;
                call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, message));
              };
      }
      server.addService(def, impl);
    }
    const address = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
    const bound = await new Promise<number>((resolve, reject) => {
      const credentials = listen.tls
        ? grpc.ServerCredentials.createSsl(listen.tls.ca, [{ cert_chain: listen.tls.cert, private_key: listen.tls.key }], true)
        : grpc.ServerCredentials.createInsecure();
      server.bindAsync(address, credentials, (err, p) => (err ? reject(err) : resolve(p)));
    }).catch((error: unknown) => {
      server.forceShutdown();
      throw error;
    });
    this.server = server;
    this.log.info('xDS server listening', { address: host, port: bound });
    const signal = listen.signal;
    if (signal) {
      const onAbort = (): void => {
        if (this.server === server) void this.stop();
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener('abort', onAbort, { once: true });
    }
    return { port: bound };
  }

  /** Ends every stream (UNAVAILABLE), then shuts down gracefully, forcing it after stopGraceMs. */
  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    for (const { stream, call } of [...this.streams.values()]) {
      stream.close('server stopping');
      try {
        call.emit('error', grpcError(grpc.status.UNAVAILABLE, 'xDS server shutting down'));
      } catch {
        // the call may already be gone
      }
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        server.forceShutdown();
        resolve();
      }, this.stopGraceMs);
      timer.unref();
      server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
    this.log.info('xDS server stopped');
  }

  /** One entry per connected ADS stream. */
  connections(): ConnectionInfo[] {
    return [...this.streams.values()].flatMap(({ stream }) => stream.status() ?? []);
  }

  /** A copy of the counters. */
  counters(): AdsCounters {
    return this.counted.snapshot();
  }

  private handleStream(call: AdsCall): void {
    const id = this.nextStreamId++;
    const transport = {
      peer: call.getPeer(),
      get writable(): boolean {
        return call.writable;
      },
      write: (response: OutgoingDiscoveryResponse): void => void call.write(response),
      fail: (code: grpc.status, message: string): void => void call.emit('error', grpcError(code, message)),
    };
    const stream = new AdsStream(id, transport, this.settings, (s) => this.streams.delete(s.id));
    this.streams.set(id, { stream, call });

    call.on('data', (req: DiscoveryRequestMsg) => {
      try {
        stream.handleRequest(req);
      } catch (error) {
        this.log.error('xDS request handling failed', { streamId: id, role: stream.role, error });
        stream.close('internal error');
        transport.fail(grpc.status.INTERNAL, 'internal error in the xDS server');
      }
    });
    call.on('end', () => {
      // client half-closed: finish our side too
      stream.close('client closed the stream');
      if (call.writable) call.end();
    });
    call.on('cancelled', () => stream.close('cancelled'));
    call.on('error', (error: unknown) => stream.close(`error: ${error instanceof Error ? error.message : String(error)}`));
    call.on('close', () => stream.close('closed'));
  }

  private handleFetch(
    typeUrl: string,
    call: grpc.ServerUnaryCall<DiscoveryRequestMsg, OutgoingDiscoveryResponse>,
    cb: grpc.sendUnaryData<OutgoingDiscoveryResponse>,
  ): void {
    const req = call.request;
    if (req.type_url && req.type_url !== typeUrl) {
      cb(grpcError(grpc.status.INVALID_ARGUMENT, `this method serves ${typeUrl}, not ${req.type_url}`));
      return;
    }
    const role = nodeRole(req.node);
    if (!role) {
      cb(grpcError(grpc.status.INVALID_ARGUMENT, 'DiscoveryRequest must carry node.id or node.metadata.role'));
      return;
    }
    const snap = this.cache.get(role);
    if (!snap) {
      const known = this.cache.roles();
      cb(grpcError(grpc.status.NOT_FOUND, `no xDS snapshot for role "${role}" (known roles: ${known.length ? known.join(', ') : 'none'})`));
      return;
    }
    const t = snap.typeSnapshot(typeUrl);
    const requested = req.resource_names;
    const names = requested && requested.length > 0 && !requested.includes('*') ? new Set(requested) : undefined;
    this.settings.observer.onFetch(typeUrl);
    cb(null, {
      version_info: t.version,
      type_url: typeUrl,
      nonce: '',
      resources: selectResources(t, names),
      control_plane_id: this.settings.controlPlaneId,
    });
  }
}
