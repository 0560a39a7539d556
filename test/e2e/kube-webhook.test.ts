// The validating admission webhook against a real kube-apiserver: the controller (with the install's RBAC) serves
// /validation over TLS with a certificate it makes at start and puts its CA into the ValidatingWebhookConfiguration;
// the API server calls it on loopback (url, not a Service: there is no cluster network here). kubectl apply of a
// VirtualService with a bad regex is refused with the reason its status would carry, a good one is admitted, a route
// to a missing upstream is admitted with a warning (refused with allowWarnings: false), the delete of a referenced
// Upstream is refused, a field Legate does not know sent by a client that does not validate fields is refused (the
// Gloo-group CRDs keep it, so it is never pruned unseen), --dry-run=server is validated and stores nothing, Gloo's skip
// annotation is honoured, a burst
// of 200 applies gives the webhook's latency, and with the controller down failurePolicy decides (Ignore vs Fail).
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  controllerKubeconfig,
  installCrds,
  startKubeApiServer,
  startKubeController,
  type KubeApiServer,
  type KubeController,
} from '../support/kube.js';
import { renderChart } from '../support/helm.js';
import { eventually, freePort } from '../support/util.js';

let kube: KubeApiServer;
let dir: string;
let controller: KubeController;
let webhookPort: number;
// the name the install's RBAC lets the controller patch (install/kubernetes/rbac.yaml, release namespace legate-system)
const CONFIG = 'legate-validation-legate-system';

/**
 * The ValidatingWebhookConfiguration the chart renders (helm template, Gloo's groups on, as a Gloo user installs it),
 * its rules, groups and timeout unchanged; only where the API server reaches the webhook differs: a url on loopback in
 * place of the controller Service (there is no cluster network here), and the CA the controller puts in itself.
 */
function webhookConfig(failurePolicy: 'Ignore' | 'Fail', caBundle?: string): string {
  const rendered = renderChart('legate-system', ['--set', 'glooGroups=true', '--set', `gateway.validation.failurePolicy=${failurePolicy}`]);
  const config = rendered.objects.find((o) => o.kind === 'ValidatingWebhookConfiguration')!;
  expect(config.metadata.name).toBe(CONFIG);
  const webhooks = config['webhooks'] as { clientConfig: Record<string, unknown>; failurePolicy: string }[];
  expect(webhooks.map((w) => w.failurePolicy)).toEqual([failurePolicy]);
  for (const w of webhooks) w.clientConfig = { url: `https://127.0.0.1:${webhookPort}/validation`, ...(caBundle ? { caBundle } : {}) };
  return JSON.stringify(config);
}

const UPSTREAM = `apiVersion: gloo.solo.io/v1
kind: Upstream
metadata: { name: petstore, namespace: default }
spec: { static: { hosts: [{ addr: 127.0.0.1, port: 8080 }] } }
`;
const vs = (name: string, route: string, extra = ''): string => `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: ${name}, namespace: default${extra} }
spec:
  virtualHost:
    domains: [${name}.example.com]
    routes:
      - ${route}
`;
const TO_PETSTORE = '{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: petstore, namespace: default } } } }';
const TO_MISSING = '{ matchers: [{ prefix: / }], routeAction: { single: { upstream: { name: missing, namespace: default } } } }';
const BAD_REGEX = '{ matchers: [{ regex: "/(a" }], directResponseAction: { status: 200 } }';

const apply = (yaml: string, ...args: string[]) => kube.kubectl(['apply', ...args, '-f', '-'], { input: yaml, check: false });
/** status.state, written once the controller's snapshot (which the webhook judges by) has the resource */
const stateOf = (kind: string, name: string, ns = 'default'): string =>
  kube.kubectl(['get', kind, name, '-n', ns, '-o', 'jsonpath={.status.state}'], { check: false }).stdout;
const exists = (kind: string, name: string): boolean => kube.kubectl(['get', kind, name, '-n', 'default'], { check: false }).status === 0;

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

/** One AdmissionReview posted straight at the webhook, as the API server does; its round trip in ms. */
function review(body: string, ca: string): Promise<number> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = https.request(
      { host: '127.0.0.1', port: webhookPort, path: '/validation', method: 'POST', ca, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve(performance.now() - started) : reject(new Error(`HTTP ${res.statusCode}`))));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

beforeAll(async () => {
  kube = await startKubeApiServer();
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'legate-kube-webhook-'));
  installCrds(kube);
  const asController = controllerKubeconfig(kube, dir);
  webhookPort = await freePort();
  // installed before the controller, without a CA: the controller puts its own in
  kube.kubectl(['apply', '-f', '-'], { input: webhookConfig('Fail') });
  controller = await startKubeController(
    kube,
    dir,
    'controller',
    ['--webhook-address', `127.0.0.1:${webhookPort}`, '--webhook-config', CONFIG, '--log-level', 'debug'],
    asController,
  );
  // admitted once the CA is in place and the first snapshot is taken
  await eventually('the webhook admits', () => (apply(UPSTREAM).status === 0 ? true : undefined), 60_000);
}, 240_000);

afterAll(async () => {
  await controller?.stop();
  await kube?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('validating admission webhook', () => {
  it('put its CA into the webhook configuration', () => {
    const ca = kube.kubectl([
      'get',
      'validatingwebhookconfiguration',
      CONFIG,
      '-o',
      'jsonpath={.webhooks[0].clientConfig.caBundle}',
    ]).stdout;
    expect(Buffer.from(ca, 'base64').toString()).toContain('-----BEGIN CERTIFICATE-----');
  });

  it('admits a good VirtualService and refuses a bad regex with the reason its status would carry', async () => {
    await eventually('petstore in the snapshot', () => stateOf('upstreams.gloo.solo.io', 'petstore') || undefined);
    const good = apply(vs('shop', TO_PETSTORE));
    expect(good.stderr).toBe('');
    expect(good.status).toBe(0);
    const bad = apply(vs('bad', BAD_REGEX));
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('denied the request: resource incompatible with current Legate snapshot: VirtualService default.bad: ');
    expect(bad.stderr).toContain('virtualHost.routes[0].matchers[0].regex: invalid regex "/(a"');
    expect(exists('virtualservices.gateway.solo.io', 'bad')).toBe(false);
  });

  it('admits a route to a missing upstream with a warning; refuses it with Settings allowWarnings: false', async () => {
    const warned = apply(vs('dangling', TO_MISSING));
    expect(warned.status).toBe(0);
    expect(warned.stderr).toContain('Warning: virtualHost.routes[0].routeAction.single: Upstream default.missing not found');
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'dangling', '-n', 'default']);
    const settings = `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { gateway: { validation: { allowWarnings: false } } }
`;
    expect(apply(settings).status).toBe(0);
    // the webhook judges by the controller's last snapshot: the Settings are in it once their status is written
    await eventually('Settings in the snapshot', () => stateOf('settings.gloo.solo.io', 'default', 'legate-system') || undefined);
    const refused = await eventually('allowWarnings: false in effect', () => {
      const r = apply(vs('dangling', TO_MISSING));
      return r.status !== 0 ? r : undefined;
    });
    expect(refused.stderr).toContain('warnings are not allowed (Settings gateway.validation.allowWarnings: false)');
    expect(refused.stderr).toContain('Upstream default.missing not found');
    kube.kubectl(['delete', 'settings.gloo.solo.io', 'default', '-n', 'legate-system']);
    await eventually('Settings gone from the snapshot', () =>
      stateOf('settings.gloo.solo.io', 'default', 'legate-system') ? undefined : true,
    );
    await eventually('allowWarnings back to true', () => (apply(vs('dangling', TO_MISSING)).status === 0 ? true : undefined));
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'dangling', '-n', 'default']);
  });

  it('refuses deleting an Upstream a VirtualService routes to, and deletes it once nothing does', async () => {
    // the controller's snapshot has shop by now (its status is written from it)
    await eventually(
      'shop in the snapshot',
      () =>
        kube.kubectl(['get', 'virtualservices.gateway.solo.io', 'shop', '-n', 'default', '-o', 'jsonpath={.status.state}']).stdout ||
        undefined,
    );
    const refused = kube.kubectl(['delete', 'upstreams.gloo.solo.io', 'petstore', '-n', 'default'], { check: false });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(
      'Deletion blocked because active resources reference Upstream default.petstore: VirtualService default.shop: ' +
        'virtualHost.routes[0].routeAction.single: Upstream default.petstore not found',
    );
    expect(exists('upstreams.gloo.solo.io', 'petstore')).toBe(true);
    const spare = UPSTREAM.replace('name: petstore', 'name: spare');
    expect(apply(spare).status).toBe(0);
    await eventually(
      'spare in the snapshot',
      () => kube.kubectl(['get', 'upstreams.gloo.solo.io', 'spare', '-n', 'default', '-o', 'jsonpath={.status.state}']).stdout || undefined,
    );
    expect(kube.kubectl(['delete', 'upstreams.gloo.solo.io', 'spare', '-n', 'default'], { check: false }).status).toBe(0);
  });

  it('refuses deleting a Secret a VirtualService terminates TLS with', async () => {
    const fixtures = path.join(import.meta.dirname, 'fixtures');
    const files = ['--cert', path.join(fixtures, 'secure.example.com.crt'), '--key', path.join(fixtures, 'secure.example.com.key')];
    kube.kubectl(['create', 'secret', 'tls', 'secure-cert', '-n', 'default', ...files]);
    const tls = `apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: secure, namespace: default }
spec:
  sslConfig: { secretRef: { name: secure-cert, namespace: default }, sniDomains: [secure.example.com] }
  virtualHost:
    domains: [secure.example.com]
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200 } }]
`;
    await eventually('the Secret in the snapshot', async () => {
      const listed = await controller.api<{ metadata: { name: string } }[]>('/api/v1/resources?kind=Secret');
      return listed.some((r) => r.metadata.name === 'secure-cert') ? true : undefined;
    });
    expect(apply(tls).stderr).toBe('');
    await eventually('secure in the snapshot', () => stateOf('virtualservices.gateway.solo.io', 'secure') || undefined);
    const refused = kube.kubectl(['delete', 'secret', 'secure-cert', '-n', 'default'], { check: false });
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain(
      'Deletion blocked because active resources reference Secret default.secure-cert: VirtualService default.secure: ',
    );
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'secure', '-n', 'default']);
    await eventually('secure gone from the snapshot', async () => {
      const listed = await controller.api<{ metadata: { name: string } }[]>('/api/v1/resources?kind=VirtualService');
      return listed.some((r) => r.metadata.name === 'secure') ? undefined : true;
    });
    expect(kube.kubectl(['delete', 'secret', 'secure-cert', '-n', 'default'], { check: false }).status).toBe(0);
  });

  it('with warnMissingTlsSecret, one kubectl apply of a Secret and the VirtualService naming it is admitted and serves', async () => {
    const settings = `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { gateway: { validation: { warnMissingTlsSecret: true } } }
`;
    expect(apply(settings).status).toBe(0);
    await eventually('Settings in the snapshot', () => stateOf('settings.gloo.solo.io', 'default', 'legate-system') || undefined);
    const fixtures = path.join(import.meta.dirname, 'fixtures');
    const b64 = (f: string): string => fs.readFileSync(path.join(fixtures, f)).toString('base64');
    const bundle = `apiVersion: v1
kind: Secret
metadata: { name: bundle-cert, namespace: default }
type: kubernetes.io/tls
data: { tls.crt: ${b64('secure.example.com.crt')}, tls.key: ${b64('secure.example.com.key')} }
---
apiVersion: gateway.solo.io/v1
kind: VirtualService
metadata: { name: bundle, namespace: default }
spec:
  sslConfig: { secretRef: { name: bundle-cert, namespace: default }, sniDomains: [secure.example.com] }
  virtualHost:
    domains: [secure.example.com]
    routes: [{ matchers: [{ prefix: / }], directResponseAction: { status: 200 } }]
`;
    // the VirtualService is judged against the last snapshot, which may not have the Secret yet: a warning at most
    const r = apply(bundle);
    expect(r.status).toBe(0);
    expect(r.stderr).not.toContain('denied');
    await eventually('bundle Accepted once the Secret is read', () =>
      stateOf('virtualservices.gateway.solo.io', 'bundle') === 'Accepted' ? true : undefined,
    );
    // and, as Gloo permits it with this setting, the Secret may be deleted while in use: a warning, not a refusal
    const deleted = kube.kubectl(['delete', 'secret', 'bundle-cert', '-n', 'default'], { check: false });
    expect(deleted.status).toBe(0);
    expect(deleted.stderr).toContain('Secret default.bundle-cert not found');
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'bundle', '-n', 'default']);
    // the Settings go once the snapshot has no VirtualService left that their removal would reject
    await eventually('bundle gone from the snapshot', async () => {
      const listed = await controller.api<{ metadata: { name: string } }[]>('/api/v1/resources?kind=VirtualService');
      return listed.some((r) => r.metadata.name === 'bundle') ? undefined : true;
    });
    kube.kubectl(['delete', 'settings.gloo.solo.io', 'default', '-n', 'legate-system']);
    await eventually('Settings gone from the snapshot', () =>
      stateOf('settings.gloo.solo.io', 'default', 'legate-system') ? undefined : true,
    );
  });

  it('sees a field Legate does not know through a client that does not validate fields (the Gloo CRDs keep it)', async () => {
    const typo = vs('typo', '{ matchers: [{ prefix: / }], directResponseAction: { status: 200 }, options: { prefixRewrit: /x } }');
    // --validate=false: kubectl asks for no field validation, as Helm and Argo CD do; the API server would prune the field
    const refused = apply(typo, '--validate=false');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('VirtualService default.typo: ');
    expect(refused.stderr).toContain('prefixRewrit');
    // let through unvalidated, it is stored with the field and Rejected, never Accepted without it
    const skipped = apply(
      typo.replace('namespace: default', 'namespace: default, annotations: { gateway.solo.io/skip_validation: "true" }'),
      '--validate=false',
    );
    expect(skipped.status).toBe(0);
    const stored = kube.kubectl(['get', 'virtualservices.gateway.solo.io', 'typo', '-n', 'default', '-o', 'json']).stdout;
    expect(JSON.parse(stored).spec.virtualHost.routes[0].options).toEqual({ prefixRewrit: '/x' });
    const reason = await eventually('typo Rejected', () => {
      const r = kube.kubectl([
        'get',
        'virtualservices.gateway.solo.io',
        'typo',
        '-n',
        'default',
        '-o',
        'jsonpath={.status.state}: {.status.reason}',
      ]);
      return r.stdout.startsWith('Rejected') ? r.stdout : undefined;
    });
    expect(reason).toContain('prefixRewrit');
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'typo', '-n', 'default']);
  });

  it("keeps and reports an unknown field under Legate's own groups too (gateway.legate.dev: nothing pruned unseen)", async () => {
    const legate = (extra = ''): string =>
      vs(
        'typo-legate',
        '{ matchers: [{ prefix: / }], directResponseAction: { status: 200 }, options: { prefixRewrit: /x } }',
        extra,
      ).replace('apiVersion: gateway.solo.io/v1', 'apiVersion: gateway.legate.dev/v1');
    const refused = apply(legate(), '--validate=false');
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('prefixRewrit');
    const skipped = apply(legate(', annotations: { gateway.solo.io/skip_validation: "true" }'), '--validate=false');
    expect(skipped.status).toBe(0);
    const stored = kube.kubectl(['get', 'virtualservices.gateway.legate.dev', 'typo-legate', '-n', 'default', '-o', 'json']).stdout;
    expect(JSON.parse(stored).spec.virtualHost.routes[0].options).toEqual({ prefixRewrit: '/x' });
    const reason = await eventually('typo-legate Rejected', () => {
      const r = kube.kubectl([
        'get',
        'virtualservices.gateway.legate.dev',
        'typo-legate',
        '-n',
        'default',
        '-o',
        'jsonpath={.status.state}: {.status.reason}',
      ]);
      return r.stdout.startsWith('Rejected') ? r.stdout : undefined;
    });
    expect(reason).toContain('prefixRewrit');
    kube.kubectl(['delete', 'virtualservices.gateway.legate.dev', 'typo-legate', '-n', 'default']);
  });

  it('validates kubectl apply --dry-run=server and stores nothing', () => {
    const bad = apply(vs('dry-bad', BAD_REGEX), '--dry-run=server');
    expect(bad.status).not.toBe(0);
    expect(bad.stderr).toContain('invalid regex');
    const good = apply(vs('dry-good', TO_PETSTORE), '--dry-run=server');
    expect(good.status).toBe(0);
    expect(good.stdout).toContain('(server dry run)');
    expect(exists('virtualservices.gateway.solo.io', 'dry-good')).toBe(false);
  });

  it('admits untouched what is outside the namespaces Settings watchNamespaceSelectors select', async () => {
    kube.kubectl(['create', 'namespace', 'inside']);
    kube.kubectl(['label', 'namespace', 'inside', 'legate=on']);
    kube.kubectl(['create', 'namespace', 'outside']);
    const settings = `apiVersion: gloo.solo.io/v1
kind: Settings
metadata: { name: default, namespace: legate-system }
spec: { watchNamespaceSelectors: [{ matchLabels: { legate: "on" } }] }
`;
    expect(apply(settings).status).toBe(0);
    const bad = (ns: string): string => vs(`sel-${ns}`, BAD_REGEX).replace('namespace: default', `namespace: ${ns}`);
    // the selector in effect: the unlabelled namespace is not read, so what is there is not judged
    const admitted = await eventually('outside admitted', () => {
      const r = apply(bad('outside'));
      return r.status === 0 ? r : undefined;
    });
    expect(admitted.stderr).toBe('');
    const refused = apply(bad('inside'));
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('invalid regex');
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'sel-outside', '-n', 'outside']);
    kube.kubectl(['delete', 'settings.gloo.solo.io', 'default', '-n', 'legate-system']);
    await eventually('Settings gone from the snapshot', () =>
      stateOf('settings.gloo.solo.io', 'default', 'legate-system') ? undefined : true,
    );
  });

  it("admits what Gloo's gateway.solo.io/skip_validation annotation marks", () => {
    const r = apply(vs('skipped', BAD_REGEX, ', annotations: { gateway.solo.io/skip_validation: "true" }'));
    expect(r.status).toBe(0);
    kube.kubectl(['delete', 'virtualservices.gateway.solo.io', 'skipped', '-n', 'default']);
  });

  it('keeps up with a burst of 200 applies (webhook latency p50/p99)', async () => {
    const ca = Buffer.from(
      kube.kubectl(['get', 'validatingwebhookconfiguration', CONFIG, '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}']).stdout,
      'base64',
    ).toString();
    // 200 server-side applies through the API server (each calls the webhook), 10 at a time
    const applyTimes: number[] = [];
    const names = Array.from({ length: 200 }, (_, i) => `burst-${i}`);
    for (let i = 0; i < names.length; i += 10) {
      await Promise.all(
        names.slice(i, i + 10).map(async (name) => {
          const started = performance.now();
          const body = { apiVersion: 'gateway.solo.io/v1', kind: 'VirtualService', metadata: { name, namespace: 'default' } };
          const res = await kube.api(
            'PATCH',
            `/apis/gateway.solo.io/v1/namespaces/default/virtualservices/${name}?fieldManager=burst`,
            {
              ...body,
              spec: {
                virtualHost: {
                  domains: [`${name}.example.com`],
                  routes: [{ matchers: [{ prefix: '/' }], directResponseAction: { status: 200 } }],
                },
              },
            },
            'application/apply-patch+yaml',
          );
          expect(res.status, JSON.stringify(res.body)).toBeLessThan(300);
          applyTimes.push(performance.now() - started);
        }),
      );
    }
    // the webhook alone, as the API server calls it, with the 200 loaded (the controller's snapshot has them)
    await eventually('burst in the snapshot', async () => {
      const listed = await controller.api<{ metadata: { name: string } }[]>('/api/v1/resources?kind=VirtualService');
      return listed.filter((r) => r.metadata.name.startsWith('burst-')).length === 200 ? true : undefined;
    });
    const candidate = {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      request: {
        uid: 'x',
        kind: { group: 'gateway.solo.io', version: 'v1', kind: 'VirtualService' },
        namespace: 'default',
        name: 'candidate',
        operation: 'CREATE',
        object: {
          apiVersion: 'gateway.solo.io/v1',
          kind: 'VirtualService',
          metadata: { name: 'candidate', namespace: 'default' },
          spec: {
            virtualHost: {
              domains: ['candidate.example.com'],
              routes: [{ matchers: [{ prefix: '/' }], directResponseAction: { status: 200 } }],
            },
          },
        },
      },
    };
    const webhookTimes: number[] = [];
    for (let i = 0; i < 200; i++) webhookTimes.push(await review(JSON.stringify(candidate), ca));
    applyTimes.sort((a, b) => a - b);
    webhookTimes.sort((a, b) => a - b);
    const fmt = (xs: number[]) => `p50 ${quantile(xs, 0.5).toFixed(1)} ms, p99 ${quantile(xs, 0.99).toFixed(1)} ms`;
    console.log(`server-side apply through the API server with the webhook (200, 10 at a time): ${fmt(applyTimes)}`);
    console.log(`webhook round trip at ~205 resources loaded (200 AdmissionReviews, one at a time): ${fmt(webhookTimes)}`);
    expect(quantile(webhookTimes, 0.99)).toBeLessThan(1000);
  }, 180_000);

  it('with the controller down: failurePolicy Fail refuses, Ignore admits', async () => {
    await controller.stop();
    const refused = apply(vs('while-down', TO_PETSTORE));
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('failed calling webhook');
    const caBundle = kube.kubectl([
      'get',
      'validatingwebhookconfiguration',
      CONFIG,
      '-o',
      'jsonpath={.webhooks[0].clientConfig.caBundle}',
    ]).stdout;
    kube.kubectl(['apply', '-f', '-'], { input: webhookConfig('Ignore', caBundle) });
    const admitted = await eventually('Ignore in effect', () => {
      const r = apply(vs('while-down', TO_PETSTORE));
      return r.status === 0 ? r : undefined;
    });
    expect(admitted.status).toBe(0);
    expect(exists('virtualservices.gateway.solo.io', 'while-down')).toBe(true);
  });
});
