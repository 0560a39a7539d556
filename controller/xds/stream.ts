// One ADS stream (State of the World): its node, and per type URL the requested names, the last sent
// version and nonce, ACKs and NACKs. It ignores stale nonces, answers LDS/CDS with the full set and
// other types by requested name, holds requests until the role has a snapshot, and pushes changed
// types in make-before-break order: CDS, EDS, LDS, RDS, others. After a CDS push that adds or
// updates clusters it re-sends EDS (Envoy re-subscribes warming clusters) and holds the other types
// until that CDS is ACKed (docs/xds.md). Independent of gRPC: it talks to a StreamTransport.
import * as grpc from '@grpc/grpc-js';
import { TypeUrls } from '../../envoy/protos.js';
import type { Logger } from '../../common/log.js';
import { orderTypeUrls } from './cache.js';
import type { EncodedResource, RoleSnapshot, SnapshotCache, SnapshotChange, TypeSnapshot } from './cache.js';
import type { NackEvent, StreamIdentity, XdsObserver } from './observer.js';
import { nodeRole, selectResources, type DiscoveryRequestMsg, type OutgoingDiscoveryResponse } from './wire.js';

/** Where a stream writes: the gRPC call in the server, a recorder in tests. */
export interface StreamTransport {
  readonly peer: string;
  readonly writable: boolean;
  write(response: OutgoingDiscoveryResponse): void;
  /** Ends the stream with a gRPC error status. */
  fail(code: grpc.status, message: string): void;
}

export interface StreamSettings {
  readonly cache: SnapshotCache;
  readonly log: Logger;
  readonly observer: Required<XdsObserver>;
  /** control_plane.identifier in responses */
  readonly controlPlaneId: string;
  /** types always answered with their full set */
  readonly wildcard: ReadonlySet<string>;
  /** how long pushes wait for the ACK of a CDS push that adds or updates clusters; 0: no wait */
  readonly warmingTimeoutMs: number;
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

function sameNames(a: ReadonlySet<string> | undefined, b: ReadonlySet<string> | undefined): boolean {
  if (a === b) return true;
  if (!a || !b || a.size !== b.size) return false;
  for (const n of a) if (!b.has(n)) return false;
  return true;
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

export class AdsStream {
  readonly connectedAt = new Date();
  /** undefined until the first request names the node */
  role: string | undefined;
  nodeId = '';
  private cluster = '';
  private userAgent = '';
  private nonce = 0;
  private readonly types = new Map<string, StreamTypeState>();
  private unsubscribe: (() => void) | undefined;
  private closed = false;
  /** Set while a CDS push that adds/updates clusters awaits its ACK; gated types wait in `deferred`. */
  private gate: { nonce: string; timer: NodeJS.Timeout } | undefined;
  private readonly deferred = new Set<string>();

  constructor(
    readonly id: number,
    private readonly transport: StreamTransport,
    private readonly settings: StreamSettings,
    private readonly onClosed: (stream: AdsStream) => void,
  ) {}

  get isClosed(): boolean {
    return this.closed;
  }

  private get identity(): StreamIdentity {
    return { streamId: this.id, role: this.role ?? '', nodeId: this.nodeId };
  }

  /** Ends the stream's state (timers, subscription); the caller ends the call itself. */
  close(reason: string): void {
    if (this.closed) return;
    this.closed = true;
    if (this.gate) clearTimeout(this.gate.timer);
    this.gate = undefined;
    this.deferred.clear();
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.onClosed(this);
    if (this.role !== undefined) {
      this.settings.log.info('xDS stream disconnected', {
        streamId: this.id,
        role: this.role,
        nodeId: this.nodeId,
        reason,
        durationMs: Date.now() - this.connectedAt.getTime(),
      });
      this.settings.observer.onStreamClose(this.identity, reason);
    }
  }

  /** The stream as `legatectl proxy served-config` and the controller API show it; undefined before its node is known. */
  status(): ConnectionInfo | undefined {
    if (this.role === undefined) return undefined;
    const types: Record<string, TypeStatus> = {};
    for (const [typeUrl, t] of this.types) {
      const status: TypeStatus = {
        sentVersion: t.sentVersion,
        ackedVersion: t.ackedVersion,
        requestedNames: t.names ? [...t.names].sort() : undefined,
        waiting: t.waiting,
        held: this.deferred.has(typeUrl),
      };
      if (t.lastNack) status.lastNack = { ...t.lastNack };
      types[typeUrl] = status;
    }
    return {
      streamId: this.id,
      role: this.role,
      nodeId: this.nodeId,
      cluster: this.cluster,
      peer: this.transport.peer,
      userAgent: this.userAgent,
      connectedAt: this.connectedAt,
      types,
    };
  }

  handleRequest(req: DiscoveryRequestMsg): void {
    if (this.closed) return;
    const { log } = this.settings;
    if (this.role === undefined && !this.identify(req)) return;

    const typeUrl = req.type_url ?? '';
    if (!typeUrl) {
      log.warn('DiscoveryRequest without type_url ignored', { streamId: this.id, role: this.role });
      return;
    }
    const nonce = req.response_nonce ?? '';
    const ts = this.typeState(typeUrl);

    // A nonce we did not send last: an answer to a superseded response. Envoy will also see the newer one.
    if (nonce !== '' && ts.sentNonce !== undefined && nonce !== ts.sentNonce) {
      this.settings.observer.onStaleRequest(this.identity, typeUrl);
      if (log.enabled('debug'))
        log.debug('stale nonce ignored', { streamId: this.id, role: this.role, typeUrl, nonce, latest: ts.sentNonce });
      return;
    }

    ts.names = this.requestedNames(typeUrl, req.resource_names);
    if (log.enabled('debug')) {
      log.debug('DiscoveryRequest', {
        streamId: this.id,
        role: this.role,
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
        this.recordNack(typeUrl, ts, req, err);
      } else {
        ts.ackedVersion = req.version_info ?? '';
        this.settings.observer.onAck(this.identity, typeUrl, ts.ackedVersion);
        if (log.enabled('debug')) log.debug('ACK', { streamId: this.id, role: this.role, typeUrl, version: ts.ackedVersion });
      }
      // Send only if something changed (names; or a version not yet sent).
      this.maybeSend(typeUrl, ts, false);
      if (this.gate && this.gate.nonce === nonce && typeUrl === TypeUrls.cluster) this.releaseGate(err ? 'CDS NACK' : 'CDS ACK');
    } else if (
      ts.sentVersion === undefined &&
      this.settings.wildcard.has(typeUrl) &&
      req.version_info &&
      this.currentVersion(typeUrl) === req.version_info
    ) {
      // A reconnecting Envoy already holds the full current set of this wildcard type (versions are
      // content hashes, so they survive controller restarts): nothing to send until it changes.
      ts.sentVersion = req.version_info;
      ts.ackedVersion = req.version_info;
      ts.sentNames = undefined;
      ts.sentSnapshot = this.role === undefined ? undefined : this.settings.cache.get(this.role)?.typeSnapshot(typeUrl);
      if (log.enabled('debug')) {
        log.debug('client already has the current version', { streamId: this.id, role: this.role, typeUrl, version: req.version_info });
      }
    } else {
      // Initial request on this stream, or a fresh request without (or with a foreign) nonce.
      this.maybeSend(typeUrl, ts, true);
    }
  }

  /** The first request names the node; without one the stream is refused. */
  private identify(req: DiscoveryRequestMsg): boolean {
    const role = nodeRole(req.node);
    if (!role) {
      this.settings.log.warn('xDS stream without node id or role; rejecting', { peer: this.transport.peer });
      this.close('no node');
      this.transport.fail(grpc.status.INVALID_ARGUMENT, 'the first DiscoveryRequest must carry node.id or node.metadata.role');
      return false;
    }
    this.role = role;
    this.nodeId = req.node?.id ?? '';
    this.cluster = req.node?.cluster ?? '';
    this.userAgent = [req.node?.user_agent_name, req.node?.user_agent_version].filter(Boolean).join('/');
    this.unsubscribe = this.settings.cache.subscribe(role, (change) => this.onSnapshotChange(change));
    this.settings.log.info('xDS stream connected', {
      streamId: this.id,
      role,
      nodeId: this.nodeId,
      cluster: this.cluster,
      peer: this.transport.peer,
      userAgent: this.userAgent || undefined,
    });
    this.settings.observer.onStreamOpen(this.identity);
    return true;
  }

  private typeState(typeUrl: string): StreamTypeState {
    let ts = this.types.get(typeUrl);
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
      this.types.set(typeUrl, ts);
    }
    return ts;
  }

  private currentVersion(typeUrl: string): string | undefined {
    return this.role === undefined ? undefined : this.settings.cache.get(this.role)?.typeSnapshot(typeUrl).version;
  }

  private requestedNames(typeUrl: string, resourceNames: string[] | undefined): ReadonlySet<string> | undefined {
    if (this.settings.wildcard.has(typeUrl)) return undefined;
    if (!resourceNames || resourceNames.length === 0 || resourceNames.includes('*')) return undefined;
    return new Set(resourceNames);
  }

  private recordNack(typeUrl: string, ts: StreamTypeState, req: DiscoveryRequestMsg, err: { code?: number; message?: string }): void {
    const message = err.message ?? '';
    const version = ts.sentVersion ?? '';
    ts.lastNack = { version, message, at: new Date() };
    if (req.version_info) ts.ackedVersion = req.version_info;
    const event: NackEvent = {
      role: this.role ?? '',
      nodeId: this.nodeId,
      typeUrl,
      version,
      previousVersion: req.version_info ?? '',
      message,
      code: err.code ?? 0,
      resourceNames: ts.sentResources.map((r) => r.name),
    };
    this.settings.log.warn('NACK: Envoy rejected xDS config', {
      streamId: this.id,
      role: event.role,
      nodeId: event.nodeId,
      typeUrl,
      version,
      previousVersion: event.previousVersion,
      error: message,
    });
    this.settings.observer.onNack(event);
  }

  private onSnapshotChange(change: SnapshotChange): void {
    if (this.closed || !change.snapshot) return;
    const changed = new Set(change.changedTypes);
    for (const typeUrl of orderTypeUrls(this.types.keys())) {
      const ts = this.types.get(typeUrl);
      if (!ts) continue;
      if (ts.waiting) this.maybeSend(typeUrl, ts, true, change.snapshot);
      else if (changed.has(typeUrl)) this.maybeSend(typeUrl, ts, false, change.snapshot);
    }
  }

  private openGate(nonce: string): void {
    const { warmingTimeoutMs, log } = this.settings;
    if (warmingTimeoutMs <= 0) return;
    if (this.gate) clearTimeout(this.gate.timer);
    const timer = setTimeout(() => {
      log.warn('CDS not acknowledged in time; pushing the held types anyway', {
        streamId: this.id,
        role: this.role,
        nodeId: this.nodeId,
        timeoutMs: warmingTimeoutMs,
      });
      this.releaseGate('timeout');
    }, warmingTimeoutMs);
    timer.unref();
    this.gate = { nonce, timer };
  }

  private releaseGate(reason: string): void {
    if (!this.gate) return;
    clearTimeout(this.gate.timer);
    this.gate = undefined;
    if (this.deferred.size === 0 || this.closed) return;
    const types = orderTypeUrls(this.deferred);
    this.deferred.clear();
    if (this.settings.log.enabled('debug'))
      this.settings.log.debug('releasing held types', { streamId: this.id, role: this.role, reason, types });
    for (const typeUrl of types) {
      const ts = this.types.get(typeUrl);
      if (ts) this.maybeSend(typeUrl, ts, false);
    }
  }

  private maybeSend(typeUrl: string, ts: StreamTypeState, force: boolean, snapshot?: RoleSnapshot): void {
    if (this.closed || this.role === undefined) return;
    const { log, cache, controlPlaneId } = this.settings;
    const snap = snapshot ?? cache.get(this.role);
    if (!snap) {
      if (!ts.waiting && log.enabled('debug')) {
        log.debug('holding request until the role has a snapshot', { streamId: this.id, role: this.role, typeUrl });
      }
      ts.waiting = true;
      return;
    }
    ts.waiting = false;
    const t = snap.typeSnapshot(typeUrl);
    if (!force && ts.sentVersion === t.version && sameNames(ts.names, ts.sentNames)) return;
    if (!force && this.gate && isGated(typeUrl)) {
      // clusters are warming: listeners and routes follow once Envoy ACKs the CDS push
      this.deferred.add(typeUrl);
      return;
    }

    const resources = selectResources(t, ts.names);
    const previous = ts.sentSnapshot;
    const nonce = String(++this.nonce);
    const response: OutgoingDiscoveryResponse = {
      version_info: t.version,
      type_url: typeUrl,
      nonce,
      resources,
      control_plane_id: controlPlaneId,
    };
    ts.sentVersion = t.version;
    ts.sentNonce = nonce;
    ts.sentNames = ts.names;
    ts.sentResources = resources;
    ts.sentSnapshot = t;
    if (!this.transport.writable) return;
    this.transport.write(response);
    this.settings.observer.onResponse(this.identity, typeUrl, t.version, resources.length);
    if (log.enabled('debug')) {
      log.debug('DiscoveryResponse sent', {
        streamId: this.id,
        role: this.role,
        typeUrl,
        version: t.version,
        nonce,
        resources: resources.length,
      });
    }
    if (typeUrl === TypeUrls.cluster && previous && addsOrUpdates(previous, t)) {
      this.resendEndpoints(snap);
      this.openGate(nonce);
    }
  }

  // Envoy warms an added or updated EDS cluster with a new EDS subscription and holds the CDS ACK
  // until it has endpoints. In SotW that re-subscription looks exactly like an ACK of the last EDS
  // response (same nonce, version and names), so the server must re-send EDS after such a CDS push
  // even when the endpoints did not change (go-control-plane#245). Without it the cluster stays
  // warming until initial_fetch_timeout (15 s by default).
  private resendEndpoints(snap: RoleSnapshot): void {
    const eds = this.types.get(TypeUrls.endpoint);
    if (!eds || eds.sentVersion === undefined || eds.waiting) return;
    this.maybeSend(TypeUrls.endpoint, eds, true, snap);
  }
}
