// The HPACK decoder against RFC 7541 Appendix C's examples and hostile blocks, its Huffman code against
// the RFC's stated properties and a test-only encoder, and encodeHeaders round trips; then both against
// nghttp2 (node:http2) over a raw socket.
import http2 from 'node:http2';
import net, { type AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import {
  HUFFMAN_CODE_LENGTHS,
  HpackDecoder,
  HpackError,
  STATIC_TABLE,
  canonicalHuffmanCodes,
  encodeHeaders,
} from '../../extensions/common/h2/hpack.js';
import { frameHeader } from '../../extensions/common/h2/server.js';

type Field = [string, string];

/** A vector as printed in the RFC: hex in groups, whitespace ignored. */
const hex = (s: string): Buffer => Buffer.from(s.replace(/\s+/g, ''), 'hex');

function decodeAll(decoder: HpackDecoder, block: Buffer): Field[] {
  const out: Field[] = [];
  decoder.decode(block, (name, value) => out.push([name, value]));
  return out;
}

function expectError(block: Buffer, message: RegExp, decoder = new HpackDecoder()): void {
  expect(() => decodeAll(decoder, block)).toThrow(HpackError);
  expect(() => decodeAll(new HpackDecoder(decoder.maxTableSize, decoder.maxHeaderListSize), block)).toThrow(message);
}

// --- test-only Huffman encoder and block builders

const CODES = canonicalHuffmanCodes(HUFFMAN_CODE_LENGTHS);

/** Huffman-codes bytes, padding the last byte with ones (the EOS prefix). */
function huffmanEncode(bytes: Uint8Array): Buffer {
  const out: number[] = [];
  let acc = 0; // pending bits, at most 7 + 30: numbers, not int32 shifts
  let bits = 0;
  for (const b of bytes) {
    const len = HUFFMAN_CODE_LENGTHS[b]!;
    acc = acc * 2 ** len + CODES[b]!;
    bits += len;
    while (bits >= 8) {
      bits -= 8;
      const top = Math.floor(acc / 2 ** bits);
      out.push(top);
      acc -= top * 2 ** bits;
    }
  }
  if (bits > 0) out.push(acc * 2 ** (8 - bits) + (2 ** (8 - bits) - 1));
  return Buffer.from(out);
}

/** An HPACK integer with an N-bit prefix (`max` = 2^N - 1) under `flags`. */
function int(value: number, max: number, flags: number): Buffer {
  if (value < max) return Buffer.from([flags | value]);
  const out = [flags | max];
  for (value -= max; value >= 128; value = Math.floor(value / 128)) out.push((value % 128) | 0x80);
  out.push(value);
  return Buffer.from(out);
}

/** A string literal, raw or Huffman-coded. */
function str(bytes: Buffer, huffman: boolean): Buffer {
  const body = huffman ? huffmanEncode(bytes) : bytes;
  return Buffer.concat([int(body.length, 0x7f, huffman ? 0x80 : 0), body]);
}

/** "Literal without indexing, new name" with the name and value given as bytes. */
function literal(name: Buffer, value: Buffer, huffman: boolean): Buffer {
  return Buffer.concat([Buffer.from([0x00]), str(name, huffman), str(value, huffman)]);
}

/** A literal whose value is the given Huffman bytes as they are (to craft bad ones). */
function rawHuffmanValue(body: Buffer): Buffer {
  return Buffer.concat([Buffer.from([0x00, 0x01, 0x78]), int(body.length, 0x7f, 0x80), body]);
}

describe('RFC 7541 Appendix C', () => {
  it('C.2.1 literal with indexing', () => {
    const d = new HpackDecoder();
    const block = hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572');
    expect(decodeAll(d, block)).toEqual([['custom-key', 'custom-header']]);
    expect(d.dynamicTable()).toEqual([['custom-key', 'custom-header']]);
    expect(d.dynamicTableSize).toBe(55);
  });

  it('C.2.2 literal without indexing', () => {
    const d = new HpackDecoder();
    expect(decodeAll(d, hex('040c 2f73 616d 706c 652f 7061 7468'))).toEqual([[':path', '/sample/path']]);
    expect(d.dynamicTable()).toEqual([]);
  });

  it('C.2.3 literal never indexed', () => {
    const d = new HpackDecoder();
    expect(decodeAll(d, hex('1008 7061 7373 776f 7264 0673 6563 7265 74'))).toEqual([['password', 'secret']]);
    expect(d.dynamicTable()).toEqual([]);
  });

  it('C.2.4 indexed field', () => {
    const d = new HpackDecoder();
    expect(decodeAll(d, hex('82'))).toEqual([[':method', 'GET']]);
    expect(d.dynamicTable()).toEqual([]);
  });

  const request1: Field[] = [
    [':method', 'GET'],
    [':scheme', 'http'],
    [':path', '/'],
    [':authority', 'www.example.com'],
  ];
  const request2: Field[] = [...request1, ['cache-control', 'no-cache']];
  const request3: Field[] = [
    [':method', 'GET'],
    [':scheme', 'https'],
    [':path', '/index.html'],
    [':authority', 'www.example.com'],
    ['custom-key', 'custom-value'],
  ];
  const table1: Field[] = [[':authority', 'www.example.com']];
  const table2: Field[] = [['cache-control', 'no-cache'], ...table1];
  const table3: Field[] = [['custom-key', 'custom-value'], ...table2];

  function requests(blocks: string[]): void {
    const d = new HpackDecoder();
    expect(decodeAll(d, hex(blocks[0]!))).toEqual(request1);
    expect(d.dynamicTable()).toEqual(table1);
    expect(d.dynamicTableSize).toBe(57);
    // the :authority of the second and third requests is dynamic index 62, then 63
    expect(decodeAll(d, hex(blocks[1]!))).toEqual(request2);
    expect(d.dynamicTable()).toEqual(table2);
    expect(d.dynamicTableSize).toBe(110);
    expect(decodeAll(d, hex(blocks[2]!))).toEqual(request3);
    expect(d.dynamicTable()).toEqual(table3);
    expect(d.dynamicTableSize).toBe(164);
  }

  it('C.3 requests without Huffman coding', () => {
    requests([
      '8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d',
      '8286 84be 5808 6e6f 2d63 6163 6865',
      '8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65',
    ]);
  });

  it('C.4 requests with Huffman coding', () => {
    requests([
      '8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff',
      '8286 84be 5886 a8eb 1064 9cbf',
      '8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf',
    ]);
  });

  const date1 = 'Mon, 21 Oct 2013 20:13:21 GMT';
  const date2 = 'Mon, 21 Oct 2013 20:13:22 GMT';
  const location = 'https://www.example.com';
  const cookie = 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1';

  function responses(blocks: string[]): void {
    const d = new HpackDecoder(256);
    expect(decodeAll(d, hex(blocks[0]!))).toEqual([
      [':status', '302'],
      ['cache-control', 'private'],
      ['date', date1],
      ['location', location],
    ]);
    expect(d.dynamicTable()).toEqual([
      ['location', location],
      ['date', date1],
      ['cache-control', 'private'],
      [':status', '302'],
    ]);
    expect(d.dynamicTableSize).toBe(222);
    // ':status: 307' evicts ':status: 302'
    expect(decodeAll(d, hex(blocks[1]!))).toEqual([
      [':status', '307'],
      ['cache-control', 'private'],
      ['date', date1],
      ['location', location],
    ]);
    expect(d.dynamicTable()).toEqual([
      [':status', '307'],
      ['location', location],
      ['date', date1],
      ['cache-control', 'private'],
    ]);
    expect(d.dynamicTableSize).toBe(222);
    expect(decodeAll(d, hex(blocks[2]!))).toEqual([
      [':status', '200'],
      ['cache-control', 'private'],
      ['date', date2],
      ['location', location],
      ['content-encoding', 'gzip'],
      ['set-cookie', cookie],
    ]);
    expect(d.dynamicTable()).toEqual([
      ['set-cookie', cookie],
      ['content-encoding', 'gzip'],
      ['date', date2],
    ]);
    expect(d.dynamicTableSize).toBe(215);
  }

  it('C.5 responses without Huffman coding, 256-byte table', () => {
    responses([
      `4803 3330 3258 0770 7269 7661 7465 611d
       4d6f 6e2c 2032 3120 4f63 7420 3230 3133
       2032 303a 3133 3a32 3120 474d 546e 1768
       7474 7073 3a2f 2f77 7777 2e65 7861 6d70
       6c65 2e63 6f6d`,
      '4803 3330 37c1 c0bf',
      `88c1 611d 4d6f 6e2c 2032 3120 4f63 7420
       3230 3133 2032 303a 3133 3a32 3220 474d
       54c0 5a04 677a 6970 7738 666f 6f3d 4153
       444a 4b48 514b 425a 584f 5157 454f 5049
       5541 5851 5745 4f49 553b 206d 6178 2d61
       6765 3d33 3630 303b 2076 6572 7369 6f6e
       3d31`,
    ]);
  });

  it('C.6 responses with Huffman coding, 256-byte table', () => {
    responses([
      `4882 6402 5885 aec3 771a 4b61 96d0 7abe
       9410 54d4 44a8 2005 9504 0b81 66e0 82a6
       2d1b ff6e 919d 29ad 1718 63c7 8f0b 97c8
       e9ae 82ae 43d3`,
      '4883 640e ffc1 c0bf',
      `88c1 6196 d07a be94 1054 d444 a820 0595
       040b 8166 e084 a62d 1bff c05a 839b d9ab
       77ad 94e7 821d d7f2 e6c7 b335 dfdf cd5b
       3960 d5af 2708 7f36 72c1 ab27 0fb5 291f
       9587 3160 65c0 03ed 4ee5 b106 3d50 07`,
    ]);
  });
});

describe('HPACK decoder', () => {
  it('has the 61 static entries of Appendix A', () => {
    expect(STATIC_TABLE).toHaveLength(61);
    expect(STATIC_TABLE[0]).toEqual([':authority', '']);
    expect(STATIC_TABLE[7]).toEqual([':status', '200']);
    expect(STATIC_TABLE[30]).toEqual(['content-type', '']);
    expect(STATIC_TABLE[60]).toEqual(['www-authenticate', '']);
    const d = new HpackDecoder();
    for (let i = 1; i <= 61; i++) expect(decodeAll(d, Buffer.from([0x80 | i]))).toEqual([STATIC_TABLE[i - 1]]);
  });

  it('decodes an empty block', () => {
    expect(decodeAll(new HpackDecoder(), Buffer.alloc(0))).toEqual([]);
  });

  it('takes names from the static and dynamic tables in every literal form', () => {
    const d = new HpackDecoder();
    // incremental indexing with static name 'content-type' (31), then without indexing and never
    // indexed with the dynamic name at 62
    const block = Buffer.concat([
      Buffer.from([0x5f]),
      str(Buffer.from('application/grpc'), false),
      int(62, 0x0f, 0x00),
      str(Buffer.from('a'), true),
      int(62, 0x0f, 0x10),
      str(Buffer.from('b'), false),
      Buffer.from([0x80 | 62]),
    ]);
    expect(decodeAll(d, block)).toEqual([
      ['content-type', 'application/grpc'],
      ['content-type', 'a'],
      ['content-type', 'b'],
      ['content-type', 'application/grpc'],
    ]);
    expect(d.dynamicTable()).toEqual([['content-type', 'application/grpc']]);
  });

  it('applies size updates at the start of a block, evicting, and drops entries larger than the table', () => {
    const d = new HpackDecoder();
    const add = (name: string, value: string): Buffer =>
      Buffer.concat([Buffer.from([0x40]), str(Buffer.from(name), false), str(Buffer.from(value), false)]);
    decodeAll(d, Buffer.concat([add('a', '1'), add('b', '2'), add('c', '3')]));
    expect(d.dynamicTableSize).toBe(3 * 34);
    // two updates in a row (RFC 7541 4.2): down to 70 keeps the two newest, then up to 100
    decodeAll(d, Buffer.concat([int(70, 0x1f, 0x20), int(100, 0x1f, 0x20)]));
    expect(d.dynamicTable()).toEqual([
      ['c', '3'],
      ['b', '2'],
    ]);
    // an entry of 101 bytes empties the table and is not added, yet is still emitted
    expect(decodeAll(d, add('x', 'y'.repeat(68)))).toEqual([['x', 'y'.repeat(68)]]);
    expect(d.dynamicTable()).toEqual([]);
    expect(d.dynamicTableSize).toBe(0);
    // size 0 then back: the table keeps working
    decodeAll(d, Buffer.concat([int(0, 0x1f, 0x20), int(4096, 0x1f, 0x20), add('k', 'v')]));
    expect(d.dynamicTable()).toEqual([['k', 'v']]);
  });

  it('keeps order and indexes through ring growth and wrap-around', () => {
    const d = new HpackDecoder(4096);
    const model: Field[] = []; // newest first
    let size = 0;
    for (let i = 0; i < 500; i++) {
      const field: Field = [`name-${i % 7}`, 'v'.repeat(i % 40) + String(i)];
      decodeAll(d, Buffer.concat([Buffer.from([0x40]), str(Buffer.from(field[0]), i % 2 === 0), str(Buffer.from(field[1]), i % 3 === 0)]));
      model.unshift(field);
      size += field[0].length + field[1].length + 32;
      while (size > 4096) {
        const old = model.pop()!;
        size -= old[0].length + old[1].length + 32;
      }
      if (i % 50 === 49) {
        expect(d.dynamicTable()).toEqual(model);
        expect(d.dynamicTableSize).toBe(size);
        const last = 61 + model.length;
        expect(decodeAll(d, Buffer.concat([int(62, 0x7f, 0x80), int(last, 0x7f, 0x80)]))).toEqual([model[0], model[model.length - 1]]);
      }
    }
  });

  it('decodes multi-byte integers and long strings', () => {
    const value = 'z'.repeat(300);
    expect(decodeAll(new HpackDecoder(), literal(Buffer.from('long'), Buffer.from(value), false))).toEqual([['long', value]]);
    expect(decodeAll(new HpackDecoder(), literal(Buffer.from('long'), Buffer.from(value), true))).toEqual([['long', value]]);
    // a value of 127 + 2^21 bytes: four continuation bytes (0x80 0x80 0x80 0x01)
    const big = 'q'.repeat(127 + 2 ** 21);
    const d = new HpackDecoder(4096, 4 * 1024 * 1024);
    expect(decodeAll(d, literal(Buffer.from('big'), Buffer.from(big), false))[0]![1]).toHaveLength(big.length);
  });

  it('gives latin1 strings for bytes above 0x7f', () => {
    const bytes = Buffer.from([0x61, 0xe9, 0xff, 0x80]);
    expect(decodeAll(new HpackDecoder(), literal(Buffer.from('x-bin'), bytes, false))).toEqual([['x-bin', 'a\u00e9\u00ff\u0080']]);
  });

  describe('errors', () => {
    it('index 0', () => {
      expectError(hex('80'), /index 0/);
    });

    it('index beyond the static and dynamic tables', () => {
      expectError(hex('be'), /index 62 beyond/); // empty dynamic table
      expectError(hex('ff 80 01'), /index 255 beyond/);
      // as a literal's name, with one dynamic entry (62) but asking for 63
      const d = new HpackDecoder();
      decodeAll(d, hex('400a 6375 7374 6f6d 2d6b 6579 0d63 7573 746f 6d2d 6865 6164 6572'));
      expect(decodeAll(d, hex('be'))).toEqual([['custom-key', 'custom-header']]);
      expect(() => decodeAll(d, hex('7f 00 01 61'))).toThrow(/index 63 beyond/);
    });

    it('truncated integer', () => {
      expectError(hex('ff'), /truncated integer/);
      expectError(hex('ff 80 80'), /truncated integer/);
      expectError(hex('00 7f'), /truncated integer/); // a name length cut short
    });

    it('integer overflow', () => {
      expectError(hex('ff ff ff ff ff 0f'), /integer overflow/); // 127 + 2^32 - 1 > 2^31 - 1
      expectError(hex('ff 80 80 80 80 80 00'), /integer overflow/); // six continuation bytes
      expectError(hex('00 7f 80 80 80 80 08'), /integer overflow/); // a 2^31 + 127 name length
    });

    it('truncated string', () => {
      expectError(hex('00 05 61 62'), /string runs past the block/);
      expectError(hex('00 01 61 03 61 62'), /string runs past the block/);
      expectError(hex('00 01 61'), /truncated block/); // no value at all
      expectError(hex('41'), /truncated block/); // indexed name, no value
    });

    it('table size update above the advertised maximum', () => {
      expectError(int(4097, 0x1f, 0x20), /dynamic table size 4097 above the 4096 allowed/);
      expectError(int(257, 0x1f, 0x20), /above the 256 allowed/, new HpackDecoder(256));
      expect(decodeAll(new HpackDecoder(256), int(256, 0x1f, 0x20))).toEqual([]);
    });

    it('table size update after a field', () => {
      expectError(Buffer.concat([hex('82'), int(0, 0x1f, 0x20)]), /size update after a header field/);
    });

    it('header list over the cap', () => {
      const fields = Buffer.concat([literal(Buffer.from('a'), Buffer.from('x'.repeat(30)), false), hex('82')]);
      // 1 + 30 + 32 = 63, then ':method GET' 7 + 3 + 32 = 42: 105 in all
      expect(decodeAll(new HpackDecoder(4096, 105), fields)).toHaveLength(2);
      expectError(fields, /header list larger than 104 bytes/, new HpackDecoder(4096, 104));
      // the default cap is 64 KiB
      const big = literal(Buffer.from('a'), Buffer.from('x'.repeat(64 * 1024)), false);
      expectError(big, /header list larger than 65536 bytes/);
    });
  });
});

describe('Huffman code', () => {
  it('has the properties of RFC 7541 Appendix B', () => {
    expect(HUFFMAN_CODE_LENGTHS).toHaveLength(257);
    // Kraft sum exactly 1: a complete prefix code (summed in units of 2^-30 to stay exact)
    expect(HUFFMAN_CODE_LENGTHS.reduce((sum, len) => sum + 2 ** (30 - len), 0)).toBe(2 ** 30);
    expect(HUFFMAN_CODE_LENGTHS[256]).toBe(30);
    expect(CODES[256]).toBe(0x3fffffff);
    expect([HUFFMAN_CODE_LENGTHS[0x30], CODES[0x30]]).toEqual([5, 0b00000]); // '0'
    expect([HUFFMAN_CODE_LENGTHS[0x61], CODES[0x61]]).toEqual([5, 0b00011]); // 'a'
    expect([HUFFMAN_CODE_LENGTHS[0x20], CODES[0x20]]).toEqual([6, 0b010100]); // ' '
    // a few more from the RFC's table, across lengths
    expect(CODES[0]).toBe(0x1ff8);
    expect(CODES[0x5c]).toBe(0x7fff0); // '\'
    expect(CODES[10]).toBe(0x3ffffffc);
    expect(CODES[255]).toBe(0x3ffffee);
    // codes are canonical: same length ⇒ consecutive in symbol order
    const bySize = [...CODES.keys()].sort((a, b) => HUFFMAN_CODE_LENGTHS[a]! - HUFFMAN_CODE_LENGTHS[b]! || a - b);
    for (let i = 1; i < bySize.length; i++) {
      const [p, s] = [bySize[i - 1]!, bySize[i]!];
      expect(CODES[s]).toBe((CODES[p]! + 1) * 2 ** (HUFFMAN_CODE_LENGTHS[s]! - HUFFMAN_CODE_LENGTHS[p]!));
    }
  });

  it('round-trips every byte value', () => {
    const d = new HpackDecoder();
    const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    for (let b = 0; b < 256; b++) {
      for (const n of [1, 2, 3, 5, 8]) {
        const bytes = Buffer.alloc(n, b);
        expect(decodeAll(d, literal(Buffer.from('n'), bytes, true))).toEqual([['n', bytes.toString('latin1')]]);
      }
    }
    expect(decodeAll(d, literal(all, all, true))).toEqual([[all.toString('latin1'), all.toString('latin1')]]);
    // pseudo-random strings of every length up to 64 (every padding length)
    let seed = 12345;
    for (let len = 0; len <= 64; len++) {
      const bytes = Buffer.alloc(len);
      for (let i = 0; i < len; i++) bytes[i] = (seed = (seed * 1103515245 + 12345) % 2 ** 31) >> 16;
      expect(decodeAll(d, literal(Buffer.from('r'), bytes, true))).toEqual([['r', bytes.toString('latin1')]]);
    }
  });

  it('accepts padding of 1 to 7 ones', () => {
    // 'a' (00011) + 3 ones; 'aa' + 6 ones; '0aa' (15 bits) + 1 one
    expect(decodeAll(new HpackDecoder(), rawHuffmanValue(hex('1f')))).toEqual([['x', 'a']]);
    expect(decodeAll(new HpackDecoder(), rawHuffmanValue(hex('18 ff')))).toEqual([['x', 'aa']]);
    expect(decodeAll(new HpackDecoder(), rawHuffmanValue(hex('00 c7')))).toEqual([['x', '0aa']]);
  });

  it('rejects invalid padding', () => {
    // 'a' then 3 padding bits then a whole byte of ones: 11 bits of padding
    expectError(rawHuffmanValue(hex('1f ff')), /invalid Huffman padding/);
    // 8 ones alone
    expectError(rawHuffmanValue(hex('ff')), /invalid Huffman padding/);
    // 'a' + padding 101
    expectError(rawHuffmanValue(hex('1d')), /invalid Huffman padding/);
    // 'a' + padding 011
    expectError(rawHuffmanValue(hex('1b')), /invalid Huffman padding/);
    // '0' (00000) + 000: a zero pad, which is also not a complete symbol
    expectError(rawHuffmanValue(hex('00')), /invalid Huffman padding/);
  });

  it('rejects EOS inside a string', () => {
    // EOS (30 ones) then 2 ones of padding
    expectError(rawHuffmanValue(hex('ff ff ff ff')), /EOS in a Huffman-coded string/);
    // 'a' (00011) then EOS then 5 bits of padding
    expectError(rawHuffmanValue(hex('1f ff ff ff ff')), /EOS in a Huffman-coded string/);
    // EOS in the middle, followed by a symbol
    expectError(rawHuffmanValue(hex('ff ff ff fc 7f')), /EOS in a Huffman-coded string/);
  });
});

describe('encodeHeaders', () => {
  it('encodes :status 200 as the single byte 0x88 and the static statuses as indexed fields', () => {
    expect(encodeHeaders([[':status', '200']])).toEqual(Buffer.from([0x88]));
    const statuses = ['200', '204', '206', '304', '400', '404', '500'];
    expect([...encodeHeaders(statuses.map((s) => [':status', s]))]).toEqual([0x88, 0x89, 0x8a, 0x8b, 0x8c, 0x8d, 0x8e]);
    // other statuses: literal without indexing on the name ':status' (8)
    expect(encodeHeaders([[':status', '415']])).toEqual(hex('08 03 343135'));
  });

  it('names content-type by static index 31, literal without indexing', () => {
    const out = encodeHeaders([['content-type', 'application/grpc']]);
    expect(out.subarray(0, 3)).toEqual(Buffer.from([0x0f, 0x10, 16]));
    expect(out.subarray(3).toString('latin1')).toBe('application/grpc');
  });

  it('writes literal names and values raw, and decodes back to the same fields', () => {
    const fields: Field[] = [
      [':status', '200'],
      ['content-type', 'application/grpc'],
      ['grpc-status', '0'],
      ['grpc-message', 'x'.repeat(40) + '%20done'],
      ['grpc-encoding', 'identity'],
      ['x-long', 'v'.repeat(300)],
      ['x-latin1', 'caf\u00e9 \u00ff'],
      ['user-agent', ''],
      [':status', '302'],
    ];
    const out = encodeHeaders(fields);
    const d = new HpackDecoder();
    expect(decodeAll(d, out)).toEqual(fields);
    expect(d.dynamicTable()).toEqual([]);
    expect(out.indexOf(hex('00 0b') /* literal name 'grpc-status' */)).toBeGreaterThan(0);
    // no byte of a field start has the H bit on a string, nor indexing flags: every literal is 0000xxxx
    expect(encodeHeaders([['grpc-status', '0']])).toEqual(Buffer.concat([hex('00 0b'), Buffer.from('grpc-status'), hex('01 30')]));
    expect(encodeHeaders([])).toEqual(Buffer.alloc(0));
  });
});

describe('against nghttp2 (node:http2)', () => {
  /** Frames on a raw connection: 9-byte header, then payload. */
  const frame = (type: number, flags: number, stream: number, payload: Buffer): Buffer =>
    Buffer.concat([frameHeader(payload.length, type, flags, stream), payload]);

  it('decodes the blocks of its requests (Huffman, dynamic table) and it decodes ours', async () => {
    const blocks: Buffer[] = [];
    const server = net.createServer((socket) => {
      let buf = Buffer.alloc(0);
      let preface = false;
      let fragment: Buffer[] = [];
      socket.write(frame(4, 0, 0, Buffer.alloc(0))); // our SETTINGS
      socket.on('data', (chunk: Buffer) => {
        buf = Buffer.concat([buf, chunk]);
        if (!preface) {
          if (buf.length < 24) return;
          buf = buf.subarray(24);
          preface = true;
        }
        while (buf.length >= 9) {
          const len = buf.readUIntBE(0, 3);
          if (buf.length < 9 + len) return;
          const [type, flags, stream] = [buf[3]!, buf[4]!, buf.readUInt32BE(5) & 0x7fffffff];
          let payload = buf.subarray(9, 9 + len);
          buf = buf.subarray(9 + len);
          if (type === 4 && (flags & 1) === 0) socket.write(frame(4, 1, 0, Buffer.alloc(0)));
          if (type !== 1 && type !== 9) continue;
          if (type === 1) {
            if (flags & 0x08) payload = payload.subarray(1, payload.length - payload[0]!);
            if (flags & 0x20) payload = payload.subarray(5);
          }
          fragment.push(payload);
          if (flags & 0x04) {
            blocks.push(Buffer.concat(fragment));
            fragment = [];
            const headers = encodeHeaders([
              [':status', '200'],
              ['content-type', 'application/grpc'],
              ['x-echo', `stream ${stream}`],
            ]);
            socket.write(frame(1, 0x04 | 0x01, stream, headers)); // END_HEADERS | END_STREAM
          }
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const client = http2.connect(`http://127.0.0.1:${port}`);
    try {
      const request = (extra: http2.OutgoingHttpHeaders): Promise<http2.IncomingHttpHeaders> =>
        new Promise((resolve, reject) => {
          const req = client.request({
            ':method': 'POST',
            ':path': '/pkg.Svc/Method',
            'content-type': 'application/grpc',
            te: 'trailers',
            ...extra,
          });
          req.on('response', resolve);
          req.on('error', reject);
          req.resume();
          req.end();
        });
      const first = await request({ 'x-token': 'abc123', 'grpc-timeout': '100m' });
      const second = await request({ 'x-token': 'abc123', 'x-other': 'Zq~`{}|\\^ \u00e9' });
      expect(first[':status']).toBe(200);
      expect(first['content-type']).toBe('application/grpc');
      expect(first['x-echo']).toBe('stream 1');
      expect(second['x-echo']).toBe('stream 3');
    } finally {
      client.close();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }

    const d = new HpackDecoder();
    const [first, second] = blocks.map((b) => new Map(decodeAll(d, b)));
    for (const h of [first!, second!]) {
      expect(h.get(':method')).toBe('POST');
      expect(h.get(':path')).toBe('/pkg.Svc/Method');
      expect(h.get(':scheme')).toBe('http');
      expect(h.get(':authority')).toBe(`127.0.0.1:${port}`);
      expect(h.get('content-type')).toBe('application/grpc');
      expect(h.get('te')).toBe('trailers');
      expect(h.get('x-token')).toBe('abc123');
    }
    expect(first!.get('grpc-timeout')).toBe('100m');
    expect(second!.get('x-other')).toBe('Zq~`{}|\\^ \u00e9');
    // nghttp2 Huffman-codes strings when that is shorter: the bytes of the test encoder's coding are there
    expect(blocks[0]!.includes(huffmanEncode(Buffer.from('/pkg.Svc/Method')))).toBe(true);
    // nghttp2 indexes what it sends, so the second block leans on the dynamic table
    expect(d.dynamicTable().length).toBeGreaterThan(0);
    expect(blocks[1]!.length).toBeLessThan(blocks[0]!.length);
  });
});
