// HTTP/2 frames (RFC 9113 4, 6): the wire constants, the frame header and the small control frames the
// server sends, and the connection error the parser throws. No state: see connection.ts.
import type { H2Limit } from './limits.js';

export const PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export const FrameType = {
  DATA: 0,
  HEADERS: 1,
  PRIORITY: 2,
  RST_STREAM: 3,
  SETTINGS: 4,
  PUSH_PROMISE: 5,
  PING: 6,
  GOAWAY: 7,
  WINDOW_UPDATE: 8,
  CONTINUATION: 9,
} as const;

export const END_STREAM = 0x1;
export const ACK = 0x1;
export const END_HEADERS = 0x4;
export const PADDED = 0x8;
export const PRIORITY_FLAG = 0x20;

export const H2Error = {
  NO_ERROR: 0,
  PROTOCOL_ERROR: 1,
  INTERNAL_ERROR: 2,
  FLOW_CONTROL_ERROR: 3,
  SETTINGS_TIMEOUT: 4,
  STREAM_CLOSED: 5,
  FRAME_SIZE_ERROR: 6,
  REFUSED_STREAM: 7,
  CANCEL: 8,
  COMPRESSION_ERROR: 9,
  ENHANCE_YOUR_CALM: 11,
} as const;

export const SETTINGS_ENABLE_PUSH = 2;
export const SETTINGS_MAX_CONCURRENT_STREAMS = 3;
export const SETTINGS_INITIAL_WINDOW_SIZE = 4;
export const SETTINGS_MAX_FRAME_SIZE = 5;
export const SETTINGS_MAX_HEADER_LIST_SIZE = 6;

export const DEFAULT_WINDOW = 65_535;
export const MAX_WINDOW = 2 ** 31 - 1;
/** the largest frame payload we accept (the protocol default: we do not advertise more) */
export const MAX_FRAME_PAYLOAD = 16_384;

/** The 9-byte header of a frame (RFC 9113 4.1); exported for tests that speak raw HTTP/2. */
export function frameHeader(length: number, type: number, flags: number, streamId: number): Buffer {
  const b = Buffer.allocUnsafe(9);
  b.writeUIntBE(length, 0, 3);
  b[3] = type;
  b[4] = flags;
  b.writeUInt32BE(streamId, 5);
  return b;
}

/** A SETTINGS frame (not an ACK) with these [id, value] pairs. */
export function settingsFrame(settings: [number, number][]): Buffer {
  const payload = Buffer.allocUnsafe(settings.length * 6);
  settings.forEach(([id, value], i) => {
    payload.writeUInt16BE(id, i * 6);
    payload.writeUInt32BE(value, i * 6 + 2);
  });
  return Buffer.concat([frameHeader(payload.length, FrameType.SETTINGS, 0, 0), payload]);
}

/** A frame whose payload is one 32-bit value (WINDOW_UPDATE, RST_STREAM). */
export function uint32Frame(type: number, streamId: number, value: number): Buffer {
  const b = Buffer.allocUnsafe(13);
  b.writeUIntBE(4, 0, 3);
  b[3] = type;
  b[4] = 0;
  b.writeUInt32BE(streamId, 5);
  b.writeUInt32BE(value, 9);
  return b;
}

/** GOAWAY with the last stream id, the error code and a debug message. */
export function goawayFrame(lastStreamId: number, code: number, debug: string): Buffer {
  const d = Buffer.from(debug, 'utf8');
  const p = Buffer.allocUnsafe(8 + d.length);
  p.writeUInt32BE(lastStreamId, 0);
  p.writeUInt32BE(code, 4);
  d.copy(p, 8);
  return Buffer.concat([frameHeader(p.length, FrameType.GOAWAY, 0, 0), p]);
}

/** The payload without its padding (PADDED flag), or a PROTOCOL_ERROR. */
export function unpad(flags: number, payload: Buffer): Buffer {
  if (!(flags & PADDED)) return payload;
  if (payload.length < 1) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'padded frame without a pad length');
  const pad = payload[0]!;
  if (pad >= payload.length) throw new ConnectionError(H2Error.PROTOCOL_ERROR, 'padding longer than the frame');
  return payload.subarray(1, payload.length - pad);
}

/** A connection error (RFC 9113 5.4.1): the connection answers GOAWAY with the code and closes; `limit`: an abuse limit hit. */
export class ConnectionError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly limit?: H2Limit,
  ) {
    super(message);
  }
}
