// The graphql service's ext_proc gRPC server (Legate's HTTP/2 server, no grpc-js) against a grpc-js client built from
// the real proto definitions: framing, metadata, statuses, half-close, cancellation, large messages.
import http2 from 'node:http2';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { H2_TRANSPORTS } from '../../extensions/common/h2/transport.js';
import { loadEnvoyService, lookupService } from '../../extensions/common/grpc.js';
import {
  PROCESS_PATH,
  frameMessage,
  framePrefix,
  startExtProcServer,
  type ExtProcServer,
  type ProcessCall,
} from '../../extensions/graphql/extproc-server.js';
import {
  CONTINUE_REQUEST_BODY,
  CONTINUE_REQUEST_HEADERS,
  Phase,
  encodeImmediateResponse,
  type ProcessingRequestIn,
} from '../../extensions/graphql/wire.js';

const Processor = lookupService(
  loadEnvoyService('envoy/service/ext_proc/v3/external_processor.proto'),
  'envoy.service.ext_proc.v3.ExternalProcessor',
);
const processMethod = Processor.service['Process']!;

interface Seen {
  api: string;
  messages: ProcessingRequestIn[];
  ended: boolean;
  errored: boolean;
}

let server: ExtProcServer;
/** The generated client's one method these tests call. */
type ProcessorClient = grpc.Client & { Process(metadata: grpc.Metadata): grpc.ClientDuplexStream<object, unknown> };
let client: ProcessorClient;
const seen: Seen[] = [];

/** The handler under test: CONTINUE to headers and non-final bodies; at the end of the body, an immediate
 * response echoing the body; a request_headers with end_of_stream ends the stream without answering. */
function open(call: ProcessCall) {
  const s: Seen = { api: call.metadata('x-legate-graphql-api'), messages: [], ended: false, errored: false };
  seen.push(s);
  const chunks: Buffer[] = [];
  return {
    message(msg: ProcessingRequestIn) {
      s.messages.push(msg);
      if (msg.phase === Phase.requestHeaders) {
        if (msg.endOfStream && s.api.startsWith('get.')) call.end(framePrefix(encodeImmediateResponse(204, {}, '', 'test', 5)));
        else if (msg.endOfStream) call.end();
        else call.write(frameMessage(CONTINUE_REQUEST_HEADERS));
      } else if (msg.phase === Phase.requestBody) {
        if (msg.body) chunks.push(Buffer.from(msg.body));
        if (!msg.endOfStream) call.write(frameMessage(CONTINUE_REQUEST_BODY));
        else {
          call.end(
            framePrefix(
              encodeImmediateResponse(
                200,
                { 'content-type': 'text/plain', 'x-api': s.api },
                Buffer.concat(chunks).toString('utf8'),
                'test',
                5,
              ),
            ),
          );
        }
      }
    },
    end() {
      s.ended = true;
      call.end();
    },
    error() {
      s.errored = true;
    },
  };
}

function metadata(api: string): grpc.Metadata {
  const md = new grpc.Metadata();
  md.set('x-legate-graphql-api', api);
  return md;
}

/** Runs a stream: sends each message after the previous answer; resolves with the answers and the status. */
function exchange(api: string, messages: object[], halfClose = false): Promise<{ answers: any[]; status: grpc.StatusObject }> {
  return new Promise((resolve) => {
    const answers: any[] = [];
    const call = client['Process'](metadata(api)) as grpc.ClientDuplexStream<object, any>;
    let next = 0;
    const send = () => {
      if (next < messages.length) call.write(messages[next++]!);
      else if (halfClose) call.end();
    };
    call.on('data', (m) => {
      answers.push(m);
      send();
    });
    call.on('error', () => undefined);
    call.on('status', (status) => resolve({ answers, status }));
    send();
  });
}

describe.each(H2_TRANSPORTS)('ext_proc server (%s transport)', (transport) => {
  beforeAll(async () => {
    server = await startExtProcServer('127.0.0.1', 0, { open, http2: { transport } });
    client = new Processor(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as unknown as ProcessorClient;
  });

  afterAll(async () => {
    client?.close();
    await server?.stop(500);
  });

  it('answers a headers + body exchange, reading the API name from the metadata', async () => {
    const body = JSON.stringify({ query: '{productsForHome{id title}}' });
    const { answers, status } = await exchange('legate-system.books', [
      { request_headers: { headers: { headers: [{ key: ':method', raw_value: Buffer.from('POST') }] }, end_of_stream: false } },
      { request_body: { body: Buffer.from(body), end_of_stream: true } },
    ]);
    expect(status.code).toBe(grpc.status.OK);
    expect(answers).toHaveLength(2);
    expect(answers[0]).toMatchObject({ request_headers: { response: {} } });
    const immediate = answers[1].immediate_response;
    expect(immediate.status.code).toBe('OK');
    expect(Buffer.from(immediate.body).toString('utf8')).toBe(body);
    expect(immediate.headers.set_headers.map((h: any) => [h.header.key, Buffer.from(h.header.raw_value).toString()])).toEqual([
      ['content-type', 'text/plain'],
      ['x-api', 'legate-system.books'],
    ]);
    const s = seen.at(-1)!;
    expect(s.api).toBe('legate-system.books');
    expect(s.messages.map((m) => m.phase)).toEqual([Phase.requestHeaders, Phase.requestBody]);
  });

  it('reassembles bodies of several chunks and messages larger than one HTTP/2 frame', async () => {
    const parts = ['{"query":"', 'x'.repeat(200_000), '"}'];
    const { answers, status } = await exchange('a.b', [
      { request_headers: { headers: { headers: [] }, end_of_stream: false } },
      { request_body: { body: Buffer.from(parts[0]!), end_of_stream: false } },
      { request_body: { body: Buffer.from(parts[1]!), end_of_stream: false } },
      { request_body: { body: Buffer.from(parts[2]!), end_of_stream: true } },
    ]);
    expect(status.code).toBe(grpc.status.OK);
    expect(answers.map((a) => a.response)).toEqual(['request_headers', 'request_body', 'request_body', 'immediate_response']);
    expect(Buffer.from(answers[3].immediate_response.body).toString('utf8')).toBe(parts.join(''));
  });

  it('answers the first message with an immediate response (a request without body)', async () => {
    const { answers, status } = await exchange('get.x', [{ request_headers: { headers: { headers: [] }, end_of_stream: true } }]);
    expect(status.code).toBe(grpc.status.OK);
    expect(answers).toHaveLength(1);
    expect(answers[0].immediate_response.status.code).toBe('NoContent');
  });

  it('ends the stream with OK when the handler ends it without an answer, and on half-close', async () => {
    const early = await exchange('a.b', [{ request_headers: { headers: { headers: [] }, end_of_stream: true } }]);
    expect(early.status.code).toBe(grpc.status.OK);
    expect(early.answers).toEqual([]);
    const halfClosed = await exchange('a.b', [{ request_headers: { headers: { headers: [] }, end_of_stream: false } }], true);
    expect(halfClosed.status.code).toBe(grpc.status.OK);
    expect(halfClosed.answers).toHaveLength(1);
    expect(seen.at(-1)!.ended).toBe(true);
  });

  it('tells the handler when the client resets the stream (as Envoy does) rather than half-closing it', async () => {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': PROCESS_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
        'x-legate-graphql-api': 'a.reset',
      });
      stream.on('error', () => undefined);
      const answered = new Promise<void>((resolve) => stream.once('data', () => resolve()));
      stream.write(frameMessage(processMethod.requestSerialize({ request_headers: { headers: { headers: [] }, end_of_stream: false } })));
      await answered;
      stream.destroy(); // RST_STREAM without END_STREAM first
      const s = seen.find((x) => x.api === 'a.reset')!;
      await expect.poll(() => s.errored).toBe(true);
      expect(s.ended).toBe(false);
    } finally {
      session.destroy();
    }
  });

  /** Writes `bytes` to a new raw HTTP/2 stream in the given pieces; resolves with the answer bytes, the
   * trailers' grpc-status, and what the handler saw. */
  async function raw(api: string, bytes: Buffer, cuts: number[]): Promise<{ data: Buffer; grpcStatus: string | undefined; seen: Seen }> {
    const session = http2.connect(`http://127.0.0.1:${server.port}`);
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': PROCESS_PATH,
        'content-type': 'application/grpc',
        te: 'trailers',
        'x-legate-graphql-api': api,
      });
      stream.on('error', () => undefined);
      const chunks: Buffer[] = [];
      let grpcStatus: string | undefined;
      stream.on('data', (d: Buffer) => chunks.push(d));
      stream.on('response', (h) => (grpcStatus ??= h['grpc-status'] as string | undefined));
      stream.on('trailers', (h) => (grpcStatus = h['grpc-status'] as string | undefined));
      const closed = new Promise<void>((resolve) => stream.on('end', () => resolve())); // the server's END_STREAM
      let from = 0;
      for (const cut of [...cuts, bytes.length]) {
        if (stream.destroyed || stream.readableEnded) break;
        stream.write(bytes.subarray(from, cut));
        from = cut;
        await new Promise((r) => setTimeout(r, 5)); // separate DATA frames
      }
      await closed;
      return { data: Buffer.concat(chunks), grpcStatus, seen: seen.find((x) => x.api === api)! };
    } finally {
      session.destroy();
    }
  }

  const headersMsg = frameMessage(
    processMethod.requestSerialize({
      request_headers: { headers: { headers: [{ key: ':path', raw_value: Buffer.from('/g') }] }, end_of_stream: false },
    }),
  );
  const bodyMsg = frameMessage(
    processMethod.requestSerialize({ request_body: { body: Buffer.from('{"query":"{a}"}'), end_of_stream: true } }),
  );

  it('reassembles messages cut anywhere across DATA frames, and reads several messages from one frame', async () => {
    const bytes = Buffer.concat([headersMsg, bodyMsg]);
    // a cut inside the first prefix, one inside the first message, one at the boundary, one inside the second prefix
    const r = await raw('cuts.a', bytes, [2, 9, headersMsg.length, headersMsg.length + 3]);
    expect(r.grpcStatus).toBe('0');
    expect(r.seen.messages.map((m) => m.phase)).toEqual([Phase.requestHeaders, Phase.requestBody]);
    const answers: any[] = [];
    for (let at = 0; at < r.data.length;) {
      const len = r.data.readUInt32BE(at + 1);
      answers.push(processMethod.responseDeserialize(r.data.subarray(at + 5, at + 5 + len)));
      at += 5 + len;
    }
    expect(answers.map((a) => a.response)).toEqual(['request_headers', 'immediate_response']);
    expect(Buffer.from(answers[1].immediate_response.body).toString()).toBe('{"query":"{a}"}');
    const oneFrame = await raw('cuts.b', bytes, []);
    expect(oneFrame.seen.messages.map((m) => m.phase)).toEqual([Phase.requestHeaders, Phase.requestBody]);
    expect(oneFrame.grpcStatus).toBe('0');
  });

  it('refuses compressed and oversized messages with the gRPC status grpc-js uses', async () => {
    const compressed = Buffer.from(headersMsg);
    compressed[0] = 1;
    expect((await raw('bad.compressed', compressed, [])).grpcStatus).toBe(String(grpc.status.UNIMPLEMENTED));
    const huge = Buffer.alloc(5);
    huge.writeUInt32BE(64 * 1024 * 1024, 1);
    expect((await raw('bad.huge', huge, [])).grpcStatus).toBe(String(grpc.status.RESOURCE_EXHAUSTED));
  });

  it('answers UNIMPLEMENTED for other methods', async () => {
    const other = new grpc.Client(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      const err = await new Promise<grpc.ServiceError>((resolve) =>
        other.makeUnaryRequest(
          '/envoy.service.auth.v3.Authorization/Check',
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
  });
});
