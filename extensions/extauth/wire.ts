// The wire side of envoy.service.auth.v3.Authorization/Check, kept off the hot path's allocations:
//
// - Requests: a CheckRequest carries the whole request (peers, every header, metadata, TLS info), but the
//   hot path needs a few strings: the `authorization` header, the `config_id` context extension and the
//   other headers sent (the filter's allowed_headers limits them to what the bound configs read, e.g. API
//   key headers). Rather than materialising the message with protobufjs (tens of objects per call),
//   parseCheckRequest walks the protobuf wire format once and copies out only those values, noting where
//   the HttpRequest and the source peer are: method, path, host, scheme, body and peer address are decoded
//   from the bytes only when a step asks (CheckInput). It never throws: a malformed message comes back
//   with `malformed: true` (and is denied).
// - Responses: there are only a handful of distinct CheckResponses (allow, and one per denial reason),
//   so they are encoded once at startup with the regular (proto-loader) serializer and the handler
//   hands the unary server (../common/unary-server.ts) the ready bytes.
//
// Field numbers (envoy/service/auth/v3/{external_auth,attribute_context}.proto, config/core/v3/base.proto):
//   CheckRequest.attributes = 1
//   AttributeContext.request = 4, .context_extensions = 10 (map<string,string>)
//   AttributeContext.Request.http = 2
//   AttributeContext.HttpRequest.headers = 3 (map<string,string>, lower-case keys),
//                                .header_map = 13 (HeaderMap; used with the filter's encode_raw_headers)
//   HeaderMap.headers = 1 (HeaderValue{key = 1, value = 2, raw_value = 3})
//   map entries: key = 1, value = 2
import { MalformedProtobuf, ProtoReader } from '../common/protowire.js';
import { withAuthorization, type AuthRequest } from './request.js';

/** Dynamic metadata keys of an allow (namespace `envoy.filters.http.ext_authz`), read by bearer-check. */
export const EDGE_METADATA = {
  key: 'legate_auth_key',
  cacheMs: 'legate_cache_ms',
  credential: 'legate_credential',
  headers: 'legate_headers',
} as const;

/**
 * One Check's request. The fast path's fields are copied out by parseCheckRequest; the rest (method, path,
 * host, scheme, body, peer) is decoded from the message bytes only when a step asks (AuthRequest), and is
 * kept in private fields, so tests comparing the parsed fields see only these.
 */
export class CheckInput implements AuthRequest {
  /** `config_id` context extension; '' when absent */
  configId = '';
  /** the `authorization` request header; undefined when absent */
  authorization: string | undefined = undefined;
  /** more than one `authorization` header (header_map form), or an unparsable message */
  ambiguous = false;
  malformed = false;
  /** other headers sent (not `authorization`, not pseudo-headers), lower-case names; a repeated one is
   * joined with ',' (so it matches no key); undefined when there are none */
  declare headers?: Record<string, string>;
  /** Settings userIdHeader, from the call's gRPC metadata (declared: the hot path's object stays small) */
  declare userIdHeader?: string;
  /** the message bytes until a step asks for more than the fast path's fields, then what was decoded */
  #lazy: Buffer | Decoded | undefined;

  /** Keeps the message for lazy decoding (set once by the parser; one field, so the hot path's object stays small). */
  keep(message: Buffer): void {
    this.#lazy = message;
  }

  header(name: string): string | undefined {
    if (name === 'authorization') return this.authorization;
    const h = this.headers;
    return h !== undefined && Object.hasOwn(h, name) ? h[name] : undefined;
  }

  get allHeaders(): Readonly<Record<string, string>> {
    return withAuthorization(this.headers ?? {}, this.authorization);
  }

  get method(): string {
    return this.decoded().method;
  }

  get scheme(): string {
    return this.decoded().scheme;
  }

  get host(): string {
    return this.decoded().host;
  }

  get path(): string {
    return this.decoded().path;
  }

  get body(): string | undefined {
    return this.decoded().body;
  }

  get rawBody(): Buffer | undefined {
    return this.decoded().rawBody;
  }

  get sourceAddress(): string {
    return this.decoded().sourceAddress;
  }

  get filterMetadata(): Readonly<Record<string, Readonly<Record<string, unknown>>>> {
    return this.decoded().filterMetadata;
  }

  stable(): AuthRequest {
    return this;
  }

  private decoded(): Decoded {
    const lazy = this.#lazy;
    if (lazy === undefined) return NOTHING;
    if (!Buffer.isBuffer(lazy)) return lazy;
    const d = decode(lazy);
    this.#lazy = d;
    return d;
  }
}

/** What the slow path decodes of a CheckRequest. */
interface Decoded {
  method: string;
  scheme: string;
  host: string;
  path: string;
  body: string | undefined;
  rawBody: Buffer | undefined;
  sourceAddress: string;
  filterMetadata: Record<string, Record<string, unknown>>;
}
const NOTHING: Decoded = Object.freeze({
  filterMetadata: Object.freeze({}) as Record<string, Record<string, unknown>>,
  method: '',
  scheme: '',
  host: '',
  path: '',
  body: undefined,
  rawBody: undefined,
  sourceAddress: '',
});

/**
 * The slow path: CheckRequest.attributes = 1 -> AttributeContext.source = 1 (Peer.address = 1 ->
 * Address.socket_address = 1 -> SocketAddress.address = 2) and .request = 4 -> Request.http = 2 ->
 * HttpRequest.method = 2, path = 4, host = 5, scheme = 6, body = 11, raw_body = 12; and
 * AttributeContext.metadata_context = 11 -> Metadata.filter_metadata = 1 (map<string, Struct>).
 */
function decode(message: Buffer): Decoded {
  const out: Decoded = {
    method: '',
    scheme: '',
    host: '',
    path: '',
    body: undefined,
    rawBody: undefined,
    sourceAddress: '',
    filterMetadata: {},
  };
  const rd = new ProtoReader();
  rd.reset(message);
  /** the [start, end) of the first length-delimited field `wanted` within [from, to) */
  const field = (from: number, to: number, wanted: number): [number, number] | undefined => {
    rd.pos = from;
    while (rd.pos < to) {
      const tag = rd.varint(to);
      if (tag === ((wanted << 3) | 2)) {
        const e = rd.delimited(to);
        return [rd.pos, e];
      }
      rd.skip(tag & 7, to);
    }
    return undefined;
  };
  try {
    const attributes = field(0, message.length, 1);
    if (attributes === undefined) return out;
    const source = field(attributes[0], attributes[1], 1);
    const address = source && field(source[0], source[1], 1);
    const socket = address && field(address[0], address[1], 1);
    const ip = socket && field(socket[0], socket[1], 2);
    if (ip) out.sourceAddress = message.toString('latin1', ip[0], ip[1]);
    const meta = field(attributes[0], attributes[1], 11);
    if (meta) out.filterMetadata = filterMetadata(rd, meta[0], meta[1]);
    const request = field(attributes[0], attributes[1], 4);
    const http = request && field(request[0], request[1], 2);
    if (!http) return out;
    const end = http[1];
    rd.pos = http[0];
    while (rd.pos < end) {
      const tag = rd.varint(end);
      const n = Math.floor(tag / 8);
      if ((tag & 7) !== 2) {
        rd.skip(tag & 7, end);
        continue;
      }
      const e = rd.delimited(end);
      const text = (): string => message.toString('utf8', rd.pos, e);
      if (n === 2) out.method = text();
      else if (n === 4) out.path = text();
      else if (n === 5) out.host = text();
      else if (n === 6) out.scheme = text();
      else if (n === 11) out.body = text();
      else if (n === 12) out.rawBody = Buffer.from(message.subarray(rd.pos, e)); // a copy: the message is not ours to keep
      rd.pos = e;
    }
  } catch (err) {
    if (!(err instanceof MalformedProtobuf)) throw err;
  }
  return out;
}

/** Metadata.filter_metadata (map<string, Struct>, field 1) within [from, to). */
function filterMetadata(rd: ProtoReader, from: number, to: number): Record<string, Record<string, unknown>> {
  const out: Record<string, Record<string, unknown>> = {};
  rd.pos = from;
  while (rd.pos < to) {
    const tag = rd.varint(to);
    if (tag !== ((1 << 3) | 2)) {
      rd.skip(tag & 7, to);
      continue;
    }
    const e = rd.delimited(to);
    let key = '';
    let value: Record<string, unknown> = {};
    while (rd.pos < e) {
      const t = rd.varint(e);
      if ((t & 7) !== 2) {
        rd.skip(t & 7, e);
        continue;
      }
      const fe = rd.delimited(e);
      if (t >> 3 === 1) key = rd.buf.toString('utf8', rd.pos, fe);
      else if (t >> 3 === 2) value = struct(rd, rd.pos, fe);
      rd.pos = fe;
    }
    if (key !== '') out[key] = value;
    rd.pos = e;
  }
  return out;
}

/** google.protobuf.Struct (fields = 1, map<string, Value>) within [from, to), as plain JSON. */
function struct(rd: ProtoReader, from: number, to: number): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  rd.pos = from;
  while (rd.pos < to) {
    const tag = rd.varint(to);
    if (tag !== ((1 << 3) | 2)) {
      rd.skip(tag & 7, to);
      continue;
    }
    const e = rd.delimited(to);
    let key = '';
    let value: unknown = null;
    while (rd.pos < e) {
      const t = rd.varint(e);
      if (t === ((1 << 3) | 2)) {
        const fe = rd.delimited(e);
        key = rd.buf.toString('utf8', rd.pos, fe);
        rd.pos = fe;
      } else if (t === ((2 << 3) | 2)) {
        const fe = rd.delimited(e);
        value = protoValue(rd, rd.pos, fe);
        rd.pos = fe;
      } else rd.skip(t & 7, e);
    }
    out[key] = value;
    rd.pos = e;
  }
  return out;
}

/** google.protobuf.Value: null = 1, number = 2 (double), string = 3, bool = 4, struct = 5, list = 6 (values = 1). */
function protoValue(rd: ProtoReader, from: number, to: number): unknown {
  let value: unknown = null;
  rd.pos = from;
  while (rd.pos < to) {
    const tag = rd.varint(to);
    const n = tag >> 3;
    if (n === 2 && (tag & 7) === 1) {
      if (rd.pos + 8 > to) throw new MalformedProtobuf('truncated double');
      value = rd.buf.readDoubleLE(rd.pos);
      rd.pos += 8;
    } else if (n === 4 && (tag & 7) === 0) value = rd.varint(to) !== 0;
    else if (n === 1 && (tag & 7) === 0) {
      rd.varint(to);
      value = null;
    } else if ((tag & 7) === 2 && (n === 3 || n === 5 || n === 6)) {
      const e = rd.delimited(to);
      if (n === 3) value = rd.buf.toString('utf8', rd.pos, e);
      else if (n === 5) value = struct(rd, rd.pos, e);
      else {
        const list: unknown[] = [];
        while (rd.pos < e) {
          const t = rd.varint(e);
          if (t === ((1 << 3) | 2)) {
            const ve = rd.delimited(e);
            list.push(protoValue(rd, rd.pos, ve));
            rd.pos = ve;
          } else rd.skip(t & 7, e);
        }
        value = list;
      }
      rd.pos = e;
    } else rd.skip(tag & 7, to);
  }
  return value;
}

const AUTHORIZATION = Buffer.from('authorization', 'latin1');
const CONFIG_ID = Buffer.from('config_id', 'latin1');

// One reader for every parse: module-level so a walk allocates nothing but what it returns.
const r = new ProtoReader();
let out: CheckInput = new CheckInput();

function bytesEqual(start: number, end: number, expected: Buffer): boolean {
  if (end - start !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (r.buf[start + i] !== expected[i]) return false;
  return true;
}

// The entry readEntry read last: its key's [start, end) (-1 when absent) and its value's (-1 when
// absent; raw_value when non-empty, as Envoy sends header values).
let keyStart = -1;
let keyEnd = -1;
let valueStart = -1;
let valueEnd = -1;

/**
 * Reads one map<string,string> entry or HeaderValue in a single walk, noting where its fields are.
 * Fields: key = 1, value = 2, and for HeaderValue raw_value = 3 (wins over value when non-empty).
 */
function readEntry(end: number): void {
  keyStart = keyEnd = valueStart = valueEnd = -1;
  let rawStart = -1;
  let rawEnd = -1;
  while (r.pos < end) {
    const tag = r.varint(end);
    const field = Math.floor(tag / 8);
    const wt = tag & 7;
    if (wt === 2 && field >= 1 && field <= 3) {
      const e = r.delimited(end);
      if (field === 1) {
        keyStart = r.pos;
        keyEnd = e;
      } else if (field === 2) {
        valueStart = r.pos;
        valueEnd = e;
      } else {
        rawStart = r.pos;
        rawEnd = e;
      }
      r.pos = e;
    } else r.skip(wt, end);
  }
  if (rawEnd > rawStart) {
    valueStart = rawStart;
    valueEnd = rawEnd;
  }
}

const entryKeyIs = (key: Buffer): boolean => keyStart >= 0 && bytesEqual(keyStart, keyEnd, key);
const entryValue = (encoding: BufferEncoding): string => (valueStart < 0 ? '' : r.buf.toString(encoding, valueStart, valueEnd));

/** The entry read is a header other than `authorization`: kept in out.headers unless it is a pseudo-header. */
function keepHeader(joinRepeated: boolean): void {
  if (keyStart < 0 || keyEnd === keyStart || r.buf[keyStart] === 0x3a) return; // no key, empty or `:pseudo`
  const name = r.buf.toString('latin1', keyStart, keyEnd);
  const v = entryValue('latin1');
  const headers = (out.headers ??= {});
  const prior = joinRepeated && Object.hasOwn(headers, name) ? headers[name] : undefined;
  headers[name] = prior === undefined ? v : `${prior},${v}`;
}

function headerMap(end: number): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === ((1 << 3) | 2)) {
      const e = r.delimited(end);
      readEntry(e);
      if (entryKeyIs(AUTHORIZATION)) {
        if (out.authorization !== undefined) out.ambiguous = true;
        out.authorization = entryValue('latin1');
      } else keepHeader(true);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
}

function httpRequest(end: number): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === ((3 << 3) | 2)) {
      const e = r.delimited(end);
      readEntry(e);
      // a map's entries are unique per key; a repeated key means last-wins on the wire, not two headers
      if (entryKeyIs(AUTHORIZATION)) out.authorization = entryValue('latin1');
      else keepHeader(false);
      r.pos = e;
    } else if (tag === ((13 << 3) | 2)) {
      const e = r.delimited(end);
      headerMap(e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
}

function request(end: number): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === ((2 << 3) | 2)) {
      const e = r.delimited(end);
      httpRequest(e);
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
}

function attributes(end: number): void {
  while (r.pos < end) {
    const tag = r.varint(end);
    if (tag === ((4 << 3) | 2)) {
      const e = r.delimited(end);
      request(e);
      r.pos = e;
    } else if (tag === ((10 << 3) | 2)) {
      const e = r.delimited(end);
      readEntry(e);
      if (entryKeyIs(CONFIG_ID)) out.configId = entryValue('utf8');
      r.pos = e;
    } else r.skip(tag & 7, end);
  }
}

/**
 * Extracts the `authorization` header, the `config_id` context extension and the other headers sent from a
 * serialized CheckRequest; the rest stays in the bytes until a step asks (CheckInput).
 */
export function parseCheckRequest(bytes: Buffer): CheckInput {
  const result = new CheckInput();
  r.reset(bytes);
  out = result;
  try {
    const end = bytes.length;
    while (r.pos < end) {
      const tag = r.varint(end);
      if (tag === ((1 << 3) | 2)) {
        const e = r.delimited(end);
        attributes(e);
        r.pos = e;
      } else r.skip(tag & 7, end);
    }
    result.keep(bytes);
  } catch (err) {
    if (!(err instanceof MalformedProtobuf)) throw err;
    result.malformed = true;
    result.authorization = undefined;
    delete result.headers;
  } finally {
    r.reset();
  }
  return result;
}

// ---- responses

function varint(n: number): number[] {
  const out: number[] = [];
  while (n > 0x7f) {
    out.push((n & 0x7f) | 0x80);
    n = Math.floor(n / 128);
  }
  out.push(n);
  return out;
}

function lengthDelimited(field: number, body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([(field << 3) | 2, ...varint(body.length)]), body]);
}

/** google.protobuf.Struct fields entry {key: string_value}. */
function structStringEntry(key: string, value: string): Buffer {
  const v = lengthDelimited(3, Buffer.from(value, 'utf8')); // Value.string_value = 3
  return lengthDelimited(1, Buffer.concat([lengthDelimited(1, Buffer.from(key, 'utf8')), lengthDelimited(2, v)]));
}

/** The Struct entry naming the judged config version, per key (a handful of configs; cleared if it grows). */
const keyEntries = new Map<string, Buffer>();
const MAX_KEY_ENTRIES = 1024;
/** The start of the cache-ms entry's body: Struct.fields entry key `legate_cache_ms`, then the Value (field 2). */
const MS_ENTRY_HEAD = Buffer.concat([lengthDelimited(1, Buffer.from(EDGE_METADATA.cacheMs, 'latin1')), Buffer.from([0x12])]);

function writeVarint(out: Buffer, at: number, n: number): number {
  while (n > 0x7f) {
    out[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

function varintLength(n: number): number {
  let len = 1;
  while (n > 0x7f) {
    len++;
    n = Math.floor(n / 128);
  }
  return len;
}

/**
 * The allow response plus CheckResponse.dynamic_metadata (field 4, a Struct) saying which config
 * version judged the token and for how many ms the answer holds. `allow` is the pre-encoded allow;
 * protobuf concatenation merges, so appending the field is enough. `reserve`: bytes left in front of
 * the message (uninitialised), e.g. 5 for the gRPC frame prefix.
 *
 * On every allowed Check with a grant (with the edge cache off, every allowed request), so it writes one
 * buffer: the key's entry is encoded once per key, the ms entry in place (was ~6 µs with a Buffer per
 * field and concatenations, now a fraction of a µs).
 */
export function encodeAllowWithEdgeGrant(
  allow: Buffer,
  key: string,
  cacheMs: number,
  reserve = 0,
  edge?: { credential: string; headers: string },
): Buffer {
  const cacheKey = edge === undefined ? key : `${key}\0${edge.credential}`;
  let keyEntry = keyEntries.get(cacheKey);
  if (keyEntry === undefined) {
    keyEntry = structStringEntry(EDGE_METADATA.key, key);
    // a credential grant also says what it is keyed on
    if (edge !== undefined) keyEntry = Buffer.concat([keyEntry, structStringEntry(EDGE_METADATA.credential, edge.credential)]);
    if (keyEntries.size >= MAX_KEY_ENTRIES) keyEntries.clear();
    keyEntries.set(cacheKey, keyEntry);
  }
  // and the upstream headers a hit must set again (per session: never kept)
  if (edge !== undefined && edge.headers !== '')
    keyEntry = Buffer.concat([keyEntry, structStringEntry(EDGE_METADATA.headers, edge.headers)]);
  const digits = String(cacheMs); // ASCII
  // Value{string_value = 3: digits}
  const valueLen = 1 + varintLength(digits.length) + digits.length;
  const msBodyLen = MS_ENTRY_HEAD.length + varintLength(valueLen) + valueLen;
  const structLen = keyEntry.length + 1 + varintLength(msBodyLen) + msBodyLen;
  const out = Buffer.allocUnsafe(reserve + allow.length + 1 + varintLength(structLen) + structLen);
  let at = reserve + allow.copy(out, reserve);
  out[at++] = (4 << 3) | 2;
  at = writeVarint(out, at, structLen);
  at += keyEntry.copy(out, at);
  out[at++] = (1 << 3) | 2;
  at = writeVarint(out, at, msBodyLen);
  at += MS_ENTRY_HEAD.copy(out, at);
  at = writeVarint(out, at, valueLen);
  out[at++] = (3 << 3) | 2;
  at = writeVarint(out, at, digits.length);
  out.write(digits, at, 'latin1');
  return out;
}
