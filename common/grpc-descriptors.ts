// gRPC descriptors for GraphQL gRPC resolvers: a base64 FileDescriptorSet (Gloo's
// `grpcDescriptorRegistry.protoDescriptorBin`) -> protobufjs types, the lookups a resolver needs, and the
// message <-> JSON conversions. Shared so the controller reports an unknown service, method or field as a
// status reason and the graphql service runs with exactly the same reading of the descriptors.
import protobuf from 'protobufjs';
import descriptor from 'protobufjs/ext/descriptor/index.js';

export interface GrpcMethodTypes {
  /** fully qualified, without the leading dot: `shop.Books` */
  service: string;
  method: string;
  /** the HTTP/2 path of the call: `/shop.Books/Get` */
  path: string;
  requestType: protobuf.Type;
  responseType: protobuf.Type;
}

// protobufjs/ext/descriptor adds Root.fromDescriptor at runtime; its typings do not declare it on Root
const RootWithDescriptors = protobuf.Root as unknown as { fromDescriptor(set: protobuf.Message): protobuf.Root };

/** Decodes and links a base64 FileDescriptorSet; throws an Error saying what is wrong. */
export function loadDescriptorSet(base64: string): protobuf.Root {
  const bytes = Buffer.from(base64, 'base64');
  if (bytes.length === 0) throw new Error('protoDescriptorBin is empty (or not base64)');
  let root: protobuf.Root;
  try {
    root = RootWithDescriptors.fromDescriptor(descriptor.FileDescriptorSet.decode(bytes));
    root.resolveAll();
  } catch (err) {
    throw new Error(`protoDescriptorBin is not a usable FileDescriptorSet (${err instanceof Error ? err.message : String(err)})`, {
      cause: err,
    });
  }
  return root;
}

/** Finds a unary method; throws an Error naming what is missing (and what exists, to help). */
export function findGrpcMethod(root: protobuf.Root, serviceName: string, methodName: string): GrpcMethodTypes {
  const wanted = serviceName.replace(/^\./, '');
  let service: protobuf.Service | null;
  try {
    service = root.lookupService(wanted);
  } catch {
    service = null;
  }
  if (service === null) {
    const known = allServices(root).join(', ') || 'none';
    throw new Error(`service "${serviceName}" is not in the descriptors (services: ${known})`);
  }
  const method = service.methods[methodName];
  if (method === undefined) {
    throw new Error(
      `service "${serviceName}" has no method "${methodName}" (methods: ${Object.keys(service.methods).join(', ') || 'none'})`,
    );
  }
  if (method.requestStream === true || method.responseStream === true) {
    throw new Error(`${wanted}/${methodName} is a streaming method; only unary methods can resolve a field`);
  }
  method.resolve();
  const requestType = method.resolvedRequestType;
  const responseType = method.resolvedResponseType;
  if (requestType === null || responseType === null)
    throw new Error(`${wanted}/${methodName}: its message types are not in the descriptors`);
  const full = service.fullName.replace(/^\./, '');
  return { service: full, method: method.name, path: `/${full}/${method.name}`, requestType, responseType };
}

function allServices(ns: protobuf.NamespaceBase, out: string[] = []): string[] {
  for (const n of ns.nestedArray) {
    if (n instanceof protobuf.Service) out.push(n.fullName.replace(/^\./, ''));
    else if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) allServices(n, out);
  }
  return out;
}

/** protobuf's JSON name of a field: lowerCamelCase (`first_name` -> `firstName`), as protojson and Gloo use. */
export function jsonName(field: protobuf.Field): string {
  return field.name.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

/** The field a JSON key names: by its proto name or its JSON name. */
function fieldFor(type: protobuf.Type, key: string): protobuf.Field | undefined {
  const direct = type.fields[key];
  if (direct !== undefined) return direct;
  for (const f of type.fieldsArray) if (jsonName(f) === key) return f;
  return undefined;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Keys of a JSON value (`outgoingMessageJson`, possibly holding templates) that the message type has no
 * field for, as `path: reason` lines; template strings are not checked (their value is known per request). */
export function checkMessageJson(type: protobuf.Type, value: unknown, path = ''): string[] {
  if (value === undefined || value === null || typeof value === 'string') return [];
  if (!isRecord(value)) return [`${path || 'the message'}: must be an object for message ${type.fullName.replace(/^\./, '')}`];
  const problems: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    const field = fieldFor(type, key);
    if (field === undefined) {
      const known = type.fieldsArray.map(jsonName).join(', ') || 'none';
      problems.push(`${at}: message ${type.fullName.replace(/^\./, '')} has no field "${key}" (fields: ${known})`);
      continue;
    }
    field.resolve();
    const sub = field.resolvedType;
    if (!(sub instanceof protobuf.Type) || field.map) continue;
    if (field.repeated && Array.isArray(v)) v.forEach((el, i) => problems.push(...checkMessageJson(sub, el, `${at}[${i}]`)));
    else if (!field.repeated) problems.push(...checkMessageJson(sub, v, at));
  }
  return problems;
}

/** JSON (JSON or proto field names) -> the object protobufjs' fromObject reads (proto field names). */
function toProtoNames(type: protobuf.Type, value: unknown): unknown {
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const field = fieldFor(type, key);
    if (field === undefined) continue; // checked at config time; a template cannot add keys
    const sub = field.resolvedType;
    if (sub instanceof protobuf.Type && !field.map) {
      out[field.name] = Array.isArray(v) ? v.map((el) => toProtoNames(sub, el)) : toProtoNames(sub, v);
    } else if (sub instanceof protobuf.Type && isRecord(v)) {
      const m: Record<string, unknown> = {};
      for (const [k, el] of Object.entries(v)) m[k] = toProtoNames(sub, el);
      out[field.name] = m;
    } else {
      out[field.name] = v;
    }
  }
  return out;
}

/** Encodes a JSON value as a message of this type (strings for 64-bit integers and enum names accepted). */
export function encodeMessage(type: protobuf.Type, value: unknown): Uint8Array {
  return type.encode(type.fromObject(isRecord(value) ? (toProtoNames(type, value) as Record<string, unknown>) : {})).finish();
}

const TO_OBJECT: protobuf.IConversionOptions = { longs: String, enums: String, bytes: String, defaults: true, arrays: true, objects: true };

/** Decodes a message to JSON with protojson's field names (lowerCamelCase), 64-bit integers as strings
 * (graphql-js reads numeric strings for Int and Float), enums by name, unset scalars at their defaults. */
export function decodeMessage(type: protobuf.Type, bytes: Uint8Array): Record<string, unknown> {
  return withJsonNames(type, type.toObject(type.decode(bytes), TO_OBJECT)) as Record<string, unknown>;
}

function withJsonNames(type: protobuf.Type, value: unknown): unknown {
  if (!isRecord(value)) return value;
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    if (!Object.hasOwn(value, field.name)) continue;
    const v = value[field.name];
    const sub = field.resolvedType;
    let converted: unknown = v;
    if (sub instanceof protobuf.Type) {
      if (field.map && isRecord(v)) {
        const m: Record<string, unknown> = {};
        for (const [k, el] of Object.entries(v)) m[k] = withJsonNames(sub, el);
        converted = m;
      } else if (Array.isArray(v)) converted = v.map((el) => withJsonNames(sub, el));
      else converted = withJsonNames(sub, v);
    }
    out[jsonName(field)] = converted;
  }
  return out;
}
