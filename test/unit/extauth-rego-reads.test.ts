// The headers an opaAuth policy reads, found by the controller from opa's parse of the Rego (controller/rego-reads.ts):
// Envoy's ext_authz then sends extauth only those, and every header as soon as the policy may read any.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../common/log.js';
import { runPipeline } from '../../controller/pipeline.js';
import { regoChecker } from '../../controller/rego-check.js';
import { parseResources } from '../../controller/source/parse.js';
import { DEFAULT_RENDER_OPTIONS } from '../../controller/translate/render.js';

const OPA_BIN = process.env['LEGATE_OPA'] || path.join(process.cwd(), '.cache/opa/bin/opa');
const log = createLogger('controller', { level: 'error', write: () => {} });

const v0 = (body: string): string => `package test\n\ndefault allow = false\nallow {\n${body}\n}\n`;
const v1 = (body: string): string => `package test\n\nimport rego.v1\n\ndefault allow := false\nallow if {\n${body}\n}\n`;

describe.skipIf(!fs.existsSync(OPA_BIN))('the request headers an opaAuth policy reads', () => {
  const check = regoChecker(log, OPA_BIN)!;
  const reads = (policy: string, query = 'data.test.allow == true'): unknown => {
    const r = check({ 'p.rego': policy }, query);
    return 'error' in r ? r : r.headers;
  };

  it('lists headers read by a constant name, under http_request and check_request, lower-cased', () => {
    expect(reads(v0('startswith(input.http_request.path, "/api")\ninput.http_request.method == "GET"'))).toEqual([]);
    expect(
      reads(
        v0(
          'input.http_request.headers["x-team"] == "shop"\n' +
            'input.check_request.attributes.request.http.headers["X-Tenant"] != ""\n' +
            'startswith(input.http_request.headers.authorization, "Bearer ")\ninput.state.jwt.sub != ""',
        ),
      ),
    ).toEqual(['authorization', 'x-team', 'x-tenant']);
    expect(reads(v1('input.http_request.headers["x-team"] in {"shop", "pets"}'))).toEqual(['x-team']);
    // the query reads the input too
    expect(reads(v0('true'), 'data.test.allow == true; input.http_request.headers["x-q"] == "1"')).toEqual(['x-q']);
  }, 60_000);

  it('is every header when the policy may read any', () => {
    for (const body of [
      'some k\ninput.http_request.headers[k] == "x"',
      'h := input.http_request.headers\nh["x-team"] == "shop"',
      'count(input.http_request.headers) > 2',
      'r := input.http_request\nr.path == "/"',
      'input.check_request.attributes.request.http.headers[_] == "x"',
      'json.marshal(input) != ""',
      'object.get(input.http_request.headers, "x-team", "") == "shop"',
    ])
      expect(reads(v0(body)), body).toBe('*');
    expect(
      reads('package test\n\nimport input.http_request as req\n\ndefault allow = false\nallow {\n  req.headers["x"] == "y"\n}\n'),
    ).toBe('*');
  }, 60_000);

  it('renders ext_authz allowed_headers to the union of what the bound configs read; all headers with one that may read any', () => {
    const yaml = (second: string): string => `apiVersion: v1
kind: Secret
metadata: { name: key, namespace: gloo-system, labels: { team: a } }
type: extauth.solo.io/apikey
stringData: { api-key: APIKEY-one }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: team, namespace: gloo-system }
data:
  team.rego: ${JSON.stringify(v0('input.http_request.headers["x-team"] == "shop"'))}
---
apiVersion: v1
kind: ConfigMap
metadata: { name: any, namespace: gloo-system }
data:
  any.rego: ${JSON.stringify('package anyheader\n\ndefault allow = false\nallow {\n  input.http_request.headers[_] == "x"\n}\n')}
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: team, namespace: gloo-system }
spec:
  configs:
  - opaAuth: { modules: [{ name: team, namespace: gloo-system }], query: "data.test.allow == true" }
---
apiVersion: enterprise.gloo.solo.io/v1
kind: AuthConfig
metadata: { name: second, namespace: gloo-system }
spec:
  configs:
  - ${second}
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: vs, namespace: gloo-system }
spec:
  virtualHost:
    domains: ['*']
    routes:
    - matchers: [{ prefix: /team }]
      directResponseAction: { status: 200 }
      options: { extauth: { configRef: { name: team, namespace: gloo-system } } }
    - matchers: [{ prefix: /second }]
      directResponseAction: { status: 200 }
      options: { extauth: { configRef: { name: second, namespace: gloo-system } } }
`;
    const allowed = (second: string): unknown => {
      const out = runPipeline({
        resources: parseResources(yaml(second), 'test.yaml').resources,
        lastAccepted: new Map(),
        options: { render: { ...DEFAULT_RENDER_OPTIONS, regoCheck: check } },
      });
      const states = [...out.listed.values()].filter((l) => l.status.state !== 'Accepted').map((l) => l.status.reason);
      expect(states).toEqual([]);
      const text = JSON.stringify([...out.xds.values()].map((snapshot) => [...snapshot.values()]));
      const m = /"allowed_headers":(\{"patterns":\[[^\]]*\]\})/.exec(text);
      return m ? JSON.parse(m[1]!) : 'none: every header';
    };
    expect(allowed('apiKeyAuth: { headerName: x-api-key, labelSelector: { team: a } }')).toEqual({
      patterns: [{ exact: 'authorization' }, { exact: 'x-api-key' }, { exact: 'x-team' }],
    });
    expect(allowed('opaAuth: { modules: [{ name: any, namespace: gloo-system }], query: "data.anyheader.allow == true" }')).toBe(
      'none: every header',
    );
  }, 60_000);
});
