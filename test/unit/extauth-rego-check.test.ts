// The controller's opaAuth check (controller/rego-check.ts): Rego that extauth could not compile is a reason on
// the AuthConfig's status, with opa's message, instead of an Accepted config whose requests are all denied.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { runPipeline } from '../../controller/pipeline.js';
import { regoChecker } from '../../controller/rego-check.js';
import { parseResources } from '../../controller/source/parse.js';
import { DEFAULT_RENDER_OPTIONS } from '../../controller/translate/render.js';

const OPA_BIN = process.env['LEGATE_OPA'] || path.join(process.cwd(), '.cache/opa/bin/opa');
const lines: string[] = [];
const log = createLogger('controller', { level: 'info', write: (l) => lines.push(l) });

const GUIDE = `package test

default allow = false
allow {
    startswith(input.http_request.path, "/api/pets")
    input.http_request.method == "GET"
}
`;

function statuses(policy: string, query: string): Record<string, string> {
  const yaml = `apiVersion: v1
kind: ConfigMap
metadata: { name: allow-get-users, namespace: gloo-system }
data:
  policy.rego: ${JSON.stringify(policy)}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: opa, namespace: gloo-system }
spec:
  configs:
  - opaAuth:
      modules: [{ name: allow-get-users, namespace: gloo-system }]
      query: ${JSON.stringify(query)}
`;
  const regoCheck = regoChecker(log, OPA_BIN)!;
  const parsed = parseResources(yaml, 'test.yaml');
  const out = runPipeline({
    resources: parsed.resources,
    lastAccepted: new Map(),
    options: { render: { ...DEFAULT_RENDER_OPTIONS, regoCheck } },
  });
  const s = out.listed.get('AuthConfig/gloo-system/opa')!.status;
  return { state: s.state, reason: s.reason ?? '' };
}

describe.skipIf(!fs.existsSync(OPA_BIN))('opaAuth Rego checked by the controller', () => {
  it("accepts Gloo's guide policy (Rego v0) and a query of several expressions", () => {
    expect(statuses(GUIDE, 'data.test.allow == true')).toEqual({ state: 'Accepted', reason: '' });
    expect(statuses(GUIDE, 'x := input.http_request.method\nx == "GET"').state).toBe('Accepted');
  }, 60_000);

  it('rejects a module that does not parse, with opa’s reason naming the ConfigMap key', () => {
    const s = statuses('package test\n\nallow {{ nope', 'data.test.allow');
    expect(s.state).toBe('Rejected');
    expect(s.reason).toMatch(/^configs\[0\]\.opaAuth: the Rego does not compile: .*rego_parse_error/);
    expect(s.reason).toContain('gloo-system/allow-get-users/policy.rego');
  }, 60_000);

  it('rejects a query whose value cannot be true (as extauth refuses it)', () => {
    const s = statuses('package team\n\nlabel := "yes"\n', 'data.team.label');
    expect(s.state).toBe('Rejected');
    expect(s.reason).toMatch(/rego_type_error/);
  }, 60_000);

  it('without an opa binary, checks nothing and says so once', () => {
    expect(regoChecker(log, '/nonexistent/opa')).toBeUndefined();
    expect(lines.some((l) => l.includes('no opa binary'))).toBe(true);
  });
});
