// Micro-benchmark (not a test): the per-request cost of an opaAuth step inside extauth (Authorizer.checkRequest
// on a request as the wire parser hands it over: every header Envoy sends), on the bench's policy.
//
//   npx tsx bench/micro/opa-step.ts [--n 50000]     (node --cpu-prof --import tsx ... to profile it)
//
// Needs the opa binary (make opa, or $LEGATE_OPA). Prints µs per check.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLogger } from '../../common/log.js';
import { OpaStepSchema } from '../../common/auth-config.js';
import { Authorizer, type EdgeGrant } from '../../extensions/extauth/authorizer.js';
import { PlainRequest } from '../../extensions/extauth/request.js';

const { values } = parseArgs({ options: { n: { type: 'string', default: '50000' } } });
const n = Number(values.n);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const opa = process.env['LEGATE_OPA'] || path.join(root, '.cache/opa/bin/opa');
if (!fs.existsSync(opa)) throw new Error(`no opa binary at ${opa} (make opa)`);
process.env['LEGATE_OPA'] = opa;

const POLICY = `package bench

default allow = false
allow {
    startswith(input.http_request.path, "/opa")
    input.http_request.method == "GET"
}
`;

const authz = new Authorizer({ logger: createLogger('extauth', { level: 'error', write: () => undefined }) });
const step = OpaStepSchema.parse({ type: 'opa', query: 'data.bench.allow == true', modules: { 'policy.rego': POLICY } });
const problems = authz.apply([{ name: 'ns.opa', version: 'v1', steps: [step] }]).problems;
if (problems.length) throw new Error(problems.join('; '));
// what wrk sends through Envoy, as Envoy forwards it to ext_authz (every header)
const headers = {
  ':authority': '127.0.0.1:8080',
  ':method': 'GET',
  ':path': '/opa/bench',
  ':scheme': 'http',
  'x-forwarded-proto': 'http',
  'x-request-id': '5d0e7e3c-2d1e-4a8f-9c6b-3f1b2a7c9d10',
  'x-envoy-expected-rq-timeout-ms': '15000',
};
const request = (): PlainRequest =>
  new PlainRequest({ configId: 'ns.opa', method: 'GET', path: '/opa/bench', host: '127.0.0.1:8080', scheme: 'http', headers });

async function main(): Promise<void> {
  // the policy compiles in the background: wait until it allows
  for (let i = 0; i < 600; i++) {
    if ((await authz.checkRequest(request(), { key: '', until: 0 })) === 'allow') break;
    await new Promise((r) => setTimeout(r, 100));
  }
  const grant: EdgeGrant = { key: '', until: 0 };
  for (let i = 0; i < 5000; i++) await authz.checkRequest(request(), grant);
  const t0 = process.cpuUsage();
  let allowed = 0;
  for (let i = 0; i < n; i++) if ((await authz.checkRequest(request(), grant)) === 'allow') allowed++;
  const cpu = process.cpuUsage(t0);
  console.log(`${((cpu.user + cpu.system) / n).toFixed(2)} µs CPU per check (${allowed}/${n} allowed)`);
  authz.stop();
}
void main();
