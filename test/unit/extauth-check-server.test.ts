// The extauth service's unary Check server (Legate's HTTP/2 server, no grpc-js) against a grpc-js client built from
// the real proto definitions, and raw HTTP/2 streams: framing, statuses, messages over several DATA
// frames, refused messages, other methods.
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2_TRANSPORTS } from '../../extensions/common/h2/transport.js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import { CHECK_PATH, frameMessage, startCheckServer, type CheckServer } from '../../extensions/extauth/check-server.js';
import { parseCheckRequest } from '../../extensions/extauth/wire.js';

const Authorization = lookupService(loadEnvoyService('envoy/service/auth/v3/external_auth.proto'), 'envoy.service.auth.v3.Authorization');
const check = Authorization.service['Check']!;

let server: CheckServer;
/** What these tests read of a CheckResponse (proto-loader, keepCase). */
interface CheckResponseOut {
  status: { code: number };
  ok_response?: { headers: { header: { key: string; value: string } }[] };
}
type CheckCallback = (err: grpc.ServiceError | null, res: CheckResponseOut) => void;
type CheckClient = grpc.Client & { Check(req: object, done: CheckCallback): void };

let client: CheckClient;
const errors: string[] = [];

const request = (authorization: string, configId = 'ns.cfg'): object => ({
  attributes: {
    request: { http: { headers: { authorization } } },
    context_extensions: { config_id: configId },
  },
});

function call(req: object): Promise<{ err: grpc.ServiceError | null; res: CheckResponseOut }> {
  return new Promise((resolve) => client.Check(req, (err, res) => resolve({ err, res })));
}

/** Writes `bytes` to a new raw HTTP/2 stream in the given pieces, then half-closes; resolves with the
 * answer bytes and the grpc-status (trailers, or headers of a trailers-only answer). */
async function raw(
  bytes: Buffer,
  cuts: number[],
  headers: http2.OutgoingHttpHeaders = {},
): Promise<{ data: Buffer; grpcStatus: string | undefined; httpStatus: number | undefined }> {
  const session = http2.connect(`http://127.0.0.1:${server.port}`);
  try {
    const stream = session.request({
      ':method': 'POST',
      ':path': CHECK_PATH,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...headers,
    });
    stream.on('error', () => undefined);
    const chunks: Buffer[] = [];
    let grpcStatus: string | undefined;
    let httpStatus: number | undefined;
    stream.on('data', (d: Buffer) => chunks.push(d));
    stream.on('response', (h) => {
      httpStatus = h[':status'] as number;
      grpcStatus ??= h['grpc-status'] as string | undefined;
    });
    stream.on('trailers', (h) => (grpcStatus = h['grpc-status'] as string | undefined));
    const closed = new Promise<void>((resolve) => stream.on('close', () => resolve()));
    let from = 0;
    for (const cut of [...cuts, bytes.length]) {
      if (stream.destroyed || stream.writableEnded) break;
      stream.write(bytes.subarray(from, cut));
      from = cut;
      await new Promise((r) => setTimeout(r, 5)); // separate DATA frames
    }
    if (!stream.destroyed) stream.end();
    await closed;
    return { data: Buffer.concat(chunks), grpcStatus, httpStatus };
  } finally {
    session.destroy();
  }
}

describe.each(H2_TRANSPORTS)('extauth Check server (%s transport)', (transport) => {
  beforeAll(async () => {
    server = await startCheckServer('127.0.0.1', 0, {
      // answers allow for `Bearer good`, a denial otherwise; `Bearer later` answers on a later tick; `Bearer throw` throws
      handle(bytes, reply) {
        const input = parseCheckRequest(bytes);
        if (input.authorization === 'Bearer throw') throw new Error('boom');
        const answer = (): void =>
          reply(
            frameMessage(
              check.responseSerialize(
                input.authorization === 'Bearer good' || input.authorization === 'Bearer later'
                  ? { status: { code: 0 }, ok_response: { headers: [{ header: { key: 'x-config', value: input.configId } }] } }
                  : { status: { code: 7 }, denied_response: { status: { code: 'Forbidden' }, body: 'no' } },
              ),
            ),
          );
        if (input.authorization === 'Bearer later') setTimeout(answer, 10);
        else answer();
      },
      onError: (what) => errors.push(what),
      http2: { transport },
    });
    client = new Authorization(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as CheckClient;
  });

  afterAll(async () => {
    client?.close();
    await server?.stop(500);
  });

  it('answers unary Checks from a grpc-js client, at once or later, many at a time', async () => {
    const ok = await call(request('Bearer good', 'a.b'));
    expect(ok.err).toBeNull();
    expect(ok.res.status.code).toBe(0);
    expect(ok.res.ok_response!.headers[0]!.header).toMatchObject({ key: 'x-config', value: 'a.b' });
    const denied = await call(request('Bearer bad'));
    expect(denied.err).toBeNull();
    expect(denied.res.status.code).toBe(7);
    const many = await Promise.all(Array.from({ length: 50 }, (_, i) => call(request(i % 2 ? 'Bearer later' : 'Bearer good', `c.${i}`))));
    expect(many.every((m) => m.err === null && m.res.status.code === 0)).toBe(true);
    expect(many.map((m) => m.res.ok_response!.headers[0]!.header.value)).toEqual(Array.from({ length: 50 }, (_, i) => `c.${i}`));
  });

  it('reassembles a request cut anywhere across DATA frames (a long token)', async () => {
    const bytes = frameMessage(check.requestSerialize(request(`Bearer ${'t'.repeat(40_000)}`)));
    const r = await raw(bytes, [2, 9, 20_000]);
    expect(r.grpcStatus).toBe('0');
    const len = r.data.readUInt32BE(1);
    expect(check.responseDeserialize(r.data.subarray(5, 5 + len)).status.code).toBe(7);
  });

  it('refuses compressed, oversized, missing, truncated and repeated messages as grpc-js does', async () => {
    const msg = frameMessage(check.requestSerialize(request('Bearer good')));
    const compressed = Buffer.from(msg);
    compressed[0] = 1;
    expect((await raw(compressed, [])).grpcStatus).toBe(String(grpc.status.UNIMPLEMENTED));
    const huge = Buffer.alloc(5);
    huge.writeUInt32BE(64 * 1024 * 1024, 1);
    expect((await raw(huge, [])).grpcStatus).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
    expect((await raw(Buffer.alloc(0), [])).grpcStatus).toBe(String(grpc.status.UNIMPLEMENTED));
    expect((await raw(msg.subarray(0, msg.length - 2), [])).grpcStatus).toBe(String(grpc.status.INTERNAL));
    expect((await raw(Buffer.concat([msg, msg]), [])).grpcStatus).toBe(String(grpc.status.UNIMPLEMENTED));
  });

  it('answers INTERNAL when the handler throws, and reports it', async () => {
    const r = await call(request('Bearer throw'));
    expect(r.err?.code).toBe(grpc.status.INTERNAL);
    expect(errors).toContain('Check handler');
    expect((await call(request('Bearer good'))).err).toBeNull();
  });

  it('answers UNIMPLEMENTED for other methods and 415 for other content types', async () => {
    const other = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      const err = await new Promise<grpc.ServiceError>((resolve) =>
        other.makeUnaryRequest(
          '/envoy.service.ext_proc.v3.ExternalProcessor/Process',
          (b: Buffer) => b,
          (b: Buffer) => b,
          Buffer.alloc(0),
          (e) => resolve(e!),
        ),
      );
      expect(err.code).toBe(grpc.status.UNIMPLEMENTED);
    } finally {
      other.close();
    }
    const json = await raw(Buffer.from('{}'), [], { 'content-type': 'application/json' });
    expect(json.httpStatus).toBe(415);
  });
});
