// ADS server (State of the World) on @grpc/grpc-js, fed by a SnapshotCache keyed by node role.
//
// Per stream and type URL it tracks the last sent version and nonce, records ACKs, reports NACKs,
// ignores stale nonces, answers LDS/CDS with the full set and other types by requested name, holds
// requests until the role has a snapshot, and pushes changed types in make-before-break order:
// CDS, EDS, LDS, RDS, others; after a CDS push that adds or updates clusters it re-sends EDS (Envoy
// re-subscribes warming clusters) and holds the other types until that CDS is ACKed (docs/xds.md).
// Responses are serialized by hand from the cache's pre-encoded Any bytes, so nothing is re-encoded
// per stream. Also serves the unary Fetch{Clusters,Endpoints,Listeners,Routes} for diagnostics.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { TypeUrls, protoLoaderOptions } from '../../envoy/protos.js';
import { createLogger } from '../../common/log.js';
import type { Logger } from '../../common/log.js';
import { orderTypeUrls } from './cache.js';
import type { EncodedResource, RoleSnapshot, SnapshotCache, SnapshotChange, TypeSnapshot } from './cache.js';

// ---------------------------------------------------------------------------------------------
// Wire shapes (proto-loader keepCase objects)

// google.protobuf.Value comes from protobufjs' built-in descriptor, which is camelCase even with
// keepCase (stringValue, not string_value); accept both.
interface StructValueMsg {
  stringValue?: string;
  string_value?: string;
  kind?: string;
}

export interface NodeMsg {
  id?: string;
  cluster?: string;
  metadata?: { fields?: Record<string, StructValueMsg | undefined> };
  user_agent_name?: string;
  user_agent_version?: string;
}

export interface DiscoveryRequestMsg {
  version_info?: string;
  node?: NodeMsg | null;
  resource_names?: string[];
  type_url?: string;
  response_nonce?: string;
  error_detail?: { code?: number; message?: string } | null;
}

/** What the server writes; serialized by serializeDiscoveryResponse, not by proto-loader. */
export interface OutgoingDiscoveryResponse {
  readonly version_info: string;
  readonly type_url: string;
  readonly nonce: string;
  readonly resources: readonly EncodedResource[];
  readonly control_plane_id: string;
}

function toBuffer(u: Uint8Array): Buffer {
  return Buffer.isBuffer(u) ? u : Buffer.from(u.buffer, u.byteOffset, u.byteLength);
}

// The `resources` part of a response for a full (frozen) resource list, built once and shared by
// every stream that gets the full set (always the case for LDS and CDS).
const blockCache = new WeakMap<readonly EncodedResource[], Buffer>();

function resourcesBlock(resources: readonly EncodedResource[]): Buffer {
  const cached = blockCache.get(resources);
  if (cached) return cached;
  const w = protobuf.Writer.create();
  for (const res of resources) w.uint32(18).bytes(res.any);
  const block = toBuffer(w.finish());
  if (Object.isFrozen(resources)) blockCache.set(resources, block);
  return block;
}

/** DiscoveryResponse{version_info=1, resources=2 (Any), type_url=4, nonce=5, control_plane=6{identifier=1}}. */
export function serializeDiscoveryResponse(r: OutgoingDiscoveryResponse): Buffer {
  const head = protobuf.Writer.create();
  if (r.version_info) head.uint32(10).string(r.version_info);
  const tail = protobuf.Writer.create();
  if (r.type_url) tail.uint32(34).string(r.type_url);
  if (r.nonce) tail.uint32(42).string(r.nonce);
  if (r.control_plane_id) tail.uint32(50).fork().uint32(10).string(r.control_plane_id).ldelim();
  return Buffer.concat([toBuffer(head.finish()), resourcesBlock(r.resources), toBuffer(tail.finish())]);
}

// ---------------------------------------------------------------------------------------------
// Public types

export interface NackEvent {
  role: string;
  nodeId: string;
  typeUrl: string;
  /** The version Envoy rejected (the one this server sent). */
  version: string;
  /** The version Envoy keeps using (version_info of the NACK); '' if it never accepted one. */
  previousVersion: string;
  message: string;
  /** google.rpc.Status code of error_detail. */
  code: number;
  /** Names of the resources in the rejected response. */
  resourceNames: string[];
}

export interface TypeStatus {
  sentVersion: string | undefined;
  ackedVersion: string | undefined;
  lastNack?: { version: string; message: string; at: Date };
  /** undefined = all (wildcard). */
  requestedNames: string[] | undefined;
  /** A request is held until the role has a snapshot. */
  waiting: boolean;
  /** A push of this type waits for Envoy to ACK clusters that are warming. */
  held: boolean;
}

export interface ConnectionInfo {
  streamId: number;
  role: string;
  nodeId: string;
  cluster: string;
  peer: string;
  userAgent: string;
  connectedAt: Date;
  types: Record<string, TypeStatus>;
}

export interface TypeCounters {
  responses: number;
  acks: number;
  nacks: number;
}

export interface AdsCounters {
  /** DiscoveryResponses written on ADS streams. */
  responsesSent: number;
  acks: number;
  nacks: number;
  /** Streams connected now. */
  connectedStreams: number;
  /** Streams accepted since construction. */
  streamsTotal: number;
  /** Requests dropped because of a stale nonce. */
  staleRequests: number;
  /** Unary Fetch* calls answered. */
  fetches: number;
  byType: Record<string, TypeCounters>;
}

export interface AdsServerOptions {
  logger?: Logger;
  /** Called for every NACK (after it is logged at warn). */
  onNack?: (event: NackEvent) => void;
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
  /** Default 127.0.0.1. */
  host?: string;
  /** 0 picks a free port. Default 9977. */
  port?: number;
  /** Aborting it stops the server (same as stop()). */
  signal?: AbortSignal;
}

// ---------------------------------------------------------------------------------------------
// Internals

type AdsCall = grpc.ServerDuplexStream<DiscoveryRequestMsg, OutgoingDiscoveryResponse>;

interface StreamTypeState {
  /** Requested names; undefined = all. */
  names: ReadonlySet<string> | undefined;
  /** Names used for the last response; undefined = all. */
  sentNames: ReadonlySet<string> | undefined;
  sentVersion: string | undefined;
  sentNonce: string | undefined;
  sentResources: readonly EncodedResource[];
  /** The type snapshot the last response came from (shared with the cache, not a copy). */
  sentSnapshot: TypeSnapshot | undefined;
  ackedVersion: string | undefined;
  lastNack: { version: string; message: string; at: Date } | undefined;
  waiting: boolean;
}

interface StreamState {
  readonly id: number;
  readonly call: AdsCall;
  readonly peer: string;
  readonly connectedAt: Date;
  role: string | undefined;
  nodeId: string;
  cluster: string;
  userAgent: string;
  nonce: number;
  readonly types: Map<string, StreamTypeState>;
  unsubscribe: (() => void) | undefined;
  closed: boolean;
  /** Set while a CDS push that adds/updates clusters awaits its ACK; gated types wait in `deferred`. */
  gate: { nonce: string; timer: NodeJS.Timeout } | undefined;
  readonly deferred: Set<string>;
}

const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
const FETCH_SERVICES: readonly { service: string; method: string; typeUrl: string }[] = [
  { service: 'envoy.service.cluster.v3.ClusterDiscoveryService', method: 'FetchClusters', typeUrl: TypeUrls.cluster },
  { service: 'envoy.service.endpoint.v3.EndpointDiscoveryService', method: 'FetchEndpoints', typeUrl: TypeUrls.endpoint },
  { service: 'envoy.service.listener.v3.ListenerDiscoveryService', method: 'FetchListeners', typeUrl: TypeUrls.listener },
  { service: 'envoy.service.route.v3.RouteDiscoveryService', method: 'FetchRoutes', typeUrl: TypeUrls.route },
];
const PROTO_FILES = [
  'envoy/service/discovery/v3/ads.proto',
  'envoy/service/cluster/v3/cds.proto',
  'envoy/service/endpoint/v3/eds.proto',
  'envoy/service/listener/v3/lds.proto',
  'envoy/service/route/v3/rds.proto',
];

let cachedPackage: grpc.GrpcObject | undefined;
function loadPackage(): grpc.GrpcObject {
  if (!cachedPackage) cachedPackage = grpc.loadPackageDefinition(protoLoader.loadSync(PROTO_FILES, protoLoaderOptions()));
  return cachedPackage;
}

function serviceDefinition(name: string): grpc.ServiceDefinition {
  let obj: unknown = loadPackage();
  for (const part of name.split('.')) obj = (obj as Record<string, unknown> | undefined)?.[part];
  const ctor = obj as { service?: grpc.ServiceDefinition } | undefined;
  if (!ctor?.service) throw new Error(`gRPC service ${name} not found in the pinned protos`);
  // Replace the response serializer: responses are assembled from pre-encoded Any bytes.
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [method, def] of Object.entries(ctor.service)) {
    const d = def as grpc.MethodDefinition<unknown, unknown>;
    const isDiscovery = d.path.endsWith('/StreamAggregatedResources') || d.path.includes('/Fetch');
    out[method] = isDiscovery
      ? { ...d, responseSerialize: serializeDiscoveryResponse as (value: unknown) => Buffer }
      : d;
  }
  return out as grpc.ServiceDefinition;
}

/** Role of a node: node.metadata.role (string) if set, else node.id. */
export function nodeRole(node: NodeMsg | null | undefined): string | undefined {
  const value = node?.metadata?.fields?.['role'];
  const role = value?.stringValue ?? value?.string_value;
  if (role) return role;
  return node?.id || undefined;
}

function sameNames(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.size !== b.size) return false;
  for (const n of a) if (!b.has(n)) return false;
  return true;
}

function selectResources(t: TypeSnapshot, names: ReadonlySet<string> | undefined): readonly EncodedResource[] {
  if (!names) return t.resources;
  if (names.size < t.resources.length) {
    const out: EncodedResource[] = [];
    for (const name of [...names].sort()) {
      const r = t.byName.get(name);
      if (r) out.push(r);
    }
    return out;
  }
  return t.resources.filter((r) => names.has(r.name));
}

/** Types whose pushes wait for the CDS ACK after clusters were added or updated. */
function isGated(typeUrl: string): boolean {
  return typeUrl !== TypeUrls.cluster && typeUrl !== TypeUrls.endpoint;
}

/** Whether `next` has a resource that is new or different compared with `prev`. */
function addsOrUpdates(prev: TypeSnapshot, next: TypeSnapshot): boolean {
  if (prev === next) return false;
  for (const r of next.resources) {
    const old = prev.byName.get(r.name);
    if (!old || (old !== r && !old.any.equals(r.any))) return true;
  }
  return false;
}

function grpcError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
}

// ---------------------------------------------------------------------------------------------

export class AdsServer {
  private readonly log: Logger;
  private readonly controlPlaneId: string;
  private readonly wildcard: ReadonlySet<string>;
  private readonly stopGraceMs: number;
  private readonly warmingTimeoutMs: number;
  private readonly onNack: ((event: NackEvent) => void) | undefined;
  private readonly grpcOptions: grpc.ServerOptions;
  private readonly streams = new Map<number, StreamState>();
  private server: grpc.Server | undefined;
  private nextStreamId = 1;
  private readonly stats = {
    responsesSent: 0,
    acks: 0,
    nacks: 0,
    streamsTotal: 0,
    staleRequests: 0,
    fetches: 0,
  };
  private readonly byType = new Map<string, TypeCounters>();

  constructor(
    private readonly cache: SnapshotCache,
    options: AdsServerOptions = {},
  ) {
    this.log = options.logger ?? createLogger('xds');
    this.controlPlaneId = options.controlPlaneId ?? 'legate';
    this.wildcard = new Set(options.wildcardTypes ?? [TypeUrls.listener, TypeUrls.cluster]);
    this.stopGraceMs = options.stopGraceMs ?? 2000;
    this.warmingTimeoutMs = options.clusterWarmingTimeoutMs ?? 10_000;
    this.onNack = options.onNack;
    this.grpcOptions = options.grpcOptions ?? {};
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
        call.emit(
          'error',
          grpcError(grpc.status.UNIMPLEMENTED, 'Legate serves State-of-the-World ADS only: set ads_config.api_type to GRPC (DELTA_GRPC is not implemented)'),
        );
      },
    });
    for (const f of FETCH_SERVICES) {
      const def = serviceDefinition(f.service);
      const impl: grpc.UntypedServiceImplementation = {};
      for (const method of Object.keys(def)) {
        impl[method] =
          method === f.method
            ? (call: grpc.ServerUnaryCall<DiscoveryRequestMsg, OutgoingDiscoveryResponse>, cb: grpc.sendUnaryData<OutgoingDiscoveryResponse>) =>
                this.handleFetch(f.typeUrl, call, cb)
            : (call: grpc.ServerDuplexStream<unknown, unknown>) =>
                call.emit('error', grpcError(grpc.status.UNIMPLEMENTED, `${f.service}/${method} is not served; use AggregatedDiscoveryService (ADS)`));
      }
      server.addService(def, impl);
    }
    const address = host.includes(':') && !host.startsWith('[') ? `[${host}]:${port}` : `${host}:${port}`;
    const bound = await new Promise<number>((resolve, reject) => {
      server.bindAsync(address, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
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
    for (const s of [...this.streams.values()]) {
      this.closeStream(s, 'server stopping');
      try {
        s.call.emit('error', grpcError(grpc.status.UNAVAILABLE, 'xDS server shutting down'));
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
    const out: ConnectionInfo[] = [];
    for (const s of this.streams.values()) {
      if (s.role === undefined) continue;
      const types: Record<string, TypeStatus> = {};
      for (const [typeUrl, t] of s.types) {
        const status: TypeStatus = {
          sentVersion: t.sentVersion,
          ackedVersion: t.ackedVersion,
          requestedNames: t.names ? [...t.names].sort() : undefined,
          waiting: t.waiting,
          held: s.deferred.has(typeUrl),
        };
        if (t.lastNack) status.lastNack = { ...t.lastNack };
        types[typeUrl] = status;
      }
      out.push({
        streamId: s.id,
        role: s.role,
        nodeId: s.nodeId,
        cluster: s.cluster,
        peer: s.peer,
        userAgent: s.userAgent,
        connectedAt: s.connectedAt,
        types,
      });
    }
    return out;
  }

  /** A copy of the counters. */
  counters(): AdsCounters {
    const byType: Record<string, TypeCounters> = {};
    for (const [t, c] of this.byType) byType[t] = { ...c };
    let connected = 0;
    for (const s of this.streams.values()) if (s.role !== undefined) connected++;
    return { ...this.stats, connectedStreams: connected, byType };
  }

  // -------------------------------------------------------------------------------------------

  private typeCounters(typeUrl: string): TypeCounters {
    let c = this.byType.get(typeUrl);
    if (!c) {
      c = { responses: 0, acks: 0, nacks: 0 };
      this.byType.set(typeUrl, c);
    }
    return c;
  }

  private handleStream(call: AdsCall): void {
    const stream: StreamState = {
      id: this.nextStreamId++,
      call,
      peer: call.getPeer(),
      connectedAt: new Date(),
      role: undefined,
      nodeId: '',
      cluster: '',
      userAgent: '',
      nonce: 0,
      types: new Map(),
      unsubscribe: undefined,
      closed: false,
      gate: undefined,
      deferred: new Set(),
    };
    this.streams.set(stream.id, stream);
    this.stats.streamsTotal++;

    call.on('data', (req: DiscoveryRequestMsg) => {
      try {
        this.handleRequest(stream, req);
      } catch (error) {
        this.log.error('xDS request handling failed', { streamId: stream.id, role: stream.role, error });
        this.closeStream(stream, 'internal error');
        call.emit('error', grpcError(grpc.status.INTERNAL, 'internal error in the xDS server'));
      }
    });
    call.on('end', () => {
      // client half-closed: finish our side too
      this.closeStream(stream, 'client closed the stream');
      if (call.writable) call.end();
    });
    call.on('cancelled', () => this.closeStream(stream, 'cancelled'));
    call.on('error', (error: unknown) => this.closeStream(stream, `error: ${error instanceof Error ? error.message : String(error)}`));
    call.on('close', () => this.closeStream(stream, 'closed'));
  }

  private closeStream(stream: StreamState, reason: string): void {
    if (stream.closed) return;
    stream.closed = true;
    if (stream.gate) clearTimeout(stream.gate.timer);
    stream.gate = undefined;
    stream.deferred.clear();
    stream.unsubscribe?.();
    stream.unsubscribe = undefined;
    this.streams.delete(stream.id);
    if (stream.role !== undefined) {
      this.log.info('xDS stream disconnected', {
        streamId: stream.id,
        role: stream.role,
        nodeId: stream.nodeId,
        reason,
        durationMs: Date.now() - stream.connectedAt.getTime(),
      });
    }
  }

  private handleRequest(stream: StreamState, req: DiscoveryRequestMsg): void {
    if (stream.closed) return;
    if (stream.role === undefined) {
      const role = nodeRole(req.node);
      if (!role) {
        this.log.warn('xDS stream without node id or role; rejecting', { peer: stream.peer });
        this.closeStream(stream, 'no node');
        stream.call.emit('error', grpcError(grpc.status.INVALID_ARGUMENT, 'the first DiscoveryRequest must carry node.id or node.metadata.role'));
        return;
      }
      stream.role = role;
      stream.nodeId = req.node?.id ?? '';
      stream.cluster = req.node?.cluster ?? '';
      stream.userAgent = [req.node?.user_agent_name, req.node?.user_agent_version].filter(Boolean).join('/');
      stream.unsubscribe = this.cache.subscribe(role, (change) => this.onSnapshotChange(stream, change));
      this.log.info('xDS stream connected', {
        streamId: stream.id,
        role,
        nodeId: stream.nodeId,
        cluster: stream.cluster,
        peer: stream.peer,
        userAgent: stream.userAgent || undefined,
      });
    }

    const typeUrl = req.type_url ?? '';
    if (!typeUrl) {
      this.log.warn('DiscoveryRequest without type_url ignored', { streamId: stream.id, role: stream.role });
      return;
    }
    const nonce = req.response_nonce ?? '';
    let ts = stream.types.get(typeUrl);
    if (!ts) {
      ts = {
        names: undefined,
        sentNames: undefined,
        sentVersion: undefined,
        sentNonce: undefined,
        sentResources: [],
        sentSnapshot: undefined,
        ackedVersion: undefined,
        lastNack: undefined,
        waiting: false,
      };
      stream.types.set(typeUrl, ts);
    }

    // A nonce we did not send last: an answer to a superseded response. Envoy will also see the newer one.
    if (nonce !== '' && ts.sentNonce !== undefined && nonce !== ts.sentNonce) {
      this.stats.staleRequests++;
      if (this.log.enabled('debug')) {
        this.log.debug('stale nonce ignored', { streamId: stream.id, role: stream.role, typeUrl, nonce, latest: ts.sentNonce });
      }
      return;
    }

    const names = this.requestedNames(typeUrl, req.resource_names);
    ts.names = names;
    if (this.log.enabled('debug')) {
      this.log.debug('DiscoveryRequest', {
        streamId: stream.id,
        role: stream.role,
        typeUrl,
        version: req.version_info,
        nonce,
        names: req.resource_names,
        nack: req.error_detail ? true : undefined,
      });
    }

    const isResponseToUs = nonce !== '' && nonce === ts.sentNonce;
    if (isResponseToUs) {
      const err = req.error_detail;
      if (err) {
        this.recordNack(stream, typeUrl, ts, req, err);
      } else {
        ts.ackedVersion = req.version_info ?? '';
        this.stats.acks++;
        this.typeCounters(typeUrl).acks++;
        if (this.log.enabled('debug')) {
          this.log.debug('ACK', { streamId: stream.id, role: stream.role, typeUrl, version: ts.ackedVersion });
        }
      }
      // Send only if something changed (names; or a version not yet sent).
      this.maybeSend(stream, typeUrl, ts, false);
      if (stream.gate && stream.gate.nonce === nonce && typeUrl === TypeUrls.cluster) this.releaseGate(stream, err ? 'CDS NACK' : 'CDS ACK');
    } else if (ts.sentVersion === undefined && this.wildcard.has(typeUrl) && req.version_info && this.currentVersion(stream, typeUrl) === req.version_info) {
      // A reconnecting Envoy already holds the full current set of this wildcard type (versions are
      // content hashes, so they survive controller restarts): nothing to send until it changes.
      ts.sentVersion = req.version_info;
      ts.ackedVersion = req.version_info;
      ts.sentNames = undefined;
      ts.sentSnapshot = stream.role === undefined ? undefined : this.cache.get(stream.role)?.typeSnapshot(typeUrl);
      if (this.log.enabled('debug')) {
        this.log.debug('client already has the current version', { streamId: stream.id, role: stream.role, typeUrl, version: req.version_info });
      }
    } else {
      // Initial request on this stream, or a fresh request without (or with a foreign) nonce.
      this.maybeSend(stream, typeUrl, ts, true);
    }
  }

  private currentVersion(stream: StreamState, typeUrl: string): string | undefined {
    return stream.role === undefined ? undefined : this.cache.get(stream.role)?.typeSnapshot(typeUrl).version;
  }

  private requestedNames(typeUrl: string, resourceNames: string[] | undefined): ReadonlySet<string> | undefined {
    if (this.wildcard.has(typeUrl)) return undefined;
    if (!resourceNames || resourceNames.length === 0 || resourceNames.includes('*')) return undefined;
    return new Set(resourceNames);
  }

  private recordNack(
    stream: StreamState,
    typeUrl: string,
    ts: StreamTypeState,
    req: DiscoveryRequestMsg,
    err: { code?: number; message?: string },
  ): void {
    const message = err.message ?? '';
    const version = ts.sentVersion ?? '';
    ts.lastNack = { version, message, at: new Date() };
    if (req.version_info) ts.ackedVersion = req.version_info;
    this.stats.nacks++;
    this.typeCounters(typeUrl).nacks++;
    const event: NackEvent = {
      role: stream.role ?? '',
      nodeId: stream.nodeId,
      typeUrl,
      version,
      previousVersion: req.version_info ?? '',
      message,
      code: err.code ?? 0,
      resourceNames: ts.sentResources.map((r) => r.name),
    };
    this.log.warn('NACK: Envoy rejected xDS config', {
      streamId: stream.id,
      role: event.role,
      nodeId: event.nodeId,
      typeUrl,
      version,
      previousVersion: event.previousVersion,
      error: message,
    });
    if (this.onNack) {
      try {
        this.onNack(event);
      } catch (error) {
        this.log.error('onNack callback failed', { error });
      }
    }
  }

  private onSnapshotChange(stream: StreamState, change: SnapshotChange): void {
    if (stream.closed || !change.snapshot) return;
    const changed = new Set(change.changedTypes);
    for (const typeUrl of orderTypeUrls(stream.types.keys())) {
      const ts = stream.types.get(typeUrl);
      if (!ts) continue;
      if (ts.waiting) this.maybeSend(stream, typeUrl, ts, true, change.snapshot);
      else if (changed.has(typeUrl)) this.maybeSend(stream, typeUrl, ts, false, change.snapshot);
    }
  }

  private openGate(stream: StreamState, nonce: string): void {
    if (this.warmingTimeoutMs <= 0) return;
    if (stream.gate) clearTimeout(stream.gate.timer);
    const timer = setTimeout(() => {
      this.log.warn('CDS not acknowledged in time; pushing the held types anyway', {
        streamId: stream.id,
        role: stream.role,
        nodeId: stream.nodeId,
        timeoutMs: this.warmingTimeoutMs,
      });
      this.releaseGate(stream, 'timeout');
    }, this.warmingTimeoutMs);
    timer.unref();
    stream.gate = { nonce, timer };
  }

  private releaseGate(stream: StreamState, reason: string): void {
    if (!stream.gate) return;
    clearTimeout(stream.gate.timer);
    stream.gate = undefined;
    if (stream.deferred.size === 0 || stream.closed) return;
    const types = orderTypeUrls(stream.deferred);
    stream.deferred.clear();
    if (this.log.enabled('debug')) this.log.debug('releasing held types', { streamId: stream.id, role: stream.role, reason, types });
    for (const typeUrl of types) {
      const ts = stream.types.get(typeUrl);
      if (ts) this.maybeSend(stream, typeUrl, ts, false);
    }
  }

  private maybeSend(stream: StreamState, typeUrl: string, ts: StreamTypeState, force: boolean, snapshot?: RoleSnapshot): void {
    if (stream.closed || stream.role === undefined) return;
    const snap = snapshot ?? this.cache.get(stream.role);
    if (!snap) {
      if (!ts.waiting && this.log.enabled('debug')) {
        this.log.debug('holding request until the role has a snapshot', { streamId: stream.id, role: stream.role, typeUrl });
      }
      ts.waiting = true;
      return;
    }
    ts.waiting = false;
    const t = snap.typeSnapshot(typeUrl);
    if (!force && ts.sentVersion === t.version && sameNames(ts.names, ts.sentNames)) return;
    if (!force && stream.gate && isGated(typeUrl)) {
      // clusters are warming: listeners and routes follow once Envoy ACKs the CDS push
      stream.deferred.add(typeUrl);
      return;
    }

    const resources = selectResources(t, ts.names);
    const previous = ts.sentSnapshot;
    const nonce = String(++stream.nonce);
    const response: OutgoingDiscoveryResponse = {
      version_info: t.version,
      type_url: typeUrl,
      nonce,
      resources,
      control_plane_id: this.controlPlaneId,
    };
    ts.sentVersion = t.version;
    ts.sentNonce = nonce;
    ts.sentNames = ts.names;
    ts.sentResources = resources;
    ts.sentSnapshot = t;
    if (!stream.call.writable) return;
    stream.call.write(response);
    this.stats.responsesSent++;
    this.typeCounters(typeUrl).responses++;
    if (this.log.enabled('debug')) {
      this.log.debug('DiscoveryResponse sent', {
        streamId: stream.id,
        role: stream.role,
        typeUrl,
        version: t.version,
        nonce,
        resources: resources.length,
      });
    }
    if (typeUrl === TypeUrls.cluster && previous && addsOrUpdates(previous, t)) {
      this.resendEndpoints(stream, snap);
      this.openGate(stream, nonce);
    }
  }

  // Envoy warms an added or updated EDS cluster with a new EDS subscription and holds the CDS ACK
  // until it has endpoints. In SotW that re-subscription looks exactly like an ACK of the last EDS
  // response (same nonce, version and names), so the server must re-send EDS after such a CDS push
  // even when the endpoints did not change (go-control-plane#245). Without it the cluster stays
  // warming until initial_fetch_timeout (15 s by default).
  private resendEndpoints(stream: StreamState, snap: RoleSnapshot): void {
    const eds = stream.types.get(TypeUrls.endpoint);
    if (!eds || eds.sentVersion === undefined || eds.waiting) return;
    this.maybeSend(stream, TypeUrls.endpoint, eds, true, snap);
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
    const names = req.resource_names && req.resource_names.length > 0 && !req.resource_names.includes('*') ? new Set(req.resource_names) : undefined;
    this.stats.fetches++;
    cb(null, { version_info: t.version, type_url: typeUrl, nonce: '', resources: selectResources(t, names), control_plane_id: this.controlPlaneId });
  }
}
