// `legate validate DIR` and `legatectl validate -f FILE…` as a CI pipeline runs them: no server, the statuses the
// controller would write, exit code 0 when nothing would be Rejected and 1 otherwise.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../support/gateway.js';

let dir: string;
const OPA = process.env['LEGATE_OPA'] || path.join(ROOT, '.cache/opa/bin/opa');

const run = (
  bin: 'legate' | 'legatectl',
  args: string[],
  input = '',
  env: Record<string, string> = {},
): { status: number; stdout: string; stderr: string } => {
  const r = spawnSync(process.execPath, [path.join(ROOT, 'bin', `${bin}.js`), ...args], {
    encoding: 'utf8',
    input,
    cwd: dir,
    timeout: 60_000,
    env: { ...process.env, ...env },
  });
  return { status: r.status ?? 1, stdout: r.stdout, stderr: r.stderr };
};

const UPSTREAM = `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: petstore, namespace: default }
spec: { static: { hosts: [{ addr: 127.0.0.1, port: 8080 }] } }
`;
const GOOD = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: shop, namespace: default }
spec:
  virtualHost:
    domains: [shop.example.com]
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: petstore, namespace: default } } }
`;
const BAD_REGEX = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: bad, namespace: default }
spec:
  virtualHost:
    domains: [bad.example.com]
    routes:
      - matchers: [{ regex: "/(a" }]
        directResponseAction: { status: 200 }
`;
const MISSING = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: dangling, namespace: default }
spec:
  virtualHost:
    domains: [dangling.example.com]
    routes:
      - matchers: [{ prefix: / }]
        routeAction: { single: { upstream: { name: missing, namespace: default } } }
`;
const STRICT = `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec: { gateway: { validation: { allowWarnings: false } } }
`;

beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-validate-'));
  fs.mkdirSync(path.join(dir, 'good'));
  fs.writeFileSync(path.join(dir, 'good', 'upstream.yaml'), UPSTREAM);
  fs.writeFileSync(path.join(dir, 'good', 'vs.yaml'), GOOD + '---\n' + MISSING);
  fs.writeFileSync(path.join(dir, 'bad.yaml'), BAD_REGEX);
  fs.writeFileSync(path.join(dir, 'strict.yaml'), STRICT);
  fs.writeFileSync(path.join(dir, 'broken.yaml'), 'kind: [unclosed\n');
});

afterAll(() => {
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('legate validate / legatectl validate', () => {
  it('passes a directory whose resources would be Accepted (a warning is allowed by default)', () => {
    const r = run('legate', ['validate', 'good']);
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('good/vs.yaml#2: VirtualService default.dangling: Warning (allowed): ');
    expect(r.stdout).toContain('Upstream default.missing not found');
    expect(r.stdout).toMatch(/^valid: 3 resources, 2 accepted, 1 with warnings, 0 rejected$/m);
  });

  it('fails on a resource that would be Rejected, with the reason its status would carry', () => {
    const r = run('legatectl', ['validate', '-f', 'good', '-f', 'bad.yaml']);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('bad.yaml#1: VirtualService default.bad: Rejected: virtualHost.routes[0].matchers[0].regex: invalid regex');
    expect(r.stdout).toMatch(/^invalid: 4 resources, .* 1 rejected$/m);
  });

  it('fails on warnings with Settings gateway.validation.allowWarnings: false', () => {
    const r = run('legate', ['validate', 'good', 'strict.yaml']);
    expect(r.status).toBe(1);
    expect(r.stdout).toContain('VirtualService default.dangling: Warning: ');
    expect(r.stdout).toContain('with warnings (not allowed)');
  });

  it('reads stdin, fails on a document that does not load, and answers JSON', () => {
    const piped = run('legatectl', ['validate', '-f', '-', '-o', 'json'], UPSTREAM + '---\n' + GOOD);
    expect(piped.status).toBe(0);
    const verdict = JSON.parse(piped.stdout) as { ok: boolean; resources: { state: string }[] };
    expect(verdict.ok).toBe(true);
    expect(verdict.resources.map((x) => x.state)).toEqual(['Accepted', 'Accepted']);
    const broken = run('legate', ['validate', 'broken.yaml']);
    expect(broken.status).toBe(1);
    expect(broken.stdout).toMatch(/^broken\.yaml#1: invalid YAML/m);
  });

  it.skipIf(!fs.existsSync(OPA))('compiles opaAuth Rego with the opa binary: a policy that does not parse fails, with opa’s reason', () => {
    fs.writeFileSync(
      path.join(dir, 'rego.yaml'),
      `apiVersion: v1
kind: ConfigMap
metadata: { name: policy, namespace: default }
data:
  policy.rego: "package test\\nallow {{ nope"
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa, namespace: default }
spec:
  configs:
  - opaAuth: { modules: [{ name: policy }], query: data.test.allow == true }
`,
    );
    const r = run('legate', ['validate', 'rego.yaml'], '', { LEGATE_OPA: OPA });
    expect(r.status).toBe(1);
    expect(r.stdout).toMatch(/AuthConfig default\.opa: Rejected: configs\[0\]\.opaAuth: the Rego does not compile: .*rego_parse_error/);
  });

  it('is a usage error without a path, or with one that does not exist', () => {
    expect(run('legate', ['validate']).status).toBe(2);
    const r = run('legatectl', ['validate', '-f', 'nope.yaml']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('nope.yaml: no such file or directory');
  });
});
