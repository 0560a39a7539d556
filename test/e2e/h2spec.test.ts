// RFC 9113 / RFC 7541 conformance of the extensions' HTTP/2 server (extensions/common/h2/): h2spec (pinned in
// test/h2spec/tools, built by scripts/h2spec-tool.sh) in h2c mode against the extauth, ratelimit and graphql
// (ext_proc) ports of a running gateway, and against a node:http2 server answering like a gRPC server as the
// reference. Every test passes on Legate's servers except EXCLUDED, and Legate never fails one that node:http2
// passes.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type Gateway } from '../support/gateway.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const H2SPEC = path.join(ROOT, '.cache', 'h2spec', 'bin', 'h2spec');

/**
 * h2spec tests that do not apply to a gRPC server, by id ("section/n" as h2spec prints it), with the reason.
 * h2spec sends `GET /` with no body and expects a response with a body or an exact status; a gRPC server answers
 * every request with 200 + trailers (grpc-status) and no DATA.
 */
const EXCLUDED: Record<string, string> = {
  // both wait for a DATA frame of the response to GET /; the answer is a gRPC trailers-only one (HEADERS with
  // END_STREAM: UNIMPLEMENTED), which has none (node:http2 answering the same way fails them too)
  'generic/2/2': 'expects a response body (WINDOW_UPDATE on a half-closed (remote) stream)',
  'generic/2/3': 'expects a response body (PRIORITY on a half-closed (remote) stream)',
  // 101 requests with END_STREAM one after the other: each is answered trailers-only at once (HEADERS are not
  // flow controlled, so the INITIAL_WINDOW_SIZE of 0 it sets holds none open) and no limit is ever exceeded;
  // the limit itself (100, REFUSED_STREAM) is tested in test/unit/h2-server.test.ts
  'http2/5.1.2/1': 'needs streams held open by a flow-controlled response body',
};

interface Outcome {
  total: number;
  failed: string[];
  /** not run (e.g. 5.1.2/1 when the server advertises no stream limit) */
  skipped: string[];
}

/** Runs h2spec against 127.0.0.1:port; the ids of the failed tests. */
async function h2spec(port: number, dir: string, name: string): Promise<Outcome> {
  const report = path.join(dir, `${name}.xml`);
  // asynchronously: the reference server answers from this process; h2spec exits 1 when a test failed
  const r = await new Promise<{ status: number | null; output: string }>((resolve) => {
    const child = spawn(H2SPEC, ['-h', '127.0.0.1', '-p', String(port), '--timeout', '2', '-j', report], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (status) => resolve({ status, output }));
  });
  if (!fs.existsSync(report)) throw new Error(`h2spec wrote no report (status ${r.status}): ${r.output}`);
  const xml = fs.readFileSync(report, 'utf8');
  const failed: string[] = [];
  const skipped: string[] = [];
  let total = 0;
  // <testsuite package="http2/5.1"> of <testcase classname="title">, with a <failure> or <error> when it failed;
  // a test's id is its suite and its number in it, as h2spec prints them (http2/5.1/3)
  for (const suite of xml.matchAll(/<testsuite [^>]*package="([^"]*)"[^>]*>([\s\S]*?)<\/testsuite>/g)) {
    let n = 0;
    for (const c of suite[2]!.matchAll(/<testcase [^>]*classname="([^"]*)"[^>]*?(\/>|>([\s\S]*?)<\/testcase>)/g)) {
      n++;
      total++;
      if (/<(failure|error)\b/.test(c[3] ?? '')) failed.push(`${suite[1]}/${n} ${c[1]}`);
      else if (/<skipped\b/.test(c[3] ?? '')) skipped.push(`${suite[1]}/${n} ${c[1]}`);
    }
  }
  return { total, failed, skipped };
}

let gw: Gateway;
let reference: http2.Http2Server;
let dir: string;

beforeAll(async () => {
  const built = spawnSync(path.join(ROOT, 'scripts', 'h2spec-tool.sh'), { stdio: 'inherit' });
  if (built.status !== 0) throw new Error('scripts/h2spec-tool.sh failed: see its output above');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-h2spec-'));
  // the reference: node:http2 (nghttp2) answering every call as a gRPC server that does not know the method
  reference = http2.createServer();
  reference.on('stream', (stream) => {
    stream.on('error', () => undefined);
    stream.respond({ ':status': 200, 'content-type': 'application/grpc' }, { waitForTrailers: true });
    stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '12', 'grpc-message': 'unknown method' }));
    stream.end();
  });
  await new Promise<void>((resolve) => reference.listen(0, '127.0.0.1', resolve));
  gw = await startGateway({});
});

afterAll(async () => {
  await gw?.stop();
  await new Promise<void>((resolve) => (reference ? reference.close(() => resolve()) : resolve()));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('h2spec', () => {
  it('passes on the extensions HTTP/2 server, never fails more than node:http2', { timeout: 600_000 }, async () => {
    const ref = await h2spec((reference.address() as AddressInfo).port, dir, 'node-http2');
    const servers = { extauth: gw.ports.extauth, ratelimit: gw.ports.ratelimit, graphql: gw.ports.graphql };
    const results: Record<string, Outcome> = {};
    // the three at once: most of a run is h2spec waiting out its timeout on tests that expect no answer
    await Promise.all(Object.entries(servers).map(async ([name, port]) => (results[name] = await h2spec(port, dir, name))));
    console.log(
      [`node:http2: ${ref.failed.length} of ${ref.total} failed`, ...ref.failed.map((f) => `  ${f}`)]
        .concat(
          Object.entries(results).flatMap(([n, o]) => [`${n}: ${o.failed.length} of ${o.total} failed`, ...o.failed.map((f) => `  ${f}`)]),
        )
        .join('\n'),
    );
    expect(ref.total).toBeGreaterThan(100);
    for (const [name, o] of Object.entries(results)) {
      expect(o.total, name).toBe(ref.total);
      expect(
        o.failed.filter((f) => !(f.split(' ')[0]! in EXCLUDED)),
        name,
      ).toEqual([]);
      const refPassed = (f: string): boolean => !ref.failed.includes(f) && !ref.skipped.includes(f);
      expect(o.failed.filter(refPassed), `${name}: fails where node:http2 passes`).toEqual([]);
    }
  });
});
