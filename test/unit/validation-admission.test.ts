// The admission check (controller/validation): the verdicts the webhook and `legate validate` give, from
// resources as users write them.
import { X509Certificate } from 'node:crypto';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import type { RawResource } from '../../controller/api/meta.js';
import { parseResources } from '../../controller/source/parse.js';
import { makeWebhookCertificates } from '../../controller/validation/certs.js';
import { SKIP_VALIDATION_ANNOTATION, Validator, beforeFirstSnapshot, type Change } from '../../controller/validation/admission.js';
import { changeOf, parseReview, responseReview } from '../../controller/validation/review.js';

const parse = (text: string): RawResource[] => {
  const { resources, errors } = parseResources(text, 'test.yaml');
  expect(errors).toEqual([]);
  return resources;
};
const one = (text: string): RawResource => parse(text)[0]!;

const UPSTREAM = `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: petstore, namespace: default }
spec: { static: { hosts: [{ addr: 127.0.0.1, port: 8080 }] } }
`;
const vs = (name: string, route: string, domain = `${name}.example.com`): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default }
spec:
  virtualHost:
    domains: [${domain}]
    routes:
      - ${route}
`;
const TO_PETSTORE = `{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: petstore, namespace: default } } } }`;
const TO_MISSING = `{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: missing, namespace: default } } } }`;
const BAD_REGEX = `{ matchers: [{ regex: "/(a" }], directResponseAction: { status: 200 } }`;
const settings = (validation: string): string => `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: gloo-system }
spec: { gateway: { validation: ${validation} } }
`;

function validator(text: string): Validator {
  const v = new Validator();
  v.setCurrent(parse(text));
  return v;
}
const create = (text: string): Change => ({ operation: 'CREATE', object: one(text) });

describe('Validator', () => {
  it('admits a good VirtualService and refuses one with a bad regex, with the reason its status would carry', () => {
    const v = validator(UPSTREAM);
    expect(v.check(create(vs('shop', TO_PETSTORE)))).toEqual({ allowed: true, warnings: [] });
    const bad = v.check(create(vs('bad', BAD_REGEX)));
    expect(bad.allowed).toBe(false);
    expect(bad.message).toMatch(/^resource incompatible with current Legate snapshot: VirtualService default\.bad: /);
    expect(bad.message).toContain('regex');
  });

  it('admits a route to a missing upstream with its warning, and refuses it with allowWarnings: false', () => {
    const allowed = validator(UPSTREAM).check(create(vs('shop', TO_MISSING)));
    expect(allowed.allowed).toBe(true);
    expect(allowed.warnings.join()).toContain('Upstream default.missing not found');
    const strict = validator(UPSTREAM + '---\n' + settings('{ allowWarnings: false }')).check(create(vs('shop', TO_MISSING)));
    expect(strict.allowed).toBe(false);
    expect(strict.message).toContain('allowWarnings: false');
    expect(strict.message).toContain('Upstream default.missing not found');
  });

  it('alwaysAccept admits what it would refuse, and says what', () => {
    const verdict = validator(UPSTREAM + '---\n' + settings('{ alwaysAccept: true }')).check(create(vs('bad', BAD_REGEX)));
    expect(verdict).toMatchObject({ allowed: true, acceptedAnyway: true });
    expect(verdict.message).toContain('VirtualService default.bad');
  });

  it('serverEnabled: false and the skip annotation let anything through', () => {
    expect(validator(settings('{ serverEnabled: false }')).check(create(vs('bad', BAD_REGEX)))).toMatchObject({ allowed: true });
    const annotated = one(vs('bad', BAD_REGEX));
    annotated.metadata.annotations = { [SKIP_VALIDATION_ANNOTATION]: 'true' };
    const verdict = validator(UPSTREAM).check({ operation: 'CREATE', object: annotated });
    expect(verdict).toMatchObject({ allowed: true, skipped: expect.stringContaining(SKIP_VALIDATION_ANNOTATION) });
  });

  it('refuses deleting an Upstream a VirtualService routes to, and admits deleting one nothing uses', () => {
    const v = validator(UPSTREAM + '---\n' + vs('shop', TO_PETSTORE));
    const verdict = v.check({ operation: 'DELETE', oldObject: one(UPSTREAM) });
    expect(verdict.allowed).toBe(false);
    expect(verdict.message).toMatch(
      /^Deletion blocked because active resources reference Upstream default\.petstore: VirtualService default\.shop: /,
    );
    expect(validator(UPSTREAM).check({ operation: 'DELETE', oldObject: one(UPSTREAM) })).toEqual({ allowed: true, warnings: [] });
  });

  it('refuses an update that breaks another resource (a domain taken by an accepted VirtualService)', () => {
    const v = validator(UPSTREAM + '---\n' + vs('shop', TO_PETSTORE));
    const verdict = v.check(create(vs('other', TO_PETSTORE, 'shop.example.com')));
    expect(verdict.allowed).toBe(false);
    expect(verdict.message).toContain('shop.example.com');
  });

  it('lets an update that changes nothing the controller reads through unvalidated', () => {
    const before = one(vs('bad', BAD_REGEX));
    const after = one(vs('bad', BAD_REGEX));
    expect(validator('').check({ operation: 'UPDATE', object: after, oldObject: before })).toMatchObject({
      allowed: true,
      skipped: expect.any(String),
    });
  });

  it("admits untouched what is outside the source's namespaces (watchNamespaceSelectors resolved by the source)", () => {
    const scoped = (scope: readonly string[] | undefined): Validator => {
      const v = new Validator({ scope: () => scope });
      v.setCurrent(parse(UPSTREAM));
      return v;
    };
    expect(scoped(['team-a']).check(create(vs('bad', BAD_REGEX)))).toMatchObject({
      allowed: true,
      skipped: 'namespace default is not watched',
    });
    expect(scoped(['default']).check(create(vs('bad', BAD_REGEX))).allowed).toBe(false);
    expect(scoped([]).check(create(vs('bad', BAD_REGEX))).allowed).toBe(false);
    // no namespace matches the selectors: nothing but Settings is read, so nothing else is judged
    expect(scoped(undefined).check(create(vs('bad', BAD_REGEX)))).toMatchObject({ allowed: true });
  });

  it('warnMissingTlsSecret: a VirtualService naming a Secret not yet there is admitted with a warning', () => {
    const tls = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: site, namespace: default }
spec:
  sslConfig: { secretRef: { name: site-cert, namespace: default } }
  virtualHost:
    domains: [site.example.com]
    routes: [${TO_PETSTORE}]
`;
    expect(validator(UPSTREAM).check(create(tls)).allowed).toBe(false);
    const lenient = validator(UPSTREAM + '---\n' + settings('{ warnMissingTlsSecret: true }')).check(create(tls));
    expect(lenient.allowed).toBe(true);
    expect(lenient.warnings.join()).toContain('Secret default.site-cert not found');
  });

  it('warnMissingTlsSecret: deleting a Secret in use is admitted with the warning it causes (refused without)', () => {
    const secret = `apiVersion: v1
kind: Secret
metadata: { name: site-cert, namespace: default }
type: kubernetes.io/tls
stringData: { tls.crt: x, tls.key: y }
`;
    const tls = vs('site', TO_PETSTORE).replace('spec:\n', 'spec:\n  sslConfig: { secretRef: { name: site-cert, namespace: default } }\n');
    const del: Change = { operation: 'DELETE', oldObject: one(secret) };
    // the Secret's content does not matter here: its absence is what the deletion causes
    const strict = validator([UPSTREAM, secret, tls].join('---\n')).check(del);
    expect(strict.allowed).toBe(false);
    const lenient = validator([UPSTREAM, secret, tls, settings('{ warnMissingTlsSecret: true }')].join('---\n')).check(del);
    expect(lenient.allowed).toBe(true);
    expect(lenient.warnings.join()).toContain('Secret default.site-cert not found');
  });

  it('before the first snapshot: refuses, unless the Settings known say alwaysAccept or serverEnabled: false', () => {
    const change = create(vs('shop', TO_PETSTORE));
    expect(beforeFirstSnapshot(change, [])).toMatchObject({ allowed: false, message: expect.stringContaining('first snapshot') });
    expect(beforeFirstSnapshot(change, parse(settings('{ alwaysAccept: true }')))).toMatchObject({ allowed: true, acceptedAnyway: true });
    expect(beforeFirstSnapshot(change, parse(settings('{ serverEnabled: false }')))).toMatchObject({ allowed: true });
    // a Settings under review is judged by what it says
    expect(beforeFirstSnapshot(create(settings('{ alwaysAccept: true }')), [])).toMatchObject({ allowed: true });
  });

  it('refuses a field Legate does not implement (schema reasons are Rejected too)', () => {
    const verdict = validator(UPSTREAM).check(
      create(`apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: waf, namespace: default }
spec:
  virtualHost:
    domains: [waf.example.com]
    options: { waf: { customInterventionMessage: no } }
    routes: [${TO_PETSTORE}]
`),
    );
    expect(verdict.allowed).toBe(false);
    expect(verdict.message).toContain('waf');
  });
});

describe('AdmissionReview', () => {
  const upstreamKind = { group: 'gloo.solo.io', version: 'v1', kind: 'Upstream' };
  const review = (operation: string, object: unknown, oldObject?: unknown) => ({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: 'u-1',
      kind: { group: 'gateway.solo.io', version: 'v1', kind: 'VirtualService' },
      namespace: 'default',
      name: 'bad',
      operation,
      object,
      ...(oldObject ? { oldObject } : {}),
      dryRun: true,
    },
  });

  it('answers with the uid, allowed false and the reason as the status message', () => {
    // as the API server sends it: metadata it adds, and no namespace in the object
    const obj = parseYaml(vs('bad', BAD_REGEX)) as { metadata: Record<string, unknown> };
    obj.metadata = { name: 'bad', uid: 'x', resourceVersion: '7', managedFields: [{ manager: 'kubectl' }] };
    const req = parseReview(review('CREATE', obj));
    if (typeof req === 'string') throw new Error(req);
    const change = changeOf(req)!;
    expect(change.object?.metadata).toMatchObject({ name: 'bad', namespace: 'default' });
    const out = responseReview('admission.k8s.io/v1', req, validator(UPSTREAM).check(change));
    expect(out.response).toMatchObject({ uid: 'u-1', allowed: false });
    expect(out.response?.status?.message).toContain('VirtualService default.bad');
  });

  it('reads a delete without oldObject from the request name', () => {
    const req = parseReview({
      ...review('DELETE', null),
      request: { ...review('DELETE', null).request, kind: upstreamKind, name: 'petstore' },
    });
    if (typeof req === 'string') throw new Error(req);
    const verdict = validator(UPSTREAM + '---\n' + vs('shop', TO_PETSTORE)).check(changeOf(req)!);
    expect(verdict.allowed).toBe(false);
    expect(verdict.message).toContain('Upstream default.petstore');
  });

  it('refuses what is not an AdmissionReview', () => {
    expect(parseReview({ kind: 'Pod' })).toBe('not an AdmissionReview');
    expect(parseReview({ kind: 'AdmissionReview' })).toMatch(/without a request/);
  });

  it('leaves kinds the controller does not read alone', () => {
    const req = parseReview({
      ...review('CREATE', {}),
      request: { ...review('CREATE', {}).request, kind: { group: '', version: 'v1', kind: 'Pod' } },
    });
    if (typeof req === 'string') throw new Error(req);
    expect(changeOf(req)).toBeUndefined();
  });
});

describe('makeWebhookCertificates', () => {
  it('makes a CA and a serving certificate for the hosts that node:crypto and a TLS handshake accept', async () => {
    const { ca, cert, key } = makeWebhookCertificates(['controller.legate-system.svc', '127.0.0.1', '::1']);
    const caX = new X509Certificate(ca);
    const serverX = new X509Certificate(cert);
    expect(caX.ca).toBe(true);
    expect(serverX.ca).toBe(false);
    expect(serverX.checkIssued(caX)).toBe(true);
    expect(serverX.verify(caX.publicKey)).toBe(true);
    expect(serverX.checkHost('controller.legate-system.svc')).toBe('controller.legate-system.svc');
    expect(serverX.checkIP('127.0.0.1')).toBe('127.0.0.1');
    expect(serverX.checkIP('::1')).toBe('::1');
    expect(serverX.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    // a real handshake trusting only the CA
    const server = https.createServer({ cert, key }, (_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const port = (server.address() as AddressInfo).port;
    const body = await new Promise<string>((resolve, reject) => {
      https
        .get({ host: '127.0.0.1', port, ca, servername: 'controller.legate-system.svc' }, (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString()));
          res.on('end', () => resolve(text));
        })
        .on('error', reject);
    });
    server.close();
    expect(body).toBe('ok');
  });
});
