// The wire side of envoy.service.auth.v3.Authorization/Check, kept off the hot path's allocations:
//
// - Requests: a CheckRequest carries the whole request (peers, every header, metadata, TLS info), but a
//   decision needs two strings: the `authorization` header and the `config_id` context extension (and
//   an API key header, for apiKeyAuth). Rather than materialising the message with protobufjs (tens of
//   objects per call), parseCheckRequest walks the protobuf wire format once and copies out only those
//   values: the filter's allowed_headers limits what Envoy sends to `authorization` and the API key
//   headers, and other non-pseudo headers land in `headers` (no object when there are none). Everything else is skipped by
//   wire type. It never throws: a malformed message comes back with `malformed: true` (and is denied).
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

/** Dynamic metadata keys of an allow (namespace `envoy.filters.http.ext_authz`), read by bearer-check. */
export const EDGE_METADATA = { key: 'legate_auth_key', cacheMs: 'legate_cache_ms' } as const;

export interface CheckInput {
  /** `config_id` context extension; '' when absent */
  configId: string;
  /** the `authorization` request header; undefined when absent */
  authorization: string | undefined;
  /** more than one `authorization` header (header_map form), or an unparsable message */
  ambiguous: boolean;
  malformed: boolean;
  /** other headers sent (not `authorization`, not pseudo-headers), lower-case names; a repeated one is
   * joined with ',' (so it matches no key); undefined when there are none */
  headers?: Record<string, string>;
}

const AUTHORIZATION = Buffer.from('authorization', 'latin1');
const CONFIG_ID = Buffer.from('config_id', 'latin1');

// One reader for every parse: module-level so a walk allocates nothing but what it returns.
const r = new ProtoReader();
let out: CheckInput = { configId: '', authorization: undefined, ambiguous: false, malformed: false };

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

/** Extracts the `authorization` header and the `config_id` context extension from a serialized CheckRequest. */
export function parseCheckRequest(bytes: Buffer): CheckInput {
  const result: CheckInput = { configId: '', authorization: undefined, ambiguous: false, malformed: false };
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
export function encodeAllowWithEdgeGrant(allow: Buffer, key: string, cacheMs: number, reserve = 0): Buffer {
  let keyEntry = keyEntries.get(key);
  if (keyEntry === undefined) {
    keyEntry = structStringEntry(EDGE_METADATA.key, key);
    if (keyEntries.size >= MAX_KEY_ENTRIES) keyEntries.clear();
    keyEntries.set(key, keyEntry);
  }
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
