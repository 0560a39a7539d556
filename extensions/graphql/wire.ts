// The wire side of envoy.service.ext_proc.v3.ExternalProcessor/Process for the graphql service, kept off
// the hot path's allocations (the same approach as ../extauth/wire.ts):
//
// - Requests: a ProcessingRequest is decoded by walking the protobuf wire format once and copying out
//   only what the service uses: which phase it is (the `request` oneof), the request headers' names and
//   values, the body bytes, end_of_stream, and the string-valued request attributes Envoy evaluated for
//   this filter (the single-message mode sends them with the body instead of a headers message).
//   Everything else (metadata_context, observability_mode, unknown fields) is skipped by wire type.
//   It never throws: a malformed message comes back with `malformed: true`.
// - Responses: the CONTINUE answers of the phases are constant bytes; the immediate response is encoded
//   straight into one Buffer, in field-number order (the bytes protobufjs produces for the same message).
//
// Field numbers (envoy/service/ext_proc/v3/external_processor.proto, config/core/v3/base.proto,
// type/v3/http_status.proto):
//   ProcessingRequest.request_headers = 2, .response_headers = 3 (HttpHeaders),
//                    .request_body = 4, .response_body = 5 (HttpBody),
//                    .request_trailers = 6, .response_trailers = 7 (HttpTrailers)
//   HttpHeaders.headers = 1 (HeaderMap), .end_of_stream = 3;   HttpBody.body = 1, .end_of_stream = 2
//   HeaderMap.headers = 1 (HeaderValue{key = 1, value = 2, raw_value = 3})
//   ProcessingResponse.request_headers = 1, .response_headers = 2 (HeadersResponse{response = 1}),
//                     .request_body = 3, .response_body = 4 (BodyResponse{response = 1}),
//                     .request_trailers = 5, .response_trailers = 6 (TrailersResponse),
//                     .immediate_response = 7
//   ImmediateResponse.status = 1 (HttpStatus{code = 1}), .headers = 2 (HeaderMutation{set_headers = 1}),
//                    .body = 3, .details = 5
//   HeaderValueOption.header = 1 (HeaderValue)
//   ProcessingRequest.attributes = 9 (map<string, google.protobuf.Struct>: entry key = 1, value = 2)
//   Struct.fields = 1 (map<string, Value>: entry key = 1, value = 2);  Value.string_value = 3
import { MalformedProtobuf, ProtoReader } from '../common/protowire.js';

/** The `request` oneof member of a ProcessingRequest (its field number). */
export const Phase = {
  none: 0,
  requestHeaders: 2,
  responseHeaders: 3,
  requestBody: 4,
  responseBody: 5,
  requestTrailers: 6,
  responseTrailers: 7,
} as const;

export interface ProcessingRequestIn {
  /** field number of the `request` oneof member present, 0 when none (a Phase value) */
  phase: number;
  /** request_headers only: names and values alternating, [name0, value0, name1, value1, ...]; a value is
   * raw_value (UTF-8) when non-empty, else value */
  headers: string[];
  /** request_body/response_body: the bytes (a view into the received message); undefined when empty */
  body: Buffer | undefined;
  /** end_of_stream of the headers or body */
  endOfStream: boolean;
  /** request attributes with string values, [expression0, value0, ...] (e.g. `request.method`, `POST`), from
   * every attributes entry (Envoy keys them by filter name; one ext_proc filter sends one entry) */
  attributes: string[];
  /** unparsable bytes (truncated, bad wire type); the other fields are then meaningless */
  malformed: boolean;
}

// One reader for every parse: module-level so a walk allocates nothing but what it returns.
const r = new ProtoReader();

/** HeaderValue -> pushes key and value onto out.headers. */
function headerValue(end: number, out: ProcessingRequestIn): void {
  let key = '';
  let value = '';
  let raw = '';
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x0a || tag === 0x12 || tag === 0x1a) {
      const e = r.delimited(end);
      // last one wins, as protobuf decoders do for a repeated scalar field
      if (tag === 0x0a) key = r.buf.toString('utf8', r.pos, e);
      else if (tag === 0x12) value = r.buf.toString('utf8', r.pos, e);
      else raw = r.buf.toString('utf8', r.pos, e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
  out.headers.push(key, raw.length > 0 ? raw : value);
}

function headerMap(end: number, out: ProcessingRequestIn): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x0a) {
      const e = r.delimited(end);
      headerValue(e, out);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
}

/** HttpHeaders (request_headers): headers = 1, end_of_stream = 3. */
function httpHeaders(end: number, out: ProcessingRequestIn): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x0a) {
      const e = r.delimited(end);
      headerMap(e, out);
      r.pos = e;
    } else if (tag === 0x18) out.endOfStream = r.varint(end) !== 0;
    else r.skip(tag & 7, end);
  }
}

/** HttpHeaders of the response phase: only end_of_stream matters. */
function endOfStreamOnly(end: number, out: ProcessingRequestIn, eosTag: number): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === eosTag) out.endOfStream = r.varint(end) !== 0;
    else r.skip(tag & 7, end);
  }
}

/** HttpBody: body = 1, end_of_stream = 2. */
function httpBody(end: number, out: ProcessingRequestIn): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x0a) {
      const e = r.delimited(end);
      out.body = e > r.pos ? r.buf.subarray(r.pos, e) : undefined;
      r.pos = e;
    } else if (tag === 0x10) out.endOfStream = r.varint(end) !== 0;
    else r.skip(tag & 7, end);
  }
}

/** google.protobuf.Value: string_value = 3; other kinds are not attributes the service asks for. */
function stringValue(end: number): string | undefined {
  let value: string | undefined;
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x1a) {
      const e = r.delimited(end);
      value = r.buf.toString('utf8', r.pos, e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
  return value;
}

/** Struct.fields entry {key = 1, value = 2 (Value)} -> pushes expression and value when it is a string. */
function structField(end: number, out: ProcessingRequestIn): void {
  let key = '';
  let value: string | undefined;
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x0a) {
      const e = r.delimited(end);
      key = r.buf.toString('utf8', r.pos, e);
      r.pos = e;
    } else if (tag === 0x12) {
      const e = r.delimited(end);
      value = stringValue(e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
  if (value !== undefined) out.attributes.push(key, value);
}

/** ProcessingRequest.attributes entry {key = 1 (filter name), value = 2 (Struct{fields = 1})}. */
function attributesEntry(end: number, out: ProcessingRequestIn): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === 0x12) {
      const structEnd = r.delimited(end);
      while (r.pos < structEnd) {
        const t = r.varint(structEnd);
        if (t === 0x0a) {
          const e = r.delimited(structEnd);
          structField(e, out);
          r.pos = e;
        } else r.skip(t & 7, structEnd);
      }
    } else r.skip(tag & 7, end);
  }
}

/** Decodes what the graphql service reads of a serialized ProcessingRequest. Never throws. */
export function decodeProcessingRequest(bytes: Buffer): ProcessingRequestIn {
  const out: ProcessingRequestIn = {
    phase: Phase.none,
    headers: [],
    body: undefined,
    endOfStream: false,
    attributes: [],
    malformed: false,
  };
  r.reset(bytes);
  try {
    const end = bytes.length;
    while (r.pos < end) {
      const tag = r.varint(end);
      const field = Math.floor(tag / 8);
      if ((tag & 7) === 2 && field >= Phase.requestHeaders && field <= Phase.responseTrailers) {
        const e = r.delimited(end);
        // a member of the oneof replaces whatever came before it (as protobufjs decodes a repeated one)
        out.phase = field;
        if (out.headers.length > 0) out.headers = [];
        out.body = undefined;
        out.endOfStream = false;
        if (field === Phase.requestHeaders) httpHeaders(e, out);
        else if (field === Phase.responseHeaders) endOfStreamOnly(e, out, 0x18);
        else if (field === Phase.requestBody || field === Phase.responseBody) httpBody(e, out);
        else r.pos = e; // trailers: nothing read
        r.pos = e;
      } else if (tag === 0x4a) {
        const e = r.delimited(end);
        attributesEntry(e, out);
        r.pos = e;
      } else r.skip(tag & 7, end);
    }
  } catch (err) {
    if (!(err instanceof MalformedProtobuf)) throw err;
    out.malformed = true;
  } finally {
    r.reset();
  }
  return out;
}

// ---- responses ----

/** ProcessingResponse{request_headers: {response: {}}}: CONTINUE. */
export const CONTINUE_REQUEST_HEADERS: Buffer = Buffer.from([0x0a, 0x02, 0x0a, 0x00]);
/** ProcessingResponse{response_headers: {response: {}}} */
export const CONTINUE_RESPONSE_HEADERS: Buffer = Buffer.from([0x12, 0x02, 0x0a, 0x00]);
/** ProcessingResponse{request_body: {response: {}}} */
export const CONTINUE_REQUEST_BODY: Buffer = Buffer.from([0x1a, 0x02, 0x0a, 0x00]);
/** ProcessingResponse{response_body: {response: {}}} */
export const CONTINUE_RESPONSE_BODY: Buffer = Buffer.from([0x22, 0x02, 0x0a, 0x00]);
/** ProcessingResponse{response_trailers: {}} */
export const CONTINUE_RESPONSE_TRAILERS: Buffer = Buffer.from([0x32, 0x00]);

function varintSize(n: number): number {
  let size = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    size++;
  }
  return size;
}

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 128) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/** Size of a length-delimited field (tag of one byte) holding `len` bytes. */
const field = (len: number): number => 1 + varintSize(len) + len;

/**
 * ProcessingResponse{immediate_response: {status: {code}, headers: {set_headers: [{header: {key,
 * raw_value}}]}, body, details}}, encoded into one Buffer. `reserve` bytes are left free at the start
 * (for a frame header) and are not counted in the message.
 */
export function encodeImmediateResponse(
  status: number,
  headers: Record<string, string>,
  body: string,
  details: string,
  reserve = 0,
): Buffer {
  const keys = Object.keys(headers);
  // sizes, innermost first
  const statusMsg = status === 0 ? 0 : 1 + varintSize(status);
  let mutation = 0;
  const sizes: number[] = []; // per header: key, value, HeaderValue and HeaderValueOption lengths
  for (const key of keys) {
    const kLen = Buffer.byteLength(key);
    const vLen = Buffer.byteLength(headers[key]!);
    const hv = field(kLen) + field(vLen); // both written even when empty, as protobufjs does
    const option = field(hv); // HeaderValueOption.header
    sizes.push(kLen, vLen, hv, option);
    mutation += field(option);
  }
  const bodyLen = Buffer.byteLength(body);
  const detailsLen = Buffer.byteLength(details);
  // headers and body are written even when empty, as protobufjs does for a set field
  const immediate = field(statusMsg) + field(mutation) + field(bodyLen) + (detailsLen > 0 ? field(detailsLen) : 0);
  const total = field(immediate);

  const out = Buffer.allocUnsafe(reserve + total);
  let at = reserve;
  out[at++] = 0x3a; // immediate_response = 7
  at = writeVarint(out, at, immediate);
  out[at++] = 0x0a; // status = 1
  at = writeVarint(out, at, statusMsg);
  if (statusMsg > 0) {
    out[at++] = 0x08; // code = 1
    at = writeVarint(out, at, status);
  }
  out[at++] = 0x12; // headers = 2
  at = writeVarint(out, at, mutation);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i]!;
    const value = headers[key]!;
    out[at++] = 0x0a; // set_headers = 1
    at = writeVarint(out, at, sizes[4 * i + 3]!);
    out[at++] = 0x0a; // header = 1
    at = writeVarint(out, at, sizes[4 * i + 2]!);
    out[at++] = 0x0a; // key = 1
    at = writeVarint(out, at, sizes[4 * i]!);
    at += out.write(key, at, 'utf8');
    out[at++] = 0x1a; // raw_value = 3
    at = writeVarint(out, at, sizes[4 * i + 1]!);
    at += out.write(value, at, 'utf8');
  }
  out[at++] = 0x1a; // body = 3
  at = writeVarint(out, at, bodyLen);
  if (bodyLen > 0) at += out.write(body, at, 'utf8');
  if (detailsLen > 0) {
    out[at++] = 0x2a; // details = 5
    at = writeVarint(out, at, detailsLen);
    at += out.write(details, at, 'utf8');
  }
  if (at !== out.length) throw new Error(`immediate response encoding: wrote ${at - reserve} of ${total} bytes`);
  return out;
}
