// The xDS wire: DiscoveryRequest/DiscoveryResponse shapes, the hand-written DiscoveryResponse encoder
// (resources are the cache's pre-encoded Any bytes, so nothing is re-encoded per stream), and the
// gRPC service definitions of ADS and the unary Fetch* services from the pinned protos.
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { TypeUrls, protoLoaderOptions } from '../../envoy/protos.js';
import type { EncodedResource, TypeSnapshot } from './cache.js';

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

export const ADS_SERVICE = 'envoy.service.discovery.v3.AggregatedDiscoveryService';
export const FETCH_SERVICES: readonly { service: string; method: string; typeUrl: string }[] = [
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

/** A service of the pinned protos, with DiscoveryResponses serialized by serializeDiscoveryResponse. */
export function serviceDefinition(name: string): grpc.ServiceDefinition {
  let obj: unknown = loadPackage();
  for (const part of name.split('.')) obj = (obj as Record<string, unknown> | undefined)?.[part];
  const ctor = obj as { service?: grpc.ServiceDefinition } | undefined;
  if (!ctor?.service) throw new Error(`gRPC service ${name} not found in the pinned protos`);
  // Replace the response serializer: responses are assembled from pre-encoded Any bytes.
  const out: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
  for (const [method, def] of Object.entries(ctor.service)) {
    const d = def as grpc.MethodDefinition<unknown, unknown>;
    const isDiscovery = d.path.endsWith('/StreamAggregatedResources') || d.path.includes('/Fetch');
    out[method] = isDiscovery ? { ...d, responseSerialize: serializeDiscoveryResponse as (value: unknown) => Buffer } : d;
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

/** The resources of a type snapshot a request names (all when `names` is undefined), in name order. */
export function selectResources(t: TypeSnapshot, names: ReadonlySet<string> | undefined): readonly EncodedResource[] {
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

export function grpcError(code: grpc.status, details: string): grpc.ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new grpc.Metadata() });
}
