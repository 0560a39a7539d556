// Micro-benchmark (not a test): an opaAuth decision two ways, on Gloo's guide policy and input.
//
//   npx tsx bench/micro/opa.ts [--seconds 5] [--concurrency 16]
//
//   wasm    the policy compiled by `opa build -t wasm` and evaluated in this process (@open-policy-agent/opa-wasm)
//   server  a real OPA server (`opa run --server`, loopback) asked over HTTP/1.1 keep-alive per decision
//
// Needs the opa binary (make opa, or $LEGATE_OPA). Prints decisions per second; the decision log in
// docs/decisions.md quotes a run.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';
import { OpaWasmPolicy, opaInput } from '../../extensions/extauth/opa.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '5' }, concurrency: { type: 'string', default: '16' } } });
const seconds = Number(values.seconds);
const concurrency = Number(values.concurrency);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const opa = process.env['LEGATE_OPA'] || path.join(root, '.cache/opa/bin/opa');
if (!fs.existsSync(opa)) throw new Error(`no opa binary at ${opa} (make opa)`);
process.env['LEGATE_OPA'] = opa;

const POLICY = `package test

default allow = false
allow {
    startswith(input.http_request.path, "/api/pets")
    input.http_request.method == "GET"
}
allow {
    input.http_request.path == "/api/pets/2"
    any({input.http_request.method == "GET",
        input.http_request.method == "DELETE"
    })
}
`;
const inputs = [
  opaInput({ method: 'GET', path: '/api/pets/1', host: 'shop', scheme: 'http', headers: { 'user-agent': 'bench', accept: '*/*' } }),
  opaInput({ method: 'DELETE', path: '/api/pets/1', host: 'shop', scheme: 'http', headers: { 'user-agent': 'bench', accept: '*/*' } }),
];

async function timed(name: string, one: (i: number) => Promise<boolean> | boolean): Promise<number> {
  let n = 0;
  let allowed = 0;
  const end = Date.now() + seconds * 1000;
  const worker = async (): Promise<void> => {
    while (Date.now() < end) {
      if (await one(n++)) allowed++;
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const rate = n / ((performance.now() - t0) / 1000);
  console.log(`${name.padEnd(7)} ${Math.round(rate).toString().padStart(8)} decisions/s  (${allowed} of ${n} allowed)`);
  return rate;
}

const tBuild = performance.now();
const policy = await OpaWasmPolicy.load({ 'policy.rego': POLICY }, 'data.test.allow == true');
console.log(`opa build -t wasm + load: ${Math.round(performance.now() - tBuild)} ms`);
const wasm = await timed('wasm', (i) => policy.evaluate(inputs[i % 2]));

const dir = fs.mkdtempSync(path.join(process.env['TMPDIR'] ?? '/tmp', 'legate-opa-bench-'));
fs.writeFileSync(path.join(dir, 'policy.rego'), POLICY);
const port = 20_000 + Math.floor(Math.random() * 9000);
const server = spawn(opa, ['run', '--server', '--v0-compatible', '--addr', `127.0.0.1:${port}`, '--log-level', 'error', dir], {
  stdio: 'ignore',
});
try {
  const url = `http://127.0.0.1:${port}/v1/data/test/allow`;
  const agent = new Agent({ connections: concurrency, pipelining: 1 });
  for (let i = 0; ; i++) {
    try {
      await (await request(url, { method: 'POST', body: '{"input":{}}', dispatcher: agent })).body.text();
      break;
    } catch {
      if (i > 100) throw new Error('OPA server did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const bodies = inputs.map((input) => JSON.stringify({ input }));
  const srv = await timed('server', async (i) => {
    const res = await request(url, {
      method: 'POST',
      body: bodies[i % 2]!,
      headers: { 'content-type': 'application/json' },
      dispatcher: agent,
    });
    const doc = (await res.body.json()) as { result?: unknown };
    return doc.result === true;
  });
  console.log(`wasm/server: ${(wasm / srv).toFixed(1)}x`);
  await agent.close();
} finally {
  server.kill('SIGTERM');
  fs.rmSync(dir, { recursive: true, force: true });
}
