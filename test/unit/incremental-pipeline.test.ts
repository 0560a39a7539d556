// Incremental translation gives what a full run gives: a sequence of edits (dependencies removed and
// restored, domain conflicts appearing and disappearing, rejected edits keeping the last good version,
// auth switched on and off, a Gateway and Settings appearing, deletions) is run twice, once with every
// run starting from nothing but the last accepted versions (as the golden tests do) and once with the
// previous run's memo, as the controller does; statuses, reports, IR, xDS snapshots and what the
// snapshot cache serves (versions and encoded bytes) must be the same after every step. The YAML
// source's reuse of unchanged documents is checked against a whole parse the same way.
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { RawResource } from '../../controller/api/meta.js';
import type { PipelineOutput } from '../../controller/pipeline.js';
import { parseResources, parseResourcesReusing, splitDocuments, type DocumentMemo } from '../../controller/source/parse.js';
import { envoyEncoder } from '../../controller/xds/encode.js';
import { TypeUrls, encodeAny } from '../../envoy/protos.js';
import { Runner, parseOne, served, summary, upstream } from '../support/incremental-runner.js';

const ROOT = path.join(import.meta.dirname, '..', '..');

/** A VirtualService on `domain`: a route to `up`, a direct response with `body`, optional extras. */
const vs = (name: string, domain: string, up: string, body: string, extra = ''): string => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${domain}]${extra}
    routes:
      - matchers: [{ prefix: /api }]
        routeAction: { single: { upstream: { name: ${up}, namespace: legate-system } } }
      - matchers: [{ exact: /version }]
        directResponseAction: { status: 200, body: "${body}" }
`;

const authConfig = `apiVersion: enterprise.legate.dev/v1
kind: AuthConfig
metadata: { name: oauth, namespace: legate-system }
spec:
  configs:
    - oauth2:
        accessTokenValidation:
          introspectionUrl: http://127.0.0.1:9010/token/introspection
`;
const protectedHost = `
    options:
      extauth: { configRef: { name: oauth, namespace: legate-system } }`;

const gateway = `apiVersion: gateway.legate.dev/v1
kind: Gateway
metadata: { name: http, namespace: legate-system }
spec: { bindAddress: "::", bindPort: 8080, httpGateway: {} }
`;
const settings = `apiVersion: legate.dev/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { wasmChecks: { bearerCheck: { enabled: false } } }
`;

describe('incremental translation', () => {
  it('gives the same statuses, IR, snapshots and served bytes as full runs through a sequence of edits', () => {
    // the world, by key; an edit replaces one object, the others stay the very same objects (as sources hand them over)
    const world = new Map<string, RawResource>();
    const put = (key: string, text: string): void => void world.set(key, parseOne(text));
    put('u1', upstream('u1', 8001));
    put('u2', upstream('u2', 8002));
    put('ac', authConfig);
    for (const [i, name] of ['a', 'b', 'c', 'd', 'e'].entries())
      put(name, vs(name, `${name}.example.com`, i === 1 ? 'u2' : 'u1', `${name} v1`));

    // [step, edit, a resource's state after it (`<VirtualService>:<state>`, reason included when rejected)]
    const steps: [string, () => void, string?][] = [
      ['initial', () => undefined],
      ['nothing changed', () => undefined],
      ['one route edited', () => put('e', vs('e', 'e.example.com', 'u1', 'e v2'))],
      ['nothing changed again', () => undefined],
      [
        'an upstream removed (as in Gloo, only a warning: b serves, its route answers for a cluster Envoy lacks)',
        () => world.delete('u2'),
        'b:Warning:u2 not found',
      ],
      ['b edited while its upstream is gone', () => put('b', vs('b', 'b.example.com', 'u2', 'b v2'))],
      ['the upstream back', () => put('u2', upstream('u2', 8002))],
      [
        'a domain conflict appears (c takes a.example.com)',
        () => put('c', vs('c', 'a.example.com', 'u1', 'c v2')),
        'c:Rejected:domain conflict',
      ],
      ['the conflict stays', () => put('e', vs('e', 'e.example.com', 'u1', 'e v3')), 'c:Rejected:domain conflict'],
      ['the conflict disappears', () => put('c', vs('c', 'c.example.com', 'u1', 'c v3')), 'c:Accepted'],
      [
        'a rejected edit (schema) keeps the last good version',
        () => put('d', vs('d', 'd.example.com', 'u1', 'd v2').replace('prefix: /api', 'prefix: [7]')),
        'd:Rejected:(serving the last accepted version)',
      ],
      [
        'an edit to a missing upstream is served with a warning',
        () => put('d', vs('d', 'd.example.com', 'nope', 'd v3')),
        'd:Warning:Upstream legate-system.nope not found',
      ],
      ['d fixed', () => put('d', vs('d', 'd.example.com', 'u1', 'd v4')), 'd:Accepted'],
      ['auth on one virtual host (every virtual host changes)', () => put('a', vs('a', 'a.example.com', 'u1', 'a v2', protectedHost))],
      ['the AuthConfig edited', () => put('ac', authConfig.replace('9010', '9011'))],
      ['the AuthConfig removed', () => world.delete('ac')],
      ['auth off again', () => put('a', vs('a', 'a.example.com', 'u1', 'a v3'))],
      ['a Gateway appears', () => put('gw', gateway)],
      ['Settings appear', () => put('settings', settings)],
      ['a VirtualService deleted', () => world.delete('c')],
      ['a VirtualService added', () => put('f', vs('f', 'f.example.com', 'u2', 'f v1'))],
      ['an upstream edited', () => put('u1', upstream('u1', 8101))],
      ['nothing changed at the end', () => undefined],
    ];

    const full = new Runner(false);
    const incremental = new Runner(true);
    for (const [name, edit, expected] of steps) {
      edit();
      const resources = [...world.values()];
      const a = full.run(resources);
      const b = incremental.run(resources);
      expect(summary(b), name).toEqual(summary(a));
      expect(served(incremental.cache), name).toEqual(served(full.cache));
      // the sequence goes through what it says
      if (expected) {
        const [vsName = '', state, reason] = expected.split(':');
        const status = a.listed.get(`VirtualService/default/${vsName}`)?.status;
        expect(status?.state, name).toBe(state);
        if (reason) expect(status?.reason, name).toContain(reason);
      }
    }
    const protectedRoutes = JSON.stringify(full.run([...world.values()]).xds.get('legate-system~gateway-proxy'));
    expect(protectedRoutes).not.toContain('ext_authz');
  });

  it('translates again only the VirtualService that changed', () => {
    const texts = Array.from({ length: 50 }, (_, i) => vs(`vs-${i}`, `vs-${i}.example.com`, 'u1', `v1`));
    const resources = [parseOne(upstream('u1', 8001)), ...texts.map(parseOne)];
    const runner = new Runner(true);
    runner.run(resources);
    const second = runner.run(resources);
    resources[10] = parseOne(vs('vs-9', 'vs-9.example.com', 'u1', 'v2'));
    const third = runner.run(resources);
    const ir = (out: PipelineOutput) => out.proxies[0]!.listeners[0]!.virtualHosts;
    const changed = ir(third).filter((vh, i) => vh !== ir(second)[i]);
    expect(changed.map((vh) => vh.name)).toEqual(['default_vs-9']);
  });
});

const delegating = (name: string, extra = ''): string => `apiVersion: gateway.legate.dev/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${name}.example.com]
    routes:
      - matchers: [{ prefix: /ref }]
        delegateAction: { ref: { name: ${name}-rt } }
      - matchers: [{ prefix: /sel }]
        delegateAction: { selector: { labels: { for: ${name} } } }${extra}
`;

const table = (name: string, prefix: string, body: string, labels = '{}', extra = ''): string => `apiVersion: gateway.legate.dev/v1
kind: RouteTable
metadata: { name: ${name}, namespace: default, labels: ${labels} }
spec:
  routes:
    - matchers: [{ prefix: ${prefix} }]
      directResponseAction: { status: 200, body: "${body}" }${extra}
`;

describe('incremental translation with delegation', () => {
  it('gives the same results as full runs through RouteTable edits', () => {
    const world = new Map<string, RawResource>();
    const put = (key: string, text: string): void => void world.set(key, parseOne(text));
    put('u1', upstream('u1', 8001));
    for (const name of ['a', 'b', 'c']) {
      put(name, delegating(name));
      put(`${name}-rt`, table(`${name}-rt`, '/ref', `${name} v1`));
    }
    put('sel-1', table('sel-1', '/sel/1', 'sel-1', '{ for: a }'));
    const toUpstream = (up: string) => `
    - matchers: [{ prefix: /ref/up }]
      routeAction: { single: { upstream: { name: ${up}, namespace: legate-system } } }`;
    const badRegex = "\n    - matchers: [{ regex: '(' }]\n      directResponseAction: { status: 200 }";
    const nested = `
    - matchers: [{ prefix: /ref/nested }]
      delegateAction: { ref: { name: c-rt } }`;
    const steps: [string, () => void, string?][] = [
      ['initial', () => undefined],
      ['nothing changed', () => undefined],
      ['a table edited', () => put('a-rt', table('a-rt', '/ref', 'a v2')), 'a-rt:Accepted'],
      [
        'an edit to a missing upstream is served with a warning (the route answers as invalid)',
        () => put('a-rt', table('a-rt', '/ref', 'a v3', '{}', toUpstream('nope'))),
        'a-rt:Warning:nope not found',
      ],
      [
        'a bad edit (a regex RE2 refuses) keeps the last good version',
        () =>
          put(
            'a-rt',
            table('a-rt', '/ref', 'a v3b', '{}', "\n    - matchers: [{ regex: '(' }]\n      directResponseAction: { status: 200 }"),
          ),
        'a-rt:Rejected:(serving the last accepted version)',
      ],
      ['fixed', () => put('a-rt', table('a-rt', '/ref', 'a v4', '{}', toUpstream('u1'))), 'a-rt:Accepted'],
      [
        'a new table rejected from the start',
        () => put('sel-3', table('sel-3', '/sel/3', 'sel-3', '{ for: a }', badRegex)),
        'sel-3:Rejected',
      ],
      ['nothing changed, a table rejected', () => undefined, 'sel-3:Rejected'],
      [
        'the rejected table fixed: it starts serving',
        () => put('sel-3', table('sel-3', '/sel/3', 'sel-3 v2', '{ for: a }')),
        'sel-3:Accepted',
      ],
      ['a serving table rejected, with a last good version', () => put('sel-3', table('sel-3', '/sel/3', 'v3', '{ for: a }', badRegex))],
      ['a new table a selector picks', () => put('sel-2', table('sel-2', '/sel/2', 'sel-2', '{ for: a }'))],
      ['its label changed: no longer picked', () => put('sel-2', table('sel-2', '/sel/2', 'sel-2', '{ for: nobody }'))],
      ['picked by another VirtualService', () => put('sel-2', table('sel-2', '/sel/2', 'sel-2', '{ for: b }'))],
      ['a table nested under another', () => put('b-rt', table('b-rt', '/ref', 'b v2', '{}', nested))],
      ['the nested table edited', () => put('c-rt', table('c-rt', '/ref/nested', 'c v2'))],
      [
        'a cycle (c-rt back to b-rt)',
        () => put('c-rt', table('c-rt', '/ref/nested', 'c v3', '{}', nested.replace('c-rt', 'b-rt'))),
        'c-rt:Rejected:delegation cycle',
      ],
      ['the cycle broken', () => put('c-rt', table('c-rt', '/ref/nested', 'c v4')), 'c-rt:Accepted'],
      ['a referenced table deleted', () => world.delete('a-rt')],
      ['and back', () => put('a-rt', table('a-rt', '/ref', 'a v5'))],
      ['a VirtualService edited', () => put('b', delegating('b').replace('/sel', '/selected'))],
      ['an upstream removed', () => world.delete('u1')],
      ['nothing changed at the end', () => undefined],
    ];
    const full = new Runner(false);
    const incremental = new Runner(true);
    for (const [name, edit, expected] of steps) {
      edit();
      const resources = [...world.values()];
      const a = full.run(resources);
      const b = incremental.run(resources);
      expect(summary(b), name).toEqual(summary(a));
      expect(served(incremental.cache), name).toEqual(served(full.cache));
      if (expected) {
        const [rt = '', state, reason] = expected.split(':');
        const status = a.listed.get(`RouteTable/default/${rt}`)?.status;
        expect(status?.state, name).toBe(state);
        if (reason) expect(status?.reason, name).toContain(reason);
      }
    }
  });

  it('gives the same results as full runs through many edits of one RouteTable among many', () => {
    const world = new Map<string, RawResource>();
    const put = (key: string, text: string): void => void world.set(key, parseOne(text));
    put('u1', upstream('u1', 8001));
    for (let i = 0; i < 12; i++) {
      put(`vs-${i}`, delegating(`vs-${i}`));
      put(`vs-${i}-rt`, table(`vs-${i}-rt`, '/ref', `vs-${i} v1`));
    }
    const full = new Runner(false);
    const incremental = new Runner(true);
    // edits of one table (and now and then of another) in a row, past the layers a patched map keeps
    for (let v = 1; v <= 12; v++) {
      put('vs-3-rt', table('vs-3-rt', '/ref', `vs-3 v${v}`));
      if (v % 5 === 0) put('vs-7-rt', table('vs-7-rt', '/ref', `vs-7 v${v}`, '{ for: vs-2 }'));
      const resources = [...world.values()];
      const a = full.run(resources);
      const b = incremental.run(resources);
      expect(summary(b), `edit ${v}`).toEqual(summary(a));
      expect(served(incremental.cache), `edit ${v}`).toEqual(served(full.cache));
    }
  });

  it('translates again only the VirtualServices that reach the RouteTable that changed', () => {
    const resources = [parseOne(upstream('u1', 8001))];
    for (let i = 0; i < 30; i++) resources.push(parseOne(delegating(`vs-${i}`)), parseOne(table(`vs-${i}-rt`, '/ref', 'v1')));
    const runner = new Runner(true);
    runner.run(resources);
    const second = runner.run(resources);
    const at = resources.findIndex((r) => r.metadata.name === 'vs-7-rt');
    resources[at] = parseOne(table('vs-7-rt', '/ref', 'v2'));
    const third = runner.run(resources);
    const ir = (out: PipelineOutput) => out.proxies[0]!.listeners[0]!.virtualHosts;
    const changed = ir(third).filter((vh, i) => vh !== ir(second)[i]);
    expect(changed.map((vh) => vh.name)).toEqual(['default_vs-7']);
  });
});

describe('parseResourcesReusing', () => {
  const files = [
    ...fs.readdirSync(path.join(ROOT, 'test/golden/translate')).map((f) => path.join(ROOT, 'test/golden/translate', f)),
    ...fs.readdirSync(path.join(ROOT, 'examples')).map((f) => path.join(ROOT, 'examples', f)),
  ].filter((f) => f.endsWith('.yaml'));
  const odd = [
    '',
    '# only a comment\n',
    '# a comment first\n---\na: 1\n',
    '---\napiVersion: v1\nkind: Secret\nmetadata: { name: s }\n',
    'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\n---\n',
    'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\n---\n---\napiVersion: v1\nkind: Secret\nmetadata: { name: t }\n',
    '--- {apiVersion: v1, kind: Secret, metadata: {name: s}}\n--- # empty\n',
    'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\n...\n',
    '%YAML 1.2\n---\napiVersion: v1\nkind: Secret\nmetadata: { name: s }\n',
    'apiVersion: v1\r\nkind: Secret\r\nmetadata: { name: s }\r\n---\r\napiVersion: v1\r\nkind: Secret\r\nmetadata: { name: t }\r\n',
    'kind: List\napiVersion: v1\nitems:\n  - { apiVersion: v1, kind: Secret, metadata: { name: a } }\n  - 7\n---\nkind: X\n',
    'apiVersion: v1\nkind: Secret\nmetadata: { name: s }\n---\nbad: [unclosed\n---\napiVersion: v1\nkind: Secret\nmetadata: { name: t }\n',
    'a: |\n  text\n  ---\n  more\n---\nb: 2\n',
  ];

  it('parses like parseResources', () => {
    const texts = [...files.map((f) => fs.readFileSync(f, 'utf8')), ...odd];
    for (const [i, text] of texts.entries()) {
      const whole = parseResources(text, 'f.yaml');
      const { memo: _memo, ...fresh } = parseResourcesReusing(text, 'f.yaml', undefined);
      expect(fresh, files[i] ?? JSON.stringify(text)).toEqual(whole);
      // and again with the memo of a parse of the same text
      const { memo: _again, ...reused } = parseResourcesReusing(text, 'f.yaml', parseResourcesReusing(text, 'f.yaml', undefined).memo);
      expect(reused, files[i] ?? JSON.stringify(text)).toEqual(whole);
    }
  });

  it('gives back the same objects for documents that did not change, in edit after edit', () => {
    const doc = (name: string, body: string) => `apiVersion: v1\nkind: Secret\nmetadata: { name: ${name} }\nstringData: { k: ${body} }\n`;
    let names = ['a', 'b', 'c', 'd'];
    const bodies = new Map(names.map((n) => [n, 'v1']));
    const text = () => names.map((n) => doc(n, bodies.get(n)!)).join('---\n');
    let memo: DocumentMemo | undefined;
    let last: RawResource[] = [];
    const edits: [() => void, string[]][] = [
      [() => undefined, []],
      [() => bodies.set('c', 'v2'), ['c']],
      [() => (names = ['a', 'b', 'x', 'c', 'd']), ['x', 'c', 'd']], // documents after an insertion move: parsed again
      [() => bodies.set('x', 'v1'), ['x']],
      [() => (names = ['a', 'b', 'c', 'd']), ['c', 'd']],
    ];
    bodies.set('x', 'v0');
    for (const [edit, reparsed] of edits) {
      edit();
      const out = parseResourcesReusing(text(), 'f.yaml', memo);
      expect(out.resources).toEqual(parseResources(text(), 'f.yaml').resources);
      const before = new Map(last.map((r) => [r.metadata.name, r]));
      const fresh = out.resources.filter((r) => before.get(r.metadata.name) !== r).map((r) => r.metadata.name);
      if (memo) expect(fresh).toEqual(reparsed);
      memo = out.memo;
      last = out.resources;
    }
  });

  it('does not split where the YAML parser would not', () => {
    expect(splitDocuments('a: 1\n---\nb: 2\n')).toEqual(['a: 1\n', '---\nb: 2\n']);
    expect(splitDocuments('a: 1\n----\nb: 2\n')).toEqual(['a: 1\n----\nb: 2\n']);
    expect(splitDocuments('%YAML 1.2\n---\na: 1\n')).toBeUndefined();
    expect(splitDocuments('a: 1\n...\n')).toBeUndefined();
  });
});

describe('envoyEncoder', () => {
  it('encodes route configurations to the same bytes as encoding them whole, reused virtual hosts included', () => {
    const runner = new Runner(false);
    const text = fs.readFileSync(path.join(ROOT, 'test/golden/translate/extauth.in.yaml'), 'utf8');
    const out = runner.run(parseResources(text, 'extauth.yaml').resources);
    const encode = envoyEncoder();
    let checked = 0;
    for (const snap of out.xds.values()) {
      for (const r of snap.get(TypeUrls.route) ?? []) {
        const whole = encodeAny(TypeUrls.route, r.resource).value;
        expect(Buffer.from(encode(TypeUrls.route, r.resource))).toEqual(whole);
        expect(Buffer.from(encode(TypeUrls.route, r.resource))).toEqual(whole); // from the kept virtual hosts
        const { virtual_hosts: vhosts, ...rest } = r.resource as { virtual_hosts: object[] };
        const renamed = { ...rest, name: 'other', virtual_hosts: [...vhosts].reverse() };
        expect(Buffer.from(encode(TypeUrls.route, renamed))).toEqual(encodeAny(TypeUrls.route, renamed).value);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });
});
