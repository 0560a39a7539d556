// Snapshot cache for the xDS server: per node role, the current resources of every type URL, each
// type with a content version and every resource already encoded as a protobuf Any.
//
// - A type's version is the first 16 hex chars of sha256 over the canonical JSON of its resources
//   sorted by name, so it depends on content only (stable across controller restarts) and only changes
//   when that type's content changes.
// - Encoding happens here, once per set() and only for resources whose JSON changed; the server copies
//   the ready Any bytes into every DiscoveryResponse and never re-encodes per stream. A big resource
//   that changed in one part is not redone whole: the canonical JSON of its large parts is kept by
//   object identity, and a RouteConfiguration's virtual hosts are encoded one by one (encode.ts), so a
//   part that is the same object as last time is neither serialized nor encoded again.
// - Arbitrary type URLs are allowed. Envoy types use encodeAny from envoy/protos.ts; other types (the
//   extension services' own configs) take an encoder given to the constructor or to set().
import { createHash } from 'node:crypto';
import protobuf from 'protobufjs';
import { TypeUrls } from '../../envoy/protos.js';
import { envoyEncoder, type ResourceEncoder } from './encode.js';
import type { XdsResource, XdsSnapshot } from './types.js';

export type { ResourceEncoder } from './encode.js';

/** Encoders per type URL. */
export type ResourceEncoders = Readonly<Record<string, ResourceEncoder>> | ReadonlyMap<string, ResourceEncoder>;

export interface EncodedResource {
  readonly name: string;
  /** The resource as given to set() (Envoy JSON form). Do not mutate. */
  readonly resource: object;
  /** Serialized google.protobuf.Any {type_url, value}, ready to be copied into a DiscoveryResponse. */
  readonly any: Buffer;
  /** The serialized resource message (a view into `any`, not a copy). */
  readonly value: Buffer;
}

export interface TypeSnapshot {
  readonly typeUrl: string;
  /** Content hash of this type's resources; EMPTY_VERSION when there are none. */
  readonly version: string;
  /** Sorted by name. */
  readonly resources: readonly EncodedResource[];
  readonly byName: ReadonlyMap<string, EncodedResource>;
}

export interface RoleSnapshot {
  readonly role: string;
  /** Only the types present in the last set(); use typeSnapshot() to read any type. */
  readonly types: ReadonlyMap<string, TypeSnapshot>;
  /** When set() last changed anything for this role. */
  readonly updatedAt: Date;
  /** The type's snapshot, or an empty one (EMPTY_VERSION, no resources) for a type not present. */
  typeSnapshot(typeUrl: string): TypeSnapshot;
}

export interface SnapshotChange {
  readonly role: string;
  /** Types whose version changed, in push order (see orderTypeUrls). Empty when the role was deleted. */
  readonly changedTypes: readonly string[];
  /** The new snapshot; undefined when the role was deleted. */
  readonly snapshot: RoleSnapshot | undefined;
}

export type SnapshotListener = (change: SnapshotChange) => void;

export interface SnapshotCacheOptions {
  /** Encoders for non-Envoy type URLs, used by every set() unless set() overrides them. */
  encoders?: ResourceEncoders;
  /** Encoder for types without a specific one. Default: encodeAny from envoy/protos.ts (envoyEncoder). */
  defaultEncoder?: ResourceEncoder;
  /** Called when a listener throws (listeners must not break set()). */
  onListenerError?: (error: unknown, role: string) => void;
}

export interface SetOptions {
  /** Per-type encoders for this call; they take precedence over the constructor's. */
  encoders?: ResourceEncoders;
}

/** Thrown by set() when a resource cannot be encoded or names clash; the cache is left unchanged. */
export class XdsSnapshotError extends Error {
  readonly code = 'XDS_SNAPSHOT_INVALID';
  constructor(
    message: string,
    readonly role: string,
    readonly typeUrl: string,
    readonly resourceName: string | undefined,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'XdsSnapshotError';
  }
}

// the runtime first: its limits (RE2 program size) must hold before the routes they judge arrive
const PUSH_ORDER: readonly string[] = [
  TypeUrls.runtime,
  TypeUrls.cluster,
  TypeUrls.endpoint,
  TypeUrls.secret,
  TypeUrls.listener,
  TypeUrls.route,
];

/**
 * Sorts type URLs in make-before-break order: runtime, clusters, endpoints, secrets, listeners, routes, then any
 * other type by name.
 */
export function orderTypeUrls(typeUrls: Iterable<string>): string[] {
  const rank = (t: string): number => {
    const i = PUSH_ORDER.indexOf(t);
    return i === -1 ? PUSH_ORDER.length : i;
  };
  return [...typeUrls].sort((a, b) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0));
}

/** Deterministic JSON: object keys sorted, undefined members dropped, bytes as base64. */
export function canonicalJson(value: unknown): string {
  return canonical(value, undefined);
}

/** Parts whose canonical JSON is at least this long are remembered (by identity) when a memo is given. */
const MEMO_MIN_CHARS = 1024;

function canonical(value: unknown, memo: WeakMap<object, string> | undefined): string {
  if (value === null || value === undefined) return 'null';
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'object':
      break;
    default:
      return 'null';
  }
  const known = memo?.get(value);
  if (known !== undefined) return known;
  const json = canonicalObject(value, memo);
  if (memo && json.length >= MEMO_MIN_CHARS) memo.set(value, json);
  return json;
}

function canonicalObject(value: object, memo: WeakMap<object, string> | undefined): string {
  if (Array.isArray(value)) return '[' + value.map((v) => canonical(v, memo)).join(',') + ']';
  if (value instanceof Uint8Array) return JSON.stringify({ $bytes: Buffer.from(value).toString('base64') });
  if (value instanceof Date) return JSON.stringify(value.toISOString());
  const obj = value as Record<string, unknown>;
  const keys = Object.keys(obj).sort();
  let out = '{';
  let first = true;
  for (const key of keys) {
    const v = obj[key];
    if (v === undefined || typeof v === 'function' || typeof v === 'symbol') continue;
    out += (first ? '' : ',') + JSON.stringify(key) + ':' + canonical(v, memo);
    first = false;
  }
  return out + '}';
}

function hashEntries(entries: readonly { name: string; json: string }[]): string {
  const h = createHash('sha256');
  h.update('[');
  for (const e of entries) {
    h.update(JSON.stringify(e.name));
    h.update(':');
    h.update(e.json);
    h.update(',');
  }
  h.update(']');
  return h.digest('hex').slice(0, 16);
}

/** Version of a type with no resources. */
export const EMPTY_VERSION = hashEntries([]);

/** Serializes google.protobuf.Any {type_url = 1, value = 2}; returns the Any bytes and the value's offset. */
function encodeAnyBytes(typeUrl: string, value: Uint8Array): { any: Buffer; value: Buffer } {
  const w = protobuf.Writer.create();
  w.uint32(10).string(typeUrl);
  w.uint32(18).uint32(value.length);
  const prefix = w.finish();
  const bytes = Buffer.allocUnsafe(prefix.length + value.length);
  bytes.set(prefix, 0);
  bytes.set(value, prefix.length);
  return { any: bytes, value: bytes.subarray(prefix.length) };
}

// Internal per-type state: the public TypeSnapshot plus what is needed to reuse encodings.
interface TypeState extends TypeSnapshot {
  readonly jsonByName: ReadonlyMap<string, string>;
  readonly encoder: ResourceEncoder;
}

class RoleSnapshotImpl implements RoleSnapshot {
  constructor(
    readonly role: string,
    readonly types: ReadonlyMap<string, TypeState>,
    readonly updatedAt: Date,
  ) {}
  typeSnapshot(typeUrl: string): TypeSnapshot {
    return this.types.get(typeUrl) ?? emptyTypeSnapshot(typeUrl);
  }
}

const emptyByName: ReadonlyMap<string, EncodedResource> = new Map();
const emptyCache = new Map<string, TypeSnapshot>();

export function emptyTypeSnapshot(typeUrl: string): TypeSnapshot {
  let t = emptyCache.get(typeUrl);
  if (!t) {
    t = Object.freeze({ typeUrl, version: EMPTY_VERSION, resources: Object.freeze([]) as readonly EncodedResource[], byName: emptyByName });
    emptyCache.set(typeUrl, t);
  }
  return t;
}

function lookupEncoder(encoders: ResourceEncoders | undefined, typeUrl: string): ResourceEncoder | undefined {
  if (!encoders) return undefined;
  if (encoders instanceof Map) return (encoders as ReadonlyMap<string, ResourceEncoder>).get(typeUrl);
  const rec = encoders as Readonly<Record<string, ResourceEncoder>>;
  return Object.prototype.hasOwnProperty.call(rec, typeUrl) ? rec[typeUrl] : undefined;
}

export class SnapshotCache {
  private readonly snapshots = new Map<string, RoleSnapshotImpl>();
  private readonly listeners = new Map<string, Set<SnapshotListener>>();
  private readonly encoders: ResourceEncoders | undefined;
  private readonly fallbackEncoder: ResourceEncoder;
  private readonly onListenerError: (error: unknown, role: string) => void;
  /**
   * Canonical JSON of large parts of the resources given to set(), by identity: resources are never
   * mutated once given (EncodedResource.resource), so a part that is the same object has the same JSON.
   */
  private readonly json = new WeakMap<object, string>();

  constructor(options: SnapshotCacheOptions = {}) {
    this.encoders = options.encoders;
    this.fallbackEncoder = options.defaultEncoder ?? envoyEncoder();
    this.onListenerError = options.onListenerError ?? (() => undefined);
  }

  /**
   * Replaces the snapshot of a role. Types whose content is unchanged keep their version and their
   * encoded resources; changed resources are encoded once here. Returns the changed types in push
   * order and notifies the role's subscribers when there are any. Throws XdsSnapshotError (leaving
   * the cache untouched) when a resource cannot be encoded or a name repeats within a type.
   */
  set(role: string, snapshot: XdsSnapshot, options: SetOptions = {}): readonly string[] {
    const previous = this.snapshots.get(role);
    const next = new Map<string, TypeState>();
    const changed: string[] = [];

    for (const [typeUrl, resources] of snapshot) {
      const encoder = lookupEncoder(options.encoders, typeUrl) ?? lookupEncoder(this.encoders, typeUrl) ?? this.fallbackEncoder;
      const old = previous?.types.get(typeUrl);
      const state = buildTypeState(role, typeUrl, resources, encoder, old, this.json);
      if (state.resources.length === 0) {
        // An empty type is the same as a missing one.
        if (old) changed.push(typeUrl);
        continue;
      }
      next.set(typeUrl, state);
      if (!old || old.version !== state.version) changed.push(typeUrl);
    }
    if (previous) {
      for (const typeUrl of previous.types.keys()) {
        if (!snapshot.has(typeUrl)) changed.push(typeUrl);
      }
    }
    if (previous && changed.length === 0) return [];

    const ordered = orderTypeUrls(changed);
    const roleSnapshot = new RoleSnapshotImpl(role, next, new Date());
    this.snapshots.set(role, roleSnapshot);
    this.notify({ role, changedTypes: ordered, snapshot: roleSnapshot });
    return ordered;
  }

  get(role: string): RoleSnapshot | undefined {
    return this.snapshots.get(role);
  }

  roles(): string[] {
    return [...this.snapshots.keys()].sort();
  }

  /** Forgets a role. Subscribers are told (snapshot undefined); connected clients keep their last config. */
  delete(role: string): boolean {
    const existed = this.snapshots.delete(role);
    if (existed) this.notify({ role, changedTypes: [], snapshot: undefined });
    return existed;
  }

  /** Calls listener after every change of the role's snapshot. Returns the unsubscribe function. */
  subscribe(role: string, listener: SnapshotListener): () => void {
    let set = this.listeners.get(role);
    if (!set) {
      set = new Set();
      this.listeners.set(role, set);
    }
    set.add(listener);
    return () => {
      const current = this.listeners.get(role);
      if (!current) return;
      current.delete(listener);
      if (current.size === 0) this.listeners.delete(role);
    };
  }

  /** Number of subscriptions for a role (all roles when omitted); for leak checks and diagnostics. */
  subscriberCount(role?: string): number {
    if (role !== undefined) return this.listeners.get(role)?.size ?? 0;
    let n = 0;
    for (const s of this.listeners.values()) n += s.size;
    return n;
  }

  private notify(change: SnapshotChange): void {
    const set = this.listeners.get(change.role);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        listener(change);
      } catch (error) {
        this.onListenerError(error, change.role);
      }
    }
  }
}

function buildTypeState(
  role: string,
  typeUrl: string,
  resources: readonly XdsResource[],
  encoder: ResourceEncoder,
  old: TypeState | undefined,
  json: WeakMap<object, string>,
): TypeState {
  const entries = resources.map((r) => ({ name: r.name, resource: r.resource, json: canonical(r.resource, json) }));
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (let i = 1; i < entries.length; i++) {
    if (entries[i]!.name === entries[i - 1]!.name) {
      throw new XdsSnapshotError(
        `duplicate resource name "${entries[i]!.name}" for ${typeUrl} (role ${role})`,
        role,
        typeUrl,
        entries[i]!.name,
      );
    }
  }
  const version = hashEntries(entries);
  if (old && old.version === version && old.encoder === encoder) return old;

  const reuse = old && old.encoder === encoder ? old : undefined;
  const encoded: EncodedResource[] = [];
  const byName = new Map<string, EncodedResource>();
  const jsonByName = new Map<string, string>();
  for (const e of entries) {
    let enc: EncodedResource | undefined;
    if (reuse && reuse.jsonByName.get(e.name) === e.json) enc = reuse.byName.get(e.name);
    if (!enc) {
      let bytes: Uint8Array;
      try {
        bytes = encoder(typeUrl, e.resource);
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause);
        throw new XdsSnapshotError(`cannot encode ${typeUrl} "${e.name}" (role ${role}): ${reason}`, role, typeUrl, e.name, { cause });
      }
      const { any, value } = encodeAnyBytes(typeUrl, bytes);
      enc = Object.freeze({ name: e.name, resource: e.resource, any, value });
    }
    encoded.push(enc);
    byName.set(e.name, enc);
    jsonByName.set(e.name, e.json);
  }
  return { typeUrl, version, resources: Object.freeze(encoded), byName, jsonByName, encoder };
}
