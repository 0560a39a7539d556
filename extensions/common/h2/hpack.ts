// HPACK (RFC 7541) for the minimal h2c gRPC server on node:net: a complete decoder for the peer's header
// blocks (static and dynamic tables, Huffman) and an encoder for our own headers that uses neither the
// dynamic table nor Huffman, so what we send never depends on, or changes, any compression state.

import { nameKind } from './fields.js';

/** Any decoding failure; the caller answers with a connection error of type COMPRESSION_ERROR. */
export class HpackError extends Error {}

/** Per-entry overhead in the size of the dynamic table and of the header list (RFC 7541 4.1, RFC 9113 6.5.2). */
const ENTRY_OVERHEAD = 32;
/** Largest integer accepted: lengths and indexes beyond it can only be hostile. */
const MAX_INT = 0x7fffffff;
/** Continuation bytes enough for MAX_INT after a prefix (5 × 7 bits); more is an error, not a slow loop. */
const MAX_INT_CONTINUATIONS = 5;

// Node's Buffer has these (toString/write go through them after normalising their arguments) but
// @types/node does not declare them.
interface Latin1Buffer extends Buffer {
  latin1Slice(start: number, end: number): string;
  latin1Write(s: string, offset: number, length: number): number;
}

// ---------------------------------------------------------------------------------------------------
// Static table (Appendix A)

// prettier-ignore
export const STATIC_TABLE: readonly (readonly [string, string])[] = [
  [':authority', ''], [':method', 'GET'], [':method', 'POST'], [':path', '/'], [':path', '/index.html'],
  [':scheme', 'http'], [':scheme', 'https'], [':status', '200'], [':status', '204'], [':status', '206'],
  [':status', '304'], [':status', '400'], [':status', '404'], [':status', '500'], ['accept-charset', ''],
  ['accept-encoding', 'gzip, deflate'], ['accept-language', ''], ['accept-ranges', ''], ['accept', ''],
  ['access-control-allow-origin', ''], ['age', ''], ['allow', ''], ['authorization', ''], ['cache-control', ''],
  ['content-disposition', ''], ['content-encoding', ''], ['content-language', ''], ['content-length', ''],
  ['content-location', ''], ['content-range', ''], ['content-type', ''], ['cookie', ''], ['date', ''],
  ['etag', ''], ['expect', ''], ['expires', ''], ['from', ''], ['host', ''], ['if-match', ''],
  ['if-modified-since', ''], ['if-none-match', ''], ['if-range', ''], ['if-unmodified-since', ''],
  ['last-modified', ''], ['link', ''], ['location', ''], ['max-forwards', ''], ['proxy-authenticate', ''],
  ['proxy-authorization', ''], ['range', ''], ['referer', ''], ['refresh', ''], ['retry-after', ''],
  ['server', ''], ['set-cookie', ''], ['strict-transport-security', ''], ['transfer-encoding', ''],
  ['user-agent', ''], ['vary', ''], ['via', ''], ['www-authenticate', ''],
];
const STATIC_COUNT = STATIC_TABLE.length; // 61
// 1-based like HPACK indexes, so a lookup is one array read
const STATIC_NAME: readonly string[] = ['', ...STATIC_TABLE.map((e) => e[0])];
/** each static name's kind to the request checks (fields.ts) */
const STATIC_KIND = Uint8Array.from(STATIC_NAME, (name) => nameKind(name));
const STATIC_VALUE: readonly string[] = ['', ...STATIC_TABLE.map((e) => e[1])];

// ---------------------------------------------------------------------------------------------------
// Huffman code (Appendix B)

/**
 * Code length in bits of symbols 0–255 and EOS (256), Appendix B. The code is canonical (codes are
 * consecutive in order of length, then symbol), so these lengths determine it: see canonicalHuffmanCodes.
 */
// prettier-ignore
export const HUFFMAN_CODE_LENGTHS: readonly number[] = [
  13, 23, 28, 28, 28, 28, 28, 28, 28, 24, 30, 28, 28, 30, 28, 28, //   0– 15
  28, 28, 28, 28, 28, 28, 30, 28, 28, 28, 28, 28, 28, 28, 28, 28, //  16– 31
   6, 10, 10, 12, 13,  6,  8, 11, 10, 10,  8, 11,  8,  6,  6,  6, //  32– 47 ' ' … '/'
   5,  5,  5,  6,  6,  6,  6,  6,  6,  6,  7,  8, 15,  6, 12, 10, //  48– 63 '0' … '?'
  13,  6,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7,  7, //  64– 79 '@' … 'O'
   7,  7,  7,  7,  7,  7,  7,  7,  8,  7,  8, 13, 19, 13, 14,  6, //  80– 95 'P' … '_'
  15,  5,  6,  5,  6,  5,  6,  6,  6,  5,  7,  7,  6,  6,  6,  5, //  96–111 '`' … 'o'
   6,  7,  6,  5,  5,  6,  7,  7,  7,  7,  7, 15, 11, 14, 13, 28, // 112–127 'p' … DEL
  20, 22, 20, 20, 22, 22, 22, 23, 22, 23, 23, 23, 23, 23, 24, 23, // 128–143
  24, 24, 22, 23, 24, 23, 23, 23, 23, 21, 22, 23, 22, 23, 23, 24, // 144–159
  22, 21, 20, 22, 22, 23, 23, 21, 23, 22, 22, 24, 21, 22, 23, 23, // 160–175
  21, 21, 22, 21, 23, 22, 23, 23, 20, 22, 22, 22, 23, 22, 22, 23, // 176–191
  26, 26, 20, 19, 22, 23, 22, 25, 26, 26, 26, 27, 27, 26, 24, 25, // 192–207
  19, 21, 26, 27, 27, 26, 27, 24, 21, 21, 26, 26, 28, 27, 27, 27, // 208–223
  20, 24, 20, 21, 22, 21, 21, 23, 22, 22, 25, 25, 24, 24, 26, 23, // 224–239
  26, 27, 26, 26, 27, 27, 27, 27, 27, 28, 27, 27, 27, 27, 27, 26, // 240–255
  30,                                                             // EOS
];

const EOS = 256;

/** The codes of a canonical prefix code given its code lengths (each code as an integer of `lengths[s]` bits). */
export function canonicalHuffmanCodes(lengths: readonly number[]): number[] {
  const order = lengths.map((_, s) => s).sort((a, b) => lengths[a]! - lengths[b]! || a - b);
  const codes = new Array<number>(lengths.length).fill(0);
  let code = 0;
  let prevLen = lengths[order[0]!]!;
  for (const s of order) {
    const len = lengths[s]!;
    code *= 2 ** (len - prevLen); // append zeros when moving to longer codes
    prevLen = len;
    codes[s] = code++;
  }
  return codes;
}

// The decoder is a state machine consuming 4 bits at a time (as nghttp2's): a state is an internal node
// of the code tree (256 of them for 257 leaves, the root being 0), and each (state, nibble) entry gives
// the next state and at most one symbol (the shortest code has 5 bits, so a nibble completes at most one).
const H_SYM_MASK = 0xff; // bits 0–7: the symbol emitted
const H_STATE_SHIFT = 8; // bits 8–15: the next state
const H_EMIT = 1 << 16;
const H_FAIL = 1 << 17; // the nibble completes EOS, which must never appear inside a string (5.2)

function buildHuffmanDecoder(): { table: Uint32Array; accept: Uint8Array } {
  const codes = canonicalHuffmanCodes(HUFFMAN_CODE_LENGTHS);
  // children per internal node: > 0 an internal node, < 0 the leaf of symbol -(child + 1), 0 unset
  // (the root is never anyone's child)
  const zero = new Int32Array(256);
  const one = new Int32Array(256);
  let nodes = 1;
  for (let sym = 0; sym <= EOS; sym++) {
    const len = HUFFMAN_CODE_LENGTHS[sym]!;
    const code = codes[sym]!;
    let node = 0;
    for (let bit = len - 1; bit >= 0; bit--) {
      const side = (code >>> bit) & 1 ? one : zero;
      const child = side[node]!;
      if (bit === 0) {
        if (child !== 0) throw new Error('HPACK Huffman table: code collision');
        side[node] = -(sym + 1);
      } else if (child === 0) {
        if (nodes === 256) throw new Error('HPACK Huffman table: not a complete code');
        side[node] = nodes;
        node = nodes++;
      } else if (child < 0) {
        throw new Error('HPACK Huffman table: not a prefix code');
      } else {
        node = child;
      }
    }
  }
  for (let n = 0; n < 256; n++) {
    if (zero[n] === 0 || one[n] === 0) throw new Error('HPACK Huffman table: not a complete code');
  }

  const table = new Uint32Array(256 * 16);
  for (let state = 0; state < 256; state++) {
    for (let nibble = 0; nibble < 16; nibble++) {
      let node = state;
      let entry = 0;
      for (let bit = 3; bit >= 0; bit--) {
        const child = ((nibble >> bit) & 1 ? one : zero)[node]!;
        if (child > 0) {
          node = child;
          continue;
        }
        const sym = -child - 1;
        if (sym === EOS) {
          entry = H_FAIL;
          break;
        }
        if (entry !== 0) throw new Error('HPACK Huffman table: two symbols in a nibble');
        entry = H_EMIT | sym;
        node = 0;
      }
      table[(state << 4) | nibble] = entry === H_FAIL ? H_FAIL : entry | (node << H_STATE_SHIFT);
    }
  }

  // A string may end only where the bits since its last symbol are padding: at most 7 bits, all ones
  // (the EOS prefix). Those are exactly the nodes on the all-ones path of depth 0–7.
  const accept = new Uint8Array(256);
  for (let node = 0, depth = 0; depth <= 7; depth++) {
    if (node < 0) throw new Error('HPACK Huffman table: a short all-ones code');
    accept[node] = 1;
    node = one[node]!;
  }
  return { table, accept };
}

const { table: HUFFMAN_DECODE, accept: HUFFMAN_ACCEPT } = buildHuffmanDecoder();

// ---------------------------------------------------------------------------------------------------
// Decoder

const EMPTY = Buffer.alloc(0);

export class HpackDecoder {
  readonly maxTableSize: number;
  readonly maxHeaderListSize: number;

  // dynamic table: a ring of names and values, `newest` the slot of index 62
  private names: string[] = new Array<string>(16).fill('');
  private values: string[] = new Array<string>(16).fill('');
  /** each entry's name kind (fields.ts), decided when it was inserted */
  private kinds = new Uint8Array(16);
  /** the kind of the name literalName() last returned */
  private literalKind = 0;
  private newest = 0;
  private count = 0;
  private size = 0;
  /** The table's current maximum size, as last set by the encoder (≤ maxTableSize). */
  private capacity: number;

  // the block being decoded, and the read position in it
  private buf: Buffer = EMPTY;
  private pos = 0;
  /** Huffman output; a string is at most 8/5 of its encoded length (shortest code: 5 bits). */
  private scratch = Buffer.allocUnsafe(256);

  /**
   * @param maxTableSize the SETTINGS_HEADER_TABLE_SIZE we advertise (the peer's encoder may use up to that)
   * @param maxHeaderListSize cap on a block's decoded fields, counted as name + value + 32 each
   */
  constructor(maxTableSize = 4096, maxHeaderListSize = 64 * 1024) {
    this.maxTableSize = maxTableSize;
    this.maxHeaderListSize = maxHeaderListSize;
    this.capacity = maxTableSize;
  }

  /** Current size of the dynamic table (entries' name + value + 32). */
  get dynamicTableSize(): number {
    return this.size;
  }

  /** The dynamic table's entries, newest (index 62) first; for tests and diagnostics. */
  dynamicTable(): [string, string][] {
    const out: [string, string][] = [];
    const mask = this.names.length - 1;
    for (let i = 0; i < this.count; i++) {
      const slot = (this.newest - i) & mask;
      out.push([this.names[slot]!, this.values[slot]!]);
    }
    return out;
  }

  /**
   * Decodes one complete header block (HEADERS + CONTINUATION payloads already joined, padding and
   * priority already removed). Calls onHeader(name, value, kind) for each field in order (kind: the name's to the
   * request checks, fields.ts). Throws HpackError.
   * Names and values are latin1 strings (HTTP/2 header bytes).
   *
   * Every block must be decoded to its end, even for a stream about to be refused, or the dynamic table
   * falls out of step with the peer's; so onHeader should not throw. After an HpackError the decoder's
   * state is unspecified (the connection is over).
   */
  decode(block: Buffer, onHeader: (name: string, value: string, kind: number) => void): void {
    this.buf = block;
    this.pos = 0;
    const end = block.length;
    let listSize = 0;
    let fields = 0;
    while (this.pos < end) {
      const b = block[this.pos]!;
      let name: string;
      let value: string;
      let kind: number;
      if (b >= 0x80) {
        // 6.1 indexed field: 1xxxxxxx
        const index = this.integer(0x7f);
        if (index <= STATIC_COUNT) {
          if (index === 0) throw new HpackError('HPACK: index 0');
          name = STATIC_NAME[index]!;
          value = STATIC_VALUE[index]!;
          kind = STATIC_KIND[index]!;
        } else {
          const slot = this.dynamicSlot(index);
          name = this.names[slot]!;
          value = this.values[slot]!;
          kind = this.kinds[slot]!;
        }
      } else if (b >= 0x40) {
        // 6.2.1 literal with incremental indexing: 01xxxxxx
        name = this.literalName(0x3f);
        kind = this.literalKind;
        value = this.string();
        this.insert(name, value, kind);
      } else if (b >= 0x20) {
        // 6.3 dynamic table size update: 001xxxxx, only before the block's first field (4.2)
        if (fields !== 0) throw new HpackError('HPACK: dynamic table size update after a header field');
        const size = this.integer(0x1f);
        if (size > this.maxTableSize) throw new HpackError(`HPACK: dynamic table size ${size} above the ${this.maxTableSize} allowed`);
        this.capacity = size;
        this.evict(0);
        continue;
      } else {
        // 6.2.2 without indexing 0000xxxx, 6.2.3 never indexed 0001xxxx: the same to a decoder that
        // does not re-encode
        name = this.literalName(0x0f);
        kind = this.literalKind;
        value = this.string();
      }
      fields++;
      listSize += name.length + value.length + ENTRY_OVERHEAD;
      if (listSize > this.maxHeaderListSize) throw new HpackError(`HPACK: header list larger than ${this.maxHeaderListSize} bytes`);
      onHeader(name, value, kind);
    }
    this.buf = EMPTY; // keep no reference to the caller's (socket's) bytes
  }

  /** 5.1: an integer whose prefix is the low bits (`mask`) of the byte at pos. */
  private integer(mask: number): number {
    const buf = this.buf;
    let value = buf[this.pos++]! & mask;
    if (value < mask) return value;
    let mul = 1;
    for (let i = 0; i < MAX_INT_CONTINUATIONS; i++) {
      if (this.pos >= buf.length) throw new HpackError('HPACK: truncated integer');
      const b = buf[this.pos++]!;
      value += (b & 0x7f) * mul; // arithmetic, not shifts: 7 × 5 bits overflow int32
      if (b < 0x80) {
        if (value > MAX_INT) throw new HpackError('HPACK: integer overflow');
        return value;
      }
      mul *= 128;
    }
    throw new HpackError('HPACK: integer overflow');
  }

  /** Name of a literal field: an index into the tables, or 0 then a string literal; its kind in literalKind. */
  private literalName(mask: number): string {
    const index = this.integer(mask);
    if (index === 0) {
      const name = this.string();
      this.literalKind = nameKind(name);
      return name;
    }
    if (index <= STATIC_COUNT) {
      this.literalKind = STATIC_KIND[index]!;
      return STATIC_NAME[index]!;
    }
    const slot = this.dynamicSlot(index);
    this.literalKind = this.kinds[slot]!;
    return this.names[slot]!;
  }

  /** Ring slot of dynamic table entry `index` (62 = newest). */
  private dynamicSlot(index: number): number {
    const i = index - STATIC_COUNT - 1;
    if (i >= this.count) throw new HpackError(`HPACK: index ${index} beyond the tables`);
    return (this.newest - i) & (this.names.length - 1);
  }

  /** 5.2: a string literal, H bit and 7-bit-prefix length then the (maybe Huffman-coded) bytes. */
  private string(): string {
    const buf = this.buf;
    if (this.pos >= buf.length) throw new HpackError('HPACK: truncated block');
    const huffman = buf[this.pos]! & 0x80;
    const len = this.integer(0x7f);
    const start = this.pos;
    const end = start + len;
    if (end > buf.length) throw new HpackError('HPACK: string runs past the block');
    this.pos = end;
    return huffman === 0 ? (buf as Latin1Buffer).latin1Slice(start, end) : this.huffman(buf, start, end);
  }

  private huffman(src: Buffer, start: number, end: number): string {
    const need = (((end - start) * 8) / 5) | 0;
    let out = this.scratch;
    if (out.length < need) out = this.scratch = Buffer.allocUnsafe(Math.max(need, out.length * 2));
    const table = HUFFMAN_DECODE;
    let state = 0;
    let n = 0;
    for (let i = start; i < end; i++) {
      const b = src[i]!;
      let t = table[(state << 4) | (b >> 4)]!;
      if (t & H_EMIT) out[n++] = t & H_SYM_MASK;
      else if (t & H_FAIL) throw new HpackError('HPACK: EOS in a Huffman-coded string');
      state = (t >> H_STATE_SHIFT) & 0xff;
      t = table[(state << 4) | (b & 0x0f)]!;
      if (t & H_EMIT) out[n++] = t & H_SYM_MASK;
      else if (t & H_FAIL) throw new HpackError('HPACK: EOS in a Huffman-coded string');
      state = (t >> H_STATE_SHIFT) & 0xff;
    }
    if (HUFFMAN_ACCEPT[state] === 0) throw new HpackError('HPACK: invalid Huffman padding');
    return (out as Latin1Buffer).latin1Slice(0, n);
  }

  /** 4.4: adds an entry, evicting the oldest ones to make room; one larger than the table empties it. */
  private insert(name: string, value: string, kind: number): void {
    const entrySize = name.length + value.length + ENTRY_OVERHEAD;
    if (entrySize > this.capacity) {
      this.evict(this.capacity + 1); // everything
      return;
    }
    this.evict(entrySize);
    if (this.count === this.names.length) this.grow();
    const slot = (this.newest + 1) & (this.names.length - 1);
    this.names[slot] = name;
    this.values[slot] = value;
    this.kinds[slot] = kind;
    this.newest = slot;
    this.count++;
    this.size += entrySize;
  }

  /** Evicts the oldest entries until `room` more bytes fit in the current capacity. */
  private evict(room: number): void {
    const mask = this.names.length - 1;
    while (this.count > 0 && this.size + room > this.capacity) {
      const slot = (this.newest - this.count + 1) & mask;
      this.size -= this.names[slot]!.length + this.values[slot]!.length + ENTRY_OVERHEAD;
      this.names[slot] = ''; // let the strings go
      this.values[slot] = '';
      this.count--;
    }
  }

  /** Doubles the ring (its length stays a power of two for the masks), oldest entry to slot 0. */
  private grow(): void {
    const len = this.names.length;
    const names = new Array<string>(len * 2).fill('');
    const values = new Array<string>(len * 2).fill('');
    const kinds = new Uint8Array(len * 2);
    for (let i = 0; i < this.count; i++) {
      const slot = (this.newest - this.count + 1 + i) & (len - 1);
      names[i] = this.names[slot]!;
      values[i] = this.values[slot]!;
      kinds[i] = this.kinds[slot]!;
    }
    this.names = names;
    this.values = values;
    this.kinds = kinds;
    this.newest = this.count - 1;
  }
}

// ---------------------------------------------------------------------------------------------------
// Encoder

/** First static index of each name (the table lists some names several times). */
const STATIC_NAME_INDEX = new Map<string, number>();
for (let i = STATIC_COUNT; i >= 1; i--) STATIC_NAME_INDEX.set(STATIC_NAME[i]!, i);
/** ':status' values with a full static entry, sent as one indexed byte. */
const STATUS_INDEX = new Map<string, number>();
for (let i = 1; i <= STATIC_COUNT; i++) if (STATIC_NAME[i] === ':status') STATUS_INDEX.set(STATIC_VALUE[i]!, i);

/** Bytes of an integer with an N-bit prefix whose all-ones value is `max`. */
function integerSize(value: number, max: number): number {
  if (value < max) return 1;
  let n = 2;
  for (value -= max; value >= 0x80; value = Math.floor(value / 128)) n++;
  return n;
}

function writeInteger(out: Buffer, pos: number, value: number, max: number, flags: number): number {
  if (value < max) {
    out[pos++] = flags | value;
    return pos;
  }
  out[pos++] = flags | max;
  for (value -= max; value >= 0x80; value = Math.floor(value / 128)) out[pos++] = (value & 0x7f) | 0x80;
  out[pos++] = value;
  return pos;
}

/** A raw string literal (H = 0); characters above U+00FF keep only their low byte, as with latin1. */
function writeString(out: Buffer, pos: number, s: string): number {
  const len = s.length;
  pos = writeInteger(out, pos, len, 0x7f, 0);
  if (len < 32) {
    // short strings: a loop beats the call into C++
    for (let i = 0; i < len; i++) out[pos + i] = s.charCodeAt(i);
  } else {
    (out as Latin1Buffer).latin1Write(s, pos, len);
  }
  return pos + len;
}

/** Header-block bytes for fields we send: each as "literal header field without indexing" (never touches
 *  the peer's dynamic table), name as a static-table index when the name is in the static table, else a
 *  literal name; value as a raw (non-Huffman) string literal. ':status' values in the static table
 *  (200, 204, 206, 304, 400, 404, 500) use the indexed form (0x88 for 200 etc.).
 *  Names must already be lowercase (HTTP/2); names and values are latin1. */
export function encodeHeaders(fields: readonly (readonly [string, string])[]): Buffer {
  let size = 0;
  for (const [name, value] of fields) {
    if (name === ':status' && STATUS_INDEX.has(value)) {
      size += 1;
      continue;
    }
    const index = STATIC_NAME_INDEX.get(name);
    size += index === undefined ? 1 + integerSize(name.length, 0x7f) + name.length : integerSize(index, 0x0f);
    size += integerSize(value.length, 0x7f) + value.length;
  }
  const out = Buffer.allocUnsafe(size);
  let pos = 0;
  for (const [name, value] of fields) {
    if (name === ':status') {
      const status = STATUS_INDEX.get(value);
      if (status !== undefined) {
        out[pos++] = 0x80 | status;
        continue;
      }
    }
    const index = STATIC_NAME_INDEX.get(name);
    if (index === undefined) {
      out[pos++] = 0x00;
      pos = writeString(out, pos, name);
    } else {
      pos = writeInteger(out, pos, index, 0x0f, 0x00);
    }
    pos = writeString(out, pos, value);
  }
  return out;
}
