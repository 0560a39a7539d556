// An upstream for protocol upgrades on a random loopback port: plain requests are answered with JSON
// describing them (body length included), a WebSocket upgrade is accepted and every message echoed
// (the RFC 6455 handshake and framing, written here: the project has no WebSocket server dependency),
// and a CONNECT request is answered 200 and its tunnel echoes the bytes it carries.
import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';

export interface UpgradeUpstream {
  port: number;
  /** plain requests seen, newest last */
  seen: { method: string; path: string; headers: http.IncomingHttpHeaders; bodyLength: number }[];
  /** request targets of the CONNECT requests that arrived */
  connects: string[];
  close(): Promise<void>;
}

const WEBSOCKET_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';

export async function startUpgradeUpstream(): Promise<UpgradeUpstream> {
  const seen: UpgradeUpstream['seen'] = [];
  const connects: string[] = [];
  const sockets = new Set<Duplex>();
  const server = http.createServer((req, res) => {
    let bodyLength = 0;
    req.on('data', (c: Buffer) => (bodyLength += c.length));
    req.on('end', () => {
      const entry = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, bodyLength };
      seen.push(entry);
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify(entry));
    });
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const key = req.headers['sec-websocket-key'];
    if (req.headers.upgrade?.toLowerCase() !== 'websocket' || typeof key !== 'string') {
      socket.end('HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
      return;
    }
    const accept = createHash('sha1')
      .update(key + WEBSOCKET_GUID)
      .digest('base64');
    socket.write(
      `HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: ${accept}\r\n\r\n`,
    );
    echoFrames(socket, head);
  });
  server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    connects.push(req.url ?? '');
    socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) socket.write(head);
    socket.on('data', (d: Buffer) => socket.write(d));
    socket.on('error', () => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    connects,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Reads client frames (masked, RFC 6455 section 5) from `socket` and echoes each data frame unmasked. */
function echoFrames(socket: Duplex, head: Buffer): void {
  let buffered = head;
  const onData = (chunk: Buffer): void => {
    buffered = Buffer.concat([buffered, chunk]);
    for (;;) {
      const frame = parseFrame(buffered);
      if (!frame) return;
      buffered = buffered.subarray(frame.size);
      if (frame.opcode === 0x8) {
        socket.end(encodeFrame(0x8, frame.payload.subarray(0, 2)));
        return;
      }
      if (frame.opcode === 0x9) socket.write(encodeFrame(0xa, frame.payload));
      else if (frame.opcode === 0x1 || frame.opcode === 0x2 || frame.opcode === 0x0)
        socket.write(encodeFrame(frame.opcode, frame.payload, frame.fin));
    }
  };
  socket.on('data', onData);
  socket.on('error', () => socket.destroy());
  if (head.length) onData(Buffer.alloc(0));
}

function parseFrame(b: Buffer): { fin: boolean; opcode: number; payload: Buffer; size: number } | undefined {
  if (b.length < 2) return undefined;
  const fin = (b[0]! & 0x80) !== 0;
  const opcode = b[0]! & 0x0f;
  const masked = (b[1]! & 0x80) !== 0;
  let length = b[1]! & 0x7f;
  let offset = 2;
  if (length === 126) {
    if (b.length < 4) return undefined;
    length = b.readUInt16BE(2);
    offset = 4;
  } else if (length === 127) {
    if (b.length < 10) return undefined;
    length = Number(b.readBigUInt64BE(2));
    offset = 10;
  }
  const maskLength = masked ? 4 : 0;
  if (b.length < offset + maskLength + length) return undefined;
  const mask = b.subarray(offset, offset + maskLength);
  const payload = Buffer.from(b.subarray(offset + maskLength, offset + maskLength + length));
  if (masked) for (let i = 0; i < payload.length; i++) payload[i] = payload[i]! ^ mask[i % 4]!;
  return { fin, opcode, payload, size: offset + maskLength + length };
}

/** A server frame (unmasked). */
function encodeFrame(opcode: number, payload: Buffer, fin = true): Buffer {
  const first = (fin ? 0x80 : 0) | opcode;
  let header: Buffer;
  if (payload.length < 126) header = Buffer.from([first, payload.length]);
  else if (payload.length < 65536) {
    header = Buffer.alloc(4);
    header[0] = first;
    header[1] = 126;
    header.writeUInt16BE(payload.length, 2);
  } else {
    header = Buffer.alloc(10);
    header[0] = first;
    header[1] = 127;
    header.writeBigUInt64BE(BigInt(payload.length), 2);
  }
  return Buffer.concat([header, payload]);
}
