// `legatectl create authconfig` with glooctl's flags: the AuthConfig it prints with --dry-run (steps in glooctl's
// order: OIDC, API keys, OPA), put through the controller's own pipeline with the Secrets and ConfigMaps it names:
// it must be Accepted. Usage mistakes are refused before anything is written. In-process, nothing reaches a server.
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { ctl, inScratchDirectory } from '../support/legatectl-in-process.js';
import { parseResources } from '../../controller/source/parse.js';
import { validateResources } from '../../controller/validation/files.js';

inScratchDirectory('legatectl-authconfig-');

/** What `create secret oauth` / `create secret apikey` write, and a ConfigMap of Rego as Gloo's OPA guide has it. */
const REFERENCED = `
apiVersion: v1
kind: Secret
type: extauth.solo.io/oauth
metadata: { name: idp, namespace: legate-system }
data: { client-secret: ${Buffer.from('s3cret').toString('base64')} }
---
apiVersion: v1
kind: Secret
type: extauth.solo.io/apikey
metadata: { name: alice, namespace: shop, labels: { team: shop } }
data: { api-key: ${Buffer.from('k-1').toString('base64')} }
---
apiVersion: v1
kind: ConfigMap
metadata: { name: allow-get-users, namespace: legate-system }
data:
  policy.rego: |
    package test
    default allow = false
    allow { input.http_request.method == "GET" }
`;

/** The status the controller gives the printed AuthConfig next to the resources it names. */
function verdict(yaml: string): { state: string; reason?: string } {
  const parsed = parseResources(`${REFERENCED}\n---\n${yaml}`, 'test.yaml');
  expect(parsed.errors).toEqual([]);
  const v = validateResources(parsed.resources, []);
  const ac = v.resources.find((r) => r.kind === 'AuthConfig');
  expect(ac).toBeDefined();
  return { state: ac!.state, ...(ac!.reason ? { reason: ac!.reason } : {}) };
}

const OIDC = [
  '--enable-oidc-auth',
  '--oidc-auth-issuer-url',
  'https://accounts.google.com',
  '--oidc-auth-app-url',
  'http://localhost:8080/',
  '--oidc-auth-callback-path',
  '/callback',
  '--oidc-auth-client-id',
  'my-client',
  '--oidc-auth-client-secret-name',
  'idp',
  '--oidc-auth-client-secret-namespace',
  'legate-system',
];

describe('legatectl create authconfig', () => {
  it('--dry-run prints the -o format (JSON here), YAML without -o', async () => {
    const r = await ctl('create', 'authconfig', '--name', 'google', ...OIDC, '--dry-run', '-o', 'json');
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ kind: 'AuthConfig', metadata: { name: 'google' } });
  });

  it('OIDC authorization code: glooctl fields as oauth2.oidcAuthorizationCode, Accepted by the controller', async () => {
    const r = await ctl('create', 'authconfig', '--name', 'google', ...OIDC, '--oidc-scope=email', '--oidc-scope', 'profile', '--dry-run');
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    expect(parse(r.stdout)).toEqual({
      apiVersion: 'enterprise.legate.dev/v1',
      kind: 'AuthConfig',
      metadata: { name: 'google', namespace: 'legate-system' },
      spec: {
        configs: [
          {
            oauth2: {
              oidcAuthorizationCode: {
                appUrl: 'http://localhost:8080/',
                callbackPath: '/callback',
                clientId: 'my-client',
                clientSecretRef: { name: 'idp', namespace: 'legate-system' },
                issuerUrl: 'https://accounts.google.com',
                scopes: ['email', 'profile'],
              },
            },
          },
        ],
      },
    });
    expect(verdict(r.stdout)).toEqual({ state: 'Accepted' });
  });

  it("OIDC defaults as glooctl's: callback /oidc-gloo-callback, the secret in the AuthConfig's namespace; query params", async () => {
    const args = ['create', 'ac', 'login', '--oidc-auth-issuer-url', 'https://idp.example.com/realms/x'];
    const r = await ctl(
      ...args,
      ...['--oidc-auth-app-url', 'https://shop.example.com', '--oidc-auth-client-id', 'shop', '--oidc-auth-client-secret-name', 'idp'],
      ...['--auth-endpoint-query-params', 'prompt=login,hd=example.com', '--dry-run'],
    );
    expect(r.status).toBe(0);
    const code = (parse(r.stdout) as { spec: { configs: { oauth2: { oidcAuthorizationCode: Record<string, unknown> } }[] } }).spec
      .configs[0]!.oauth2.oidcAuthorizationCode;
    expect(code).toMatchObject({
      callbackPath: '/oidc-gloo-callback',
      clientSecretRef: { name: 'idp', namespace: 'legate-system' },
      authEndpointQueryParams: { prompt: 'login', hd: 'example.com' },
    });
    expect(code).not.toHaveProperty('scopes');
    expect(verdict(r.stdout)).toEqual({ state: 'Accepted' });
  });

  it('OPA: the query and NS.NAME module refs as opaAuth, Accepted with the ConfigMap', async () => {
    const r = await ctl(
      ...['create', 'authconfig', 'opa', '--enable-opa-auth', '--opa-query', 'data.test.allow == true'],
      ...['--opa-module-ref', 'legate-system.allow-get-users', '--dry-run'],
    );
    expect(r.status).toBe(0);
    expect((parse(r.stdout) as { spec: unknown }).spec).toEqual({
      configs: [{ opaAuth: { modules: [{ namespace: 'legate-system', name: 'allow-get-users' }], query: 'data.test.allow == true' } }],
    });
    expect(verdict(r.stdout)).toEqual({ state: 'Accepted' });
    // a module the cluster does not have: the controller's reason (file mode writes nothing then)
    const missing = await ctl('create', 'ac', 'opa', '--opa-query', 'data.x.allow', '--opa-module-ref', 'other.rules', '--dry-run');
    expect(verdict(missing.stdout)).toEqual({
      state: 'Rejected',
      reason: expect.stringContaining('opaAuth.modules[0]: ConfigMap other.rules not found'),
    });
  });

  it("every step at once, in glooctl's order (OIDC, API keys, OPA), in the -n namespace", async () => {
    const r = await ctl(
      ...['create', 'ac', 'all', '-n', 'shop', ...OIDC, '--enable-apikey-auth', '--apikey-label-selector', 'team=shop'],
      ...['--enable-opa-auth', '--opa-query', 'data.test.allow'],
      ...['--opa-module-ref', 'legate-system.allow-get-users', '--dry-run'],
    );
    expect(r.status).toBe(0);
    const spec = (parse(r.stdout) as { metadata: { namespace: string }; spec: { configs: Record<string, unknown>[] } }).spec;
    expect(spec.configs.map((c) => Object.keys(c)[0])).toEqual(['oauth2', 'apiKeyAuth', 'opaAuth']);
    expect(spec.configs[1]).toEqual({
      apiKeyAuth: { labelSelector: { team: 'shop' } },
    });
    expect(r.stdout).toContain('namespace: shop\n');
    expect(verdict(r.stdout)).toEqual({ state: 'Accepted' });
  });

  it("API keys by Secret name, in -n's namespace unless --apikey-secret-namespace", async () => {
    const r = await ctl('create', 'ac', 'keys', '-n', 'shop', '--apikey-secret-name', 'alice', '--dry-run');
    expect(r.status).toBe(0);
    expect((parse(r.stdout) as { spec: unknown }).spec).toEqual({
      configs: [{ apiKeyAuth: { apiKeySecretRefs: [{ name: 'alice', namespace: 'shop' }] } }],
    });
    expect(verdict(r.stdout)).toEqual({ state: 'Accepted' });
    const other = await ctl('create', 'ac', 'keys', '--apikey-secret-name', 'alice', '--apikey-secret-namespace', 'shop', '--dry-run');
    expect(other.stdout).toContain('namespace: legate-system\n');
    expect(verdict(other.stdout)).toEqual({ state: 'Accepted' });
  });

  it('refuses what glooctl refuses, and what would make an empty step, in one line, exit 2', async () => {
    for (const [args, message] of [
      [['--enable-opa-auth'], 'the OPA step needs --opa-query QUERY'],
      [['--opa-query', 'q', '--opa-module-ref', 'rules'], '--opa-module-ref: expected NAMESPACE.NAME of a ConfigMap, got "rules"'],
      [['--enable-oidc-auth', '--oidc-auth-client-id', 'c'], 'the OIDC step needs --oidc-auth-issuer-url, --oidc-auth-app-url,'],
      [['--oidc-scope', 'email'], 'the OIDC step needs --oidc-auth-issuer-url'],
      [['--enable-apikey-auth'], 'the API key step needs --apikey-label-selector K=V or --apikey-secret-name NAME'],
      [['--apikey-secret-namespace', 'ns1'], '--apikey-secret-namespace needs --apikey-secret-name'],
      // glooctl writes both; Legate's controller rejects an apiKeyAuth with both
      [['--apikey-label-selector', 'a=b', '--apikey-secret-name', 's'], 'give one of --apikey-label-selector, --apikey-secret-name'],
      [['--auth-endpoint-query-params', 'prompt'], '--auth-endpoint-query-params: expected KEY=VALUE, got "prompt"'],
      [[], 'which steps? --enable-oidc-auth, --enable-apikey-auth and/or --enable-opa-auth'],
    ] as const) {
      const r = await ctl('create', 'authconfig', 'x', ...args, '--dry-run');
      expect(r.stderr, args.join(' ')).toContain(message);
      expect(r.stdout).toBe('');
      expect(r.status, args.join(' ')).toBe(2);
    }
  });
});
